"""Executor-side half of the Spark reader: pyarrow and deltalog's stores only (no pyspark, no Hadoop).

Each task gets rows describing live files (path as the log spells it, physical partition values, deletion
vector, ``numRecords``: a :data:`FileRow`) and reads them with the data plane's reader
(:func:`deltalog.data.read.read_batches`):
the same code that serves ``Snapshot.scan``, so deletion vectors are applied, column mapping resolved,
partition values typed from the log and old files conformed to today's schema on the executors exactly as on
the driver. The store is rebuilt from the table root and the storage options, so an ``s3://`` or ``abfs://``
table is read through fsspec without any Hadoop connector on the cluster.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa

from deltalog.actions import DeletionVector
from deltalog.data.read import DataFile, read_batches, read_schema
from deltalog.errors import DeltaLogError
from deltalog.spark._files import carry_error
from deltalog.storage.base import LogStore
from deltalog.storage.uri import store_for

#: one live file as the driver describes it to a task: path as in the log, partition values (JSON object,
#: physical keys), deletion vector (JSON of its fields, or None), numRecords (or None)
FileRow = tuple[str, str, str | None, int | None]


def file_row(file: DataFile) -> FileRow:
    """The row the driver sends for ``file`` (a :data:`FileRow`)."""
    dv = file.deletion_vector
    return (
        file.path,
        orjson.dumps(dict(file.partition_values)).decode(),
        None if dv is None else orjson.dumps(dataclasses.asdict(dv)).decode(),
        file.num_records,
    )


@dataclass(frozen=True)
class TableTask:
    """What every executor task reading one table version needs: where the table is (root and storage options,
    to rebuild its store) and how to read it (schema JSON, partition columns, column-mapping mode, the columns
    to output, logical names)."""

    root: str
    storage_options: Mapping[str, Any] | None
    schema: Mapping[str, Any]
    partition_columns: tuple[str, ...]
    column_mapping: str
    columns: tuple[str, ...]

    def store(self) -> LogStore:
        return store_for(self.root, dict(self.storage_options) if self.storage_options else None)


def _row_file(row: FileRow) -> DataFile:
    path, values, dv, records = row
    return DataFile(path, orjson.loads(values), None if dv is None else DeletionVector(**orjson.loads(dv)), records)


def conformed(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` in exactly ``target``'s Arrow schema (the one Spark expects of a Python source: its own mapping of
    the requested types, nullability included), casting columns whose Arrow type differs."""
    if batch.schema.equals(target):
        return batch
    columns = [
        column if column.type == field.type else column.cast(field.type)
        for column, field in zip(batch.columns, target, strict=True)
    ]
    return pa.RecordBatch.from_arrays(columns, schema=target)


def read_group(rows: Sequence[FileRow], task: TableTask, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    """One read task of ``spark.read.format("deltalog")``: the live rows of each file in ``rows``, in the task's
    columns and Spark's Arrow schema ``target``. A deltalog error (a missing or corrupt data or DV file) is
    carried to the driver typed (:func:`deltalog.spark._files.carry_error`)."""
    try:
        store = task.store()
        spec = read_schema(task.schema, task.partition_columns, task.column_mapping, task.columns)
        for row in rows:
            for batch in read_batches(store, spec, _row_file(row)):
                yield conformed(batch, target)
    except DeltaLogError as exc:
        raise carry_error(exc) from exc


__all__ = ["FileRow", "TableTask", "conformed", "file_row", "read_group"]
