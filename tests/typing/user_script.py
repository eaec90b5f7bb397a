"""A user's script on deltalog's public API, as README.md shows it: type-checked ``--strict`` against the
installed package by ``test_public_api_types.py`` (never run: it only has to type-check, with every
``assert_type`` holding). A public name that a checker sees as ``Any`` or as the wrong type fails it."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from typing_extensions import assert_type

import deltalog
from deltalog import (
    CommitResult,
    ConcurrentAppendError,
    DeltaLog,
    DeltaLogError,
    HistoryEntry,
    Snapshot,
    Transaction,
)
from deltalog import actions as A


def readme(uri: str) -> None:
    log = DeltaLog.for_table(uri, storage_options=None)
    assert_type(log, DeltaLog)
    log.create(pa.schema([("id", pa.int64()), ("date", pa.string())]), partition_columns=["date"])

    snap = log.snapshot()
    assert_type(snap, Snapshot)
    assert_type(log.snapshot(version=7), Snapshot)
    assert_type(snap.version, int)
    assert_type(snap.protocol, A.Protocol)
    assert_type(snap.metadata, A.Metadata)
    assert_type(snap.partition_columns, list[str])
    assert_type(snap.app_version("etl-job"), int | None)
    snap.files(where={"date": "2026-11-01"})

    txn = log.start_transaction()
    assert_type(txn, Transaction)
    txn.read(where={"date": "2026-11-01"})
    removes = txn.remove_where({"date": "2026-11-01"})
    assert_type(removes, list[A.Remove])
    add = A.Add(
        path="date=2026-11-01/part-0.parquet",
        partition_values={"date": "2026-11-01"},
        size=1234,
        modification_time=1700000000000,
        data_change=True,
    )
    assert_type(add.path, str)
    assert_type(add.deletion_vector, A.DeletionVector | None)
    result = txn.commit([add], operation="WRITE")
    assert_type(result, CommitResult)
    assert_type(result.version, int | None)
    assert_type(result.winners, tuple[int, ...])

    again = log.start_transaction(app_id="etl", app_version=42).commit([add])
    assert_type(again.skipped, bool)
    for entry in log.history(limit=10):
        assert_type(entry, HistoryEntry)
        assert_type(entry.operation, str | None)
    log.checkpoint()
    log.cleanup(dry_run=True)
    log.vacuum(dry_run=True)
    log.restore(version=3)
    log.compact_log()

    written = deltalog.write(pa.table({"id": [1]}), uri, partition_by=["date"])
    assert_type(written, CommitResult)
    deltalog.write(pa.table({"id": [1]}), uri, mode="overwrite", replace_where=pc.field("id") < 100)
    log.delete("amount IS NULL")


def errors(log: DeltaLog) -> int | None:
    try:
        return log.start_transaction().commit().version
    except ConcurrentAppendError as exc:
        assert_type(exc, ConcurrentAppendError)
        return None
    except DeltaLogError:
        return None
