"""Executor side of MERGE and UPDATE on Spark (:mod:`deltalog.spark.distributed_dml`): pyarrow only, no pyspark.

Each task takes one group of candidate files and runs both passes of the MERGE core on it, as a local run does on
each of its groups: the first pass (:func:`~deltalog.dml.merge.scan.scan_group`: the group's rows read with their
positions and joined with the source, duplicate matches refused) and the second (an
:class:`~deltalog.dml.merge.changes.Applier`: deletion vectors or rewritten files, new rows, change files, row ids
carried), through the table's store rebuilt from the root and the storage options. It sends back the actions and
counts of its files and the source rows its target rows matched; the rows themselves never pass through the
driver. Insert tasks write the source rows no task matched. A task that fails deletes what it wrote; the files of
tasks that succeeded in a job that failed reach the driver through the ``written`` accumulator; a deltalog error
travels typed (:func:`~deltalog.spark._files.carry_error`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from deltalog.actions import Add
from deltalog.data.output import delete_files
from deltalog.dml.merge.changes import Applier, Counts
from deltalog.dml.merge.execute import Work
from deltalog.dml.merge.scan import FileActions, scan_group
from deltalog.dml.merge.source import MergeSource, materialize
from deltalog.dml.removal import Removal
from deltalog.errors import DeltaLogError
from deltalog.spark._files import carry_error
from deltalog.storage.base import LogStore
from deltalog.storage.uri import store_for


@dataclass
class TaskDone:
    """What one task did: its removal (actions, files written, counts of files), its rows by what happened to
    them, and the positions in the source of the source rows its target rows matched."""

    removal: Removal = field(default_factory=Removal)
    counts: Counts = field(default_factory=Counts)
    matched: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))


@dataclass(frozen=True)
class InsertRange:
    """The source rows ``start`` to ``stop`` (exclusive) and which of them some target row matched."""

    start: int
    stop: int
    matched: np.ndarray


def source_bytes(source: MergeSource) -> bytes:
    """The materialized source as one Arrow IPC stream: what the tasks are sent (by a Spark broadcast)."""
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, source.schema) as out:
        for _, batch in source.chunks():
            out.write_batch(batch)
    return bytes(sink.getvalue())


def _source(data: bytes | None, work: Work) -> MergeSource | None:
    if data is None:
        return None
    table = ipc.open_stream(pa.py_buffer(data)).read_all()
    return materialize(table, work.budget.source, work.budget.chunk)


def _run(store: LogStore, work: Work, body: Callable[[Applier], Removal], source: MergeSource | None) -> TaskDone:
    """``body`` with a fresh writer; the writer's files become the removal's, or are deleted if it fails."""
    done = TaskDone()
    writer = work.writer(store)
    applier = Applier(work.plan, work.description(store), writer, source, work.now_micros, done.counts, 1)
    removal = Removal()
    try:
        removal = body(applier)
        writer.finish(removal)
    except BaseException:
        writer.abort()
        delete_files(store, removal.written)
        raise
    done.removal = removal
    return done


def change_groups(
    groups: Iterator[Sequence[Add]],
    *,
    root: str,
    storage_options: Mapping[str, Any] | None,
    work: Work,
    source: Any = None,
    written: Any = None,
) -> Iterator[TaskDone]:
    """The ``mapPartitions`` body of the changing tasks: both passes over each group of files. ``source`` is a
    Spark broadcast of :func:`source_bytes` (None: an UPDATE)."""
    store = store_for(root, dict(storage_options) if storage_options else None)
    try:
        src = _source(source.value if source is not None else None, work)
        try:
            for group in groups:
                matched = np.zeros(src.num_rows, dtype=bool) if src is not None else None
                scan = scan_group(
                    work.plan,
                    work.description(store),
                    group,
                    src,
                    matched,
                    chunk_bytes=work.budget.chunk,
                    now_micros=work.now_micros,
                    workers=1,
                )
                if scan.files:
                    done = _run(store, work, functools.partial(_change, store=store, work=work, files=scan.files), src)
                else:
                    done = TaskDone()
                if matched is not None:
                    done.matched = np.flatnonzero(matched)
                if written is not None:
                    written.add(list(done.removal.written))
                yield done
        finally:
            if src is not None:
                src.close()
    except DeltaLogError as exc:
        raise carry_error(exc) from exc


def _change(applier: Applier, *, store: LogStore, work: Work, files: Sequence[FileActions]) -> Removal:
    """The second pass over one group's changed files: deletion vectors, or the files rewritten."""
    if work.deletion_vectors:
        return applier.with_deletion_vectors(store, files, work.now_ms)
    return applier.by_rewriting(files, work.now_ms)


def _insert(applier: Applier, *, rows: InsertRange, chunk_bytes: int) -> Removal:
    applier.insert(rows.matched, chunk_bytes)
    return Removal()


def insert_rows(
    ranges: Iterator[InsertRange],
    *,
    root: str,
    storage_options: Mapping[str, Any] | None,
    work: Work,
    source: Any,
    written: Any = None,
) -> Iterator[TaskDone]:
    """The ``mapPartitions`` body of the inserting tasks: the ``WHEN NOT MATCHED`` clauses over each range of
    the source's unmatched rows."""
    store = store_for(root, dict(storage_options) if storage_options else None)
    try:
        table = ipc.open_stream(pa.py_buffer(source.value)).read_all()
        for rows in ranges:
            part = materialize(table.slice(rows.start, rows.stop - rows.start), work.budget.source, work.budget.chunk)
            try:
                done = _run(store, work, functools.partial(_insert, rows=rows, chunk_bytes=work.budget.chunk), part)
            finally:
                part.close()
            if written is not None:
                written.add(list(done.removal.written))
            yield done
    except DeltaLogError as exc:
        raise carry_error(exc) from exc


__all__ = ["InsertRange", "TaskDone", "change_groups", "insert_rows", "source_bytes"]
