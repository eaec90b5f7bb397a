"""Damaged, odd and hostile logs: the right error type, a message that names the file (and line), or a
clean read that ignores what a reader must ignore. Reading never changes a byte on disk."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from deltalog import (
    CorruptLogError,
    DeltaLog,
    ProtocolError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from deltalog.core.log.last_checkpoint import checksum

from . import logkit as K
from . import logwriter as W
from .logkit import add, commit_info, metadata, protocol, remove

LOG = "_delta_log"


def c(v: int) -> str:
    return W.commit_name(v)


def good_start(root: Path, extra: int = 1) -> None:
    """Version 0 plus ``extra`` well-formed commits, each adding one file."""
    W.basic_table(root, extra_commits=extra)


def snapshot(root: Path, version: int | None = None) -> Any:
    return DeltaLog.for_table(root).snapshot(version=version)


def files(root: Path) -> list[str]:
    return W.paths_of(snapshot(root).files())


# ---------------------------------------------------------------------------------------------- builders
# Each builder writes one damaged (or merely odd) table. The scenario tests below use them, and the last
# test reads every one of them and checks that nothing under the table root changed.


def build_malformed_json(root: Path) -> None:
    good_start(root)
    W.write_commit(root, 2, b'{"commitInfo":{"operation":"WRITE"}}\n{"add":{"path":"x.parquet","size":1\n')


def build_array_line(root: Path) -> None:
    good_start(root)
    W.write_commit(root, 2, b'[{"add":{"path":"x.parquet"}}]\n')


def build_add_without_path(root: Path) -> None:
    good_start(root)
    body = {k: v for k, v in add("x.parquet")["add"].items() if k != "path"}
    W.write_commit(root, 2, [commit_info(), add("y.parquet"), {"add": body}])


def build_remove_without_path(root: Path) -> None:
    good_start(root)
    W.write_commit(root, 2, [commit_info(), {"remove": {"deletionTimestamp": 1, "dataChange": True}}])


def build_add_with_bad_field_type(root: Path) -> None:
    good_start(root)
    W.write_commit(root, 2, [commit_info(), {"add": {**add("x.parquet")["add"], "size": "ten bytes"}}])


def build_add_with_bad_deletion_vector(root: Path) -> None:
    good_start(root)
    W.write_commit(root, 2, [commit_info(), {"add": {**add("x.parquet")["add"], "deletionVector": "uabc"}}])


def build_bad_protocol_action(root: Path) -> None:
    good_start(root)
    W.write_commit(root, 2, [commit_info(), {"protocol": {"minWriterVersion": 2}}])


def build_bad_metadata_action(root: Path) -> None:
    good_start(root)
    W.write_commit(root, 2, [commit_info(), {"metaData": "not an object"}])


def build_txn_with_string_version(root: Path) -> None:
    good_start(root)
    W.write_commit(root, 2, [commit_info(), {"txn": {"appId": "job", "version": "7", "lastUpdated": K.T0}}])


def build_empty_commit(root: Path) -> None:
    good_start(root)
    W.write_commit(root, 2, b"")


def build_blank_commit(root: Path) -> None:
    good_start(root)
    W.write_commit(root, 2, b"\n  \n")


def build_truncated_checkpoint(root: Path) -> None:
    """The checkpoint at 2 is cut in half and commits 0-1 were cleaned up: nothing else can rebuild 2 or 3."""
    build_truncated_checkpoint_commits_kept(root)
    for v in (0, 1):
        (root / LOG / c(v)).unlink()


def build_truncated_checkpoint_commits_kept(root: Path) -> None:
    good_start(root, extra=3)
    cp = W.write_checkpoint(root, 2, [protocol(), metadata(), *[add(f"part-{i}.parquet") for i in range(3)]])
    data = cp.read_bytes()
    cp.write_bytes(data[: len(data) // 2])


def build_torn_last_checkpoint(root: Path) -> None:
    good_start(root, extra=3)
    W.write_checkpoint(root, 2, [protocol(), metadata(), *[add(f"part-{i}.parquet") for i in range(3)]])
    hint = orjson.dumps({"version": 2, "size": 5, "sizeInBytes": 1234, "numOfAddFiles": 3})
    W.write_last_checkpoint(root, hint[: len(hint) // 2])


def build_hint_names_deleted_checkpoint(root: Path) -> None:
    good_start(root, extra=5)
    W.write_checkpoint(root, 2, [protocol(), metadata(), *[add(f"part-{i}.parquet") for i in range(3)]])
    W.write_last_checkpoint(root, {"version": 4, "size": 7})  # checkpoint 4 was deleted


def build_hint_checksum_mismatch(root: Path) -> None:
    good_start(root, extra=3)
    W.write_checkpoint(root, 2, [protocol(), metadata(), *[add(f"part-{i}.parquet") for i in range(3)]])
    hint: dict[str, Any] = {"version": 2, "size": 5}
    hint["checksum"] = checksum({"version": 3, "size": 5})
    W.write_last_checkpoint(root, hint)


def build_hint_beyond_latest(root: Path) -> None:
    good_start(root, extra=2)
    hint: dict[str, Any] = {"version": 40, "size": 5}
    hint["checksum"] = checksum(hint)
    W.write_last_checkpoint(root, hint)


def build_missing_commit_in_middle(root: Path) -> None:
    good_start(root, extra=4)
    (root / LOG / c(2)).unlink()


def build_truncated_log_without_checkpoint(root: Path) -> None:
    good_start(root, extra=4)
    for v in (0, 1):
        (root / LOG / c(v)).unlink()


def build_unknown_reader_feature(root: Path) -> None:
    good_start(root)
    W.write_commit(root, 2, [commit_info(), protocol(3, 7, ["fancyNewThing"], ["fancyNewThing"])])


def build_reader_version_4(root: Path) -> None:
    good_start(root)
    W.write_commit(root, 2, [commit_info(), protocol(4, 7, [], [])])


STRAY_FILES = [
    ".00000000000000000003.json.tmp",
    ".00000000000000000003.json.7d6f0a4e-3c1b-4b7e-9a59-2f6d1c9e8b10.tmp",
    "_commit_abc.json.tmp",
    "_commit_7d6f0a4e-3c1b-4b7e-9a59-2f6d1c9e8b10.json.tmp",
    ".00000000000000000001.json.crc",
    "00000000000000000003.json.tmp",
    "foo.txt",
    "00000000000000000009.checkpoint.parquet.crc",
    "0000000000000000009.json",
    "000000000000000000009.json",
]


def build_stray_files(root: Path) -> None:
    good_start(root, extra=2)
    log = root / LOG
    for name in STRAY_FILES:
        (log / name).write_bytes(
            b'{"add":{"path":"stray.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}\n'
        )
    (log / ".tmp").mkdir()
    (log / ".tmp" / "00000000000000000005.json").write_bytes(b"{}")
    (log / "00000000000000000007.json").mkdir()  # a directory with a version-like name
    (log / "_sidecars").mkdir()
    (log / "_staged_commits").mkdir()
    (log / "_staged_commits" / "00000000000000000003.3f1f7c2a-0000-4000-8000-000000000000.json").write_bytes(b"{}")


def build_non_ascii_digit_names(root: Path) -> None:
    good_start(root, extra=2)
    log = root / LOG
    (log / ("\u0660" * 19 + "\u0663.json")).write_bytes(b"{}\n")
    (log / ("\uff10" * 19 + "\uff19.checkpoint.parquet")).write_bytes(b"PAR1")


def build_zero_byte_checkpoint(root: Path) -> None:
    good_start(root, extra=3)
    (root / LOG / "00000000000000000002.checkpoint.parquet").write_bytes(b"")


def build_incomplete_multipart(root: Path) -> None:
    good_start(root, extra=3)
    W.write_checkpoint(
        root,
        2,
        [protocol(), metadata(), add("part-0.parquet")],
        name="00000000000000000002.checkpoint.0000000001.0000000002.parquet",
    )


def build_missing_protocol(root: Path) -> None:
    W.write_table(root, [[commit_info(), metadata(), add("a.parquet")], [add("b.parquet")]])


def build_missing_metadata(root: Path) -> None:
    W.write_table(root, [[commit_info(), protocol(), add("a.parquet")], [add("b.parquet")]])


def build_crlf_and_no_final_newline(root: Path) -> None:
    W.write_commit(root, 0, b"\r\n".join(orjson.dumps(a) for a in [protocol(), metadata(), add("a.parquet")]))
    W.write_commit(root, 1, orjson.dumps(add("b.parquet")) + b"\r\n\r\n")


def build_checkpoint_and_tombstones(root: Path) -> None:
    """A healthy table with a checkpoint, a hint, removes and a DV (read-only check)."""
    good_start(root, extra=3)
    W.write_commit(root, 4, [remove("part-0.parquet"), add("dv.parquet", deletion_vector=K.dv("v" * 20))])
    W.write_checkpoint(root, 3, [protocol(), metadata(), *[add(f"part-{i}.parquet") for i in range(4)]])
    hint: dict[str, Any] = {"version": 3, "size": 6}
    hint["checksum"] = checksum(hint)
    W.write_last_checkpoint(root, hint)


V2 = protocol(3, 7, ["v2Checkpoint"], ["v2Checkpoint"])
V2_UUID = "3a0d65cd-4056-49b8-937b-95f9e3ee90e5"
V2_NAME = f"00000000000000000002.checkpoint.{V2_UUID}.json"
BAD_V2_LINES = {
    "array": b"[1,2]",
    "string-add": b'{"add":"part-0.parquet"}',
    "add-without-path": b'{"add":{"partitionValues":{},"size":1,"modificationTime":1,"dataChange":false}}',
    "torn": b'{"add":{"path":"part-0.parq',
}


def _v2_with_line(root: Path, line: bytes) -> None:
    """A JSON V2 checkpoint at 2 with one damaged last line; commits 0-1 were cleaned up, so it is needed."""
    W.write_table(
        root,
        [
            [commit_info(), V2, metadata(), add("part-0.parquet")],
            [add("part-1.parquet")],
            [add("part-2.parquet")],
            [add("part-3.parquet")],
        ],
    )
    path = W.write_v2_checkpoint(root, 2, [V2, metadata(), *[add(f"part-{i}.parquet") for i in range(3)]], V2_UUID)
    path.write_bytes(path.read_bytes() + line + b"\n")
    for v in (0, 1):
        (root / LOG / c(v)).unlink()


def build_v2_checkpoint_array_line(root: Path) -> None:
    _v2_with_line(root, BAD_V2_LINES["array"])


def build_v2_checkpoint_string_add(root: Path) -> None:
    _v2_with_line(root, BAD_V2_LINES["string-add"])


def build_v2_checkpoint_add_without_path(root: Path) -> None:
    _v2_with_line(root, BAD_V2_LINES["add-without-path"])


def build_v2_checkpoint_torn_line(root: Path) -> None:
    _v2_with_line(root, BAD_V2_LINES["torn"])


def build_v2_checkpoint_missing_sidecar(root: Path) -> None:
    W.write_table(root, [[commit_info(), V2, metadata(), add("part-0.parquet")], [add("part-1.parquet")]])
    sidecar = {
        "sidecar": {
            "path": f"00000000000000000001.checkpoint.0000000001.0000000001.{V2_UUID}.parquet",
            "sizeInBytes": 100,
            "modificationTime": K.T0,
        }
    }
    W.write_v2_checkpoint(root, 1, [V2, metadata(), sidecar], V2_UUID)


def build_v2_with_sidecars(root: Path) -> None:
    """Healthy: a UUID-named parquet V2 checkpoint whose files live in a sidecar (read-only check)."""
    W.write_table(
        root,
        [[commit_info(), V2, metadata(), add("part-0.parquet")], [add("part-1.parquet")], [remove("part-0.parquet")]],
    )
    side = W.write_sidecar(
        root,
        f"00000000000000000001.checkpoint.0000000001.0000000001.{V2_UUID}.parquet",
        [add("part-0.parquet"), add("part-1.parquet")],
    )
    W.write_v2_checkpoint(root, 1, [V2, metadata(), side], V2_UUID, fmt="parquet")


def build_column_mapped_partitions(root: Path) -> None:
    """Healthy: column mapping by name with a partition column (read-only check)."""
    meta = metadata(
        {"id": "long", "p": "string"},
        ["p"],
        {"delta.columnMapping.mode": "name"},
        physical={"id": "col-a", "p": "col-b"},
    )
    W.write_table(
        root,
        [[commit_info(), protocol(2, 5), meta, add("x.parquet", {"col-b": "x"})], [add("y.parquet", {"col-b": None})]],
    )


BUILDERS: dict[str, Callable[[Path], None]] = {
    name.removeprefix("build_"): fn for name, fn in dict(globals()).items() if name.startswith("build_")
}


# ---------------------------------------------------------------------------------------------- JSON damage


def _corrupt(root: Path, version: int | None = None) -> CorruptLogError:
    with pytest.raises(CorruptLogError) as exc:
        snapshot(root, version)
    assert isinstance(exc.value, ProtocolError)
    return exc.value


def test_malformed_json_line(tmp_path: Path) -> None:
    build_malformed_json(tmp_path)
    err = _corrupt(tmp_path)
    assert err.path is not None and err.path.endswith(f"{LOG}/{c(2)}")
    assert err.line == 2
    assert c(2) in str(err) and "line 2" in str(err)
    assert snapshot(tmp_path, 1).num_files == 2  # versions before the damage still read


def test_json_array_line(tmp_path: Path) -> None:
    build_array_line(tmp_path)
    err = _corrupt(tmp_path)
    assert (err.line, c(2) in str(err), "line 1" in str(err)) == (1, True, True)


def test_add_without_path(tmp_path: Path) -> None:
    build_add_without_path(tmp_path)
    err = _corrupt(tmp_path)
    assert err.line == 3
    assert c(2) in str(err) and "line 3" in str(err) and "path" in str(err)


def test_remove_without_path(tmp_path: Path) -> None:
    build_remove_without_path(tmp_path)
    err = _corrupt(tmp_path)
    assert err.line == 2 and c(2) in str(err) and "line 2" in str(err)


def test_add_with_bad_field_type(tmp_path: Path) -> None:
    build_add_with_bad_field_type(tmp_path)
    err = _corrupt(tmp_path)
    assert c(2) in str(err)
    assert err.line == 2 and "line 2" in str(err)


def test_add_with_bad_deletion_vector(tmp_path: Path) -> None:
    build_add_with_bad_deletion_vector(tmp_path)
    err = _corrupt(tmp_path)
    assert err.line == 2 and c(2) in str(err) and "deletionVector" in str(err)


def test_bad_protocol_action(tmp_path: Path) -> None:
    build_bad_protocol_action(tmp_path)
    err = _corrupt(tmp_path)
    assert err.line == 2 and c(2) in str(err) and "minReaderVersion" in str(err)


def test_bad_metadata_action(tmp_path: Path) -> None:
    build_bad_metadata_action(tmp_path)
    err = _corrupt(tmp_path)
    assert err.line == 2 and c(2) in str(err)


def test_txn_with_non_integer_version(tmp_path: Path) -> None:
    """A txn version is a long; a string there is a damaged log, not an application version of "7"."""
    build_txn_with_string_version(tmp_path)
    err = _corrupt(tmp_path)
    assert err.line == 2 and c(2) in str(err) and "line 2" in str(err)


@pytest.mark.parametrize("builder", [build_empty_commit, build_blank_commit], ids=["0-byte", "blank"])
def test_empty_commit_in_segment(tmp_path: Path, builder: Callable[[Path], None]) -> None:
    builder(tmp_path)
    err = _corrupt(tmp_path)
    assert c(2) in str(err)
    assert err.path is not None and err.path.endswith(c(2))
    assert snapshot(tmp_path, 1).version == 1


def test_crlf_and_missing_final_newline_are_fine(tmp_path: Path) -> None:
    build_crlf_and_no_final_newline(tmp_path)
    assert files(tmp_path) == ["a.parquet", "b.parquet"]


# ---------------------------------------------------------------------------------------------- checkpoints


CP2 = "00000000000000000002.checkpoint.parquet"


def test_truncated_checkpoint(tmp_path: Path) -> None:
    build_truncated_checkpoint(tmp_path)
    err = _corrupt(tmp_path)
    assert CP2 in str(err)
    assert err.path is not None and err.path.endswith(CP2)
    with pytest.raises(CorruptLogError, match=CP2):
        snapshot(tmp_path, 2)


def test_truncated_checkpoint_never_passes_silently(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """With the older commits still there, the engine may refuse (naming the checkpoint) or rebuild from the
    commits; if it rebuilds, the state must be exact and the skipped checkpoint must be reported."""
    build_truncated_checkpoint_commits_kept(tmp_path)
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        try:
            s = snapshot(tmp_path)
        except CorruptLogError as err:
            assert CP2 in str(err)
            return
    assert s.version == 3
    assert files(tmp_path) == [f"part-{i}.parquet" for i in range(4)]
    assert any(CP2 in r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)


@pytest.mark.parametrize("kind", sorted(BAD_V2_LINES))
def test_bad_line_in_v2_json_checkpoint(tmp_path: Path, kind: str) -> None:
    """A damaged line of a JSON checkpoint is a CorruptLogError naming the checkpoint and the line."""
    _v2_with_line(tmp_path, BAD_V2_LINES[kind])
    err = _corrupt(tmp_path)
    assert V2_NAME in str(err)
    assert err.path is not None and err.path.endswith(V2_NAME)
    n_lines = 1 + 2 + 3 + 1  # checkpointMetadata, protocol + metaData, three adds, the bad line
    assert err.line == n_lines and f"line {n_lines}" in str(err)


def test_v2_checkpoint_missing_sidecar(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Commits 0-1 are all there: the checkpoint whose sidecar is gone is skipped, with a warning naming it."""
    build_v2_checkpoint_missing_sidecar(tmp_path)
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        s = snapshot(tmp_path)
    assert s.version == 1 and s.segment.checkpoint is None and s.num_files == 2
    assert "_sidecars/00000000000000000001.checkpoint.0000000001.0000000001." in caplog.text


