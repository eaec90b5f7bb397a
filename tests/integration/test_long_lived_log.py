"""A long-lived DeltaLog follows the log, not its cache: recreated tables and cleaned-up checkpoints.

A writer or service keeps one ``DeltaLog`` for hours and advances its cached snapshot commit by commit. The
log can change under it in ways the commits do not show: the table dropped and created again at the same
path, or log cleanup deleting the checkpoint the cached file list is still read from.
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pytest

from deltalog import CommitNotReachableError, DeltaLog, VersionNotFoundError
from tests.integration.datafiles import SCHEMA, assert_peers_agree, data_file, live_paths

DAY_S = 86_400
OTHER_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def clean_up(root: Path) -> None:
    """Another process, its clock three days ahead, checkpoints the latest version and cleans up."""
    maintainer = DeltaLog.for_table(root, clock=lambda: time.time() + 3 * DAY_S)
    maintainer.checkpoint()
    maintainer.cleanup(retention=0, dry_run=False)


def test_a_table_recreated_shorter_is_reloaded_before_the_next_commit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Once the writer's last commit is no longer young (docs/commits.md), the next transaction lists before
    it starts and commits onto the new table."""
    offset = [0.0]
    log = DeltaLog.for_table(tmp_path, clock=lambda: time.time() + offset[0])
    log.create(SCHEMA)
    for i in range(5):
        log.start_transaction().commit([data_file(tmp_path, f"old{i}")])
    assert log.snapshot().version == 5

    shutil.rmtree(tmp_path / "_delta_log")
    other = DeltaLog.for_table(tmp_path)
    other.create(OTHER_SCHEMA)
    other.start_transaction().commit([data_file(tmp_path, "new")])

    offset[0] = 30 * DAY_S  # a month later by the writer's clock
    with caplog.at_level(logging.WARNING, logger="deltalog.table.refresh"):
        result = log.start_transaction().commit([data_file(tmp_path, "after")])
    assert result.version == 2  # on top of the new table, not at 6 after a gap
    assert any("was replaced" in r.getMessage() for r in caplog.records)
    assert log.snapshot().schema == OTHER_SCHEMA
    assert live_paths(tmp_path) == ["after.parquet", "new.parquet"]
    assert_peers_agree(tmp_path)


def test_a_young_writer_never_acknowledges_a_commit_across_the_gap_of_a_table_recreated_shorter(
    tmp_path: Path,
) -> None:
    """A young writer skips the listing before its PUT, never the one after it: version 6 written into a
    table that now ends at 1 is a gap every engine refuses, so it is withdrawn and the writer told; the next
    transaction reads the new table."""
    log = DeltaLog.for_table(tmp_path)
    log.create(SCHEMA)
    for i in range(5):
        log.start_transaction().commit([data_file(tmp_path, f"old{i}")])
    shutil.rmtree(tmp_path / "_delta_log")
    other = DeltaLog.for_table(tmp_path)
    other.create(OTHER_SCHEMA)
    other.start_transaction().commit([data_file(tmp_path, "new")])

    try:
        landed = log.start_transaction().commit([data_file(tmp_path, "after")]).version
    except CommitNotReachableError:  # told, with nothing left written: the next transaction starts afresh
        landed = log.start_transaction().commit([data_file(tmp_path, "after")]).version
    assert landed == 2  # on top of the new table
    assert sorted(p.name for p in (tmp_path / "_delta_log").glob("*.json")) == [
        f"{v:020d}.json" for v in range(3)
    ]  # dense: no commit at 6 behind a gap
    assert live_paths(tmp_path) == ["after.parquet", "new.parquet"]
    assert_peers_agree(tmp_path)


def test_a_table_recreated_longer_is_read_from_the_log_not_the_cache(tmp_path: Path) -> None:
    log = DeltaLog.for_table(tmp_path)
    log.create(SCHEMA)
    log.start_transaction().commit([data_file(tmp_path, "old")])
    cached = log.snapshot()
    assert cached.version == 1

    shutil.rmtree(tmp_path / "_delta_log")
    other = DeltaLog.for_table(tmp_path)
    other.create(OTHER_SCHEMA)
    for i in range(3):
        other.start_transaction().commit([data_file(tmp_path, f"new{i}")])

    at_one = log.snapshot(version=1)  # the cached version number, now another table's
    assert at_one is not cached
    assert at_one.schema == OTHER_SCHEMA
    latest = log.snapshot()
    assert latest.version == 3 and latest.schema == OTHER_SCHEMA
    assert sorted(latest.files().column("path").to_pylist()) == ["new0.parquet", "new1.parquet", "new2.parquet"]
    assert_peers_agree(tmp_path)


def test_a_writer_keeps_working_after_cleanup_deletes_its_checkpoint(tmp_path: Path) -> None:
    DeltaLog.for_table(tmp_path).create(SCHEMA, configuration={"delta.checkpointInterval": "5"})
    for i in range(6):
        DeltaLog.for_table(tmp_path).start_transaction().commit([data_file(tmp_path, f"a{i}")])
    writer = DeltaLog.for_table(tmp_path)  # loads from checkpoint 5
    assert writer.snapshot().segment.checkpoint is not None
    for i in range(6):  # 7..12 advance the cached snapshot; its file list still comes from checkpoint 5
        writer.start_transaction().commit([data_file(tmp_path, f"b{i}")], operation="WRITE")
    clean_up(tmp_path)  # checkpoint 12, and everything below it goes, checkpoint 5 included
    assert not (tmp_path / "_delta_log" / "00000000000000000005.checkpoint.parquet").exists()

    stats = writer.snapshot().files(stats=True)
    assert stats.num_rows == 12 and all(s is not None for s in stats.column("stats").to_pylist())
    assert writer.vacuum(retention=0, force=True).version == 12
    assert writer.snapshot().tombstones().num_rows == 0
    for i in range(3):  # 13..15: the automatic checkpoint at 15 must be written
        writer.start_transaction().commit([data_file(tmp_path, f"c{i}")])
    assert (tmp_path / "_delta_log" / "00000000000000000015.checkpoint.parquet").exists()
    assert len(live_paths(tmp_path)) == 15
    assert_peers_agree(tmp_path)


def test_a_cached_version_that_cleanup_made_unreadable_says_so(tmp_path: Path) -> None:
    log = DeltaLog.for_table(tmp_path)
    log.create(SCHEMA, configuration={"delta.checkpointInterval": "3"})
    for i in range(4):
        log.start_transaction().commit([data_file(tmp_path, f"a{i}")])
    old = DeltaLog.for_table(tmp_path).snapshot(version=4)  # checkpoint 3 + commit 4, stats read lazily
    for i in range(3):
        log.start_transaction().commit([data_file(tmp_path, f"b{i}")])
    clean_up(tmp_path)  # checkpoint 7 is the boundary: versions 3..6 cannot be rebuilt any more

    with pytest.raises(VersionNotFoundError, match="deleted by log cleanup") as info:
        old.files(stats=True)
    assert info.value.earliest == 7
    assert len(live_paths(tmp_path)) == 7
    assert_peers_agree(tmp_path)
