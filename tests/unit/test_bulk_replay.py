"""The Arrow JSON replay gives exactly what the exact replay gives, or hands over to it.

Every case loads the same log twice, once with the bulk path forced (threshold 0) and once with it off,
and compares the whole result: live files, tombstones, protocol, metadata, txns, domains, commitInfo.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest

from deltalog import DeltaLog
from deltalog.core.state import CommitData, parse_bulk
from deltalog.core.state.replay import replay
from deltalog.errors import CorruptLogError, DeltaLogError
from tests.corpus import corpus_entries, table_path
from tests.unit import logkit as K
from tests.unit import logwriter as W


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    rows = table.to_pylist()
    for r in rows:
        for k, v in list(r.items()):
            if isinstance(v, list):
                r[k] = sorted(v)  # maps come back as lists of pairs
    return sorted(rows, key=lambda r: (r["path"], orjson.dumps(r, option=orjson.OPT_SORT_KEYS)))


def _state(path: Path, version: int | None = None) -> dict[str, Any]:
    snap = DeltaLog.for_table(str(path)).snapshot(version)
    return {
        "version": snap.version,
        "files": _rows(snap.files(stats=True)),
        "tombstones": _rows(snap.tombstones()),
        "protocol": snap.protocol,
        "metadata": snap.metadata,
        "txns": snap.txns,
        "domains": snap.domain_metadata,
        "commit_info": snap.commit_info,
    }


def _both(monkeypatch: pytest.MonkeyPatch, path: Path, version: int | None = None) -> tuple[Any, Any, bool]:
    """(bulk, exact, whether the bulk path replayed it)."""
    taken: list[bool] = []
    original = parse_bulk.parse

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(parse_bulk, "parse", spy)
    monkeypatch.setattr(parse_bulk, "MIN_BYTES", 0)
    bulk = _state(path, version)
    monkeypatch.setattr(parse_bulk, "MIN_BYTES", 1 << 62)
    exact = _state(path, version)
    return bulk, exact, any(taken)


def _table(tmp_path: Path, commits: list[list[dict[str, Any]]]) -> Path:
    return W.write_table(tmp_path / "t", commits)


def _start(partitions: tuple[str, ...] = ("p",)) -> list[dict[str, Any]]:
    return [K.commit_info("CREATE"), K.protocol(), K.metadata(partition_columns=partitions)]


def test_plain_appends_take_the_bulk_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    commits = [_start()]
    for v in range(1, 6):
        commits.append(
            [K.commit_info()] + [K.add(f"p=a/f{v}-{i}.parquet", {"p": "a"}, stats='{"numRecords":1}') for i in range(3)]
        )
    bulk, exact, taken = _both(monkeypatch, _table(tmp_path, commits))
    assert taken
    assert bulk == exact
    assert len(bulk["files"]) == 15


def test_newest_action_per_key_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    commits = [
        _start(),
        [K.commit_info(), K.add("p=a/1.parquet", {"p": "a"}, size=1), K.add("p=a/2.parquet", {"p": "a"})],
        [K.commit_info(), K.remove("p=a/1.parquet"), K.add("p=a/3.parquet", {"p": "a"})],
        [K.commit_info(), K.add("p=a/1.parquet", {"p": "a"}, size=9)],  # re-added after its remove
        [K.commit_info(), K.add("p=a/2.parquet", {"p": "a"}, size=7)],  # re-added without a remove
        [K.commit_info(), K.remove("p=a/3.parquet")],
    ]
    bulk, exact, taken = _both(monkeypatch, _table(tmp_path, commits))
    assert taken
    assert bulk == exact
    assert {(f["path"], f["size"]) for f in bulk["files"]} == {("p=a/1.parquet", 9), ("p=a/2.parquet", 7)}
    assert [t["path"] for t in bulk["tombstones"]] == ["p=a/3.parquet"]


def test_deletion_vectors_and_escaped_paths_key_like_the_exact_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commits = [
        _start(),
        [K.commit_info(), K.add("p=a/x%20y.parquet", {"p": "a"}), K.add("p=a/d.parquet", {"p": "a"})],
        [
            K.commit_info(),
            K.remove("p=a/d.parquet"),
            K.add("p=a/d.parquet", {"p": "a"}, deletion_vector=K.dv("ab^-aqEH.-t@S}K{vb[*k^")),
            K.remove("p=a/x y.parquet"),  # the same file as the escaped add
        ],
    ]
    bulk, exact, taken = _both(monkeypatch, _table(tmp_path, commits))
    assert taken
    assert bulk == exact
    assert [f["path"] for f in bulk["files"]] == ["p=a/d.parquet"]


def test_two_partition_columns_and_null_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    commits = [
        [K.commit_info("CREATE"), K.protocol(), K.metadata({"id": "long", "p": "string", "q": "string"}, ("p", "q"))],
        [
            K.commit_info(),
            K.add("p=a/q=b/1.parquet", {"p": "a", "q": "b"}),
            K.add("p=c/q=x/2.parquet", {"p": "c", "q": None}),
        ],
    ]
    bulk, exact, taken = _both(monkeypatch, _table(tmp_path, commits))
    assert taken
    assert bulk == exact


def test_non_file_actions_apply_in_log_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    commits = [
        _start(),
        [K.commit_info(), K.txn("app", 1, 5), K.add("p=a/1.parquet", {"p": "a"})],
        [K.add("p=a/2.parquet", {"p": "a"}), K.commit_info("LATE"), K.txn("app", 2, 6)],  # commitInfo not first
        [K.commit_info(), K.domain("d", '{"x":1}'), K.protocol(1, 3)],
        [K.commit_info("LAST", extra=1), K.add("p=a/3.parquet", {"p": "a"})],
    ]
    bulk, exact, taken = _both(monkeypatch, _table(tmp_path, commits))
    assert taken
    assert bulk == exact
    assert bulk["txns"]["app"].version == 2
    assert bulk["commit_info"]["operation"] == "LAST"


def test_changed_partition_columns_and_tags_go_to_the_exact_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    changed = [
        _start(),
        [K.commit_info(), K.add("p=a/1.parquet", {"p": "a"})],
        [K.commit_info(), K.metadata(partition_columns=()), K.remove("p=a/1.parquet"), K.add("2.parquet")],
    ]
    bulk, exact, taken = _both(monkeypatch, _table(tmp_path / "changed", changed))
    assert not taken
    assert bulk == exact
    tagged = [_start(), [K.commit_info(), K.add("p=a/1.parquet", {"p": "a"}, tags={"k": "v"})]]
    bulk, exact, taken = _both(monkeypatch, _table(tmp_path / "tagged", tagged))
    assert not taken
    assert bulk == exact
    assert bulk["files"][0]["tags"] == [("k", "v")]


def test_partition_values_hold_exactly_the_partition_keys_both_ways(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stray key is dropped, a missing partition key reads as null, keys come in partitionColumns order,
    ``""`` stays ``""``; a remove's absent map stays absent. The bulk parser replays all of it itself."""
    commits = [
        [K.commit_info("CREATE"), K.protocol(), K.metadata({"id": "long"}, ("p", "q"))],
        [
            K.commit_info(),
            K.add("1.parquet", {"p": "a", "q": "b", "zz": "stray"}),
            K.add("2.parquet", {"p": "a"}),
            K.add("3.parquet", {"q": "", "p": None}),
            K.add("4.parquet", {"P": "a", "q": "b"}),
            K.add("5.parquet", {}),
            K.add("6.parquet", {"p": "x", "q": "y"}),
        ],
        [K.commit_info(), K.remove("6.parquet"), K.remove("7.parquet", partition_values={"zz": "1"})],
    ]
    bulk, exact, taken = _both(monkeypatch, _table(tmp_path, commits))
    assert taken
    assert bulk == exact
    raws = []
    for threshold in (0, 1 << 62):  # the log's own keys and values, as a checkpoint is written from them
        monkeypatch.setattr(parse_bulk, "MIN_BYTES", threshold)
        raw = DeltaLog.for_table(str(tmp_path / "t")).snapshot().raw_files()
        raws.append(dict(zip(raw.column("path").to_pylist(), raw.column("partitionValues").to_pylist(), strict=True)))
    assert (
        raws[0]
        == raws[1]
        == {
            "1.parquet": [("p", "a"), ("q", "b")],
            "2.parquet": [("p", "a"), ("q", None)],
            "3.parquet": [("p", None), ("q", "")],
            "4.parquet": [("p", None), ("q", "b")],
            "5.parquet": [("p", None), ("q", None)],
        }
    )
    assert {t["path"]: t["partitionValues"] for t in bulk["tombstones"]} == {
        "6.parquet": None,
        "7.parquet": [("p", None), ("q", None)],
    }


