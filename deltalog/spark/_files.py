"""Executor-side data file writing: pyarrow only (no pyspark), so it runs inside ``mapInArrow`` tasks.

Each task hands its rows to the one data-file writer (:mod:`deltalog.data.files`: name matching and safe
casts, NOT NULL, Hive-escaped partition directories or random prefixes, physical names and field ids, Delta
statistics, files rolled by size and row count) through the table's store, rebuilt on the executor from the
root and the storage options. It yields one small metadata row per file; only those rows travel to the
driver. A task that fails deletes the files it wrote; a task that succeeded in a job that failed elsewhere
reports its files through an accumulator (:class:`PathList`), and the driver deletes them.

The table's row rules (CHECK constraints, invariants, generated columns) are evaluated by Spark SQL, as
Delta Spark evaluates them: the driver adds one boolean column per rule (:class:`RowCheck`) and generated or
default values for columns the DataFrame lacks; the task refuses a batch in which a rule column is false
**or null** (:func:`checked_batches`) before any of its rows is written, and drops the rule columns.

A deltalog error raised in a task (a NOT NULL or CHECK violation, a value the table's type cannot hold) reaches
the driver only as text inside Spark's exception, so the task wraps it in a marked JSON record
(:func:`carry_error`) and the driver rebuilds the typed error from it (:func:`carried_error`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from deltalog import errors
from deltalog.data.files import WriteTarget, write_files
from deltalog.errors import ConstraintViolationError, DeltaLogError
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


@dataclass(frozen=True)
class RowCheck:
    """A rule Spark evaluated per row into the boolean ``column``: the row passes only where it is true."""

    column: str
    constraint: str  # how messages name the rule ("CHECK constraint positive", "generated column day")
    expression: str


#: values of a failing row shown in the error, at most
_SHOWN_COLUMNS = 12


def _violation(check: RowCheck, batch: pa.RecordBatch, index: int, data: Sequence[str]) -> ConstraintViolationError:
    row = {name: batch.column(name)[index].as_py() for name in data[:_SHOWN_COLUMNS]}
    shown = ", ".join(f"{k} => {v!r}" for k, v in row.items())
    return ConstraintViolationError(
        f"{check.constraint} ({check.expression}) is violated (false or null) by a row with values: {shown}; "
        "nothing was committed",
        constraint=check.constraint,
        expression=check.expression,
        row=row,
    )


def checked_batches(
    batches: Iterator[pa.RecordBatch], checks: Sequence[RowCheck], data: Sequence[str]
) -> Iterator[pa.RecordBatch]:
    """Each batch's ``data`` columns, after every rule column of it was found true on every row."""
    for batch in batches:
        for check in checks:
            failed = pc.invert(pc.fill_null(batch.column(check.column), False))
            if pc.any(failed).as_py():
                raise _violation(check, batch, int(pc.index(failed, True).as_py()), data)
        yield batch.select(list(data))


class PathList:
    """A Spark ``AccumulatorParam`` (duck-typed: this module stays free of pyspark) collecting the paths of
    files written by tasks that succeeded: Spark merges their updates on the driver even when the job fails,
    which is the one way the driver learns what to delete then."""

    def zero(self, value: list[str]) -> list[str]:
        return []

    def addInPlace(self, value1: list[str], value2: list[str]) -> list[str]:
        return [*value1, *value2]


def raise_carried(exc: BaseException) -> None:
    """Raise the deltalog error a failed Spark job carried from a task, typed, if it carried one."""
    typed = carried_error(exc)
    if typed is not None:
        raise typed from exc


def write_partitioned(
    batches: Iterator[pa.RecordBatch],
    *,
    root: str,
    storage_options: Mapping[str, Any] | None,
    target: WriteTarget,
    checks: Sequence[RowCheck],
    target_rows: int,
    written: Any = None,
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` body: check the task's rows against the rule columns, write them as data files,
    report their paths to the ``written`` accumulator, yield one metadata row per file."""
    store = store_for(root, dict(storage_options) if storage_options else None)
    data = [str(f["name"]) for f in target.schema.get("fields") or []]
    try:
        rows = checked_batches(batches, checks, data)
        # one encoding thread: Spark already runs a task per core, more threads per task would oversubscribe them
        adds = write_files(store, rows, target, max_rows_per_file=target_rows, rules_checked=True, encoders=1)
    except DeltaLogError as exc:
        raise carry_error(exc) from exc
    if written is not None:
        written.add([add.path for add in adds])
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


__all__ = [
    "RESULT_DDL",
    "RESULT_SCHEMA",
    "ExecutorError",
    "PathList",
    "RowCheck",
    "carried_error",
    "carry_error",
    "checked_batches",
    "raise_carried",
    "write_partitioned",
]
