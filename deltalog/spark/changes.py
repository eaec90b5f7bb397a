"""What changed in a range of versions (change data feed) as a Spark DataFrame: the driver walks the log,
executors read the files.

The driver plans the range exactly as :meth:`deltalog.DeltaLog.changes` does (:func:`deltalog.dml.changes.
plan_changes`: the bounds, cleaned-up versions, change data feed on over the range, schema changes Delta Spark
refuses), so a bad range fails here, typed, before any job. It hands Spark one small row per file to read, and
executors read them inside ``mapInArrow`` with the data plane's change reader through deltalog's stores
(:mod:`deltalog.spark._changes_io`): change files, added and removed files, and the rows whose deletion-vector
mark changed, with ``_change_type``, ``_commit_version`` and ``_commit_timestamp``. No Hadoop connector is needed
on object stores; ``storage_options`` travel with the tasks. The data never passes through the driver.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from deltalog.core.features.change_feed import CHANGE_COLUMNS, CHANGE_TYPE, COMMIT_TIMESTAMP, COMMIT_VERSION
from deltalog.dml.changes import Bounds, plan_changes
from deltalog.log import DeltaLog, Timestamp
from deltalog.spark._changes_io import CHANGES_DDL, change_row, read_change_files
from deltalog.spark.reader import distributed, table_task

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def read_changes(
    spark: SparkSession,
    table_uri: str,
    starting_version: int | None = None,
    ending_version: int | None = None,
    *,
    starting_timestamp: Timestamp | None = None,
    ending_timestamp: Timestamp | None = None,
    columns: Sequence[str] | None = None,
    allow_out_of_range: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> DataFrame:
    """The change rows of versions ``starting_version..ending_version`` (or between two timestamps) as a
    DataFrame: the table's columns in its latest schema (``columns``: some of them), then ``_change_type``,
    ``_commit_version`` and ``_commit_timestamp``, as Delta Spark's ``readChangeFeed`` gives them.

    The range rules and errors are :meth:`deltalog.DeltaLog.changes`'s, raised here before any job. A missing
    data, change or DV file (vacuumed) fails the Spark action that reads it (the DataFrame is lazy) with the
    deltalog error marked in the message; :func:`deltalog.spark.carried_error` rebuilds it.
    """
    from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

    log = DeltaLog.for_table(table_uri, storage_options)
    latest = log.snapshot()
    bounds = Bounds(starting_version, ending_version, starting_timestamp, ending_timestamp, allow_out_of_range)
    plan = plan_changes(log.context, latest, bounds, columns)
    table_schema = StructType.fromJson(latest.schema_json)
    names = [n for n in plan.spec.schema.names if n not in CHANGE_COLUMNS]
    spark_types = {CHANGE_TYPE: StringType(), COMMIT_VERSION: LongType(), COMMIT_TIMESTAMP: TimestampType()}
    schema = StructType([table_schema[n] for n in names] + [StructField(n, spark_types[n]) for n in CHANGE_COLUMNS])
    rows = [change_row(f, v.version, v.timestamp) for v in plan.versions for f in v.files]
    task = table_task(log, latest, names, storage_options)
    return distributed(spark, rows, CHANGES_DDL, functools.partial(read_change_files, task=task), schema)


__all__ = ["read_changes"]
