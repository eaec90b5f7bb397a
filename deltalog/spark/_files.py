"""Executor-side data file writing and the errors tasks carry: pyarrow only (no pyspark).

Each write task of the sink (``df.write.format("deltalog")``, :mod:`deltalog.spark.source`) hands its rows to
the one data-file writer (:mod:`deltalog.data.files`: name matching and safe casts, NOT NULL, CHECK constraints,
invariants and generated columns, Hive-escaped partition directories or random prefixes, physical names and
field ids, Delta statistics, files rolled by size and row count) through the table's store, rebuilt on the
executor from the root and the storage options, and returns the files' ``add`` actions (:class:`TaskFiles`);
only those travel to the driver. A task that fails deletes the files it wrote; the sink's ``abort`` deletes
those of the tasks that succeeded.

:func:`deltalog.spark.write` evaluates the table's row rules with Spark SQL instead, as Delta Spark does: it
adds one boolean column per rule (:class:`RowCheck`) and generated or default values for columns the DataFrame
lacks; the task refuses a batch in which a rule column is false **or null** (:func:`checked_batches`) before
any of its rows is written, and drops the rule columns.

A deltalog error raised in a task or in the source's driver-side calls (a NOT NULL or CHECK violation, a value
the table's type cannot hold, a conflict) reaches the caller only as text inside Spark's exception, so it is
wrapped in a marked JSON record (:func:`carry_error`) and rebuilt typed from it (:func:`carried_error`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from deltalog import errors
from deltalog.core.actions import Add
from deltalog.data.files import WriteTarget, write_files
from deltalog.errors import ConstraintViolationError, DeltaLogError
from deltalog.storage.uri import store_for

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


def raise_carried(exc: BaseException) -> None:
    """Raise the deltalog error a failed Spark job carried from a task, typed, if it carried one."""
    typed = carried_error(exc)
    if typed is not None:
        raise typed from exc


@dataclass(frozen=True)
class TaskFiles:
    """What one write task hands the driver: the ``add`` of each file it wrote, the rows it wrote, and what the
    job was planned against: the table version (so the commit checks everything committed since), or the table
    the commit creates (``NewTable``: its files were written with that table's physical names)."""

    adds: tuple[Add, ...]
    rows: int
    read_version: int
    new_table: Any = None


def write_task(
    batches: Iterator[pa.RecordBatch],
    *,
    root: str,
    storage_options: Mapping[str, Any] | None,
    target: WriteTarget,
    read_version: int,
    new_table: Any = None,
    checks: Sequence[RowCheck] = (),
    inside: Callable[[pa.RecordBatch, int], None] | None = None,
    max_rows_per_file: int | None = None,
) -> TaskFiles:
    """One write task of the sink: the task's rows as data files of ``target`` through the one data-file writer.

    ``checks`` are rule columns Spark SQL evaluated (the rows are then known to satisfy the table's rules, and
    the columns are dropped); without them the data-file writer evaluates the rules itself. ``inside`` checks
    each batch against an overwrite's ``replaceWhere`` (given the rows seen before it). A task that fails has
    deleted its files (:func:`~deltalog.data.files.write_files`); a deltalog error is carried to the driver."""
    store = store_for(root, dict(storage_options) if storage_options else None)
    data = [str(f["name"]) for f in target.schema.get("fields") or []]
    counted = [0]

    def counting(rows: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in rows:
            if inside is not None:
                inside(batch, counted[0])
            counted[0] += batch.num_rows
            yield batch

    try:
        rows = checked_batches(batches, checks, data) if checks else batches
        # one encoding thread: Spark already runs a task per core, more threads per task would oversubscribe them
        adds = write_files(
            store,
            counting(rows),
            target,
            max_rows_per_file=max_rows_per_file,
            rules_checked=bool(checks),
            encoders=1,
        )
    except DeltaLogError as exc:
        raise carry_error(exc) from exc
    return TaskFiles(tuple(adds), counted[0], read_version, new_table)


__all__ = [
    "ExecutorError",
    "RowCheck",
    "TaskFiles",
    "carried_error",
    "carry_error",
    "checked_batches",
    "raise_carried",
    "write_task",
]
