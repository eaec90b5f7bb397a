"""Early conflict detection: long-running writers stop at their next check, not at commit time.

Ordering between writers is driven by events, never by sleeping; the store's "now" is moved with an injected
monotonic clock or by setting intent files' modification times with ``os.utime``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog import ConcurrentAppendError, ConcurrentModificationError, DeltaLog, Transaction
from deltalog import actions as A
from deltalog.storage.local import LocalLogStore
from deltalog.table.commit.declared_intents import list_intents

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])
P, Q = "2026-01-01", "2026-01-02"
FULL_RUN = 100


def make_table(root: Path) -> Path:
    DeltaLog.for_table(root).create(SCHEMA, partition_columns=["day"])
    return root


def write_file(root: Path, day: str, name: str) -> A.Add:
    rel = f"day={day}/{name}.parquet"
    (root / f"day={day}").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": [1]}), root / rel)
    return A.Add(
        path=rel, partition_values={"day": day}, size=(root / rel).stat().st_size, modification_time=1, data_change=True
    )


def intent_files(root: Path) -> set[str]:
    d = root / "_delta_log" / "_intents"
    return {p.name for p in d.iterdir()} if d.exists() else set()


@dataclass
class JobReport:
    files_written: int
    error: Exception | None
    version: int | None


def long_job(
    root: Path, day: str, tag: str, after_file: Callable[[int], None] = lambda n: None, clock: float | None = None
) -> JobReport:
    """A partition rewrite: declare, then check before each of FULL_RUN files; clean up its files on refusal."""
    log = DeltaLog.for_table(root, clock=(lambda: clock) if clock is not None else time.time)
    txn = log.start_transaction()
    txn.declare_intent(where={"day": day})
    txn.remove_where({"day": day})
    written: list[A.Add] = []
    try:
        for i in range(FULL_RUN):
            txn.check_early()
            written.append(write_file(root, day, f"{tag}-{i}"))
            after_file(len(written))
        version = txn.commit(written, operation="WRITE").version
    except ConcurrentModificationError as exc:
        txn.abort()
        for add in written:
            (root / add.path).unlink()
        return JobReport(len(written), exc, None)
    return JobReport(len(written), None, version)


def test_long_writer_stops_at_its_next_check_after_a_conflicting_commit(tmp_path: Path) -> None:
    root = make_table(tmp_path / "t")
    midway, committed = threading.Event(), threading.Event()
    a_version: list[int | None] = []

    def writer_a() -> None:
        assert midway.wait(60)
        a_version.append(DeltaLog.for_table(root).start_transaction().commit([write_file(root, P, "a")]).version)
        committed.set()

    def b_progress(n: int) -> None:
        if n == 10:
            midway.set()
            assert committed.wait(60)

    thread = threading.Thread(target=writer_a)
    thread.start()
    report = long_job(root, P, "b", b_progress)
    thread.join()
    print(f"writer B stopped after {report.files_written} of {FULL_RUN} files: {report.error}")
    assert report.files_written == 10  # stopped at the next check, not after the full run
    assert isinstance(report.error, ConcurrentAppendError)
    assert report.error.winning_version == a_version[0] == 1
    assert not list((root / f"day={P}").glob("b-*.parquet"))  # B's files are gone
    assert intent_files(root) == set()  # removed on abort
    assert DeltaLog.for_table(root).snapshot().version == 1

    # a writer on another partition is unaffected by A's commit and B's intent
    other = long_job(root, Q, "c")
    assert other.error is None and other.files_written == FULL_RUN and other.version == 2


def test_writers_on_other_partitions_run_concurrently_without_stopping(tmp_path: Path) -> None:
    root = make_table(tmp_path / "t")
    both_declared = threading.Barrier(2)
    reports: dict[str, JobReport] = {}

    def run(day: str, tag: str) -> None:
        reports[tag] = long_job(root, day, tag, lambda n: both_declared.wait() if n == 1 else None)

    threads = [threading.Thread(target=run, args=(d, t)) for d, t in ((P, "p"), (Q, "q"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.error is None and r.files_written == FULL_RUN for r in reports.values())
    assert {r.version for r in reports.values()} == {1, 2}


def declared(root: Path, day: str, clock: float, **kw: float | bool) -> Transaction:
    txn = DeltaLog.for_table(root, clock=lambda: clock).start_transaction()
    txn.declare_intent(where={"day": day}, **kw)  # type: ignore[arg-type]
    return txn


def test_priority_earliest_declared_wins_but_commit_stays_optimistic(tmp_path: Path) -> None:
    root = make_table(tmp_path / "t")
    first = declared(root, P, clock=1000.0)
    second = declared(root, P, clock=2000.0)
    elsewhere = declared(root, Q, clock=3000.0)
    first.check_early()
    elsewhere.check_early()
    with pytest.raises(ConcurrentAppendError, match=first.txn_id) as exc:
        second.check_early()
    assert exc.value.winning_version is None
    # Decision: commit() never consults intents, so the lower-priority writer may still land...
    assert second.commit([write_file(root, P, "second")]).version == 1
    assert f"{second.txn_id}.json" not in intent_files(root)
    # ...and the commit protocol decides: the first writer now learns of it at its next check.
    with pytest.raises(ConcurrentAppendError) as lost:
        first.check_early()
    assert lost.value.winning_version == 1
    first.abort()
    assert elsewhere.commit([write_file(root, Q, "q")]).version == 2
    assert intent_files(root) == set()


def test_compactions_yield_to_data_writes(tmp_path: Path) -> None:
    root = make_table(tmp_path / "t")
    compaction = declared(root, P, clock=1000.0, is_compaction=True)
    writer = declared(root, P, clock=2000.0)
    writer.check_early()
    with pytest.raises(ConcurrentAppendError, match=writer.txn_id):
        compaction.check_early()
    compaction.abort()
    writer.abort()


def test_killed_writers_intent_expires_after_its_timeout_and_blocks_nobody(tmp_path: Path) -> None:
    root = make_table(tmp_path / "t")
    killed = declared(root, P, clock=1000.0, heartbeat_s=10, timeout_s=60)
    handle = killed.intent
    assert handle is not None and handle.running
    handle.stop()  # the process dies: the heartbeat stops, the file stays
    assert not handle.running and f"{killed.txn_id}.json" in intent_files(root)
    path = root / handle.path
    past = time.time() - 30
    os.utime(path, (past, past))  # last heartbeat 30 s ago on the store's clock

    now = [0.0]
    survivor = declared(root, P, clock=2000.0)
    assert survivor.intent is not None
    survivor.intent.monotonic = lambda: now[0]
    survivor.intent.beat()  # the survivor's own heartbeat, at monotonic 0
    with pytest.raises(ConcurrentAppendError, match=killed.txn_id):
        survivor.check_early()  # 30 s old: still live, declared first
    now[0] = 31.0  # 31 s later by the survivor's clock, so the killed intent is 61 s old on the store
    survivor.check_early()
    assert survivor.commit([write_file(root, P, "s")]).version == 1
    assert intent_files(root) == {f"{killed.txn_id}.json"}  # left to expire, then to cleanup

    cleaned = DeltaLog.for_table(root, clock=lambda: time.time() + 60 + 5 * 60 + 1).cleanup(dry_run=False)
    assert cleaned.intents == (handle.path,) and handle.path in cleaned.deleted
    assert intent_files(root) == set()


def test_an_unparsable_intent_counts_as_live_until_it_expires(tmp_path: Path) -> None:
    root = make_table(tmp_path / "t")
    torn = root / "_delta_log" / "_intents" / "torn.json"
    torn.parent.mkdir(parents=True)
    torn.write_bytes(b'{"formatVersion": 1, "txnId": "to')
    writer = declared(root, Q, clock=1000.0)  # another partition: it still cannot know
    with pytest.raises(ConcurrentModificationError, match="cannot be read"):
        writer.check_early()
    listed = {o.txn_id: o for o in list_intents(LocalLogStore(str(root)))}
    assert listed["torn"].record is None and listed["torn"].error
    assert DeltaLog.for_table(root).cleanup(dry_run=False).intents == ()  # live: kept
    past = time.time() - 61
    os.utime(torn, (past, past))
    writer.check_early()  # expired: blocks nobody
    assert writer.commit([write_file(root, Q, "w")]).version == 1
    assert DeltaLog.for_table(root).cleanup(dry_run=True).intents == ()  # expired, but within the margin
    assert torn.exists()


def test_heartbeat_refreshes_the_store_mtime(tmp_path: Path) -> None:
    root = make_table(tmp_path / "t")
    beat = threading.Event()

    class Recording(LocalLogStore):
        def put(self, path: str, data: bytes) -> None:
            super().put(path, data)
            if "_intents" in path:
                beat.set()

    log = DeltaLog(Recording(str(root)), str(root))
    txn = log.start_transaction()
    handle = txn.declare_intent(where={"day": P}, heartbeat_s=0.01, timeout_s=1.0)
    path = root / handle.path
    os.utime(path, (1.0, 1.0))  # as if the last heartbeat were long ago
    assert beat.wait(30)
    assert path.stat().st_mtime > 1.0 and handle.beats >= 1
    txn.abort()
    assert not handle.running and not path.exists()


def test_refused_and_successful_commits_remove_the_intent(tmp_path: Path) -> None:
    root = make_table(tmp_path / "t")
    loser = declared(root, P, clock=1000.0)
    assert DeltaLog.for_table(root).start_transaction().commit([write_file(root, P, "w")]).version == 1
    with pytest.raises(ConcurrentAppendError):
        loser.commit([write_file(root, P, "l")])
    assert loser.intent is not None and not loser.intent.running
    assert intent_files(root) == set()


def test_intent_files_do_not_disturb_snapshots_checkpoints_or_cleanup(tmp_path: Path) -> None:
    root = make_table(tmp_path / "t")
    live = declared(root, P, clock=1000.0)
    (root / "_delta_log" / "_intents" / "torn.json").write_bytes(b"{")
    log = DeltaLog.for_table(root)
    for i in range(3):
        log.start_transaction().commit([write_file(root, Q, f"f{i}")])
    snap = log.snapshot()
    assert snap.version == 3 and snap.files().num_rows == 3
    assert log.checkpoint().version == 3
    assert [p.version for p in log.list_log()] == [0, 1, 2, 3, 3]
    result = DeltaLog.for_table(root, clock=lambda: time.time() + 40 * 86_400).cleanup(dry_run=False)
    assert set(result.deleted) == {f"_delta_log/{v:020d}.json" for v in range(3)} | set(result.intents)
    assert set(result.intents) == {f"_delta_log/_intents/{live.txn_id}.json", "_delta_log/_intents/torn.json"}
    fresh = DeltaLog.for_table(root).snapshot()
    assert fresh.version == 3 and fresh.files().num_rows == 3
    live.abort()


def test_deltalake_reads_and_writes_a_table_with_intent_files(tmp_path: Path) -> None:
    from deltalake import DeltaTable, write_deltalake

    root = tmp_path / "t"
    write_deltalake(str(root), pa.table({"id": [1, 2], "day": [P, Q]}), partition_by=["day"])
    live = declared(root, P, clock=1000.0)
    (root / "_delta_log" / "_intents" / "torn.json").write_bytes(b"{")
    write_deltalake(str(root), pa.table({"id": [3], "day": [Q]}), mode="append")
    write_deltalake(str(root), pa.table({"id": [4], "day": [P]}), mode="overwrite", predicate=f"day = '{P}'")
    dt = DeltaTable(str(root))
    dt.create_checkpoint()
    dt.cleanup_metadata()
    assert dt.version() == 2
    assert sorted(dt.to_pyarrow_table().column("id").to_pylist()) == [2, 3, 4]
    snap = DeltaLog.for_table(root).snapshot()
    ours = sorted(str(root / unquote(p)) for p in snap.files().column("path").to_pylist())
    assert snap.version == 2 and ours == sorted(unquote(u).removeprefix("file://") for u in dt.file_uris())
    assert intent_files(root) == {f"{live.txn_id}.json", "torn.json"}  # delta-rs leaves them alone
    with pytest.raises(ConcurrentAppendError) as exc:
        live.check_early()  # deltalake's overwrite of P is a winner like any other
    assert exc.value.winning_version == 2
    live.abort()


def test_cli_lists_live_and_stale_intents_and_cleanup_deletes_the_expired(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from deltalog.cli.main import cli

    root = make_table(tmp_path / "t")
    live = declared(root, P, clock=1000.0)
    torn = root / "_delta_log" / "_intents" / "torn.json"
    torn.write_bytes(b"{")
    past = time.time() - 10 * 60
    os.utime(torn, (past, past))
    out = CliRunner().invoke(cli, ["intents", str(root), "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    by_id = {r["txn_id"]: r for r in doc["intents"]}
    assert (doc["num_live"], doc["num_stale"]) == (1, 1)
    assert by_id[live.txn_id]["status"] == "live" and by_id[live.txn_id]["predicate"] == f"day = '{P}'"
    assert by_id["torn"]["status"] == "stale" and by_id["torn"]["readable"] is False
    human = CliRunner().invoke(cli, ["intents", str(root)])
    assert human.exit_code == 0 and live.txn_id in human.output and "stale (unreadable)" in human.output
    applied = CliRunner().invoke(cli, ["cleanup", str(root), "--apply", "--json"])
    assert applied.exit_code == 0, applied.output
    assert json.loads(applied.output)["deleted"] == ["_delta_log/_intents/torn.json"]
    assert intent_files(root) == {f"{live.txn_id}.json"}
    live.abort()