def test_v2_checkpoint_missing_sidecar_without_commits_is_corrupt(tmp_path: Path) -> None:
    build_v2_checkpoint_missing_sidecar(tmp_path)
    (tmp_path / "_delta_log" / c(0)).unlink()
    err = _corrupt(tmp_path)
    assert "_sidecars/00000000000000000001.checkpoint.0000000001.0000000001." in str(err)


def test_zero_byte_checkpoint_is_skipped(tmp_path: Path) -> None:
    build_zero_byte_checkpoint(tmp_path)
    s = snapshot(tmp_path)
    assert s.segment.checkpoint is None
    assert s.version == 3 and s.num_files == 4


def test_incomplete_multipart_checkpoint_is_skipped(tmp_path: Path) -> None:
    build_incomplete_multipart(tmp_path)
    s = snapshot(tmp_path)
    assert s.segment.checkpoint is None
    assert s.num_files == 4


# ---------------------------------------------------------------------------------------------- _last_checkpoint


def _loads_with_warning(root: Path, caplog: pytest.LogCaptureFixture, expected_files: int) -> Any:
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        s = snapshot(root)
    assert s.num_files == expected_files
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings, "a doubtful _last_checkpoint must be reported"
    assert any("_last_checkpoint" in r.getMessage() for r in warnings), [r.getMessage() for r in warnings]
    return s


