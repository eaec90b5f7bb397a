"""Results print as one short line (version, counts, bytes), not the kilobytes of actions inside them; the
actions, paths and plans stay on the value."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa

import deltalog
from deltalog import DeltaLog
from deltalog.maintenance.log_compaction import LogCompactionResult
from deltalog.spark.writer import WriteResult

#: a line a notebook shows whole
SHORT = 160


def test_every_result_prints_short_and_keeps_its_details(tmp_path: Path) -> None:
    root = tmp_path / "t"
    wide = pa.table({"id": list(range(200)), "p": [f"part-{i % 50}" for i in range(200)]})
    first = deltalog.write(wide, root, partition_by=["p"])  # 50 files: the actions alone are kilobytes
    assert len(repr(first.actions)) > 5000
    assert repr(first) == "CommitResult(version=0, operation='WRITE', adds=50, removes=0, actions=52, attempts=1)"
    log = DeltaLog.for_table(root)
    replaced = deltalog.write(wide.slice(0, 10), log, mode="overwrite")
    assert repr(replaced).startswith("CommitResult(version=1, operation='WRITE', adds=10, removes=50,")
    again = deltalog.write(wide, log, app_id="job", app_version=1)
    skipped = deltalog.write(wide, log, app_id="job", app_version=1)
    assert repr(skipped) == "CommitResult(skipped, operation='WRITE', read_version=2)" and again.version == 2
    vacuum = log.vacuum(retention_hours=0, enforce_retention_duration=False)
    assert repr(vacuum) == f"VacuumResult(dry_run, version=2, files=50, bytes={vacuum.bytes})"
    assert len(vacuum.paths) == 50
    cleanup = log.cleanup()
    assert repr(cleanup) == "CleanupResult(dry_run, files=0, bytes=0, horizon=0)"
    checkpoint = log.checkpoint()
    shown = f"version=2, kind='classic', files=1, actions={checkpoint.num_actions}, bytes={checkpoint.bytes}"
    assert repr(checkpoint) == f"CheckpointResult({shown})"
    restore = log.restore(version=0, dry_run=True)
    assert repr(restore).startswith("RestoreResult(dry_run, restored_version=0, restored=50, removed=60, bytes=")
    assert len(restore.paths) == 110 and not (root / "_delta_log" / f"{3:020d}.json").exists()
    compaction = LogCompactionResult(3, 9, "_delta_log/x.json", 12, 3000, written=True, dry_run=False, reason="written")
    assert repr(compaction) == "LogCompactionResult(written, versions='3..9', actions=12, bytes=3000, reason='written')"
    spark = WriteResult(4, False, 2, 10, 0, tuple(f"part-{i}.parquet" for i in range(500)))
    assert repr(spark) == "WriteResult(version=4, skipped=False, num_files=2, num_rows=10, num_removed=0)"
    for result in (first, replaced, skipped, vacuum, cleanup, checkpoint, restore, compaction, spark):
        assert len(repr(result)) < SHORT, repr(result)
        assert dataclasses.is_dataclass(result)
