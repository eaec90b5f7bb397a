"""MERGE on Spark: Spark joins the source DataFrame with the candidate files' rows, executors write, the driver
commits one version through the MERGE core (:func:`deltalog.dml.merge.execute.merge_elsewhere`).

The source stays a DataFrame: nothing of it is collected on the driver.

1. The driver binds the statement against the source's schema (no job), starts the transaction and does all a
   local run does before reading a data file: the table's features asked, the read recorded as Delta Spark
   records it, the candidate files chosen (partitions, statistics).
2. The source is persisted on the executors (``MEMORY_AND_DISK``) and counted: a MERGE reads its source twice
   (its row count is a metric), and must read the same rows both times, as Delta Spark's
   ``MergeIntoMaterializeSource`` ensures.
3. The target side is the candidate files read by the executors with the data plane's reader
   (:func:`~deltalog.spark._merge_io.read_targets`: the columns the conditions need, each live row's position
   and its file), one ``spark.range`` row per file. Spark joins it with the source on the merge condition (the
   text, or the pyspark Column as given): an inner join for a merge with only ``WHEN MATCHED`` clauses, the
   target kept (left) with ``NOT MATCHED BY SOURCE`` clauses, the source kept (right) with ``WHEN NOT
   MATCHED`` ones, both (full) with both; an insert-only merge keeps the source rows no target row matches
   (left anti join), reading no more of the target than the condition needs.
4. The joined rows are shuffled by file (unmatched source rows spread by a hash of their columns), so a task
   holds every pair of each of its target rows; each task runs the rest through the MERGE core
   (:func:`~deltalog.spark._merge_io.merge_partition`: clauses chosen, Delta Spark's duplicate-match refusal,
   ``NOT MATCHED BY SOURCE`` clauses, deletion vectors or rewritten files, updated and inserted rows, change
   files, row ids carried) and returns only its actions and counts.
5. The driver commits once through the core's commit: the same parameters, metrics (``numSourceRows`` from the
   count), conflict rules, change data feed and row-tracking handling as a local run. A task's error, a failed
   job or a refused commit deletes every file the statement wrote.

Unlike a local run, the candidate files are not narrowed by the source's key values (that needs the values on
the driver); Spark's join finds the same pairs either way.
"""

from __future__ import annotations

import functools
import math
import pickle
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from deltalog.actions import Add
from deltalog.core.schema import top_level_fields
from deltalog.data.read import DataFile
from deltalog.dml.merge.clauses import Clause
from deltalog.dml.merge.execute import GROUP_ROWS, Applied, Work, merge_elsewhere
from deltalog.dml.merge.plan import MergePlan
from deltalog.dml.merge.scan import FILE, POSITION, narrow_columns
from deltalog.dml.merge.source import MergeSource
from deltalog.log import DeltaLog
from deltalog.spark._dml_io import TaskDone
from deltalog.spark._merge_io import DONE, PRESENT, Layout, merge_partition, read_targets, source_name, target_name
from deltalog.spark.distributed_dml import run_tasks, session_time_zone

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

    from deltalog.table.commit import CommitResult


def join_type(plan: MergePlan) -> str:
    """How Spark joins the target (left) with the source (right): which unmatched rows the clauses need."""
    keep_target = bool(plan.not_matched_by_source)
    keep_source = bool(plan.not_matched)
    if keep_target and keep_source:
        return "full"
    if keep_target:
        return "left"
    if keep_source:
        return "right"
    return "inner"


def _quoted(name: str) -> str:
    """A column name as a DataFrame takes it (a dot in a backquoted name is part of the name)."""
    return "`" + name.replace("`", "``") + "`"


def _row_hash(schema: StructType) -> Column:
    """A hash of a source row's columns Spark can hash (maps cannot be): how unmatched source rows, which have
    no file, are spread over the tasks (deterministic, so a retried stage spreads them the same way)."""
    from pyspark.sql import functions as F

    hashable = [F.col(source_name(i)) for i, f in enumerate(schema.fields) if not _holds_map(f.dataType)]
    return F.hash(*hashable) if hashable else F.lit(0)


def _holds_map(t: DataType) -> bool:
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(t, MapType):
        return True
    if isinstance(t, ArrayType):
        return _holds_map(t.elementType)
    if isinstance(t, StructType):
        return any(_holds_map(f.dataType) for f in t.fields)
    return False


