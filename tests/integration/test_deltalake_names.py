"""The names a deltalake user types, accepted where they mean what deltalake means: ``vacuum(retention_hours=,
enforce_retention_duration=)``, ``load_as_version``, ``snapshot(timestamp=, after_latest="latest")``; and the one
argument order that differs (``write_deltalake(table, data)``) refused with a one-line hint.

Time travel keeps Delta Spark's rule: a time after the latest commit is an error naming that commit's time,
unless the caller asks for deltalake's behaviour (the latest version).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

import deltalog
from deltalog import DeltaLog
from deltalog.errors import InvalidArgumentError, VersionNotFoundError
from tests.integration.dml_kit import assert_everyone_reads, files_on_disk


def rows(first: int, count: int) -> pa.Table:
    return pa.table({"id": pa.array(range(first, first + count), pa.int64())})


def test_vacuum_takes_deltalakes_retention_hours_and_enforce_retention_duration(tmp_path: Path) -> None:
    root = tmp_path / "t"
    deltalog.write(rows(0, 5), root)
    deltalog.write(rows(5, 5), root, mode="overwrite")
    log = DeltaLog.for_table(root)
    with pytest.raises(InvalidArgumentError, match=r"shorter than the table's delta\.deletedFileRetentionDuration"):
        log.vacuum(retention_hours=0, dry_run=False)
    with pytest.raises(InvalidArgumentError, match="retention or retention_hours, not both"):
        log.vacuum(retention="1d", retention_hours=24)
    with pytest.raises(InvalidArgumentError, match="retention_hours must be a number of hours"):
        log.vacuum(retention_hours=-1)
    planned = log.vacuum(retention_hours=0, enforce_retention_duration=False)  # deltalake's dry run default
    assert planned.dry_run and planned.num_files == 1 and len(files_on_disk(root)) == 2
    done = log.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert done.deleted == planned.paths and len(files_on_disk(root)) == 1
    assert_everyone_reads(root, rows(5, 5))


def test_the_table_first_argument_order_is_refused_with_a_hint(tmp_path: Path) -> None:
    root = tmp_path / "t"
    with pytest.raises(InvalidArgumentError, match=r"takes the data first: deltalog.write\(data, '") as info:
        deltalog.write(str(root), rows(0, 3))
    assert "\n" not in str(info.value) and not root.exists()


def test_time_travel_after_the_latest_commit_is_an_error_unless_the_latest_is_asked_for(tmp_path: Path) -> None:
    root = tmp_path / "t"
    deltalog.write(rows(0, 3), root)
    deltalog.write(rows(3, 3), root)
    log = DeltaLog.for_table(root)
    future = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)
    with pytest.raises(VersionNotFoundError, match=r"is after the latest commit \(version 1 at \d{4}-") as info:
        log.snapshot(timestamp=future)
    assert info.value.latest == 1
    assert log.snapshot(timestamp=future, after_latest="latest").version == 1
    with pytest.raises(InvalidArgumentError, match="after_latest must be one of"):
        log.snapshot(timestamp=future, after_latest="nearest")
    # deltalake's load_as_version: an int is a version, a time past the end the latest
    assert log.load_as_version(0).to_arrow().num_rows == 3
    assert log.load_as_version(future).version == 1
    assert log.load_as_version(future.isoformat()).version == 1
    lake = DeltaTable(str(root))
    lake.load_as_version(future)
    assert lake.version() == log.load_as_version(future).version  # the same answer as deltalake's
    with pytest.raises(VersionNotFoundError, match="before the earliest available commit"):
        log.load_as_version(dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc))
    with pytest.raises(InvalidArgumentError, match="takes a version"):
        log.load_as_version(1.5)
