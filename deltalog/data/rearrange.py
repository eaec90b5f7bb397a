"""Rewriting one bin of OPTIMIZE: the live rows of some files into new files, the same rows, in another layout.

A bin's files are read with the table's reader (:mod:`deltalog.data.read`: rows a deletion vector deletes are
dropped, columns found by physical name or field id, partition values from the log) and written by the one
data-file writer (:mod:`deltalog.data.files`: physical names, field ids, statistics, the table's codec, files
rolled at the target size), so a rewritten file is what any deltalog write would produce. On a table with row
tracking enabled the reader adds each row's stable row id and commit version and the writer stores them in the
table's materialized columns, so the rows keep both (PROTOCOL "Row Tracking").

Compaction streams: a few files are read at once (:func:`~deltalog.data.parallel.ordered`, in file order)
while the writer buffers at most a row group, so memory does not grow with the bin. A curve layout (Z-order,
Hilbert) sorts the whole bin by its key (:mod:`deltalog.data.curve`) before writing, so it holds the bin's
rows; the files then cover contiguous ranges of the key. The rows are never checked against the table's row
rules again: they are rows the table already holds.

Used locally by :mod:`deltalog.dml.optimize` and on Spark executors; nothing here commits. A failure deletes
every file the bin wrote before it propagates.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa

from deltalog.core.actions import Add
from deltalog.data.curve import curve_order
from deltalog.data.files import DataFileWriter, WriteTarget
from deltalog.data.parallel import ordered
from deltalog.data.read import BATCH_ROWS, DataFile, ReadSchema, read_batches
from deltalog.errors import InvalidArgumentError
from deltalog.storage.base import LogStore

#: files of one bin read at once
READERS = 4


@dataclass(frozen=True)
class Layout:
    """How a bin's rows are ordered in the new files: as read (``curve`` None), or along a space-filling curve
    over ``columns`` (logical names)."""

    curve: str | None = None
    columns: tuple[str, ...] = ()


KEEP_ORDER = Layout()


def _file_batches(store: LogStore, spec: ReadSchema, file: DataFile) -> Iterator[pa.RecordBatch]:
    yield from read_batches(store, spec, file)


def live_batches(
    store: LogStore, spec: ReadSchema, files: Sequence[DataFile], readers: int = READERS
) -> Iterator[pa.RecordBatch]:
    """The live rows of ``files`` in file order, ``readers`` files read at once."""
    producers = [functools.partial(_file_batches, store, spec, f) for f in files]
    return ordered(producers, readers)


def _sorted(
    spec: ReadSchema, batches: Iterator[pa.RecordBatch], layout: Layout, row_group_bytes: int
) -> list[pa.RecordBatch]:
    """The rows sorted along the curve, in batches of about a row group, so that files roll between them."""
    table = pa.Table.from_batches(list(batches), schema=spec.schema)
    missing = [c for c in layout.columns if c not in spec.schema.names]
    if missing:
        raise InvalidArgumentError(f"cannot order by {missing[0]!r}: not a column of the table")
    order = curve_order([table.column(c) for c in layout.columns], layout.curve or "")
    rows = max(1, min(BATCH_ROWS, table.num_rows * row_group_bytes // max(1, table.nbytes)))
    out: list[pa.RecordBatch] = table.take(order).to_batches(max_chunksize=rows)
    return out


def rewrite(
    store: LogStore,
    spec: ReadSchema,
    target: WriteTarget,
    files: Sequence[DataFile],
    *,
    layout: Layout = KEEP_ORDER,
    target_file_size: int | None = None,
    readers: int = READERS,
    encoders: int | None = None,
) -> list[Add]:
    """Write the live rows of ``files`` (one partition's) anew, in ``layout``; the adds of the new files
    (``dataChange`` as the writer sets it: the caller decides what the commit says)."""
    writer = DataFileWriter(store, target, target_file_size=target_file_size, rules_checked=True, encoders=encoders)
    try:
        batches = live_batches(store, spec, files, readers)
        if layout.curve is not None:
            batches = iter(_sorted(spec, batches, layout, writer.row_group_bytes))
        writer.write_all(batches)
        return writer.close()
    except BaseException:
        writer.abort()
        raise


__all__ = ["KEEP_ORDER", "READERS", "Layout", "live_batches", "rewrite"]
