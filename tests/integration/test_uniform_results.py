"""Results of maintenance share one shape (issue 17): ``paths``, ``num_files``, ``bytes`` and ``dry_run`` on a
RESTORE, a checkpoint, a VACUUM and a log cleanup, each equal to what the operation did or would do."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from deltalog import actions as A
from tests.integration.restore_kit import DAY, T0, assert_peers_read, clocked, lake_rows, set_commit_times

NOW = T0 + 400 * DAY


def _table(root: Path) -> Path:
    write_deltalake(str(root), pa.table({"id": [1, 2], "p": ["a", "b"]}), partition_by=["p"])
    write_deltalake(str(root), pa.table({"id": [3], "p": ["a"]}), mode="append")
    write_deltalake(str(root), pa.table({"id": [4, 5], "p": ["c", "c"]}), mode="overwrite")
    set_commit_times(root, T0)
    orphan = root / "p=a" / "orphan.parquet"  # written by a failed job, never committed
    orphan.write_bytes((next(root.rglob("part-*.parquet"))).read_bytes())
    for data in root.rglob("*.parquet"):  # old enough for any retention judged at NOW
        os.utime(data, ns=(T0 * 1_000_000, T0 * 1_000_000))
    return root


def test_restore_checkpoint_vacuum_and_cleanup_results_have_one_shape(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    expected = lake_rows(root, 1)
    log = clocked(root, NOW)

    restored = log.restore(version=1, force=True)
    assert restored.dry_run is False
    actions = restored.commit.actions
    assert set(restored.paths) == {a.path for a in actions if isinstance(a, (A.Add, A.Remove))}
    assert restored.num_files == restored.num_restored + restored.num_removed == len(restored.paths) == 4
    assert restored.bytes == restored.restored_bytes + restored.removed_bytes > 0

    checkpoint = log.checkpoint()
    assert checkpoint.dry_run is False and checkpoint.paths == checkpoint.files and checkpoint.num_files == 1
    assert checkpoint.bytes == checkpoint.size_in_bytes == (root / checkpoint.paths[0]).stat().st_size

    vacuum = log.vacuum(dry_run=True)
    assert vacuum.dry_run is True and vacuum.deleted == ()
    assert vacuum.paths == ("p=a/orphan.parquet",) and vacuum.num_files == 1  # the restore's removes are recent
    assert vacuum.bytes == (root / "p=a" / "orphan.parquet").stat().st_size

    cleanup = log.cleanup(dry_run=True)
    assert cleanup.dry_run is True and cleanup.deleted == ()
    assert cleanup.num_files == len(cleanup.paths) > 0
    assert cleanup.bytes == sum((root / p).stat().st_size for p in cleanup.paths)
    assert_peers_read(root, expected)
