"""UPDATE and DELETE on Spark: the driver plans and commits through the core, executors do the file work.

1. The driver starts the transaction and does everything a local run does before reading a data file
   (:func:`deltalog.dml.merge.execute.update`, :func:`deltalog.dml.delete.delete`): the statement bound, the
   table's features asked, the read recorded as Delta Spark records it and the candidate files chosen
   (partitions, statistics).
2. The candidate files are spread over Spark tasks in groups of similar row counts (:func:`groups_of`); each task
   finds the rows its files change and writes (deletion vectors or rewritten files, the new rows, change files)
   through the data plane, and returns only actions and counts (:mod:`deltalog.spark._dml_io`).
3. The driver commits one version through the core's commit: the same parameters and metrics, conflict rules,
   change data feed and row-tracking handling as a local run. A failed task, a failed job or a refused commit
   deletes every file the statement wrote.

A MERGE joins its source too: :mod:`deltalog.spark.distributed_merge`.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deltalog.actions import Add
from deltalog.data.read import DataFile
from deltalog.dml.commit import discard
from deltalog.dml.delete import DeleteWork, without_unneeded_changes
from deltalog.dml.delete import delete as core_delete
from deltalog.dml.merge.changes import Counts
from deltalog.dml.merge.execute import GROUP_ROWS, Applied, Work
from deltalog.dml.merge.execute import update as core_update
from deltalog.dml.merge.source import MergeSource
from deltalog.dml.removal import Removal
from deltalog.errors import DeltaLogError
from deltalog.log import DeltaLog
from deltalog.spark._dml_io import TaskDone, delete_groups, update_groups
from deltalog.spark._files import raise_carried
from deltalog.spark._optimize_io import PathList

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from deltalog.table.commit import CommitResult

#: the Spark setting naming the session's time zone: the zone of a statement's SQL timestamps
TIME_ZONE = "spark.sql.session.timeZone"


def groups_of(files: Sequence[Add], tasks: int) -> list[list[Add]]:
    """The candidate files in about ``tasks`` groups of similar row counts (at most the core's group size each),
    in log order; every file is in one group, so every target row is (what the duplicate rule needs)."""
    total = sum(DataFile.of(a).num_records or 0 for a in files)
    limit = max(1, min(GROUP_ROWS, math.ceil(total / max(1, tasks))))
    out: list[list[Add]] = []
    rows = 0
    for add in files:
        n = DataFile.of(add).num_records or 0
        if out and out[-1] and rows + n <= limit:
            out[-1].append(add)
            rows += n
        else:
            out.append([add])
            rows = n
    return out


def run_tasks(
    spark: SparkSession,
    log: DeltaLog,
    job: Callable[[Any], list[TaskDone]],
) -> tuple[Removal, Counts]:
    """Run ``job`` (given the accumulator its tasks report written files to) and gather what its tasks did. A
    task's deltalog error, or a failed job, deletes every file the statement wrote and is raised typed."""
    sc = spark.sparkContext
    reported: Any = sc.accumulator([], PathList())  # type: ignore[arg-type]  # PathList is duck-typed
    try:
        done = job(reported)
    except BaseException as exc:
        discard(log.context, list(reported.value))
        if not isinstance(exc, DeltaLogError):
            raise_carried(exc)
        raise
    removal, counts = Removal(), Counts()
    for d in done:
        removal.extend(d.removal)
        counts.add(d.counts)
    failed = [e for e in (d.error() for d in done) if e is not None]
    if failed:
        discard(log.context, removal.written)
        raise failed[0]
    return removal, counts


def _on_groups(
    spark: SparkSession, files: Sequence[Add], body: Callable[..., Iterator[TaskDone]]
) -> Callable[[Any], list[TaskDone]]:
    sc = spark.sparkContext

    def job(reported: Any) -> list[TaskDone]:
        groups = groups_of(files, sc.defaultParallelism)
        if not groups:
            return []
        task = functools.partial(body, written=reported)
        done: list[TaskDone] = sc.parallelize(groups, len(groups)).mapPartitions(task).collect()
        return done

    return job


class UpdatePasses:
    """Both passes of an UPDATE run by Spark's executors (the core's :data:`~deltalog.dml.merge.execute.Passes`)."""

    def __init__(self, spark: SparkSession, log: DeltaLog, storage_options: Mapping[str, Any] | None) -> None:
        self.spark = spark
        self.log = log
        self.storage_options = dict(storage_options) if storage_options else None

    def __call__(self, work: Work, files: Sequence[Add], source: MergeSource | None) -> Applied:
        body = functools.partial(
            update_groups, root=self.log.store.root, storage_options=self.storage_options, work=work
        )
        removal, counts = run_tasks(self.spark, self.log, _on_groups(self.spark, files, body))
        return Applied(removal, counts, time.monotonic())


class DeletePasses:
    """A DELETE's file work run by Spark's executors (the core's :data:`~deltalog.dml.delete.DeletePasses`)."""

    def __init__(self, spark: SparkSession, log: DeltaLog, storage_options: Mapping[str, Any] | None) -> None:
        self.spark = spark
        self.log = log
        self.storage_options = dict(storage_options) if storage_options else None

    def __call__(self, work: DeleteWork, files: Sequence[Add]) -> Removal:
        body = functools.partial(
            delete_groups, root=self.log.store.root, storage_options=self.storage_options, work=work
        )
        removal, _ = run_tasks(self.spark, self.log, _on_groups(self.spark, files, body))
        return without_unneeded_changes(self.log.store, removal)


def session_time_zone(spark: SparkSession) -> str | None:
    """The session's time zone, which Spark SQL's timestamp functions in a statement's text use."""
    value = spark.conf.get(TIME_ZONE, None)
    return value or None


def update(
    spark: SparkSession,
    table_uri: str,
    updates: Mapping[str, Any],
    predicate: Any = None,
    storage_options: dict[str, Any] | None = None,
) -> CommitResult:
    """UPDATE ``table_uri`` with Spark's executors: ``updates`` (column -> Spark SQL value) on the rows matching
    ``predicate``; see :meth:`deltalog.DeltaLog.update`. One commit, made on the driver."""
    log = DeltaLog.for_table(table_uri, storage_options)
    return core_update(
        log.start_transaction,
        updates,
        predicate,
        session_time_zone=session_time_zone(spark),
        passes=UpdatePasses(spark, log, storage_options),
    )


def delete(
    spark: SparkSession,
    table_uri: str,
    predicate: Any = None,
    storage_options: dict[str, Any] | None = None,
) -> CommitResult:
    """DELETE the rows of ``table_uri`` matching ``predicate`` (Spark SQL; None: every row) with Spark's
    executors; see :meth:`deltalog.DeltaLog.delete`. One commit, made on the driver."""
    log = DeltaLog.for_table(table_uri, storage_options)
    return core_delete(
        log.start_transaction(),
        predicate,
        session_time_zone=session_time_zone(spark),
        passes=DeletePasses(spark, log, storage_options),
    )


__all__ = ["DeletePasses", "UpdatePasses", "delete", "groups_of", "run_tasks", "session_time_zone", "update"]
