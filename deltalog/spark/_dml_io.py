"""Executor side of UPDATE, DELETE and MERGE on Spark (:mod:`deltalog.spark.distributed_dml`,
:mod:`deltalog.spark.distributed_merge`): pyarrow only, no pyspark.

A task works through the table's store, rebuilt from the root and the storage options, and sends back what its
files need in the commit (:class:`TaskDone`: actions, the files written, counts); the rows themselves never pass
through the driver.

* UPDATE: each task takes one group of candidate files and runs both passes of the MERGE core on it, as a local
  run does on each of its groups (:func:`~deltalog.dml.merge.scan.scan_group`, then an
  :class:`~deltalog.dml.merge.changes.Applier`: deletion vectors or rewritten files, new rows, change files, row
  ids carried).
* DELETE: each task finds the matched rows of its group of candidate files and takes them out
  (:func:`~deltalog.dml.delete.find_in`, :func:`~deltalog.dml.delete.remove_found`).

A deltalog error in a task (a duplicate match, a missing file, a row rule) deletes what the task wrote and comes
back as the task's result, carried as text (:func:`~deltalog.spark._files.carry_error`), rather than failing the
job: the job then ends with every task done, so the driver learns of every file the statement wrote and deletes
them all (a failed job cancels its other tasks, and Spark drops the accumulator updates of tasks that end after
the failure). For any other failure, the tasks that succeeded report their files through the ``written``
accumulator.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deltalog.actions import Add
from deltalog.data.output import delete_files
from deltalog.dml.delete import DeleteWork, find_in, remove_found
from deltalog.dml.merge.changes import Applier, Counts
from deltalog.dml.merge.execute import Work
from deltalog.dml.merge.scan import FileActions, scan_group
from deltalog.dml.merge.source import MergeSource
from deltalog.dml.removal import Removal
from deltalog.errors import DeltaLogError
from deltalog.spark._files import carried_error, carry_error
from deltalog.storage.base import LogStore
from deltalog.storage.uri import store_for


@dataclass
class TaskDone:
    """What one task did: its removal (actions, files written, counts of files) and its rows by what happened to
    them; or the deltalog error that stopped it (``failed``, carried as text), its own files already deleted."""

    removal: Removal = field(default_factory=Removal)
    counts: Counts = field(default_factory=Counts)
    failed: str | None = None

    def error(self) -> DeltaLogError | None:
        """The task's error, rebuilt typed (None: the task succeeded)."""
        if self.failed is None:
            return None
        typed = carried_error(RuntimeError(self.failed))
        return typed if typed is not None else DeltaLogError(self.failed)


def store_of(root: str, storage_options: Mapping[str, Any] | None) -> LogStore:
    return store_for(root, dict(storage_options) if storage_options else None)


def reported(done: TaskDone, written: Any) -> TaskDone:
    """``done``, its files reported to the ``written`` accumulator first (None: no accumulator)."""
    if written is not None and done.removal.written:
        written.add(list(done.removal.written))
    return done


def guarded(body: Callable[[], TaskDone]) -> TaskDone:
    """``body``'s result, or its deltalog error as a failed :class:`TaskDone`."""
    try:
        return body()
    except DeltaLogError as exc:
        return TaskDone(failed=str(carry_error(exc)))


def applied(store: LogStore, work: Work, source: MergeSource | None, body: Callable[[Applier], Removal]) -> TaskDone:
    """``body`` with a fresh writer and applier; the writer's files become the removal's, or are deleted if it
    fails."""
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


def changed(applier: Applier, *, store: LogStore, work: Work, files: Sequence[FileActions]) -> Removal:
    """The second pass over one task's changed files: deletion vectors, or the files rewritten."""
    if work.deletion_vectors:
        return applier.with_deletion_vectors(store, files, work.now_ms)
    return applier.by_rewriting(files, work.now_ms)


def _update_group(store: LogStore, work: Work, group: Sequence[Add]) -> TaskDone:
    scan = scan_group(
        work.plan,
        work.description(store),
        group,
        None,
        None,
        chunk_bytes=work.budget.chunk,
        now_micros=work.now_micros,
        workers=1,
    )
    if not scan.files:
        return TaskDone()
    return applied(store, work, None, functools.partial(changed, store=store, work=work, files=scan.files))


def update_groups(
    groups: Iterator[Sequence[Add]],
    *,
    root: str,
    storage_options: Mapping[str, Any] | None,
    work: Work,
    written: Any = None,
) -> Iterator[TaskDone]:
    """The ``mapPartitions`` body of an UPDATE: both passes over each group of candidate files."""
    store = store_of(root, storage_options)
    for group in groups:
        yield reported(guarded(functools.partial(_update_group, store, work, group)), written)


def _delete_group(store: LogStore, work: DeleteWork, group: Sequence[Add]) -> TaskDone:
    matches = find_in(store, work, group, workers=1)
    if not matches.files:
        return TaskDone()
    # no file is partly rewritten by a delete of every row, or of whole partitions: nothing to log then
    chosen = work.row_filter
    partial = chosen is not None and not chosen.exact_partition
    return TaskDone(removal=remove_found(store, work, matches.files, workers=1, log_every_removed=partial))


def delete_groups(
    groups: Iterator[Sequence[Add]],
    *,
    root: str,
    storage_options: Mapping[str, Any] | None,
    work: DeleteWork,
    written: Any = None,
) -> Iterator[TaskDone]:
    """The ``mapPartitions`` body of a DELETE: each group's matched rows found and taken out (deletion vectors,
    or the files rewritten; on a change-data-feed table every removed row in change files, which the driver
    drops again when no file of the statement was partly rewritten)."""
    store = store_of(root, storage_options)
    for group in groups:
        yield reported(guarded(functools.partial(_delete_group, store, work, group)), written)


__all__ = [
    "TaskDone",
    "applied",
    "changed",
    "delete_groups",
    "guarded",
    "reported",
    "store_of",
    "update_groups",
]