class SparkMerge:
    """Both passes of a MERGE run by Spark (the core's :data:`~deltalog.dml.merge.execute.Passes`, given no
    source: this holds it as a DataFrame)."""

    def __init__(
        self,
        spark: SparkSession,
        log: DeltaLog,
        storage_options: dict[str, Any] | None,
        source: DataFrame,
        condition: Column | str,
        source_alias: str | None,
        target_alias: str | None,
    ) -> None:
        self.spark = spark
        self.log = log
        self.storage_options = storage_options
        self.source = source
        self.condition = condition
        self.source_alias = source_alias
        self.target_alias = target_alias

    def __call__(self, work: Work, files: Sequence[Add], source: MergeSource | None) -> Applied:
        from pyspark import StorageLevel

        started = time.monotonic()
        cached = self.source.storageLevel != StorageLevel.NONE  # the caller's cache: used, left as it is
        kept = self.source if cached else self.source.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            rows = kept.count()
            materialized = int((time.monotonic() - started) * 1000)
            shipped = self.spark.sparkContext.broadcast(list(files))
            try:
                job = functools.partial(self._job, work, files, kept, shipped)
                removal, counts = run_tasks(self.spark, self.log, job)
            finally:
                shipped.unpersist()
        finally:
            if not cached:
                kept.unpersist()
        return Applied(removal, counts, time.monotonic(), rows, materialized)

    def _job(self, work: Work, files: Sequence[Add], source: DataFrame, shipped: Any, reported: Any) -> list[TaskDone]:
        from pyspark.sql import functions as F

        plan = work.plan
        layout, target = self._target(work, files, shipped)
        src = source.withColumn(PRESENT, F.lit(True))
        if self.source_alias:
            src = src.alias(self.source_alias)
        condition = F.expr(self.condition) if isinstance(self.condition, str) else self.condition
        names = layout.source_schema.names
        source_side = [src[_quoted(n)].alias(source_name(i)) for i, n in enumerate(names)]
        if plan.insert_only:
            joined = src.join(target, condition, "left_anti").select(
                F.lit(None).cast("long").alias(POSITION),
                F.lit(None).cast("int").alias(FILE),
                *source_side,
                src[PRESENT],
            )
        else:
            joined = target.join(src, condition, join_type(plan)).select(
                *(target[_quoted(c)].alias(target_name(i)) for i, c in enumerate(layout.target_columns)),
                target[POSITION],
                target[FILE],
                *source_side,
                src[PRESENT],
            )
        parts = self._partitions(files)
        spread = F.coalesce(F.col(FILE), F.lit(-1) - F.pmod(_row_hash(source.schema), F.lit(parts)))
        task = functools.partial(self._body(merge_partition, work, shipped, layout), written=reported)
        out = joined.repartition(parts, spread).mapInArrow(task, f"{DONE} BINARY").collect()
        return [pickle.loads(bytes(r[DONE])) for r in out]

    def _target(self, work: Work, files: Sequence[Add], shipped: Any) -> tuple[Layout, DataFrame]:
        """The candidate files' rows as the first pass reads them (a DataFrame read by the executors)."""
        from pyspark.sql.pandas.types import to_arrow_schema
        from pyspark.sql.types import IntegerType, LongType, StructField, StructType

        plan = work.plan
        fields = {f["name"]: f for f in top_level_fields(plan.schema)}
        columns = narrow_columns(plan, list(fields))
        struct = StructType(
            [
                *(StructField.fromJson(dict(fields[c])) for c in columns),
                StructField(POSITION, LongType(), False),
                StructField(FILE, IntegerType(), False),
            ]
        )
        source_arrow = to_arrow_schema(self.source.schema, timezone="UTC")
        layout = Layout(tuple(columns), source_arrow, to_arrow_schema(struct, timezone="UTC"))
        sc = self.spark.sparkContext
        tasks = max(1, min(len(files), sc.defaultParallelism))
        read = self._body(read_targets, work, shipped, layout)
        target = self.spark.range(0, len(files), 1, tasks).mapInArrow(read, struct)
        if self.target_alias:
            target = target.alias(self.target_alias)
        return layout, target

    def _body(self, body: Callable[..., Any], work: Work, shipped: Any, layout: Layout) -> Callable[..., Any]:
        """``body`` (a ``mapInArrow`` function of :mod:`deltalog.spark._merge_io`) with what its tasks share."""
        return functools.partial(
            body,
            root=self.log.store.root,
            storage_options=self.storage_options,
            work=work,
            files=shipped,
            layout=layout,
        )

    def _partitions(self, files: Sequence[Add]) -> int:
        """Tasks of the second stage: the cores, or more when the candidate rows need more groups."""
        rows = sum(DataFile.of(a).num_records or 0 for a in files)
        return max(1, self.spark.sparkContext.defaultParallelism, math.ceil(rows / GROUP_ROWS))


def merge(
    spark: SparkSession,
    table_uri: str,
    source: DataFrame,
    predicate: str,
    clauses: Sequence[Clause],
    storage_options: dict[str, Any] | None = None,
    *,
    condition: Column | None = None,
    source_alias: str | None = "s",
    target_alias: str | None = "t",
    schema_mode: str | None = None,
) -> CommitResult:
    """MERGE the rows of ``source`` into ``table_uri``, joined by Spark on ``predicate`` (Spark SQL; or
    ``condition``, the pyspark Column it was written as, which Spark then evaluates itself), ``clauses`` as the
    core's builder makes them (see :meth:`deltalog.DeltaLog.merge`). The source is never collected on the
    driver. One commit, made on the driver."""
    from pyspark.sql.pandas.types import to_arrow_schema

    log = DeltaLog.for_table(table_uri, storage_options)
    passes = SparkMerge(
        spark,
        log,
        storage_options,
        source,
        condition if condition is not None else predicate,
        source_alias,
        target_alias,
    )
    return merge_elsewhere(
        log.start_transaction,
        to_arrow_schema(source.schema, timezone="UTC"),
        predicate,
        clauses,
        passes,
        source_alias=source_alias,
        target_alias=target_alias,
        schema_mode=schema_mode,
        session_time_zone=session_time_zone(spark),
    )


__all__ = ["SparkMerge", "join_type", "merge"]
