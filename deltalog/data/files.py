"""The data-file writer: Arrow batches in, parquet files in the table's store out, one ``add`` per file.

Plain Python writes and Spark executors (inside ``mapInArrow``) both use :class:`DataFileWriter`, so one
implementation decides what a data file holds. Each batch is first checked against the table's rules and split
by partition (:mod:`deltalog.data.prepare`: a violation raises before any of the batch is written), then its
rows are buffered per partition; full buffers become row groups, encoded into the partition's files on a small
thread pool (:mod:`deltalog.data.rolling`).

Memory stays bounded whatever the input size: a partition's buffer becomes a parquet row group at
:data:`ROW_GROUP_BYTES` (or when all buffers together pass :data:`MAX_BUFFERED_BYTES`, the largest goes
first), the rows handed to the encoders are bounded by :data:`MAX_IN_FLIGHT_BYTES`, at most
``max_open_files`` files are open at once (the least recently used is finished first), and a file is finished
once it reaches ``target_file_size`` bytes (``delta.targetFileSize``, else 100 MiB as in ``deltalake``). Files
stream into the store (:mod:`deltalog.data.output`) and carry Delta statistics (:mod:`deltalog.arrow.stats`)
keyed by physical names.

The writer never commits. :func:`write_files` deletes every file it wrote when it fails; a caller whose commit
is refused deletes them with :func:`~deltalog.data.output.delete_files` (after ``CommitStateUnknownError`` they
must stay: the commit may have landed).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from deltalog.core.actions import Add
from deltalog.core.features.cdf import CHANGE_DATA_DIR
from deltalog.data.batches import batches
from deltalog.data.paths import change_file_name, data_file_key, data_file_name, random_prefix_length
from deltalog.data.prepare import BatchPreparer, PartitionValues, Prepared
from deltalog.data.rolling import Encoder, FileSpec, PartitionFiles
from deltalog.data.target import DEFAULT_TARGET_FILE_SIZE, WriteTarget, parquet_options, positive
from deltalog.data.target import target_file_size as target_file_size_of
from deltalog.storage.base import LogStore

ROW_GROUP_BYTES = 32 * 1024 * 1024
MAX_BUFFERED_BYTES = 64 * 1024 * 1024
MAX_IN_FLIGHT_BYTES = 64 * 1024 * 1024
MAX_OPEN_FILES = 64


@dataclass
class _Partition:
    """The buffering state of one partition (the caller's thread only); its files live in ``files``."""

    files: PartitionFiles
    buffer: list[pa.RecordBatch] = field(default_factory=list)
    buffered_bytes: int = 0
    buffered_rows: int = 0
    file_rows: int = 0  # rows sent to the open file (a size roll on the encoder may have started a new one)
    open: bool = False
    used: int = 0


class DataFileWriter:
    """Writes one table's data files from Arrow batches; :meth:`close` returns their adds."""

    def __init__(
        self,
        store: LogStore,
        target: WriteTarget,
        *,
        target_file_size: int | None = None,
        max_rows_per_file: int | None = None,
        max_open_files: int = MAX_OPEN_FILES,
        clock: Callable[[], float] = time.time,
        rules_checked: bool = False,
        change_data: bool = False,
        encoders: int | None = None,
        max_buffered_bytes: int | None = None,
    ) -> None:
        """``max_buffered_bytes`` lowers what the writer holds (rows buffered, and rows being encoded, each at
        most that many bytes; a row group at most half): a caller with a memory budget of its own (a merge)."""
        self.store = store
        #: change data files (PROTOCOL "Change Data Files"): rows with ``_change_type``, under ``_change_data/``,
        #: checked against no row rules (they are rows the table held, or rows this commit adds and checks)
        self.change_data = change_data
        self.target = target
        conf = target.configuration
        size = target_file_size_of(conf, target_file_size)
        self.target_file_size = size
        self.max_rows_per_file = None if max_rows_per_file is None else positive(max_rows_per_file, "max_rows_per_file")
        self.max_open_files = positive(max_open_files, "max_open_files")
        self.max_buffered = (
            MAX_BUFFERED_BYTES if max_buffered_bytes is None else min(MAX_BUFFERED_BYTES, max_buffered_bytes)
        )
        self.row_group_bytes = min(ROW_GROUP_BYTES, size, max(1, self.max_buffered // 2))
        self.preparer = BatchPreparer(target, rules_checked=rules_checked, change_data=change_data)
        self.prefix_length = 0 if change_data else random_prefix_length(conf, target.column_mapped)
        self.spec = FileSpec(
            store,
            self.preparer.data_schema,
            parquet_options(conf),
            self.preparer.stats_leaves,
            self.preparer.partition_names,
            size,
            self._new_key,
            clock,
        )
        self.encoder = Encoder(min(MAX_IN_FLIGHT_BYTES, self.max_buffered), encoders)
        self.num_rows = 0
        self._parts: dict[PartitionValues, _Partition] = {}
        self._buffered = 0
        self._tick = 0

    def _new_key(self, values: PartitionValues) -> str:
        names = self.preparer.partition_names
        codec = self.spec.parquet_options["compression"]
        if self.change_data:  # partition directories, except on column-mapped tables (which have none)
            directories = [] if self.target.column_mapped else names
            return f"{CHANGE_DATA_DIR}/{data_file_key(change_file_name(codec), directories, values)}"
        return data_file_key(data_file_name(codec), names, values, self.prefix_length)

    # ------------------------------------------------------------------------------------------ batches in
    def write(self, batch: pa.RecordBatch, *, kept: bool = False) -> None:
        """Check ``batch`` against the table's rules, then buffer or write it; raises before writing any of
        it when a rule fails. ``kept``: rows whose identity values are kept as they are (:meth:`prepare`)."""
        self.accept(self.prepare(batch, kept=kept))

    def write_all(self, batches: Iterable[pa.RecordBatch]) -> None:
        """:meth:`write` every batch, preparing the next one (reading it, checking it, splitting it by
        partition) on a worker thread while this one is buffered and encoded: both release the GIL. At most
        one prepared batch waits."""
        source = iter(batches)

        def next_prepared() -> Prepared | None:
            batch = next(source, None)
            return None if batch is None else self.prepare(batch)

        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="deltalog-prepare") as pool:
            pending = pool.submit(next_prepared)
            while (prepared := pending.result()) is not None:
                pending = pool.submit(next_prepared)
                try:
                    self.accept(prepared)
                except BaseException:
                    pending.cancel()
                    raise

    def prepare(self, batch: pa.RecordBatch, *, kept: bool = False) -> Prepared:
        """``batch`` checked and split (:meth:`BatchPreparer.prepare`); may run on another thread than
        :meth:`accept` (one prepare at a time)."""
        return self.preparer.prepare(batch, kept=kept)

    def accept(self, prepared: Prepared) -> None:
        """Buffer a prepared batch's rows per partition; full buffers become row groups."""
        self.num_rows += prepared.num_rows
        for values, rows in prepared.parts:
            self._append(values, rows)

    # ------------------------------------------------------------------------------------------ buffering
    def _append(self, values: PartitionValues, rows: pa.RecordBatch) -> None:
        part = self._parts.get(values)
        if part is None:
            part = self._parts[values] = _Partition(PartitionFiles(self.spec, values))
        while rows.num_rows:
            take = rows.num_rows
            if self.max_rows_per_file is not None:
                take = min(take, self.max_rows_per_file - part.file_rows - part.buffered_rows)
            head, rows = rows.slice(0, take), rows.slice(take)
            part.buffer.append(head)
            part.buffered_rows += head.num_rows
            part.buffered_bytes += head.nbytes
            self._buffered += head.nbytes
            full = self.max_rows_per_file is not None and part.file_rows + part.buffered_rows >= self.max_rows_per_file
            if full or part.buffered_bytes >= self.row_group_bytes:
                self._flush(part, finish=full)
        while self._buffered > self.max_buffered:
            self._flush(max(self._parts.values(), key=lambda p: p.buffered_bytes))

    def _flush(self, part: _Partition, finish: bool = False) -> None:
        """Hand ``part``'s buffer to its files as a row group (finishing the file after it when asked)."""
        if not part.buffer:
            if finish and part.open:
                self._finish(part)
            return
        table = pa.Table.from_batches(part.buffer, schema=self.spec.schema)
        nbytes = part.buffered_bytes
        self._buffered -= nbytes
        part.buffer, part.buffered_bytes, part.buffered_rows = [], 0, 0
        after = [] if part.open else self._make_room()
        part.open = not finish
        part.file_rows = 0 if finish else part.file_rows + table.num_rows
        self._tick += 1
        part.used = self._tick
        files = part.files
        self.encoder.submit(files, lambda: files.write(table, finish), nbytes, after)

    def _make_room(self) -> list[Future[None]]:
        """Before a partition opens a file: finish the least recently used open one when ``max_open_files``
        are open; the job to wait for, so that the new file is opened only after the old one is closed."""
        open_parts = [p for p in self._parts.values() if p.open]
        if len(open_parts) < self.max_open_files:
            return []
        oldest = min(open_parts, key=lambda p: p.used)
        self._flush(oldest, finish=True)
        done = self.encoder.pending(oldest.files)
        return [] if done is None else [done]

    def _finish(self, part: _Partition) -> None:
        part.open, part.file_rows = False, 0
        files = part.files
        self.encoder.submit(files, files.finish, 0)

    def roll(self) -> None:
        """Finish every open file: rows written after this start new files (a caller that decides where files
        end, such as OPTIMIZE cutting a curve-sorted bin at cell boundaries)."""
        for part in self._parts.values():
            self._flush(part, finish=True)

    # ------------------------------------------------------------------------------------------ the end
    def close(self) -> list[Add]:
        """Write what is buffered and finish every file; the adds, one per file."""
        for part in self._parts.values():
            self._flush(part, finish=True)
        self.encoder.drain()
        self.encoder.stop()
        return [a for part in self._parts.values() for a in part.files.adds]

    def abort(self) -> list[str]:
        """Delete every file this writer created (finished or not, also after :meth:`close`: a refused
        commit's); the keys that could not be deleted."""
        self.encoder.stop()
        left = [key for part in self._parts.values() for key in part.files.discard()]
        self._parts.clear()
        self._buffered = 0
        return left


def write_files(store: LogStore, data: Any, target: WriteTarget, **options: Any) -> list[Add]:
    """Write ``data`` as the table's data files; the adds to commit. On any failure every file written so far
    is deleted and the error propagates (``options``: see :class:`DataFileWriter`)."""
    writer = DataFileWriter(store, target, **options)
    try:
        writer.write_all(batches(data))
        return writer.close()
    except BaseException:
        writer.abort()
        raise


__all__ = [
    "DEFAULT_TARGET_FILE_SIZE",
    "DataFileWriter",
    "Prepared",
    "WriteTarget",
    "write_files",
]
