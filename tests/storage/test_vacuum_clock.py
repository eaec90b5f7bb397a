"""VACUUM's clock (issue 23 item 8): a vacuum process whose clock runs ahead never deletes a young file.

A writer writes its data files, then commits them; between the two they are unreferenced, and only their age
protects them. A vacuum whose clock ran more than the retention ahead judged them old by its own clock and
deleted them, and the writer's commit then named missing files. Ages are now judged against the earlier of the
process clock and the store's (a probe file's modification time), here on local disk, the moto S3 server and
Azurite, each through its default client: the uncommitted files survive, the commit lands, and readers read
every row. What a fast clock can still do (expire tombstones early) is the operator's, as docs/operations.md
says.
"""

from __future__ import annotations

import logging
import os
import time

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.data.files import WriteTarget, write_files
from deltalog.errors import StorageError
from deltalog.storage.fault_rules import fail_before
from deltalog.storage.faults import FaultyStore
from deltalog.storage.local import LocalLogStore
from tests.peers import deltalake_view, duckdb_view
from tests.protocol_checker import assert_valid
from tests.storage.test_vacuum_requests import SCHEMA, Table, table  # noqa: F401 (the fixture)

DAY_S = 86_400.0
AHEAD_S = 8 * DAY_S  # more than the default 7-day delta.deletedFileRetentionDuration


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "p": [f"p{i % 2}" for i in ids]})


def staged(log: DeltaLog, data: pa.Table) -> list[A.Add]:
    """Data files written by deltalog's data-file writer for the latest snapshot, not committed."""
    return write_files(log.store, data, WriteTarget.of(log.snapshot()))


def test_a_vacuum_whose_clock_runs_ahead_keeps_a_writers_uncommitted_files(
    table: Table,  # noqa: F811 (the imported fixture)
) -> None:
    now = time.time()
    writer = table.log(now)
    writer.create(SCHEMA, partition_columns=["p"])
    writer.start_transaction().commit(staged(writer, rows(1, 2)))
    pending = staged(writer, rows(3, 4, 5))  # written, about to be committed
    store = table.store()
    assert all(store.exists(a.path) for a in pending)

    ahead = table.log(now + AHEAD_S)  # another process, whose clock runs 8 days ahead
    planned = ahead.vacuum()
    result = ahead.vacuum(dry_run=False)
    assert planned.paths == result.deleted == ()
    assert result.plan.too_recent == len(pending)
    assert result.plan.now_ms < (now + AHEAD_S) * 1000 - DAY_S * 1000  # judged by the store's clock
    assert all(store.exists(a.path) for a in pending)
    assert not [f.name for f in store.list_from("_delta_log/") if ".clock." in f.name]  # the probe is gone

    assert writer.start_transaction().commit(pending).version == 2
    read = DeltaLog.for_table(table.location, table.options).snapshot().to_arrow()
    assert sorted(read.column("id").to_pylist()) == [1, 2, 3, 4, 5]
    if table.root is not None:
        assert_valid(table.root)
        assert duckdb_view(table.root).rows == 5
        assert deltalake_view(table.root).rows == 5
    elif table.kind == "s3":  # deltalake's Azure client takes no connection string for an emulator
        assert DeltaTable(table.location, storage_options=table.options).to_pyarrow_table().num_rows == 5


def test_files_old_on_the_stores_clock_are_still_vacuumed(tmp_path: os.PathLike[str]) -> None:
    """The store's clock only ever holds files back: an orphan a day old on the store goes at a day's retention."""
    root = os.fspath(tmp_path)
    log = DeltaLog.for_table(root)
    log.create(SCHEMA, partition_columns=["p"])
    log.start_transaction().commit(staged(log, rows(1)))
    orphan = os.path.join(root, "orphan.parquet")
    with open(orphan, "wb") as f:
        f.write(b"no commit names me")
    two_days_ago = time.time() - 2 * DAY_S
    os.utime(orphan, (two_days_ago, two_days_ago))
    result = log.vacuum(retention="1 day", dry_run=False, force=True)
    assert result.deleted == ("orphan.parquet",)
    assert duckdb_view(tmp_path).rows == 1


def test_without_the_stores_clock_a_dry_run_plans_by_its_own_and_a_real_vacuum_stops(
    tmp_path: os.PathLike[str], caplog: pytest.LogCaptureFixture
) -> None:
    """A store that refuses the probe (a read-only credential): the dry run says which clock it used, the real
    vacuum fails typed before deleting anything."""
    root = os.fspath(tmp_path)
    log = DeltaLog.for_table(root)
    log.create(SCHEMA)
    pending = staged(log, rows(1))
    store = FaultyStore(LocalLogStore(root), fail_before("put", "_delta_log/.clock.*"))
    ahead = DeltaLog(store, root, clock=lambda: time.time() + AHEAD_S)
    with caplog.at_level(logging.WARNING, logger="deltalog.maintenance.vacuum"):
        planned = ahead.vacuum()
    assert planned.paths == tuple(a.path for a in pending)  # what this process's clock alone would delete
    assert "store's clock is unknown" in caplog.text
    with pytest.raises(StorageError):
        ahead.vacuum(dry_run=False)
    assert all(os.path.exists(os.path.join(root, a.path)) for a in pending)
