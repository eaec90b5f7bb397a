"""Reading a Delta table (any version) into a Spark DataFrame: the driver replays the log, executors read.

deltalog replays the log on the driver and hands Spark one small row per live file (path, partition values,
deletion vector, record count). Executors read those files inside ``mapInArrow``
(:func:`deltalog.spark._scan_io.read_files`) with the data plane's reader, through deltalog's own stores, so:

* exactly the snapshot's live files are read (no directory listing: time travel works, files not live at that
  version are never read);
* deletion vectors are applied, column mapping (name and id) resolved, partition values typed from the log and
  older files conformed to today's schema, as ``Snapshot.scan`` does on one machine;
* an ``s3://``, ``abfs://`` or ``gs://`` table needs no Hadoop connector: the executors open it with fsspec and
  the ``storage_options`` given here, shipped with the task.

The data never passes through the driver; only the file list does (the driver has it from the replay anyway).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from deltalog.data.scan import TableDescription, live_files
from deltalog.log import DeltaLog, Timestamp
from deltalog.spark._scan_io import FILES_DDL, TableTask, file_row, read_files
from deltalog.table import snapshot as snapshots
from deltalog.table.snapshot import Snapshot

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

#: read tasks per executor core: a few, so that one large file does not hold up a whole core's share
TASKS_PER_CORE = 2


def read(
    spark: SparkSession,
    table_uri: str,
    version: int | None = None,
    timestamp: Timestamp | None = None,
    storage_options: dict[str, Any] | None = None,
    *,
    columns: Sequence[str] | None = None,
) -> DataFrame:
    """The table at ``version`` or ``timestamp`` (default: the latest) as a DataFrame of its columns
    (``columns``, logical names, to read fewer; an unknown name is an ``InvalidArgumentError``).

    The driver replays the log; executors read exactly the snapshot's live files with deltalog's own reader
    and stores, so deletion vectors are applied, column mapping resolved, partition values come from the log,
    and ``s3://``/``abfs://``/``gs://`` tables need no Hadoop connector (``storage_options`` travel with the
    tasks). A missing or corrupt file fails the Spark action that reads it (the DataFrame is lazy) with the
    deltalog error marked in the message; :func:`deltalog.spark.carried_error` rebuilds it.
    """
    from pyspark.sql.types import StructType

    log = DeltaLog.for_table(table_uri, storage_options)
    snap = log.snapshot(version=version, timestamp=timestamp)
    description = TableDescription(log.store, snap.schema_json, tuple(snap.partition_columns), snap.column_mapping_mode)
    names = list(description.read_schema(columns).schema.names)  # refuses unknown columns before any job
    table_schema = StructType.fromJson(snap.schema_json)
    schema = StructType([table_schema[n] for n in names])
    rows = [file_row(f.data) for f in live_files(snapshots.raw_files(snap, stats=True), description)]
    task = table_task(log, snap, names, storage_options)
    return distributed(spark, rows, FILES_DDL, functools.partial(read_files, task=task), schema)


def table_task(
    log: DeltaLog, snap: Snapshot, columns: Sequence[str], storage_options: dict[str, Any] | None
) -> TableTask:
    """What the executors reading ``snap``'s files need to know, for ``columns``."""
    mode = snap.column_mapping_mode
    parts = tuple(snap.partition_columns)
    return TableTask(log.store.root, storage_options, snap.schema_json, parts, mode, tuple(columns))


def distributed(
    spark: SparkSession, rows: Sequence[tuple[Any, ...]], ddl: str, body: Callable[..., Any], schema: StructType
) -> DataFrame:
    """A DataFrame of ``schema`` read by executors: ``rows`` (one per file, in ``ddl``'s columns) spread over
    ``TASKS_PER_CORE`` tasks per core, each task's rows read by ``body`` inside ``mapInArrow``."""
    if not rows:
        return spark.createDataFrame([], schema)
    slices = max(1, min(len(rows), spark.sparkContext.defaultParallelism * TASKS_PER_CORE))
    tasks = spark.createDataFrame(spark.sparkContext.parallelize(rows, slices), ddl)
    return tasks.mapInArrow(body, schema)


__all__ = ["distributed", "read", "table_task"]
