"""Many writers, one local table: every blind append lands exactly once, at a dense run of versions.

This is the scale-out case (user need 6): N independent processes append to the same table at the same
moment. ``put_if_absent`` must let exactly one writer take each version, the losers must re-check and move
on without raising (blind appends never conflict), and the result must be a log another engine (delta-rs,
through the ``deltalake`` package) reads the same way. The workers start together behind a barrier so
the contention is real, not staggered by process start-up.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from deltalog import DeltaLog
from deltalog import actions as A

SCHEMA = pa.schema([("id", pa.int64()), ("date", pa.string())])
PARTITIONS = ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"]

# (txnId, version, attempts) per commit
Committed = list[tuple[str, int, int]]


def _add(writer: int, i: int) -> A.Add:
    date = PARTITIONS[(writer + i) % len(PARTITIONS)]
    return A.Add(
        path=f"date={date}/w{writer:02d}-{i:03d}.parquet",
        partition_values={"date": date},
        size=100 + i,
        modification_time=1_700_000_000_000 + i,
        data_change=True,
    )


def _append(log: DeltaLog, writer: int, commits: int) -> Committed:
    done: Committed = []
    for i in range(commits):
        result = log.start_transaction().commit([_add(writer, i)], operation="WRITE")
        assert result.version is not None
        done.append((result.txn_id, result.version, result.attempts))
    return done


def _process_writer(root: str, writer: int, commits: int, barrier: Any, out: Any) -> None:
    """Runs in a spawned process; reports (writer, commits, error text or None, seconds spent) on ``out``."""
    started = time.monotonic()
    try:
        log = DeltaLog.for_table(root)
        barrier.wait(timeout=300)
        started = time.monotonic()
        out.put((writer, _append(log, writer, commits), None, time.monotonic() - started))
    except BaseException as exc:
        out.put((writer, [], f"{type(exc).__name__}: {exc}", time.monotonic() - started))


def _create(root: Path) -> None:
    DeltaLog.for_table(root).create(SCHEMA, partition_columns=["date"])


def _check_table(root: Path, by_writer: dict[int, Committed], writers: int, commits: int) -> None:
    total = writers * commits
    assert sorted(by_writer) == list(range(writers))
    assert all(len(done) == commits for done in by_writer.values())

    reported = {version: txn_id for done in by_writer.values() for txn_id, version, _ in done}
    assert sorted(reported) == list(range(1, total + 1)), "versions are not dense and unique"
    for done in by_writer.values():  # each writer's own commits come out in increasing versions
        versions = [v for _, v, _ in done]
        assert versions == sorted(versions)

    # Automatic checkpoints (every delta.checkpointInterval=10 versions) may sit beside the commits; temp
    # files and anything else may not.
    entries = sorted(os.listdir(root / "_delta_log"))
    commit_files = [e for e in entries if e.endswith(".json")]
    others = [e for e in entries if not e.endswith(".json")]
    assert commit_files == [f"{v:020d}.json" for v in range(total + 1)], "missing commits in _delta_log"
    assert all(e == "_last_checkpoint" or ".checkpoint." in e for e in others), f"stray files: {others}"

    in_log: dict[int, dict[str, Any]] = {}
    for v in range(1, total + 1):
        lines = [orjson.loads(x) for x in (root / "_delta_log" / f"{v:020d}.json").read_bytes().splitlines()]
        infos = [x["commitInfo"] for x in lines if "commitInfo" in x]
        assert len(infos) == 1
        assert len([x for x in lines if "add" in x]) == 1
        in_log[v] = infos[0]
    txn_ids = Counter(info["txnId"] for info in in_log.values())
    assert len(txn_ids) == total and set(txn_ids.values()) == {1}, "a txnId is missing or appears twice"
    assert {v: info["txnId"] for v, info in in_log.items()} == reported
    assert all(info["isBlindAppend"] is True and info["readVersion"] < v for v, info in in_log.items())

    snap = DeltaLog.for_table(root).snapshot()
    assert snap.version == total
    assert snap.num_files == total
    expected_paths = {_add(w, i).path for w in range(writers) for i in range(commits)}
    assert set(snap.files().column("path").to_pylist()) == expected_paths

    from deltalake import DeltaTable  # imported here: spawned workers import this module and do not need it

    dt = DeltaTable(str(root))
    assert dt.version() == total
    adds = dt.get_add_actions(flatten=True)
    assert adds.num_rows == total
    assert set(adds.column("path").to_pylist()) == expected_paths


def test_sixteen_processes_blind_append_four_hundred_commits(tmp_path: Path) -> None:
    writers, commits = 16, 25
    root = tmp_path / "table"
    _create(root)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(writers)
    out = ctx.Queue()
    procs = [ctx.Process(target=_process_writer, args=(str(root), w, commits, barrier, out)) for w in range(writers)]
    started = time.monotonic()
    for p in procs:
        p.start()
    by_writer: dict[int, Committed] = {}
    errors: list[str] = []
    busy: list[float] = []
    try:
        for _ in range(writers):
            writer, done, error, seconds = out.get(timeout=400)
            by_writer[writer] = done
            busy.append(seconds)
            if error is not None:
                errors.append(f"writer {writer}: {error}")
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
                p.join()
    elapsed = time.monotonic() - started
    assert errors == []
    assert [p.exitcode for p in procs] == [0] * writers
    _check_table(root, by_writer, writers, commits)
    retried = sum(1 for done in by_writer.values() for _, _, attempts in done if attempts > 1)
    assert retried > 0, "the writers never contended: the test did not exercise concurrent commits"
    print(
        f"\n{writers} processes x {commits} blind appends: {elapsed:.1f}s in all, "
        f"{max(busy):.1f}s from the barrier to the last commit, {retried} commits needed a retry"
    )


def test_sixteen_threads_share_one_deltalog(tmp_path: Path) -> None:
    writers, commits = 16, 10
    root = tmp_path / "table"
    _create(root)
    log = DeltaLog.for_table(root)
    barrier = threading.Barrier(writers)
    results: queue.Queue[tuple[int, Committed, str | None]] = queue.Queue()

    def work(writer: int) -> None:
        try:
            barrier.wait(timeout=60)
            results.put((writer, _append(log, writer, commits), None))
        except BaseException as exc:  # reported to the test thread; never leaks from the worker
            results.put((writer, [], f"{type(exc).__name__}: {exc}"))

    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)
    by_writer: dict[int, Committed] = {}
    errors: list[str] = []
    while not results.empty():
        writer, done, error = results.get_nowait()
        by_writer[writer] = done
        if error is not None:
            errors.append(f"writer {writer}: {error}")
    assert errors == []
    _check_table(root, by_writer, writers, commits)
    # The shared instance's cached snapshot followed every commit made through it.
    shared = log.snapshot()
    assert (shared.version, shared.num_files) == (writers * commits, writers * commits)