def test_torn_last_checkpoint(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    build_torn_last_checkpoint(tmp_path)
    s = _loads_with_warning(tmp_path, caplog, expected_files=4)
    assert s.version == 3
    assert s.segment.checkpoint is not None and s.segment.checkpoint.version == 2  # found by listing


def test_last_checkpoint_names_deleted_checkpoint(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    build_hint_names_deleted_checkpoint(tmp_path)
    s = _loads_with_warning(tmp_path, caplog, expected_files=6)
    assert s.version == 5
    assert s.segment.checkpoint is not None and s.segment.checkpoint.version == 2


def test_last_checkpoint_checksum_mismatch(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    build_hint_checksum_mismatch(tmp_path)
    s = _loads_with_warning(tmp_path, caplog, expected_files=4)
    assert s.segment.checkpoint is not None and s.segment.checkpoint.version == 2


def test_last_checkpoint_beyond_latest(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    build_hint_beyond_latest(tmp_path)
    s = _loads_with_warning(tmp_path, caplog, expected_files=3)
    assert s.version == 2


def test_healthy_builders_read(tmp_path: Path) -> None:
    build_v2_with_sidecars(tmp_path / "v2")
    assert files(tmp_path / "v2") == ["part-1.parquet"]
    build_column_mapped_partitions(tmp_path / "cm")
    assert {r["path"]: dict(r["partition_values"]) for r in snapshot(tmp_path / "cm").files().to_pylist()} == {
        "x.parquet": {"p": "x"},
        "y.parquet": {"p": None},
    }


def test_good_last_checkpoint_is_used_quietly(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    build_checkpoint_and_tombstones(tmp_path)
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        s = snapshot(tmp_path)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert s.segment.checkpoint is not None and s.segment.checkpoint.version == 3
    assert files(tmp_path) == ["dv.parquet", "part-1.parquet", "part-2.parquet", "part-3.parquet"]


# ---------------------------------------------------------------------------------------------- segment damage


def test_missing_commit_in_the_middle(tmp_path: Path) -> None:
    build_missing_commit_in_middle(tmp_path)
    err = _corrupt(tmp_path)
    assert c(2) in str(err)
    assert err.path is not None and err.path.endswith(c(2))
    assert snapshot(tmp_path, 1).num_files == 2
    with pytest.raises(CorruptLogError):
        snapshot(tmp_path, 3)


def test_truncated_log_without_checkpoint(tmp_path: Path) -> None:
    """Commits 2..4 survive, 0..1 and every checkpoint are gone: nothing can be rebuilt."""
    build_truncated_log_without_checkpoint(tmp_path)
    err = _corrupt(tmp_path)
    assert c(0) in str(err)


def test_missing_protocol(tmp_path: Path) -> None:
    build_missing_protocol(tmp_path)
    err = _corrupt(tmp_path)
    assert "protocol" in str(err)
    assert c(0) in str(err) and c(1) in str(err)


def test_missing_metadata(tmp_path: Path) -> None:
    build_missing_metadata(tmp_path)
    err = _corrupt(tmp_path)
    assert "metaData" in str(err)
    assert c(0) in str(err) and c(1) in str(err)


# ---------------------------------------------------------------------------------------------- protocol


def test_unknown_reader_feature(tmp_path: Path) -> None:
    build_unknown_reader_feature(tmp_path)
    with pytest.raises(UnsupportedFeatureError) as exc:
        snapshot(tmp_path)
    assert "fancyNewThing" in str(exc.value)
    assert c(2) in str(exc.value)
    assert exc.value.feature == "fancyNewThing"


def test_reader_version_4(tmp_path: Path) -> None:
    build_reader_version_4(tmp_path)
    with pytest.raises(UnsupportedFeatureError) as exc:
        snapshot(tmp_path)
    assert "4" in str(exc.value) and c(2) in str(exc.value)


# ---------------------------------------------------------------------------------------------- stray files


def test_stray_files_are_ignored(tmp_path: Path) -> None:
    build_stray_files(tmp_path)
    log = DeltaLog.for_table(tmp_path)
    assert log.latest_version() == 2
    s = log.snapshot()
    assert s.version == 2
    assert files(tmp_path) == ["part-0.parquet", "part-1.parquet", "part-2.parquet"]
    assert [e.version for e in log.history()] == [2, 1, 0]
    with pytest.raises(VersionNotFoundError):
        log.snapshot(version=3)


def test_non_ascii_digit_names_are_ignored(tmp_path: Path) -> None:
    build_non_ascii_digit_names(tmp_path)
    log = DeltaLog.for_table(tmp_path)
    assert log.latest_version() == 2
    assert files(tmp_path) == ["part-0.parquet", "part-1.parquet", "part-2.parquet"]


# ---------------------------------------------------------------------------------------------- read-only


def _read_everything(root: Path) -> list[str]:
    """Every read the engine offers, each allowed to fail; returns what failed.

    Any exception is tolerated here (typed errors are the scenario tests' business): this is about the disk.
    """
    failed: list[str] = []
    log = DeltaLog.for_table(root)
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("latest", lambda: log.latest_version()),
        ("earliest", lambda: log.earliest_version()),
        ("snapshot", lambda: log.snapshot()),
        ("files", lambda: log.snapshot().files(stats=True)),
        ("where", lambda: log.snapshot().files(where={"p": "x"})),
        ("tombstones", lambda: log.snapshot().tombstones()),
        ("v0", lambda: log.snapshot(version=0).files()),
        ("v1", lambda: log.snapshot(version=1).files()),
        ("history", lambda: list(log.history())),
        ("as of", lambda: log.snapshot(timestamp=K.T0 + 10**9)),
        ("version_at", lambda: log.version_at(K.T0 + 10**9, allow_after_latest=True)),
    ]
    for name, step in steps:
        try:
            step()
        except Exception:
            failed.append(name)
    return failed


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_reading_changes_nothing_on_disk(tmp_path: Path, name: str) -> None:
    root = tmp_path / "table"
    BUILDERS[name](root)
    before = W.tree_state(root)
    _read_everything(root)
    _read_everything(root)  # twice: a second reader must not find anything left by the first
    after = W.tree_state(root)
    assert sorted(after) == sorted(before), "files appeared or vanished under the table root"
    for path, (data, mtime) in before.items():
        assert after[path][0] == data, f"{path} changed"
        assert after[path][1] == mtime, f"{path} was touched"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table"], "something was written beside the table"