def test_column_mapped_partition_keys_are_physical_both_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    meta = K.metadata({"id": "long"}, ("p",), {"delta.columnMapping.mode": "name"}, physical={"id": "c1", "p": "c2"})
    commits = [
        [K.commit_info("CREATE"), K.protocol(2, 5), meta],
        [K.commit_info(), K.add("a.parquet", {"c2": "x"}), K.add("b.parquet", {"p": "logical", "c2": "y"})],
        [K.commit_info(), K.add("c.parquet", {"p": "logical only"})],
    ]
    path = _table(tmp_path, commits)
    bulk, exact, taken = _both(monkeypatch, path)
    assert taken
    assert bulk == exact
    assert {f["path"]: f["partition_values"] for f in bulk["files"]} == {
        "a.parquet": [("p", "x")],
        "b.parquet": [("p", "y")],
        "c.parquet": [("p", None)],
    }
    # the snapshot's partition pruning looks the same physical key up
    monkeypatch.setattr(parse_bulk, "MIN_BYTES", 0)
    pruned = DeltaLog.for_table(str(path)).snapshot().files(where={"p": "y"})
    assert pruned.column("path").to_pylist() == ["b.parquet"]


def test_a_state_action_on_the_line_of_a_file_action(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    commits = [
        _start(),
        [K.commit_info(), {**K.add("p=a/1.parquet", {"p": "a"}), **K.txn("app", 7, 5)}],
        [
            {**K.commit_info("LAST"), **K.add("p=a/2.parquet", {"p": "a"})},
            {**K.remove("p=a/1.parquet"), **K.domain("d")},
        ],
    ]
    bulk, exact, taken = _both(monkeypatch, _table(tmp_path, commits))
    assert taken
    assert bulk == exact
    assert bulk["txns"]["app"].version == 7
    assert set(bulk["domains"]) == {"d"}
    assert [f["path"] for f in bulk["files"]] == ["p=a/2.parquet"]
    assert bulk["commit_info"]["operation"] == "LAST"


def test_null_actions_are_no_actions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A key whose value is null is no action, on either path (Delta Spark reads such a field as absent)."""
    commits = [
        _start(),
        [K.commit_info(), {"add": None}, {"txn": None}, {"remove": None, **K.add("p=a/1.parquet", {"p": "a"})}],
        [K.commit_info(), {"metaData": None, "protocol": None}, {"domainMetadata": None}],
    ]
    path = _table(tmp_path, commits)
    bulk, exact = _outcome(monkeypatch, path)
    assert bulk == exact
    assert [f["path"] for f in bulk["files"]] == ["p=a/1.parquet"]
    assert bulk["txns"] == {}


def test_commit_info_anywhere_and_spelled_with_escapes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The last commitInfo of the last commit counts, whatever line it is on and however its key is spelled;
    a file action on the commitInfo line counts too."""
    first = (
        b'{"commitInfo":{"operation":"FIRST"},"\\u0061dd":{"path":"p=a/1.parquet","partitionValues":{"p":"a"},'
        b'"size":1,"modificationTime":1,"dataChange":true}}'
    )
    last = b'{"\\u0063ommitInfo":{"operation":"LAST"}}'
    add = orjson.dumps(K.add("p=a/2.parquet", {"p": "a"}))
    commits: list[Any] = [_start(), b"\n".join([first, add, last]) + b"\n"]
    bulk, exact, taken = _both(monkeypatch, _table(tmp_path, commits))
    assert taken
    assert bulk == exact
    assert bulk["commit_info"] == {"operation": "LAST"}
    assert [f["path"] for f in bulk["files"]] == ["p=a/1.parquet", "p=a/2.parquet"]


def test_stats_that_are_not_strings_read_the_same_when_deferred(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first read of the bulk path skips stats; read later, a stats value that is not a string must
    become its JSON text as on the exact path, not a raw Arrow error."""
    odd = K.add("p=a/1.parquet", {"p": "a"})
    odd["add"]["stats"] = {"numRecords": 3}
    commits = [_start(), [K.commit_info(), odd, K.add("p=a/2.parquet", {"p": "a"}, stats='{"numRecords":1}')]]
    bulk, exact, taken = _both(monkeypatch, _table(tmp_path, commits))
    assert taken
    assert bulk == exact
    assert {f["path"]: f["stats"] for f in bulk["files"]} == {
        "p=a/1.parquet": '{"numRecords":3}',
        "p=a/2.parquet": '{"numRecords":1}',
    }


@pytest.mark.parametrize(
    "first, second",
    [
        (b"", b'{"add":{"path":"p=a/\xff.parquet","partitionValues":{"p":"a"}}}'),  # a field the reader reads
        (b"", b'{"add":{"path":"p=a/1.parquet","partitionValues":{"p":"a"},"x":"\xff"}}'),  # one it skips
        (b"\xef\xbb\xbf", orjson.dumps(K.add("p=a/1.parquet", {"p": "a"}))),  # a byte order mark
    ],
    ids=["utf8-read", "utf8-skipped", "bom"],
)
def test_what_orjson_refuses_the_bulk_path_hands_over(
    first: bytes, second: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Arrow's reader takes invalid UTF-8 and a leading byte order mark; orjson does not, so neither may
    the bulk path: the exact path reports the file."""
    from deltalog.core.state import BaseState

    base = BaseState(version=-1, source="_delta_log/00000000000000000000.json")
    commits = [_commit(0, first + _lines(*_start())), _commit(1, second)]
    assert parse_bulk.parse(base, commits) is None
    monkeypatch.setattr(parse_bulk, "MIN_BYTES", 0)
    with pytest.raises(CorruptLogError) as err:
        replay(base, commits, None)
    assert err.value.path == commits[0 if first else 1].path


def test_winners_come_in_the_order_of_their_winning_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Row order is part of the state a checkpoint is written from: both paths give the same one."""
    commits = [
        _start(),
        [K.commit_info(), *(K.add(f"p=a/{i}.parquet", {"p": "a"}) for i in range(4))],
        [K.commit_info(), K.add("p=a/1.parquet", {"p": "a"}, size=7), K.remove("p=a/2.parquet")],
        [
            K.commit_info(),
            K.remove("p=a/9.parquet"),
            K.add("p=a/0.parquet", {"p": "a"}, size=8),
            K.remove("p=a/2.parquet"),
        ],
    ]
    path = _table(tmp_path, commits)
    orders = []
    for threshold in (0, 1 << 62):
        monkeypatch.setattr(parse_bulk, "MIN_BYTES", threshold)
        snap = DeltaLog.for_table(str(path)).snapshot()
        orders.append((snap.files().column("path").to_pylist(), snap.tombstones().column("path").to_pylist()))
    assert (
        orders[0]
        == orders[1]
        == (
            ["p=a/3.parquet", "p=a/1.parquet", "p=a/0.parquet"],
            ["p=a/9.parquet", "p=a/2.parquet"],
        )
    )


def test_a_null_line_never_reaches_the_json_reader(tmp_path: Path) -> None:
    """pyarrow's JSON reader crashes the process on a ``null`` line at the start of one of its blocks: the
    bulk path must hand such a log to the exact path, and both give one outcome (run in a child process,
    which a crash would kill)."""
    import subprocess
    import sys

    path = _table(tmp_path, [b"null\n" + _lines(*_start()), [K.commit_info(), K.add("p=a/1.parquet", {"p": "a"})]])
    script = (
        "from deltalog import DeltaLog\n"
        "from deltalog.errors import DeltaLogError\n"
        "from deltalog.core.state import parse_bulk\n"
        "for threshold in (0, 1 << 62):\n"
        "    parse_bulk.MIN_BYTES = threshold\n"
        "    try:\n"
        f"        print(DeltaLog.for_table({str(path)!r}).snapshot().files().column('path').to_pylist())\n"
        "    except DeltaLogError as exc:\n"
        "        print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    bulk, exact = out.stdout.splitlines()
    assert bulk == exact


def _commit(version: int, data: bytes) -> CommitData:
    return CommitData(version, f"_delta_log/{version:020d}.json", data)


def _lines(*objs: dict[str, Any]) -> bytes:
    return b"\n".join(orjson.dumps(o) for o in objs)


@pytest.mark.parametrize(
    "bad",
    [
        _lines(K.add("a.parquet")) + K.add("b.parquet").__repr__().encode(),  # junk after an object
        orjson.dumps(K.add("a.parquet")) + orjson.dumps(K.add("b.parquet")),  # two objects on one line
        _lines(K.add("a.parquet"), {"add": {"size": 1}}),  # an add without a path
        _lines(K.add("a.parquet")) + b"\n   \n" + orjson.dumps(K.add("b.parquet")),  # a whitespace-only line
        _lines({"add": {"path": "a", "size": "big"}}),  # a wrongly typed field
    ],
)
def test_what_the_bulk_path_cannot_replay_exactly_it_hands_over(bad: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    from deltalog.core.state import BaseState

    start = _lines(K.commit_info(), K.protocol(), K.metadata())
    base = BaseState(version=-1, source="_delta_log/00000000000000000000.json")
    assert parse_bulk.parse(base, [_commit(0, start), _commit(1, bad)]) is None
    monkeypatch.setattr(parse_bulk, "MIN_BYTES", 0)
    try:
        exact = replay(base, [_commit(0, start), _commit(1, bad)], None)
    except CorruptLogError as exc:
        assert exc.path == "_delta_log/00000000000000000001.json"
    else:
        assert exact.version == 1


CORPUS = corpus_entries()


def _outcome(monkeypatch: pytest.MonkeyPatch, path: Path) -> tuple[Any, Any]:
    """(bulk, exact) results, or the error class each raised."""
    out = []
    for threshold in (0, 1 << 62):
        monkeypatch.setattr(parse_bulk, "MIN_BYTES", threshold)
        try:
            out.append(_state(path))
        except DeltaLogError as exc:
            out.append(type(exc).__name__)
    return out[0], out[1]


@pytest.mark.corpus
@pytest.mark.parametrize("entry", CORPUS, ids=[e["name"] for e in CORPUS])
def test_corpus_tables_replay_the_same_both_ways(
    entry: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real logs from Spark, delta-rs and the kernel, bulk-forced against exact: with their checkpoints, and
    with every commit replayed (checkpoints removed; a log cleaned up before them is corrupt both ways)."""
    src = table_path(entry["name"])
    bulk, exact = _outcome(monkeypatch, src)
    assert bulk == exact
    copy = tmp_path / "t"
    shutil.copytree(src, copy)
    for cp in (copy / "_delta_log").glob("*.checkpoint*"):
        cp.unlink()
    (copy / "_delta_log" / "_last_checkpoint").unlink(missing_ok=True)
    bulk, exact = _outcome(monkeypatch, copy)
    assert bulk == exact


def test_a_load_never_imports_pandas(tmp_path: Path) -> None:
    """pyarrow imports pandas (when installed) on a plain ``pa.array``/``pa.scalar``: half a second per
    fresh process. Loads build Arrow without those calls, on both replay paths and through a checkpoint."""
    import subprocess
    import sys

    commits = [_start()] + [
        [K.commit_info()] + [K.add(f"p=a/{v}-{i}.parquet", {"p": "a"}, stats='{"numRecords":1}') for i in range(50)]
        for v in range(1, 40)
    ]
    commits.append([K.commit_info(), K.remove("p=a/1-1.parquet"), K.txn("app", 3)])
    path = _table(tmp_path, commits)
    DeltaLog.for_table(str(path)).checkpoint(version=20)
    script = (
        "import sys\n"
        "from deltalog import DeltaLog\n"
        "from deltalog.core.state import parse_bulk\n"
        "for threshold in (0, 1 << 62):\n"
        "    parse_bulk.MIN_BYTES = threshold\n"
        f"    for v in (None, 10, 30):\n"
        f"        s = DeltaLog.for_table({str(path)!r}).snapshot(v)\n"
        "        s.files(stats=True); s.tombstones(); s.files(where={'p': 'a'})\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr


def test_a_checkpoint_after_a_parse_bulk_keeps_the_deferred_stats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bulk path leaves stats unparsed; a checkpoint written from that state (streamed from the older
    checkpoint plus the replayed tail) must still carry every add's stats."""
    import pyarrow.parquet as pq

    monkeypatch.setattr(parse_bulk, "MIN_BYTES", 0)
    commits = [_start()] + [
        [K.commit_info()] + [K.add(f"p=a/{v}-{i}.parquet", {"p": "a"}, stats=f'{{"numRecords":{v}}}') for i in range(3)]
        for v in range(1, 8)
    ]
    path = _table(tmp_path, commits)
    DeltaLog.for_table(str(path)).checkpoint(version=3)
    log = DeltaLog.for_table(str(path))
    tail = log.snapshot().file_state().tail
    assert tail.num_rows == 12 and tail.column("stats").null_count == 12  # deferred, not parsed yet
    log.checkpoint()
    table = pq.read_table(path / "_delta_log" / f"{7:020d}.checkpoint.parquet", columns=["add"]).column("add")
    rows = [r for r in table.to_pylist() if r is not None]
    assert len(rows) == 21
    assert {r["path"]: r["stats"] for r in rows} == {
        f"p=a/{v}-{i}.parquet": f'{{"numRecords":{v}}}' for v in range(1, 8) for i in range(3)
    }
