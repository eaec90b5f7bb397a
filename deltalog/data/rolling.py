"""The file side of writing: row groups encoded into a partition's parquet files, rolled at the target size,
on a small thread pool.

Encoding a row group (pyarrow's ``ParquetWriter.write_table``) and its statistics release the GIL, so row
groups of different partitions are encoded at once by :class:`Encoder`'s threads, while the caller keeps
preparing and buffering the next batches. Each partition is a :class:`PartitionFiles` lane: its jobs run in
the order submitted (a job waits for the lane's previous one; the pool is first-in first-out, so the job it
waits for is already running or done), and a lane is used by one thread at a time. The rows handed to running
or queued jobs are bounded (``max_in_flight_bytes``): submitting waits for the oldest job past it.

A new file's dictionary-encoded columns are chosen from its first row group (:mod:`deltalog.data.encoding`).
A failure in a job is raised by the next :meth:`Encoder.submit` or :meth:`Encoder.drain`; the caller then
discards every lane (:meth:`PartitionFiles.discard`), which deletes what they wrote.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.arrow.stats import StatsCollector, dumps
from deltalog.core.actions import Add
from deltalog.data.encoding import dictionary_columns
from deltalog.data.memory import DATA_POOL
from deltalog.data.output import Output, delete_files, write_failures
from deltalog.data.paths import log_path
from deltalog.storage.base import LogStore

#: encoding threads per writer: enough to keep two cores busy beside the thread preparing batches
MAX_ENCODERS = 4


def default_encoders() -> int:
    return max(1, min(MAX_ENCODERS, os.cpu_count() or 1))


@dataclass(frozen=True)
class FileSpec:
    """How a writer's files are made: where (``key`` names a new file for a partition's values), with which
    columns and parquet options, which leaves get statistics, and when a file is large enough to finish."""

    store: LogStore
    schema: pa.Schema
    parquet_options: dict[str, Any]
    stats_leaves: set[tuple[str, ...]]
    partition_names: Sequence[str]
    target_file_size: int
    key: Callable[[tuple[str | None, ...]], str]
    clock: Callable[[], float]


@contextlib.contextmanager
def _discarded_on_failure(output: Output) -> Iterator[None]:
    try:
        yield
    except BaseException:
        output.discard()  # closes the store's handle and deletes what was written
        raise


class PartitionFiles:
    """One partition's files: the open one (if any) and the adds of those finished. Used by one thread at a
    time (the :class:`Encoder` orders a lane's jobs)."""

    def __init__(self, spec: FileSpec, values: tuple[str | None, ...]) -> None:
        self.spec = spec
        self.values = values
        self.adds: list[Add] = []
        #: store keys of every file this lane created, finished or not (appended before the file exists)
        self.written: list[str] = []
        self._output: Output | None = None
        self._writer: pq.ParquetWriter | None = None
        self._stats: StatsCollector | None = None

    def write(self, table: pa.Table, finish: bool = False) -> None:
        """Append ``table`` as one row group (opening a file first if none is open); finish the file when
        asked or once it reaches the target size."""
        if self._writer is None:
            self._open(table)
        assert self._output is not None and self._writer is not None and self._stats is not None
        with write_failures(self.spec.store, self._output.key):
            self._writer.write_table(table, row_group_size=max(1, table.num_rows))
        self._stats.update(table)
        if finish or self._output.tell() >= self.spec.target_file_size:
            self.finish()

    def _open(self, first: pa.Table) -> None:
        spec = self.spec
        options = dict(spec.parquet_options)
        options["use_dictionary"] = dictionary_columns(first, options["dictionary_pagesize_limit"])
        key = spec.key(self.values)
        self.written.append(key)
        output = Output(spec.store, key)
        with _discarded_on_failure(output), write_failures(spec.store, key):
            self._writer = pq.ParquetWriter(output.stream, spec.schema, memory_pool=DATA_POOL, **options)
        self._output = output
        self._stats = StatsCollector(spec.schema, spec.stats_leaves)

    def finish(self) -> None:
        """Close the open file (if any) and describe it."""
        output, writer, stats = self._output, self._writer, self._stats
        if output is None or writer is None or stats is None:
            return
        self._output = self._writer = self._stats = None
        with _discarded_on_failure(output):
            with write_failures(self.spec.store, output.key):
                writer.close()
            size = output.close()
        self.adds.append(
            Add(
                path=log_path(output.key),
                partition_values=dict(zip(self.spec.partition_names, self.values, strict=True)),
                size=size,
                modification_time=int(self.spec.clock() * 1000),
                data_change=True,
                stats=dumps(stats.stats()),
            )
        )

    def discard(self) -> list[str]:
        """Abandon the open file and delete every file of this lane; the keys that could not be deleted."""
        if self._writer is not None:
            # Closed here, before its stream goes: left open, the writer's ``__del__`` would close it over the
            # closed stream and fail as an unraisable exception wherever garbage collection runs.
            with contextlib.suppress(Exception):
                self._writer.close()
            self._writer.is_open = False
        if self._output is not None:
            self._output.discard()
        self._output = self._writer = self._stats = None
        left = delete_files(self.spec.store, self.written)
        self.written, self.adds = [], []
        return left


class Encoder:
    """Runs lanes' jobs on up to ``workers`` threads, each lane's in order, with the rows in flight bounded."""

    def __init__(self, max_in_flight_bytes: int, workers: int | None = None) -> None:
        self.max_in_flight_bytes = max_in_flight_bytes
        self.workers = workers or default_encoders()
        self._pool: ThreadPoolExecutor | None = None
        self._last: dict[int, Future[None]] = {}  # id(lane) -> its latest job
        self._in_flight: deque[tuple[Future[None], int]] = deque()
        self._bytes = 0

    def submit(
        self, lane: PartitionFiles, job: Callable[[], None], nbytes: int, after: Iterable[Future[None]] = ()
    ) -> Future[None]:
        """Run ``job`` after the lane's previous job (and after ``after``); waits while too many rows are in
        flight, and raises what an earlier job raised."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="deltalog-encode")
        before = [f for f in (self._last.get(id(lane)), *after) if f is not None]

        def run() -> None:
            for f in before:
                f.result()  # a failed predecessor fails this job too: the lane's file is broken
            job()

        future = self._pool.submit(run)
        self._last[id(lane)] = future
        self._in_flight.append((future, nbytes))
        self._bytes += nbytes
        self._settle()
        return future

    def pending(self, lane: PartitionFiles) -> Future[None] | None:
        """The lane's latest job, if any."""
        return self._last.get(id(lane))

    def _settle(self) -> None:
        while self._in_flight and (self._in_flight[0][0].done() or self._bytes > self.max_in_flight_bytes):
            future, nbytes = self._in_flight.popleft()
            self._bytes -= nbytes
            future.result()

    def drain(self) -> None:
        """Wait for every job; raise the first failure."""
        while self._in_flight:
            future, nbytes = self._in_flight.popleft()
            self._bytes -= nbytes
            future.result()

    def stop(self) -> None:
        """Cancel queued jobs, wait for running ones, and end the threads (never raises)."""
        for future, _ in self._in_flight:
            future.cancel()
        wait([f for f, _ in self._in_flight])
        self._in_flight.clear()
        self._bytes = 0
        self._last.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


__all__ = ["Encoder", "FileSpec", "PartitionFiles", "default_encoders"]
