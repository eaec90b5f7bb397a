"""Executor-side half of Spark's change reader: pyarrow and deltalog's stores only (no pyspark, no Hadoop).

The driver plans the range (:func:`deltalog.dml.changes.plan_changes`: the version walk and every check) and sends
one row per :class:`~deltalog.core.change_feed.ChangeFile`: the file as the log spells it, which of its rows
(deletion vector, and the vector that selects rows whose mark changed), the change type, the version and its
time. Each task reads its rows with :func:`deltalog.data.changes.read_change_file`, the code that serves
``DeltaLog.changes`` on one machine, so the rows are the same; the vectors' difference is computed here, on the
executor that reads the file.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson
import pyarrow as pa

from deltalog.actions import DeletionVector
from deltalog.core.change_feed import ChangeFile
from deltalog.data.changes import change_schema, read_change_file
from deltalog.errors import DeltaLogError
from deltalog.spark._files import carry_error
from deltalog.spark._scan_io import TableTask, conformed

#: what the driver says of each file to read, in order
CHANGE_FIELDS = (
    "path",
    "partition_values",
    "change_type",
    "deletion_vector",
    "selected_by",
    "stats",
    "size",
    "version",
    "timestamp",
)


def _dv_text(dv: DeletionVector | None) -> str | None:
    if dv is None:
        return None
    fields = (dv.storage_type, dv.path_or_inline_dv, dv.size_in_bytes, dv.cardinality, dv.offset)
    return orjson.dumps(fields).decode()


def _dv(text: str | None) -> DeletionVector | None:
    return None if text is None else DeletionVector(*orjson.loads(text))


def change_row(file: ChangeFile, version: int, timestamp: int) -> tuple[Any, ...]:
    """The row the driver sends for ``file`` of ``version`` (committed at ``timestamp`` ms): a :data:`ChangeRow`."""
    return (
        file.path,
        orjson.dumps(dict(file.partition_values)).decode(),
        file.change_type,
        _dv_text(file.deletion_vector),
        _dv_text(file.selected_by),
        file.stats,
        file.size,
        version,
        timestamp,
    )


def _file(row: Mapping[str, Any]) -> ChangeFile:
    return ChangeFile(
        row["path"],
        orjson.loads(row["partition_values"]),
        row["change_type"],
        _dv(row["deletion_vector"]),
        _dv(row["selected_by"]),
        row["stats"],
        row["size"],
    )


#: one file to read, as the driver describes it to a task (:data:`CHANGE_FIELDS` order)
ChangeRow = tuple[Any, ...]


def read_change_group(rows: Sequence[ChangeRow], task: TableTask, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    """One read task of ``format("deltalog")`` with ``readChangeFeed``: each file's change rows in the task's
    columns and the three change columns, in Spark's Arrow schema ``target``. A deltalog error (a missing data,
    change or DV file) is carried to the driver typed (:func:`deltalog.spark._files.carry_error`)."""
    try:
        store = task.store()
        spec = change_schema(task.schema, task.partition_columns, task.column_mapping, task.columns)
        for values in rows:
            row = dict(zip(CHANGE_FIELDS, values, strict=True))
            for batch in read_change_file(store, spec, _file(row), row["version"], row["timestamp"]):
                yield conformed(batch, target)
    except DeltaLogError as exc:
        raise carry_error(exc) from exc


__all__ = ["CHANGE_FIELDS", "ChangeRow", "change_row", "read_change_group"]
