"""A writer that never checkpoints holds a bounded snapshot, however many commits it makes.

Issue 13's check: a writer with ``auto_checkpoint=False`` appends 1,000 times while a separate compaction
job checkpoints the table every 50 versions. The writer's cached snapshot advances commit by commit without
reading files; what its file list would replay (the pending chain) must stay within
:data:`~deltalog.table.refresh.MAX_PENDING`, and once a newer checkpoint exists the chain starts from it, so
the replay a ``files()`` call does is bounded by the checkpoint interval, not by the number of appends.
Work is counted (commits a load replays), never timed.
"""

from __future__ import annotations

from pathlib import Path

from deltalog import DeltaLog, Snapshot
from deltalog.maintenance.checkpoint_job import CHECKPOINTED, compact_table
from deltalog.table import snapshot as snapshots
from deltalog.table.refresh import MAX_PENDING
from tests.integration.datafiles import SCHEMA, assert_peers_agree, data_file, live_paths

APPENDS = 1_000
JOB_EVERY = 50


def within_bound(snap: Snapshot) -> bool:
    return snapshots.pending(snap).commits <= MAX_PENDING.commits and snapshots.pending(snap).bytes <= MAX_PENDING.bytes


def test_a_thousand_appends_with_a_compaction_job_hold_a_bounded_snapshot(tmp_path: Path) -> None:
    DeltaLog.for_table(tmp_path).create(SCHEMA)
    writer = DeltaLog.for_table(tmp_path, auto_checkpoint=False)
    longest = 0
    checkpointed: list[int] = []
    for i in range(1, APPENDS + 1):
        assert writer.start_transaction().commit([data_file(tmp_path, f"a{i}")]).version == i
        cached = writer.snapshot()
        assert cached.version == i and within_bound(cached), (i, snapshots.pending(cached))
        longest = max(longest, snapshots.pending(cached).commits)
        if i % JOB_EVERY == 0:
            job = compact_table(str(tmp_path), min_commits=JOB_EVERY)  # another process's job: no DeltaLog
            assert job.status == CHECKPOINTED and job.version == i
            checkpointed.append(i)
        if i > 2 * MAX_PENDING.commits:
            # the chain started from a checkpoint the job wrote within the last bound's worth of versions
            start = cached.segment.checkpoint
            assert start is not None and start.version >= i - MAX_PENDING.commits - JOB_EVERY, (i, start)
    assert longest == MAX_PENDING.commits  # the bound was reached, and held, many times over
    latest = writer.snapshot()
    assert not snapshots.files_loaded(latest)  # a writer of blind appends never read its file list
    replayed = snapshots.pending(latest).commits
    assert replayed <= MAX_PENDING.commits  # what files() now replays: commits since a recent checkpoint
    assert latest.files().num_rows == APPENDS
    assert snapshots.files_loaded(latest) and snapshots.pending(latest).commits == 0
    assert live_paths(tmp_path) == sorted(f"a{i}.parquet" for i in range(1, APPENDS + 1))
    assert checkpointed[-1] == APPENDS
    assert_peers_agree(tmp_path)


def test_without_a_newer_checkpoint_the_chain_is_resolved_at_the_bound(tmp_path: Path) -> None:
    DeltaLog.for_table(tmp_path).create(SCHEMA)
    writer = DeltaLog.for_table(tmp_path, auto_checkpoint=False)
    resolved = 0
    n = 2 * MAX_PENDING.commits + 10
    for i in range(1, n + 1):
        writer.start_transaction().commit([data_file(tmp_path, f"b{i}")])
        cached = writer.snapshot()
        assert within_bound(cached), (i, snapshots.pending(cached))
        resolved += snapshots.files_loaded(cached) and snapshots.pending(cached).commits == 0
    assert resolved >= 2  # replayed at the bound, twice, and the chains after that start from those files
    assert writer.snapshot().segment.checkpoint is None  # nobody checkpointed: nothing to rebuild from
    assert writer.snapshot().files().num_rows == n
    assert live_paths(tmp_path) == sorted(f"b{i}.parquet" for i in range(1, n + 1))
    assert_peers_agree(tmp_path)
