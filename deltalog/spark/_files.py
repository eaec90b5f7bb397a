"""Executor-side data file writing: pyarrow only (no pyspark), so it runs inside ``mapInArrow`` tasks.

Each task hands its rows to the one data-file writer (:mod:`deltalog.data.files`: name matching and safe
casts, NOT NULL, CHECK constraints and invariants, generated columns, Hive-escaped partition directories or
random prefixes, physical names and field ids, Delta statistics, files rolled by size and row count) through
the table's store, rebuilt on the executor from the root and the storage options. It yields one small
metadata row per file; only those rows travel to the driver. A task that fails deletes the files it wrote.

A deltalog error raised in a task (a NOT NULL or CHECK violation, a value the table's type cannot hold) reaches
the driver only as text inside Spark's exception, so the task wraps it in a marked JSON record
(:func:`carry_error`) and the driver rebuilds the typed error from it (:func:`carried_error`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson
import pyarrow as pa

from deltalog import errors
from deltalog.data.files import WriteTarget, write_files
from deltalog.errors import DeltaLogError
from deltalog.storage.uri import store_for

#: what each task sends back to the driver, one row per data file written
RESULT_SCHEMA = pa.schema(
    [
        pa.field("path", pa.string()),  # the add's path: relative to the table root, URI-encoded
        pa.field("partition_values", pa.string()),  # JSON object physical column -> serialized value or null
        pa.field("size", pa.int64()),
        pa.field("modification_time", pa.int64()),
        pa.field("stats", pa.string()),
        pa.field("num_records", pa.int64()),
    ]
)
RESULT_DDL = "path string, partition_values string, size long, modification_time long, stats string, num_records long"
_MARK = "<<deltalog-error>>"
_CARRIED = re.compile(re.escape(_MARK) + r"(\{.*?\})" + re.escape(_MARK), re.DOTALL)


class ExecutorError(RuntimeError):
    """A deltalog error on its way from a Spark task to the driver (its type and fields as marked JSON)."""


def carry_error(exc: DeltaLogError) -> ExecutorError:
    """``exc`` as text the driver can turn back into the same error type with the same fields."""
    fields = {k: v for k, v in vars(exc).items() if isinstance(v, (str, int, float, bool, dict, type(None)))}
    doc = {"type": type(exc).__name__, "message": str(exc), "fields": fields}
    return ExecutorError(_MARK + orjson.dumps(doc, default=str).decode() + _MARK)


def carried_error(exc: BaseException) -> DeltaLogError | None:
    """The deltalog error a failed Spark job carried from a task, rebuilt; None when it carried none."""
    found = _CARRIED.search(str(exc))
    if found is None:
        return None
    try:
        doc = orjson.loads(found.group(1))
    except orjson.JSONDecodeError:
        return None
    cls = getattr(errors, str(doc.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, DeltaLogError)):
        return None
    rebuilt = cls.__new__(cls)
    Exception.__init__(rebuilt, doc.get("message", ""))
    for key, value in (doc.get("fields") or {}).items():
        setattr(rebuilt, key, value)
    return rebuilt


def write_partitioned(
    batches: Iterator[pa.RecordBatch],
    *,
    root: str,
    storage_options: Mapping[str, Any] | None,
    schema: Mapping[str, Any],
    partition_columns: Sequence[str],
    configuration: Mapping[str, str],
    target_rows: int,
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` body: write the task's rows as data files, yield one metadata row per file."""
    store = store_for(root, dict(storage_options) if storage_options else None)
    target = WriteTarget(schema, tuple(partition_columns), dict(configuration))
    try:
        adds = write_files(store, batches, target, max_rows_per_file=target_rows)
    except DeltaLogError as exc:
        raise carry_error(exc) from exc
    for add in adds:
        stats = orjson.loads(add.stats or "{}")
        row = {
            "path": [add.path],
            "partition_values": [orjson.dumps(dict(add.partition_values)).decode()],
            "size": [add.size],
            "modification_time": [add.modification_time],
            "stats": [add.stats],
            "num_records": [int(stats.get("numRecords", 0))],
        }
        yield pa.RecordBatch.from_pydict(row, schema=RESULT_SCHEMA)


__all__ = ["RESULT_DDL", "RESULT_SCHEMA", "ExecutorError", "carried_error", "carry_error", "write_partitioned"]
