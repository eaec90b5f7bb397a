"""MERGE and UPDATE with Spark: the driver plans and commits through the MERGE core, executors run both passes.

1. The driver starts the transaction and does everything a local run does before reading a data file
   (:func:`deltalog.dml.merge.execute.merge`/``update``): the source materialized (a MERGE's source DataFrame is
   collected as Arrow), the statement bound, the table's features asked, the read recorded as Delta Spark records
   it and the candidate files chosen (partitions, statistics, the source's key values).
2. :class:`SparkPasses` spreads the candidate files over Spark tasks in groups; each task runs the first pass on
   its group (read with row positions, joined with the source, which every task gets by a broadcast; duplicate
   matches refused as Delta Spark refuses them) and the second (deletion vectors or rewritten files, the new rows
   and change files written through the data plane) and returns only actions, counts and the source rows it
   matched (:mod:`deltalog.spark._dml_io`). A second stage inserts the source rows no task matched.
3. The driver commits one version through the core's commit: the same parameters and metrics, conflict rules,
   change data feed and row-tracking handling as a local run. A failed job or a refused commit deletes every file
   the run wrote.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from deltalog.actions import Add
from deltalog.data.locate import resolve
from deltalog.data.read import DataFile
from deltalog.dml.commit import discard
from deltalog.dml.merge.changes import Counts
from deltalog.dml.merge.clauses import Clause
from deltalog.dml.merge.execute import GROUP_ROWS, Applied, Work
from deltalog.dml.merge.execute import merge as core_merge
from deltalog.dml.merge.execute import update as core_update
from deltalog.dml.merge.source import MergeSource
from deltalog.dml.removal import Removal
from deltalog.errors import DeltaLogError
from deltalog.log import DeltaLog
from deltalog.spark._dml_io import InsertRange, TaskDone, change_groups, insert_rows, source_bytes
from deltalog.spark._files import raise_carried
from deltalog.spark._optimize_io import PathList

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

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


class SparkPasses:
    """Both passes of a statement run by Spark's executors (the core's :data:`~deltalog.dml.merge.execute.Passes`)."""

    def __init__(self, spark: SparkSession, log: DeltaLog, storage_options: Mapping[str, Any] | None) -> None:
        self.spark = spark
        self.log = log
        self.storage_options = dict(storage_options) if storage_options else None

    def __call__(self, work: Work, files: Sequence[Add], source: MergeSource | None) -> Applied:
        sc = self.spark.sparkContext
        reported: Any = sc.accumulator([], PathList())  # type: ignore[arg-type]  # PathList is duck-typed
        shipped = sc.broadcast(source_bytes(source)) if source is not None else None
        root, options = self.log.store.root, self.storage_options
        removal, counts = Removal(), Counts()
        try:
            done: list[TaskDone] = []
            groups = groups_of(files, sc.defaultParallelism)
            if groups:
                task = functools.partial(
                    change_groups, root=root, storage_options=options, work=work, source=shipped, written=reported
                )
                done = sc.parallelize(groups, len(groups)).mapPartitions(task).collect()
            scanned = time.monotonic()
            matched = np.zeros(source.num_rows if source is not None else 0, dtype=bool)
            for d in done:
                matched[d.matched] = True
            if work.plan.not_matched and source is not None and not bool(matched.all()):
                ranges = _ranges(matched, sc.defaultParallelism)
                task = functools.partial(
                    insert_rows, root=root, storage_options=options, work=work, source=shipped, written=reported
                )
                done += sc.parallelize(ranges, len(ranges)).mapPartitions(task).collect()
        except BaseException as exc:
            discard(self.log.context, [resolve(self.log.store, p) for p in reported.value])
            if not isinstance(exc, DeltaLogError):
                raise_carried(exc)
            raise
        finally:
            if shipped is not None:
                shipped.unpersist()
        for d in done:
            removal.extend(d.removal)
            counts.add(d.counts)
        return Applied(removal, counts, scanned)


def _ranges(matched: np.ndarray, tasks: int) -> list[InsertRange]:
    """The source's rows in about ``tasks`` ranges, each with which of its rows matched; ranges with nothing to
    insert are left out."""
    n = len(matched)
    step = max(1, math.ceil(n / max(1, tasks)))
    out = []
    for start in range(0, n, step):
        part = matched[start : start + step]
        if not bool(part.all()):
            out.append(InsertRange(start, min(n, start + step), part.copy()))
    return out


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
        passes=SparkPasses(spark, log, storage_options),
    )


def merge(
    spark: SparkSession,
    table_uri: str,
    source: DataFrame,
    predicate: str,
    clauses: Sequence[Clause],
    storage_options: dict[str, Any] | None = None,
    *,
    source_alias: str | None = "s",
    target_alias: str | None = "t",
    schema_mode: str | None = None,
) -> CommitResult:
    """MERGE the rows of ``source`` into ``table_uri`` with Spark's executors (``clauses`` as the core's
    builder makes them; see :meth:`deltalog.DeltaLog.merge`). The source is collected on the driver as Arrow
    and sent to every task (a broadcast join): it must fit the driver's memory. One commit, made on the
    driver."""
    log = DeltaLog.for_table(table_uri, storage_options)
    return core_merge(
        log.start_transaction,
        source.toArrow(),
        predicate,
        clauses,
        source_alias=source_alias,
        target_alias=target_alias,
        schema_mode=schema_mode,
        session_time_zone=session_time_zone(spark),
        passes=SparkPasses(spark, log, storage_options),
    )


__all__ = ["SparkPasses", "groups_of", "merge", "session_time_zone", "update"]
