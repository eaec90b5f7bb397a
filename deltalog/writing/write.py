"""``deltalog.write``: Arrow data into a Delta table as one commit, as ``deltalake.write_deltalake`` is called.

The data arrives as anything Arrow (a Table, RecordBatch, RecordBatchReader, Dataset, or an object exporting
``__arrow_c_stream__``: pandas, polars, duckdb results) and is streamed through the one data-file writer
(:mod:`deltalog.data.files`) in batches, so memory stays bounded whatever the input's size. What that writer
enforces per batch (names matched as Spark does, only casts that lose nothing, NOT NULL, CHECK constraints,
invariants, generated columns) applies here unchanged.

Order of a write, every refusal before the commit and most before any file is written:

1. the table is opened, or when missing planned from the data's schema (``partition_by``, ``configuration``)
   to be created by this write's commit (version 0 holds the table and its first files, so a write that fails
   leaves no table); ``mode="error"`` refuses an existing table, ``mode="ignore"`` leaves it alone;
2. one transaction starts; an exactly-once batch (``app_id``/``app_version``) the table holds ends here;
3. the data's schema is checked against the table's (``schema_mode="merge"`` adds its new top-level columns,
   nullable, in this same commit; ``schema_mode="overwrite"`` replaces schema and partitioning); the table's
   features are asked whether the commit is allowed;
4. ``mode="overwrite"`` stages the removes: every file, or with ``replace_where`` the matching rows: whole files
   when the predicate names partition columns only, else the matching rows of the files holding any, by
   deletion vectors or by rewriting those files (:mod:`deltalog.dml.removal`); every written row must then
   satisfy ``replace_where``;
5. the files are written and committed. Files of a refused commit are deleted; after
   :class:`~deltalog.errors.CommitStateUnknownError` they stay (the commit may have landed).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson
import pyarrow as pa

from deltalog.core import actions as A
from deltalog.core.features import identity
from deltalog.core.features.obligations import APPEND, METADATA, OVERWRITE
from deltalog.core.schema import top_level_fields
from deltalog.data.batches import input_stream
from deltalog.data.files import DataFileWriter, WriteTarget
from deltalog.data.frames import looks_like_index
from deltalog.data.predicate import row_filter
from deltalog.dml import rules
from deltalog.dml.commit import commit_files, discard, skipped
from deltalog.dml.delete import target_of
from deltalog.dml.evolution import merged_metadata, overwritten_metadata, schema_of
from deltalog.dml.overwrite import check_inside, replaced
from deltalog.dml.removal import Removal, Rewriter, finish
from deltalog.errors import (
    InvalidArgumentError,
    SchemaMismatchError,
    TableAlreadyExistsError,
)
from deltalog.log import DeltaLog
from deltalog.storage.base import LogStore
from deltalog.table.commit import CommitResult, NewTable, Transaction
from deltalog.table.snapshot import Snapshot
from deltalog.writing.tables import begin_write, check_partition_by, landed, open_table

MODES = ("append", "overwrite", "error", "ignore")
SCHEMA_MODES = (None, "merge", "overwrite")
OPERATION = "WRITE"


# ---------------------------------------------------------------------------------------------- the schema
def _precheck(store: LogStore, target: WriteTarget, schema: pa.Schema) -> None:
    """The data's columns against the table's, before a file is written: an empty batch goes through every
    name and type check of the writer (values are checked as they come)."""
    known = {f["name"].lower() for f in top_level_fields(target.schema)}
    extra = [n for n in schema.names if n.lower() not in known]
    index = [n for n in extra if looks_like_index(n)]
    if index:  # a pandas index converted by the caller: it is no column, so merging would be the wrong advice
        raise SchemaMismatchError(
            f"the data has column {index[0]!r}, a pandas index pyarrow kept (the table has "
            f"{[f['name'] for f in top_level_fields(target.schema)]}): pass the DataFrame itself, or convert "
            "it with pyarrow.Table.from_pandas(df, preserve_index=False)",
            column=index[0],
        )
    if extra:
        raise SchemaMismatchError(
            f"the data has columns the table does not: {extra} (the table has "
            f"{[f['name'] for f in top_level_fields(target.schema)]}); schema_mode='merge' adds them",
            column=extra[0],
        )
    DataFileWriter(store, target).write(pa.RecordBatch.from_pylist([], schema=schema))


# ---------------------------------------------------------------------------------------------- write
def _check_arguments(
    mode: str, replace_where: Any, app_id: str | None, app_version: int | None, schema_mode: str | None
) -> None:
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be one of {MODES}, not {mode!r}")
    if schema_mode not in SCHEMA_MODES:
        raise InvalidArgumentError(f"schema_mode must be None, 'merge' or 'overwrite', not {schema_mode!r}")
    if replace_where is not None and mode != "overwrite":
        raise InvalidArgumentError("replace_where needs mode='overwrite'")
    if schema_mode == "overwrite" and mode != "overwrite":
        raise InvalidArgumentError(
            "schema_mode='overwrite' needs mode='overwrite': only a write replacing every row "
            "may replace the schema (schema_mode='merge' adds columns to an append)"
        )
    if schema_mode == "overwrite" and replace_where is not None:
        raise InvalidArgumentError(
            "schema_mode='overwrite' cannot be combined with replace_where: the rows left outside it keep the old "
            "schema"
        )
    if (app_id is None) != (app_version is None):
        raise InvalidArgumentError("app_id and app_version go together")


def _is_location(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike, DeltaLog))


def _open_log(table: str | os.PathLike[str] | DeltaLog, storage_options: dict[str, Any] | None) -> DeltaLog:
    if isinstance(table, DeltaLog):
        return table
    return DeltaLog.for_table(table, storage_options)


def write(
    data: Any,
    table_uri: str | os.PathLike[str] | DeltaLog,
    mode: str = "append",
    partition_by: Sequence[str] | str | None = None,
    replace_where: Any = None,
    app_id: str | None = None,
    app_version: int | None = None,
    schema_mode: str | None = None,
    target_file_size: int | None = None,
    storage_options: dict[str, Any] | None = None,
    *,
    configuration: Mapping[str, str] | None = None,
    session_time_zone: str | None = None,
    preserve_index: bool | None = None,
) -> CommitResult:
    """Write ``data`` (Arrow: a Table, batches, a reader, a Dataset, or anything with ``__arrow_c_stream__``) to
    the Delta table at ``table_uri`` (a path, URI or :class:`DeltaLog`) as one commit.

    ``mode``: ``append``; ``overwrite`` (the whole table, or with ``replace_where``, any filter form: Spark SQL
    text, a pyarrow Expression, DNF tuples or a mapping, only the rows it matches); ``error`` (refuse an
    existing table); ``ignore`` (write nothing to an existing table). A missing table is created from the
    data's schema, ``partition_by`` and ``configuration``. ``app_id``/``app_version`` make the write exactly
    once. ``schema_mode="merge"`` adds the data's new columns; ``schema_mode="overwrite"`` (with
    ``mode="overwrite"``) replaces the table's schema by the data's, and its partitioning by ``partition_by`` when
    given, in the overwrite's commit (a partition column the data lacks needs ``partition_by``).
    ``target_file_size`` (bytes) rolls files, else
    ``delta.targetFileSize`` or 100 MiB. ``session_time_zone`` is the zone Spark SQL's timestamp functions use
    in the table's rules (generated columns such as ``CAST(ts AS DATE)``) and in ``replace_where`` text; UTC
    by default. The
    result's ``version`` is None (``skipped``) when nothing was committed.

    A pandas DataFrame's unnamed index (what filtering, grouping, sorting or concatenating leaves) is not
    written; a named one (``set_index("ts")``) holds data and is refused unless ``preserve_index`` says to
    write it as a column (True) or drop it (False).
    """
    if _is_location(data) and not _is_location(table_uri):
        raise InvalidArgumentError(
            f"deltalog.write takes the data first: deltalog.write(data, {data!r}) (deltalake's write_deltalake "
            "takes the table first)"
        )
    _check_arguments(mode, replace_where, app_id, app_version, schema_mode)
    parts = [partition_by] if isinstance(partition_by, str) else (list(partition_by) if partition_by else None)
    log = _open_log(table_uri, storage_options)
    schema, stream = input_stream(data, preserve_index)
    existing = open_table(log)
    if existing is not None and mode in ("error", "ignore"):
        if mode == "error":
            raise TableAlreadyExistsError(f"a Delta table already exists at {log.location} (mode='error')")
        txn = log.start_transaction()
        txn.abort()
        return skipped(txn, OPERATION)
    # ``configuration`` only applies to a new table: an existing table keeps its properties
    txn, table, done = begin_write(
        log,
        existing,
        schema_of(schema),
        parts,
        configuration,
        app_id=app_id,
        app_version=app_version,
        operation=OPERATION,
    )
    if done is not None:
        return done
    try:
        if schema_mode == "overwrite" and isinstance(table, Snapshot):
            given = parts if parts is not None else (None if partition_by is None else [])  # [] unpartitions
            merged: A.Metadata | None = overwritten_metadata(table, schema, given)
        else:
            check_partition_by(parts, table)
            merged = merged_metadata(table, schema) if schema_mode == "merge" and isinstance(table, Snapshot) else None
    except BaseException:
        txn.abort()
        raise
    return _write(log, txn, table, schema, stream, mode, merged, replace_where, target_file_size, session_time_zone)


def _write(
    log: DeltaLog,
    txn: Transaction,
    snap: Snapshot | NewTable,
    schema: pa.Schema,
    stream: Iterator[pa.RecordBatch],
    mode: str,
    merged: A.Metadata | None,
    replace_where: Any,
    target_file_size: int | None,
    session_time_zone: str | None = None,
) -> CommitResult:
    target = dataclasses.replace(target_of(snap), session_time_zone=session_time_zone)
    if merged is not None:
        assert merged.schema_string is not None, "merged_metadata writes the merged schema"
        target = dataclasses.replace(
            target, schema=orjson.loads(merged.schema_string), partition_columns=tuple(merged.partition_columns)
        )
    overwrite = mode == "overwrite"
    operations = {OVERWRITE if overwrite else APPEND} | ({METADATA} if merged is not None else set())
    now = log.now_ms()

    def rewriter_for(changes: bool, tracking: tuple[str, str] | None = None) -> Rewriter:
        return Rewriter(log.store, dataclasses.replace(target, row_tracking=tracking), changes, target_file_size)

    removal, where, rewriter = Removal(), None, None
    rows = 0
    try:
        rules.check_up_front(snap, log.location, sorted(operations), identity_preserved=True)
        if isinstance(snap, NewTable) and identity.columns(target.schema):
            raise InvalidArgumentError(
                f"{log.location}: a table with identity columns is created first (DeltaLog.create(identity=...)), "
                "then written to: the write that creates a table cannot also advance its identity marks"
            )
        _precheck(log.store, target, schema)
        if overwrite and isinstance(snap, NewTable):  # a table this commit creates has no rows to replace
            if replace_where is not None:
                where = row_filter(replace_where, snap.schema_json, snap.partition_columns, session_time_zone)
            rewriter = rewriter_for(False)
        elif overwrite and isinstance(snap, Snapshot):
            removal, where, rewriter = replaced(
                log.store, txn, snap, replace_where, rewriter_for, now, session_time_zone
            )
            operations |= removal.operations
            preserved = removal.row_ids_preserved  # the copies kept their row ids (row tracking enabled)
            rules.check_up_front(
                snap, log.location, sorted(operations), row_ids_preserved=preserved, identity_preserved=True
            )
        else:
            rewriter = rewriter_for(False)
        counted = [0]

        def checked() -> Iterator[pa.RecordBatch]:
            for batch in stream:
                if where is not None:
                    check_inside(batch, where, snap.schema_json, counted[0])
                counted[0] += batch.num_rows
                yield batch

        rewriter.insert_all(checked())
        rows = counted[0]
        values = rewriter.data.preparer.identity
        finish(removal, rewriter)
        marked = identity.metadata_with_marks(merged or snap.metadata, values.marks()) if values else merged
        staged = [*([marked] if marked is not None else []), *removal.actions]
        actions = staged
        declared = rules.Declared(
            copies_rows=removal.copies_rows,
            row_ids_preserved=removal.row_ids_preserved,
            identity_runs=values.generated,
            identity_preserved=True,
        )
        txn.read_files(a.path for a in removal.touched)
    except BaseException:
        if rewriter is not None:
            rewriter.abort()
        discard(log.context, removal.written)
        txn.abort()
        raise
    partition_by = merged.partition_columns if merged is not None else snap.partition_columns
    params: dict[str, Any] = {"mode": mode.capitalize(), "partitionBy": list(partition_by)}
    if replace_where is not None:
        params["predicate"] = where.text if where is not None else None
    return commit_files(
        txn,
        actions,
        removal.written,
        OPERATION,
        params,
        _metrics(removal, rows),
        declared,
        landed=lambda: landed(log, txn.app_id, txn.app_target),
    )


def _metrics(removal: Removal, rows: int) -> dict[str, str]:
    """Delta Spark's WRITE metrics, and a replace's own counts when rows of existing files were removed."""
    metrics = {
        "numFiles": str(removal.added_files),
        "numOutputRows": str(rows),
        "numOutputBytes": str(removal.added_bytes),
        "numAddedFiles": str(removal.added_files),
        "numAddedBytes": str(removal.added_bytes),
        "numRemovedFiles": str(removal.removed_files),
        "numRemovedBytes": str(removal.removed_bytes),
    }
    if removal.deleted_rows or removal.operations:
        metrics.update({k: v for k, v in removal.metrics().items() if k not in metrics})
    return metrics


__all__ = ["MODES", "OPERATION", "input_stream", "merged_metadata", "schema_of", "write"]
