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
from deltalog.core import bulk_replay
from deltalog.core.replay import CommitData, replay
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
    original = bulk_replay.replay_commits

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(bulk_replay, "replay_commits", spy)
    monkeypatch.setattr(bulk_replay, "MIN_BYTES", 0)
    bulk = _state(path, version)
    monkeypatch.setattr(bulk_replay, "MIN_BYTES", 1 << 62)
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


def test_foreign_partition_keys_go_to_the_exact_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    commits = [_start(), [K.commit_info(), K.add("P=a/1.parquet", {"P": "a"})]]  # a key the table doesn't have
    bulk, exact, taken = _both(monkeypatch, _table(tmp_path, commits))
    assert not taken
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
    from deltalog.core.replay import BaseState

    start = _lines(K.commit_info(), K.protocol(), K.metadata())
    base = BaseState(version=-1, source="_delta_log/00000000000000000000.json")
    assert bulk_replay.replay_commits(base, [_commit(0, start), _commit(1, bad)], None) is None
    monkeypatch.setattr(bulk_replay, "MIN_BYTES", 0)
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
        monkeypatch.setattr(bulk_replay, "MIN_BYTES", threshold)
        try:
            out.append(_state(path))
        except DeltaLogError as exc:
            out.append(type(exc).__name__)
    return out[0], out[1]


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
        "from deltalog.core import bulk_replay\n"
        "for threshold in (0, 1 << 62):\n"
        "    bulk_replay.MIN_BYTES = threshold\n"
        f"    for v in (None, 10, 30):\n"
        f"        s = DeltaLog.for_table({str(path)!r}).snapshot(v)\n"
        "        s.files(stats=True); s.tombstones(); s.files(where={'p': 'a'})\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr


def test_a_checkpoint_after_a_bulk_replay_keeps_the_deferred_stats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bulk path leaves stats unparsed; a checkpoint written from that state (streamed from the older
    checkpoint plus the replayed tail) must still carry every add's stats."""
    import pyarrow.parquet as pq

    monkeypatch.setattr(bulk_replay, "MIN_BYTES", 0)
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
