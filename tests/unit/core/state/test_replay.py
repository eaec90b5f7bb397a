"""Action reconciliation on hand-built tables: file keys, DVs, path spellings, and the non-file actions."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltalog import DeltaLog
from deltalog.core import actions as A
from deltalog.core.files.pathkeys import canonical_path, file_key, needs_canonicalizing
from deltalog.core.state import BaseState, CommitData
from deltalog.core.state.replay import replay
from deltalog.core.state.small import live_txns
from tests.unit import logkit as K
from tests.unit import logwriter as W
from tests.unit.logkit import add, commit_info, domain, dv, metadata, protocol, remove, txn

SETTINGS = settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def snap(root: Path, version: int | None = None) -> Any:
    return DeltaLog.for_table(root).snapshot(version=version)


def live(root: Path, version: int | None = None) -> list[str]:
    return W.paths_of(snap(root, version).files())


def base_commit(*actions: dict[str, Any]) -> list[dict[str, Any]]:
    return [commit_info("CREATE TABLE"), protocol(), metadata(), *actions]


def dv_uid(d: dict[str, Any] | None, snake: bool = False) -> str:
    if d is None:
        return ""
    if snake:
        return A.dv_unique_id(d["storage_type"], d["path_or_inline_dv"], d["offset"])
    return A.dv_unique_id(d["storageType"], d["pathOrInlineDv"], d.get("offset"))


# ---------------------------------------------------------------------------------------------- file actions


def test_add_then_remove_is_gone(tmp_path: Path) -> None:
    W.write_table(tmp_path, [base_commit(add("a.parquet"), add("b.parquet")), [remove("a.parquet")]])
    s = snap(tmp_path)
    assert W.paths_of(s.files()) == ["b.parquet"]
    assert s.num_files == 1
    assert W.paths_of(s.tombstones()) == ["a.parquet"]
    assert live(tmp_path, 0) == ["a.parquet", "b.parquet"]


def test_add_and_remove_everything(tmp_path: Path) -> None:
    W.write_table(tmp_path, [base_commit(add("a.parquet")), [remove("a.parquet")]])
    s = snap(tmp_path)
    assert s.num_files == 0
    assert s.files().num_rows == 0


def test_re_add_after_remove_is_live(tmp_path: Path) -> None:
    W.write_table(
        tmp_path,
        [base_commit(add("a.parquet", size=1)), [remove("a.parquet")], [add("a.parquet", size=2)]],
    )
    s = snap(tmp_path)
    assert W.paths_of(s.files()) == ["a.parquet"]
    assert s.files().column("size").to_pylist() == [2]
    assert s.tombstones().num_rows == 0


def test_remove_and_add_in_one_commit_follows_file_order(tmp_path: Path) -> None:
    W.write_table(
        tmp_path,
        [
            base_commit(add("a.parquet"), add("b.parquet")),
            [remove("a.parquet"), add("a.parquet", size=7), add("b.parquet"), remove("b.parquet")],
        ],
    )
    s = snap(tmp_path)
    assert W.paths_of(s.files()) == ["a.parquet"]
    assert s.files().column("size").to_pylist() == [7]
    assert W.paths_of(s.tombstones()) == ["b.parquet"]


def test_newest_add_of_a_key_wins(tmp_path: Path) -> None:
    W.write_table(tmp_path, [base_commit(add("a.parquet", size=1)), [add("a.parquet", size=2, data_change=False)]])
    files = snap(tmp_path).files()
    assert files.num_rows == 1
    assert files.column("size").to_pylist() == [2]


def test_same_path_with_different_dvs_are_different_files(tmp_path: Path) -> None:
    dv1, dv2 = dv("aaaaaaaaaaaaaaaaaaaa"), dv("bbbbbbbbbbbbbbbbbbbb", offset=9)
    W.write_table(
        tmp_path,
        [
            base_commit(add("f.parquet")),
            [add("f.parquet", deletion_vector=dv1)],
            [add("f.parquet", deletion_vector=dv2)],
            [remove("f.parquet", deletion_vector=dv1)],
            [remove("f.parquet")],
        ],
    )
    assert len(live(tmp_path, 1)) == 2
    assert len(live(tmp_path, 2)) == 3
    files = snap(tmp_path, 3).files()
    assert sorted(dv_uid(d, snake=True) for d in files.column("deletion_vector").to_pylist()) == [
        "",
        dv_uid(dv2),
    ]
    files = snap(tmp_path).files()
    assert [dv_uid(d, snake=True) for d in files.column("deletion_vector").to_pylist()] == [dv_uid(dv2)]


def test_dv_update_pattern(tmp_path: Path) -> None:
    """A DV update removes the old (path, dv) and adds (path, new dv) in one commit."""
    dv1, dv2 = dv("aaaaaaaaaaaaaaaaaaaa"), dv("aaaaaaaaaaaaaaaaaaaa", offset=40)
    W.write_table(
        tmp_path,
        [
            base_commit(add("f.parquet")),
            [remove("f.parquet"), add("f.parquet", deletion_vector=dv1)],
            [remove("f.parquet", deletion_vector=dv1), add("f.parquet", deletion_vector=dv2)],
        ],
    )
    files = snap(tmp_path).files()
    assert files.num_rows == 1
    (d,) = files.column("deletion_vector").to_pylist()
    assert d == {
        "storage_type": "u",
        "path_or_inline_dv": "aaaaaaaaaaaaaaaaaaaa",
        "offset": 40,
        "size_in_bytes": 36,
        "cardinality": 1,
    }
    assert sorted(dv_uid(t) for t in snap(tmp_path).tombstones().column("deletionVector").to_pylist()) == sorted(
        ["", dv_uid(dv1)]
    )


def test_dv_offset_is_part_of_the_key(tmp_path: Path) -> None:
    W.write_table(
        tmp_path,
        [
            base_commit(add("f.parquet", deletion_vector=dv("x" * 20, offset=1))),
            [add("f.parquet", deletion_vector=dv("x" * 20, offset=2))],
            [remove("f.parquet", deletion_vector=dv("x" * 20, offset=1))],
        ],
    )
    assert snap(tmp_path, 1).num_files == 2
    files = snap(tmp_path).files()
    assert [d["offset"] for d in files.column("deletion_vector").to_pylist()] == [2]


def test_encoded_and_plain_spelling_are_one_file(tmp_path: Path) -> None:
    W.write_table(tmp_path, [base_commit(add("a%20b.parquet")), [remove("a b.parquet")]])
    assert live(tmp_path, 0) == ["a%20b.parquet"]
    assert live(tmp_path) == []
    W.write_commit(tmp_path, 2, [add("a b.parquet")])
    W.write_commit(tmp_path, 3, [remove("a%20b.parquet")])
    assert live(tmp_path, 2) == ["a b.parquet"]
    assert live(tmp_path) == []


def test_paths_are_decoded_exactly_once(tmp_path: Path) -> None:
    # a%2520b names the object "a%20b"; a%20b names "a b": two different files
    W.write_table(tmp_path, [base_commit(add("a%2520b.parquet"), add("a%20b.parquet")), [remove("a%20b.parquet")]])
    assert live(tmp_path, 0) == ["a%20b.parquet", "a%2520b.parquet"]
    assert live(tmp_path) == ["a%2520b.parquet"]
    W.write_commit(tmp_path, 2, [remove("a%2520b.parquet")])
    assert live(tmp_path) == []


def test_double_encoded_partition_directory(tmp_path: Path) -> None:
    raw = "p=2023-11-05%2000%253A00%253A00/part-0.parquet"
    W.write_table(
        tmp_path,
        [
            base_commit(add(raw, {"p": "2023-11-05 00:00:00"})),
            # the same object key ("p=2023-11-05 00%3A00%3A00/part-0.parquet") spelled with less escaping
            [remove("p=2023-11-05 00%253A00%253A00/part-0.parquet")],
        ],
    )
    assert live(tmp_path, 0) == [raw]
    assert live(tmp_path) == []
    # decoding twice would make this (a different object: "00:00:00") cancel the add as well
    W.write_commit(tmp_path, 2, [add(raw, {"p": "2023-11-05 00:00:00"})])
    W.write_commit(tmp_path, 3, [remove("p=2023-11-05 00:00:00/part-0.parquet")])
    assert live(tmp_path) == [raw]


def test_file_uri_remove_cancels_absolute_add(tmp_path: Path) -> None:
    root = str(tmp_path)
    W.write_table(
        tmp_path,
        [
            base_commit(add(f"{root}/in.parquet"), add("/elsewhere/out.parquet"), add("rel.parquet")),
            [remove(f"file:{root}/in.parquet"), remove("file:/elsewhere/out.parquet")],
            [remove(f"file://{root}/rel.parquet")],
        ],
    )
    assert live(tmp_path, 0) == sorted([f"{root}/in.parquet", "/elsewhere/out.parquet", "rel.parquet"])
    assert live(tmp_path, 1) == ["rel.parquet"]
    assert live(tmp_path) == []


def test_table_root_with_characters_that_need_escaping(tmp_path: Path) -> None:
    root = tmp_path / "my table %25 #1"
    rs = str(root)
    W.write_table(
        root,
        [
            base_commit(add("file:" + quote(rs) + "/a%20b.parquet"), add(quote(rs) + "/c.parquet"), add("d.parquet")),
            [remove("a%20b.parquet"), remove("c.parquet"), remove("file:" + quote(rs) + "/d.parquet")],
        ],
    )
    assert len(live(root, 0)) == 3
    assert live(root) == []


def test_absolute_add_under_root_and_relative_remove(tmp_path: Path) -> None:
    root = str(tmp_path)
    W.write_table(tmp_path, [base_commit(add(f"file:{quote(root)}/a%20b.parquet")), [remove("a%20b.parquet")]])
    assert len(live(tmp_path, 0)) == 1
    assert live(tmp_path) == []


OPTIONAL_ADD_FIELDS: list[tuple[str, Any, str, Any]] = [
    ("tags", {"INSERTION_TIME": "1"}, "tags", [("INSERTION_TIME", "1")]),
    (
        "deletionVector",
        dv("z" * 20),
        "deletion_vector",
        {"storage_type": "u", "path_or_inline_dv": "z" * 20, "offset": 1, "size_in_bytes": 36, "cardinality": 1},
    ),
    ("baseRowId", 7, "base_row_id", 7),
    ("defaultRowCommitVersion", 3, "default_row_commit_version", 3),
    ("clusteringProvider", "liquid", "clustering_provider", "liquid"),
]


@pytest.mark.parametrize(
    ("field", "value", "column", "expected"), OPTIONAL_ADD_FIELDS, ids=[f[0] for f in OPTIONAL_ADD_FIELDS]
)
@pytest.mark.parametrize("with_stats", [False, True], ids=["no-stats", "stats"])
def test_optional_add_field_survives_replay(
    tmp_path: Path, field: str, value: Any, column: str, expected: Any, with_stats: bool
) -> None:
    """Each optional add field, alone beside the required ones (stats or not), must reach files()."""
    body = add("f.parquet", stats=K.stats(1) if with_stats else None)["add"]
    body[field] = value
    W.write_table(tmp_path, [base_commit({"add": body})])
    (row,) = snap(tmp_path).files().to_pylist()
    assert row[column] == expected


REMOVE_SHAPES: list[tuple[str, dict[str, Any]]] = [
    ("bare", remove("f.parquet", deletion_timestamp=K.T0 + 1)),
    ("dv", remove("f.parquet", deletion_timestamp=K.T0 + 1, deletion_vector=dv("c" * 20))),
    ("extended", remove("f.parquet", deletion_timestamp=K.T0 + 1, partition_values={}, size=5)),
]


@pytest.mark.parametrize(("shape", "rm"), REMOVE_SHAPES, ids=[s for s, _ in REMOVE_SHAPES])
def test_tombstone_keeps_its_fields(tmp_path: Path, shape: str, rm: dict[str, Any]) -> None:
    """Tombstones keep deletionTimestamp (VACUUM's retention clock) and the DV of their key."""
    body = add("f.parquet", deletion_vector=rm["remove"].get("deletionVector"))
    W.write_table(tmp_path, [base_commit(body), [rm]])
    (row,) = snap(tmp_path).tombstones().to_pylist()
    assert row["path"] == "f.parquet"
    assert row["deletionTimestamp"] == K.T0 + 1
    assert row["dataChange"] is True
    if shape == "dv":
        assert row["deletionVector"] is not None and row["deletionVector"]["pathOrInlineDv"] == "c" * 20
    if shape == "extended":
        assert (row["extendedFileMetadata"], row["partitionValues"], row["size"]) == (True, [], 5)


def test_tombstones_keep_their_fields(tmp_path: Path) -> None:
    W.write_table(
        tmp_path,
        [
            [
                commit_info("CREATE TABLE"),
                protocol(),
                metadata(partition_columns=("p",)),
                add("a.parquet", {"p": "y"}),
                add("b.parquet", {"p": "x"}),
                add("c.parquet", {"p": "y"}, deletion_vector=dv("c" * 20)),
            ],
            [
                remove("a.parquet", deletion_timestamp=K.T0 + 1),
                remove("b.parquet", deletion_timestamp=K.T0 + 2, partition_values={"p": "x"}, size=5),
                remove("c.parquet", deletion_timestamp=K.T0 + 3, deletion_vector=dv("c" * 20)),
            ],
        ],
    )
    rows = {r["path"]: r for r in snap(tmp_path).tombstones().to_pylist()}
    assert rows["a.parquet"]["deletionTimestamp"] == K.T0 + 1
    assert rows["b.parquet"]["deletionTimestamp"] == K.T0 + 2
    assert rows["b.parquet"]["extendedFileMetadata"] is True
    assert rows["b.parquet"]["partitionValues"] == [("p", "x")]
    assert rows["b.parquet"]["size"] == 5
    assert rows["c.parquet"]["deletionTimestamp"] == K.T0 + 3
    assert rows["c.parquet"]["deletionVector"]["pathOrInlineDv"] == "c" * 20


def test_unknown_actions_and_fields_are_ignored(tmp_path: Path) -> None:
    W.write_table(
        tmp_path,
        [
            base_commit(add("a.parquet")),
            [
                {"futureAction": {"path": "a.parquet"}},
                {"cdc": {"path": "_change_data/c.parquet", "partitionValues": {}, "size": 1, "dataChange": False}},
                {"add": {**add("b.parquet")["add"], "someNewField": {"x": [1]}}},
                {"checkpointMetadata": {"version": 1}},
            ],
        ],
    )
    assert live(tmp_path) == ["a.parquet", "b.parquet"]


# ---------------------------------------------------------------------------------------------- non-file actions


def test_latest_protocol_and_metadata_win(tmp_path: Path) -> None:
    W.write_table(
        tmp_path,
        [
            base_commit(add("a.parquet")),
            [metadata(configuration={"k": "1"}, name="first")],
            [protocol(1, 4), metadata(configuration={"k": "2"}, name="second")],
            [add("b.parquet")],
        ],
    )
    s = snap(tmp_path)
    assert s.metadata.name == "second"
    assert s.configuration == {"k": "2"}
    assert (s.protocol.min_reader_version, s.protocol.min_writer_version) == (1, 4)
    s1 = snap(tmp_path, 1)
    assert s1.metadata.name == "first" and s1.protocol.min_writer_version == 2


def test_txn_latest_wins_not_max(tmp_path: Path) -> None:
    W.write_table(
        tmp_path,
        [
            base_commit(txn("app", 5, K.T0), txn("other", 1, K.T0)),
            [txn("app", 9, K.T0)],
            [txn("app", 3, K.T0)],
        ],
    )
    s = snap(tmp_path)
    assert s.app_version("app") == 3
    assert s.app_version("other") == 1
    assert s.app_version("missing") is None
    assert snap(tmp_path, 1).app_version("app") == 9


def test_domain_metadata_removed_deletes(tmp_path: Path) -> None:
    W.write_table(
        tmp_path,
        [
            base_commit(domain("delta.rowTracking", '{"rowIdHighWaterMark":1}'), domain("user.a", "x")),
            [domain("user.a", "", removed=True), domain("delta.rowTracking", '{"rowIdHighWaterMark":9}')],
            [domain("user.a", "back")],
        ],
    )
    d1 = snap(tmp_path, 1).domain_metadata
    assert set(d1) == {"delta.rowTracking"}
    assert d1["delta.rowTracking"].configuration == '{"rowIdHighWaterMark":9}'
    d2 = snap(tmp_path).domain_metadata
    assert d2["user.a"] == A.DomainMetadata("user.a", "back", False)


def test_commit_info_is_the_target_commits(tmp_path: Path) -> None:
    W.write_table(tmp_path, [base_commit(), [commit_info("DELETE"), remove("x")], [add("y.parquet")]])
    assert snap(tmp_path, 1).commit_info["operation"] == "DELETE"  # type: ignore[index]
    assert snap(tmp_path).commit_info is None  # version 2 has no commitInfo


# ---------------------------------------------------------------------------------------------- checkpoints


def _checkpoint_table(root: Path) -> None:
    """Versions 0-3 in JSON, a Spark-shaped checkpoint at 2, and commits 3-4 after it."""
    W.write_table(
        root,
        [
            base_commit(add("a.parquet"), add("b%20c.parquet"), txn("app", 1, K.T0), domain("user.d", "1")),
            [add("d.parquet", deletion_vector=dv("d" * 20)), remove("gone.parquet")],
            [add("e.parquet"), metadata(configuration={"v": "2"})],
            [remove("b c.parquet"), add("gone.parquet"), txn("app", 0, K.T0), domain("user.d", "", removed=True)],
            [remove("d.parquet", deletion_vector=dv("d" * 20)), add("d.parquet")],
        ],
    )
    W.write_checkpoint(
        root,
        2,
        [
            protocol(),
            metadata(configuration={"v": "2"}),
            txn("app", 1, K.T0),
            domain("user.d", "1"),
            add("a.parquet", data_change=False),
            add("b%20c.parquet", data_change=False),
            add("d.parquet", deletion_vector=dv("d" * 20), data_change=False),
            add("e.parquet", data_change=False),
            remove("gone.parquet"),
        ],
    )


def test_checkpoint_then_commits(tmp_path: Path) -> None:
    _checkpoint_table(tmp_path)
    s = snap(tmp_path)
    assert s.segment.checkpoint is not None and s.segment.checkpoint.version == 2
    assert W.paths_of(s.files()) == ["a.parquet", "d.parquet", "e.parquet", "gone.parquet"]
    assert [d for d in s.files().column("deletion_vector").to_pylist()] == [None] * 4
    assert s.app_version("app") == 0
    assert s.domain_metadata == {}
    assert s.configuration == {"v": "2"}
    assert sorted(
        (p, dv_uid(d))
        for p, d in zip(
            s.tombstones().column("path").to_pylist(), s.tombstones().column("deletionVector").to_pylist(), strict=True
        )
    ) == [("b c.parquet", ""), ("d.parquet", dv_uid(dv("d" * 20)))]


def test_checkpoint_state_equals_json_state(tmp_path: Path) -> None:
    _checkpoint_table(tmp_path)
    from_checkpoint = snap(tmp_path)
    for f in (tmp_path / "_delta_log").glob("*.checkpoint.parquet"):
        f.unlink()
    from_json = snap(tmp_path)
    assert from_json.segment.checkpoint is None
    assert W.paths_of(from_checkpoint.files()) == W.paths_of(from_json.files())
    assert from_checkpoint.txns == from_json.txns
    assert from_checkpoint.domain_metadata == from_json.domain_metadata
    assert from_checkpoint.metadata == from_json.metadata
    assert from_checkpoint.protocol == from_json.protocol


def test_checkpoint_version_itself(tmp_path: Path) -> None:
    _checkpoint_table(tmp_path)
    s = snap(tmp_path, 2)
    assert s.segment.checkpoint is not None and s.segment.commits == ()
    assert W.paths_of(s.files()) == ["a.parquet", "b%20c.parquet", "d.parquet", "e.parquet"]
    assert s.app_version("app") == 1
    assert set(s.domain_metadata) == {"user.d"}


# ---------------------------------------------------------------------------------------------- model check

NAMES = ["a.parquet", "a b.parquet", "a%b.parquet", "p=1/x y.parquet", "d%20e.parquet"]
DVS: list[dict[str, Any] | None] = [None, dv("q" * 20, offset=3), dv("inline", storage_type="i", offset=None)]

ops = st.lists(
    st.lists(
        st.tuples(
            st.sampled_from(["add", "remove"]),
            st.integers(0, len(NAMES) - 1),
            st.integers(0, len(DVS) - 1),
            st.integers(0, 2),  # spelling: relative encoded, file: URI, absolute path
        ),
        min_size=1,
        max_size=4,
    ),
    min_size=1,
    max_size=7,
)


def _spell(root: str, name: str, how: int) -> str:
    if how == 1:
        return "file:" + quote(f"{root}/{name}")
    if how == 2:
        return quote(f"{root}/{name}")
    return quote(name)


@SETTINGS
@given(ops, st.data())
def test_replay_matches_a_simple_model(commits: list[list[tuple[str, int, int, int]]], data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rs = str(root)
        model_live: dict[tuple[str, str], str] = {}
        model_tomb: dict[tuple[str, str], str] = {}
        states: list[tuple[dict[tuple[str, str], str], dict[tuple[str, str], str]]] = []
        W.write_commit(root, 0, base_commit())
        states.append(({}, {}))
        for v, commit in enumerate(commits, start=1):
            actions = []
            for op, ni, di, how in commit:
                raw = _spell(rs, NAMES[ni], how)
                key = (NAMES[ni], dv_uid(DVS[di]))
                if op == "add":
                    actions.append(add(raw, deletion_vector=DVS[di]))
                    model_live[key] = raw
                    model_tomb.pop(key, None)
                else:
                    actions.append(remove(raw, deletion_vector=DVS[di]))
                    model_live.pop(key, None)
                    model_tomb[key] = raw
            W.write_commit(root, v, actions)
            states.append((dict(model_live), dict(model_tomb)))

        def check(s: Any, v: int) -> None:
            exp_live, exp_tomb = states[v]
            files = s.files()
            got = sorted(
                zip(
                    files.column("path").to_pylist(),
                    [dv_uid(d, snake=True) for d in files.column("deletion_vector").to_pylist()],
                    strict=True,
                )
            )
            assert got == sorted((raw, k[1]) for k, raw in exp_live.items())
            tombs = s.tombstones()
            got_t = sorted(
                zip(
                    tombs.column("path").to_pylist(),
                    [dv_uid(d) for d in tombs.column("deletionVector").to_pylist()],
                    strict=True,
                )
            )
            assert got_t == sorted((raw, k[1]) for k, raw in exp_tomb.items())
            assert s.num_files == len(exp_live)

        latest = len(commits)
        check(snap(root), latest)
        # a checkpoint at some version, written from the model, must give the same states after it
        cp = data.draw(st.integers(0, latest))
        cp_live, cp_tomb = states[cp]
        W.write_checkpoint(
            root,
            cp,
            [protocol(), metadata()]
            + [
                add(raw, deletion_vector=DVS[[dv_uid(d) for d in DVS].index(k[1])], data_change=False)
                for k, raw in cp_live.items()
            ]
            + [remove(raw, deletion_vector=DVS[[dv_uid(d) for d in DVS].index(k[1])]) for k, raw in cp_tomb.items()],
        )
        s = snap(root)
        assert s.segment.checkpoint is not None and s.segment.checkpoint.version == cp
        check(s, latest)
        v = data.draw(st.integers(0, latest))
        check(snap(root, v), v)


# ---------------------------------------------------------------------------------------------- pure pieces


def test_canonical_path() -> None:
    assert canonical_path("a%20b") == "a b"
    assert canonical_path("a%2520b") == "a%20b"
    assert canonical_path("file:/t/x%20y.parquet", "/t") == "x y.parquet"
    assert canonical_path("file:///t/x.parquet", "/t") == "x.parquet"
    assert canonical_path("/t/x.parquet", "/t/") == "x.parquet"
    assert canonical_path("/other/x.parquet", "/t") == "/other/x.parquet"
    assert canonical_path("/tx/x.parquet", "/t") == "/tx/x.parquet"  # a sibling directory is not under /t
    assert canonical_path("s3://b/t/p%3D1/x.parquet", "s3://b/t") == "p=1/x.parquet"
    assert canonical_path("file:/t/x.parquet", "file:/t") == "x.parquet"
    assert not needs_canonicalizing("plain/name.parquet")
    assert needs_canonicalizing("/abs") and needs_canonicalizing("a%20") and needs_canonicalizing("s3:x")


def test_file_key() -> None:
    assert file_key("a%20b", None) == "a b"
    assert file_key("a b", "uX@1") == "a b\x00uX@1"
    assert file_key("a%20b", "uX@1") == file_key("a b", "uX@1")
    assert file_key("a", "u1") != file_key("a", "u2") != file_key("a", None)


def _commit(version: int, *actions: dict[str, Any]) -> CommitData:
    import orjson

    return CommitData(version, f"_delta_log/{version:020d}.json", b"".join(orjson.dumps(a) + b"\n" for a in actions))


def test_replay_over_an_arrow_base() -> None:
    from deltalog.core.state.columns import ADD_SCHEMA, table_from_dicts

    base_adds = table_from_dicts([add("a.parquet")["add"], add("b%20c.parquet")["add"]], ADD_SCHEMA)
    base = BaseState(
        version=4,
        source="_delta_log/00000000000000000004.checkpoint.parquet",
        protocol=A.Protocol(1, 2),
        metadata=A.Metadata(id="t"),
        adds=base_adds,
    )
    result = replay(base, [_commit(5, remove("b c.parquet"), add("z.parquet")), _commit(6, commit_info())], "/t")
    assert result.version == 6
    assert result.protocol_source == base.source
    assert result.commit_info is not None and result.commit_info["operation"] == "WRITE"
    adds = result.files.adds()
    assert sorted(adds.column("path").to_pylist()) == ["a.parquet", "z.parquet"]
    assert result.files.num_files == 2
    assert result.files.tombstones().column("path").to_pylist() == ["b c.parquet"]


def test_live_txns_retention() -> None:
    txns = {"old": A.Txn("old", 1, 1000), "new": A.Txn("new", 2, 9000), "none": A.Txn("none", 3, None)}
    assert live_txns(txns, None, 10_000) == txns
    assert live_txns(txns, 5000, 10_000) == {"new": txns["new"]}
    assert live_txns(txns, 20_000, 10_000) == {"old": txns["old"], "new": txns["new"]}


def test_repeats_reads_a_string_column_as_a_pattern_repeated() -> None:
    from deltalog.core.state.columns import array_of, repeats

    keys = array_of(["p", "q", "p", "q", "p", "q"], pa.string())
    assert repeats(keys, ("p", "q"))
    assert repeats(keys.slice(2, 4), ("p", "q"))  # a slice reads only its own rows
    assert not repeats(keys, ("q", "p"))
    assert not repeats(keys.slice(1, 4), ("p", "q"))
    assert not repeats(array_of(["pq", "", "pq", ""], pa.string()), ("p", "q"))  # same bytes, other lengths
    assert not repeats(keys, ("p", "q", "p", "q"))  # six is no multiple of four
    assert repeats(array_of([], pa.string()), ()) and not repeats(keys, ())


def test_add_table_schema_is_the_checkpoint_add_shape() -> None:
    from deltalog.core.state.columns import ADD_SCHEMA

    cp_add = W.CHECKPOINT_SCHEMA.field("add").type
    for f in ADD_SCHEMA:
        assert cp_add.field(f.name).type == f.type, f.name
    assert isinstance(ADD_SCHEMA, pa.Schema)


# ---------------------------------------------------------------------------------------------- checkpoint shapes

V2 = protocol(3, 7, ["v2Checkpoint"], ["v2Checkpoint"])
UUID = "3a0d65cd-4056-49b8-937b-95f9e3ee90e5"


def _v2_log(root: Path) -> None:
    W.write_table(
        root,
        [
            [commit_info(), V2, metadata(), add("a.parquet", stats=K.stats(1)), add("b.parquet"), txn("app", 1, K.T0)],
            [remove("b.parquet"), add("c.parquet", deletion_vector=dv("c" * 20))],
            [add("d.parquet")],
        ],
    )


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_v2_checkpoint_with_sidecars(tmp_path: Path, fmt: str) -> None:
    _v2_log(tmp_path)
    s1 = W.write_sidecar(
        tmp_path,
        f"00000000000000000001.checkpoint.0000000001.0000000002.{UUID}.parquet",
        [add("a.parquet", stats=K.stats(1), data_change=False), remove("b.parquet")],
    )
    s2 = W.write_sidecar(
        tmp_path,
        f"00000000000000000001.checkpoint.0000000002.0000000002.{UUID}.parquet",
        [add("c.parquet", deletion_vector=dv("c" * 20), data_change=False)],
    )
    W.write_v2_checkpoint(tmp_path, 1, [V2, metadata(), txn("app", 1, K.T0), s1, s2], UUID, fmt)
    s = snap(tmp_path)
    assert s.segment.checkpoint is not None and s.segment.checkpoint.version == 1
    assert W.paths_of(s.files()) == ["a.parquet", "c.parquet", "d.parquet"]
    assert {r["path"]: r["stats"] for r in s.files(stats=True).to_pylist()} == {
        "a.parquet": K.stats(1),
        "c.parquet": None,
        "d.parquet": None,
    }
    assert W.paths_of(s.tombstones()) == ["b.parquet"]
    assert s.app_version("app") == 1
    assert s.reader_features == ("v2Checkpoint",)
    # at the checkpoint version itself, the DV'd file is present with its DV
    s1_files = snap(tmp_path, 1).files().to_pylist()
    dvs = {r["path"]: r["deletion_vector"] for r in s1_files}
    assert dvs["c.parquet"] is not None and dvs["c.parquet"]["path_or_inline_dv"] == "c" * 20


def test_v2_json_checkpoint_with_inline_files(tmp_path: Path) -> None:
    _v2_log(tmp_path)
    W.write_v2_checkpoint(
        tmp_path,
        1,
        [
            V2,
            metadata(),
            add("a.parquet", stats=K.stats(1), data_change=False),
            remove("b.parquet"),
            add("c.parquet", deletion_vector=dv("c" * 20), data_change=False),
        ],
        UUID,
    )
    s = snap(tmp_path)
    assert s.segment.checkpoint is not None and s.segment.checkpoint.kind.value == "uuid_checkpoint"
    assert W.paths_of(s.files()) == ["a.parquet", "c.parquet", "d.parquet"]
    assert {r["path"]: r["stats"] for r in s.files(stats=True).to_pylist()}["a.parquet"] == K.stats(1)
    assert W.paths_of(s.tombstones()) == ["b.parquet"]


def test_v2_checkpoint_wins_over_classic_at_the_same_version(tmp_path: Path) -> None:
    _v2_log(tmp_path)
    # the classic one is deliberately wrong: if it were chosen, "zzz.parquet" would show up
    W.write_checkpoint(tmp_path, 1, [V2, metadata(), add("zzz.parquet")])
    W.write_v2_checkpoint(
        tmp_path, 1, [V2, metadata(), add("a.parquet"), add("c.parquet", deletion_vector=dv("c" * 20))], UUID
    )
    assert live(tmp_path) == ["a.parquet", "c.parquet", "d.parquet"]


def test_multipart_checkpoint(tmp_path: Path) -> None:
    W.write_table(
        tmp_path,
        [base_commit(add("a.parquet"), add("b.parquet")), [add("c.parquet"), remove("a.parquet")], [add("d.parquet")]],
    )
    W.write_checkpoint(
        tmp_path,
        1,
        [protocol(), metadata(), add("b.parquet"), remove("a.parquet")],
        name="00000000000000000001.checkpoint.0000000001.0000000002.parquet",
    )
    W.write_checkpoint(
        tmp_path,
        1,
        [add("c.parquet"), txn("app", 3, K.T0)],
        name="00000000000000000001.checkpoint.0000000002.0000000002.parquet",
    )
    s = snap(tmp_path)
    assert s.segment.checkpoint is not None and len(s.segment.checkpoint.files) == 2
    assert W.paths_of(s.files()) == ["b.parquet", "c.parquet", "d.parquet"]
    assert W.paths_of(s.tombstones()) == ["a.parquet"]
    assert s.app_version("app") == 3


def test_checkpoint_in_another_writers_shape(tmp_path: Path) -> None:
    """No remove/txn/domainMetadata columns, int64 DV fields plus maxRowIndex, stats only as stats_parsed."""
    import pyarrow.parquet as pq

    W.write_table(
        tmp_path,
        [
            [
                protocol(),
                metadata({"id": "long", "p": "string"}, ["p"]),
                add("a.parquet", {"p": "x"}, stats=K.stats(1, id=(1, 1))),
            ],
            [add("b.parquet", {"p": "y"}, deletion_vector=dv("b" * 20))],
        ],
    )
    dvt = pa.struct(
        [
            ("storageType", pa.string()),
            ("pathOrInlineDv", pa.string()),
            ("offset", pa.int64()),
            ("sizeInBytes", pa.int64()),
            ("cardinality", pa.int64()),
            ("maxRowIndex", pa.int64()),
        ]
    )
    stats_t = pa.struct(
        [
            ("numRecords", pa.int64()),
            ("minValues", pa.struct([("id", pa.int64())])),
            ("maxValues", pa.struct([("id", pa.int64())])),
        ]
    )
    add_t = pa.struct(
        [
            ("path", pa.string()),
            ("partitionValues", pa.map_(pa.string(), pa.string())),
            ("size", pa.int64()),
            ("modificationTime", pa.int64()),
            ("dataChange", pa.bool_()),
            ("deletionVector", dvt),
            ("stats_parsed", stats_t),
        ]
    )
    prot_t, meta_t = W.CHECKPOINT_SCHEMA.field("protocol").type, W.CHECKPOINT_SCHEMA.field("metaData").type
    table = pa.table(
        {
            "protocol": pa.array([W._struct_value(prot_t, protocol()["protocol"]), None, None, None], prot_t),
            "metaData": pa.array(
                [None, W._struct_value(meta_t, metadata({"id": "long", "p": "string"}, ["p"])["metaData"]), None, None],
                meta_t,
            ),
            "add": pa.array(
                [
                    None,
                    None,
                    {
                        "path": "a.parquet",
                        "partitionValues": [("p", "x")],
                        "size": 100,
                        "modificationTime": K.T0,
                        "dataChange": False,
                        "deletionVector": None,
                        "stats_parsed": {"numRecords": 1, "minValues": {"id": 1}, "maxValues": {"id": 1}},
                    },
                    {
                        "path": "b.parquet",
                        "partitionValues": [("p", "y")],
                        "size": 100,
                        "modificationTime": K.T0,
                        "dataChange": False,
                        "stats_parsed": None,
                        "deletionVector": {
                            "storageType": "u",
                            "pathOrInlineDv": "b" * 20,
                            "offset": 1,
                            "sizeInBytes": 36,
                            "cardinality": 1,
                            "maxRowIndex": 9,
                        },
                    },
                ],
                add_t,
            ),
        }
    )
    pq.write_table(table, tmp_path / "_delta_log" / "00000000000000000001.checkpoint.parquet")
    s = snap(tmp_path)
    assert s.segment.checkpoint is not None
    rows = {r["path"]: r for r in s.files(stats=True).to_pylist()}
    assert sorted(rows) == ["a.parquet", "b.parquet"]
    import orjson

    assert orjson.loads(rows["a.parquet"]["stats"]) == {"numRecords": 1, "minValues": {"id": 1}, "maxValues": {"id": 1}}
    assert rows["b.parquet"]["deletion_vector"]["offset"] == 1
    assert s.tombstones().num_rows == 0
    # the int64 DV offset from the checkpoint and the JSON offset make one key
    W.write_commit(tmp_path, 2, [remove("b.parquet", deletion_vector=dv("b" * 20))])
    assert live(tmp_path) == ["a.parquet"]


def test_stats_rebuilt_from_stats_parsed_keep_json_types(tmp_path: Path) -> None:
    """Stats re-serialised from ``stats_parsed`` must read like Spark's ``stats`` JSON: decimals are JSON
    numbers, dates are ``YYYY-MM-DD``, counts are integers."""
    import decimal

    import orjson
    import pyarrow.parquet as pq

    cols = {"id": "long", "amount": "decimal(10,2)", "day": "date"}
    W.write_table(tmp_path, [[protocol(), metadata(cols), add("a.parquet")]])
    values_t = pa.struct([("id", pa.int64()), ("amount", pa.decimal128(10, 2)), ("day", pa.date32())])
    stats_t = pa.struct(
        [
            ("numRecords", pa.int64()),
            ("minValues", values_t),
            ("maxValues", values_t),
            ("nullCount", pa.struct([("id", pa.int64()), ("amount", pa.int64()), ("day", pa.int64())])),
        ]
    )
    add_t = pa.struct(
        [
            ("path", pa.string()),
            ("partitionValues", pa.map_(pa.string(), pa.string())),
            ("size", pa.int64()),
            ("modificationTime", pa.int64()),
            ("dataChange", pa.bool_()),
            ("stats_parsed", stats_t),
        ]
    )
    import datetime as dt

    lo = {"id": 1, "amount": decimal.Decimal("1.50"), "day": dt.date(2024, 1, 1)}
    hi = {"id": 9, "amount": decimal.Decimal("20.25"), "day": dt.date(2024, 2, 1)}
    prot_t, meta_t = W.CHECKPOINT_SCHEMA.field("protocol").type, W.CHECKPOINT_SCHEMA.field("metaData").type
    table = pa.table(
        {
            "protocol": pa.array([W._struct_value(prot_t, protocol()["protocol"]), None, None], prot_t),
            "metaData": pa.array([None, W._struct_value(meta_t, metadata(cols)["metaData"]), None], meta_t),
            "add": pa.array(
                [
                    None,
                    None,
                    {
                        "path": "a.parquet",
                        "partitionValues": [],
                        "size": 100,
                        "modificationTime": K.T0,
                        "dataChange": False,
                        "stats_parsed": {
                            "numRecords": 3,
                            "minValues": lo,
                            "maxValues": hi,
                            "nullCount": {"id": 0, "amount": 1, "day": 0},
                        },
                    },
                ],
                add_t,
            ),
        }
    )
    pq.write_table(table, tmp_path / "_delta_log" / "00000000000000000000.checkpoint.parquet")
    (row,) = snap(tmp_path).files(stats=True).to_pylist()
    stats = orjson.loads(row["stats"])
    assert stats["numRecords"] == 3
    assert stats["minValues"] == {"id": 1, "amount": 1.5, "day": "2024-01-01"}
    assert stats["maxValues"] == {"id": 9, "amount": 20.25, "day": "2024-02-01"}
    assert stats["nullCount"] == {"id": 0, "amount": 1, "day": 0}
