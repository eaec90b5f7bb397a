"""The table a writer writes to: opened, created when missing, its partitioning checked; and the exactly-once
question asked after a refusal.

Both writers (:func:`deltalog.write` for Arrow data and :func:`deltalog.spark.write` for DataFrames) make the
same decisions here, in the same order, before any data file is written:

* a missing table is created from the data's schema and ``partition_by`` in the write's own commit: version 0
  holds protocol, metadata and the first files (:meth:`deltalog.DeltaLog.start_create`), so a write that fails
  leaves no table. A table another writer created before this one started writing is checked like any
  existing one; one created while this one wrote its files wins version 0, and this commit is refused as Delta
  Spark refuses it (:class:`~deltalog.errors.ProtocolChangedError`: "several writers created the table at
  once"; its files are deleted, nothing is retried);
* ``partition_by``, when given, must be the table's partitioning (neither writer repartitions a table);
* after a refused commit of an exactly-once batch (``app_id``/``app_version``), a concurrent run of the same
  batch may be what won: the batch is then done, and the refusal is a skip.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from deltalog.core.partitions import conditions_from_where
from deltalog.core.schema import check_partition_columns, top_level_fields
from deltalog.errors import InvalidArgumentError, SchemaMismatchError, TableAlreadyExistsError, TableNotFoundError

if TYPE_CHECKING:
    from deltalog.log import DeltaLog
    from deltalog.table.commit_loop import CommitResult
    from deltalog.table.new_table import NewTable
    from deltalog.table.snapshot import Snapshot
    from deltalog.table.transaction import Transaction


def open_table(log: DeltaLog) -> Snapshot | None:
    """The latest snapshot, or None when there is no table yet."""
    try:
        return log.snapshot()
    except TableNotFoundError:
        return None


def check_partitions(partition_by: Sequence[str], schema: Mapping[str, Any]) -> None:
    """The Delta rules for partition columns (:func:`~deltalog.core.schema.check_partition_columns`), and the
    writers' own: a partition value is written as text, and binary values have no text form they agree on."""
    fields = {f["name"]: f for f in top_level_fields(schema)}
    unknown = [c for c in partition_by if c not in fields]
    if unknown:
        raise SchemaMismatchError(
            f"partition columns {unknown} are not columns of the data ({sorted(fields)})", column=unknown[0]
        )
    check_partition_columns(schema, partition_by)
    binary = [c for c in partition_by if fields[c]["type"] == "binary"]
    if binary:
        raise InvalidArgumentError(f"columns {binary} cannot be partition columns: binary values have no text form")


def begin_write(
    log: DeltaLog,
    existing: Snapshot | None,
    schema: Mapping[str, Any],
    partition_by: Sequence[str] | None,
    configuration: Mapping[str, str] | None,
    app_id: str | None,
    app_version: int | None,
    operation: str,
) -> tuple[Transaction, Snapshot | NewTable, CommitResult | None]:
    """A write's transaction and the table it writes: ``existing`` (the latest snapshot), or when there is
    none a :class:`~deltalog.table.new_table.NewTable` from ``schema`` (Delta JSON), ``partition_by`` and
    ``configuration`` that the write's commit creates. The third value is the skipped result of an
    exactly-once batch the table already holds (the transaction is then closed: nothing is to be written)."""
    if existing is None:
        parts = list(partition_by or ())
        check_partitions(parts, schema)
        # another writer may create it first: its table is then checked like any existing table
        with contextlib.suppress(TableAlreadyExistsError):
            txn = log.start_create(
                orjson.dumps(schema).decode(),
                parts,
                configuration=configuration,
                app_id=app_id,
                app_version=app_version,
            )
            assert txn.new_table is not None
            return txn, txn.new_table, None
    txn, done = start_write(log, app_id, app_version, operation)
    return txn, txn.snapshot, done


def check_partition_by(partition_by: Sequence[str] | None, snap: Snapshot | NewTable) -> None:
    """``partition_by`` (when given) must be the table's partitioning: writers do not repartition a table."""
    if partition_by is not None and list(partition_by) != list(snap.partition_columns):
        raise SchemaMismatchError(
            f"partition_by {list(partition_by)} differs from the table's partition columns {snap.partition_columns}"
        )


def start_write(
    log: DeltaLog, app_id: str | None, app_version: int | None, operation: str
) -> tuple[Transaction, CommitResult | None]:
    """A write's transaction. When its exactly-once batch (``app_id`` at ``app_version``) is already in the
    table, the transaction is closed at once and its skipped result returned with it: nothing is to be
    written (and nothing is committed)."""
    txn = log.start_transaction(app_id=app_id, app_version=app_version)
    if txn.already_committed:
        return txn, txn.commit(operation=operation)
    return txn, None


def landed(log: DeltaLog, app_id: str | None, app_version: int | None) -> bool:
    """Did another run of this exactly-once batch commit it meanwhile (a refusal is then a skip)?"""
    if app_id is None or app_version is None:
        return False
    current = log.snapshot().app_version(app_id)
    return current is not None and current >= app_version


def where_text(where: Mapping[str, Any] | None) -> str | None:
    """A partition predicate in :meth:`deltalog.Snapshot.files`' form, as a commit records it."""
    if not where:
        return None
    return " AND ".join(
        f"{c.column} {c.op} {list(c.values) if len(c.values) > 1 else c.values[0]!r}"
        for c in conditions_from_where(where)
    )


__all__ = [
    "check_partition_by",
    "begin_write",
    "check_partitions",
    "landed",
    "open_table",
    "start_write",
    "where_text",
]
