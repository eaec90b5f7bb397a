"""Rewriting one bin of OPTIMIZE: the live rows of some files into new files, the same rows, in another layout.

A bin's files are read with the table's reader (:mod:`deltalog.data.read`: rows a deletion vector deletes are
dropped, columns found by physical name or field id, partition values from the log) and written by the one
data-file writer (:mod:`deltalog.data.files`: physical names, field ids, statistics, the table's codec, files
rolled at the target size), so a rewritten file is what any deltalog write would produce. On a table with row
tracking enabled the reader adds each row's stable row id and commit version and the writer stores them in the
table's materialized columns, so the rows keep both (PROTOCOL "Row Tracking").

Compaction streams: the bin's files are read in order (many small files joined and read with what they share
worked out once, :func:`~deltalog.data.read.read_many`; a lone bin reads runs of them on several threads,
:func:`~deltalog.data.parallel.ordered`), while the writer holds at most :data:`STREAM_BUFFER_BYTES` of rows,
so memory does not grow with the bin. A curve layout (Z-order,
Hilbert) sorts the whole bin by its key (:mod:`deltalog.data.curve`) before writing, so it holds the bin's
rows; the files then cover contiguous ranges of the key. The rows are never checked against the table's row
rules again: they are rows the table already holds.

Used locally by :mod:`deltalog.dml.optimize` and on Spark executors; nothing here commits. A failure deletes
every file the bin wrote before it propagates.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa

from deltalog.core.actions import Add
from deltalog.data.curve import file_cuts, sorted_by_curve
from deltalog.data.files import DataFileWriter, WriteTarget
from deltalog.data.parallel import ordered
from deltalog.data.read import BATCH_ROWS, DataFile, ReadSchema, read_many
from deltalog.data.target import target_file_size as target_file_size_of
from deltalog.errors import InvalidArgumentError
from deltalog.storage.base import LogStore

#: runs of one bin's files read at once
READERS = 4

#: rows of consecutive files one reader takes at a time (a few batches' worth: enough to join small files)
RUN_ROWS = 4 * BATCH_ROWS

#: files taken as a run when their row counts are unknown
RUN_FILES = 64

#: rows a streaming (compaction) bin's writer holds, buffered or being encoded: row groups of half this, so each
#: bin in flight holds about this much whatever its partition's size (a whole 100 MiB partition would otherwise
#: be buffered as one row group). Half of it, 8 MiB of Arrow data, is some 300k rows of a narrow table: the
#: row-group size of DuckDB's writer and within that of pyarrow's.
STREAM_BUFFER_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Layout:
    """How a bin's rows are ordered in the new files: as read (``curve`` None), or along a space-filling curve
    over ``columns`` (logical names)."""

    curve: str | None = None
    columns: tuple[str, ...] = ()


KEEP_ORDER = Layout()


def file_runs(files: Sequence[DataFile], rows: int) -> list[Sequence[DataFile]]:
    """``files`` cut into consecutive runs of about ``rows`` rows each (by their ``numRecords``; a file without
    one counts as a full run's share of :data:`RUN_FILES`), so that a run is read by one reader and its small
    files still joined (:func:`~deltalog.data.read.read_many`)."""
    runs: list[Sequence[DataFile]] = []
    start, count = 0, 0
    for i, f in enumerate(files):
        count += f.num_records if f.num_records is not None else rows // RUN_FILES + 1
        if count >= rows:
            runs.append(files[start : i + 1])
            start, count = i + 1, 0
    if start < len(files):
        runs.append(files[start:])
    return runs


def live_batches(
    store: LogStore, spec: ReadSchema, files: Sequence[DataFile], readers: int = READERS, run_rows: int = RUN_ROWS
) -> Iterator[pa.RecordBatch]:
    """The live rows of ``files`` in file order, ``readers`` runs of files read at once (one: read in this
    thread). A run is about ``run_rows`` rows of consecutive files (:func:`file_runs`): many small files are read
    with what they share worked out once and their rows joined, and each thread releases the GIL while it
    decodes."""
    if readers <= 1:
        return read_many(store, spec, files)
    producers = [functools.partial(read_many, store, spec, run) for run in file_runs(files, run_rows)]
    return ordered(producers, readers)


def coalesced(batches: Iterator[pa.RecordBatch], schema: pa.Schema, rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """``batches`` joined into batches of about ``rows`` rows: the writer's cost is per batch, and small files give
    batches of a few hundred rows each."""
    held: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if not held and batch.num_rows >= rows:
            yield batch  # already large: passed on as it is, not copied
            continue
        held.append(batch)
        count += batch.num_rows
        if count >= rows:
            yield pa.Table.from_batches(held, schema=schema).combine_chunks().to_batches()[0]
            held, count = [], 0
    if held:
        yield pa.Table.from_batches(held, schema=schema).combine_chunks().to_batches()[0]


def _sorted_files(
    spec: ReadSchema, rows: list[pa.RecordBatch], layout: Layout, rows_per_file: int, row_group_bytes: int
) -> Iterator[list[pa.RecordBatch]]:
    """The rows sorted along the curve, one list of batches (each about a row group) per file to write; files
    end at the curve's cell boundaries (:func:`~deltalog.data.curve.file_cuts`). ``rows`` is emptied: the
    unsorted copy is let go as soon as the sorted one exists, which halves the bin's peak."""
    table = pa.Table.from_batches(rows, schema=spec.schema)
    rows.clear()
    missing = [c for c in layout.columns if c not in spec.schema.names]
    if missing:
        raise InvalidArgumentError(f"cannot order by {missing[0]!r}: not a column of the table")
    order, keys = sorted_by_curve([table.column(c) for c in layout.columns], layout.curve or "")
    sorted_columns = []
    for name in spec.schema.names:  # column by column, each original let go once its sorted copy exists
        sorted_columns.append(table.column(name).take(order))
        table = table.drop_columns([name])
    table = pa.Table.from_arrays(sorted_columns, schema=spec.schema)
    del order, sorted_columns
    per_batch = max(1, min(BATCH_ROWS, table.num_rows * row_group_bytes // max(1, table.nbytes)))
    bounds = [0, *file_cuts(keys, rows_per_file), table.num_rows]
    del keys
    for start, end in itertools.pairwise(bounds):
        yield table.slice(start, end - start).to_batches(max_chunksize=per_batch)


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
    input_bytes: int | None = None,
) -> list[Add]:
    """Write the live rows of ``files`` (one partition's) anew, in ``layout``; the adds of the new files
    (``dataChange`` as the writer sets it: the caller decides what the commit says). ``input_bytes``, the size
    of ``files``, tells a curve layout how many rows make a file of the target size."""
    size = target_file_size_of(target.configuration, target_file_size)
    curved = layout.curve is not None
    # a curve layout decides where its files end; the writer's own size roll is only the backstop
    writer = DataFileWriter(
        store,
        target,
        target_file_size=2 * size if curved else size,
        rules_checked=True,
        encoders=encoders,
        max_buffered_bytes=None if curved else STREAM_BUFFER_BYTES,
    )
    try:
        batches = live_batches(store, spec, files, readers)
        if not curved:
            # written in this thread: the bins already keep the cores busy, and a thread preparing batches
            # ahead only contends for the GIL with them
            for batch in coalesced(batches, spec.schema):
                writer.write(batch)
            return writer.close()
        rows = list(batches)
        count = sum(b.num_rows for b in rows)
        total = max(1, input_bytes or sum(b.nbytes for b in rows))
        rows_per_file = max(1, count * size // total)
        for chunk in _sorted_files(spec, rows, layout, rows_per_file, writer.row_group_bytes):
            writer.write_all(iter(chunk))
            writer.roll()
        return writer.close()
    except BaseException:
        writer.abort()
        raise


__all__ = ["KEEP_ORDER", "READERS", "Layout", "coalesced", "file_runs", "live_batches", "rewrite"]
