"""What changed in a range of versions (change data feed) as a Spark DataFrame: ``spark.read.format("deltalog")
.option("readChangeFeed", "true")`` behind a function.

The source plans the range exactly as :meth:`deltalog.DeltaLog.changes` does (:func:`deltalog.dml.changes.
plan_changes`: the bounds, cleaned-up versions, change data feed on over the range, schema changes Delta Spark
refuses) when the DataFrame is made, so a bad range fails here, typed, before any job. Executors read the files
with the data plane's change reader through deltalog's stores (:mod:`deltalog.spark._changes_io`): change files,
added and removed files, and the rows whose deletion-vector mark changed, with ``_change_type``,
``_commit_version`` and ``_commit_timestamp``. No Hadoop connector is needed on object stores;
``storage_options`` travel with the tasks. The data never passes through the driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from deltalog.core.change_feed import CHANGE_COLUMNS
from deltalog.data.changes import with_change_columns
from deltalog.dml.changes import Bounds
from deltalog.errors import InvalidArgumentError
from deltalog.log import DeltaLog, Timestamp
from deltalog.spark._files import raise_carried
from deltalog.spark.reader import source_reader, timestamp_text

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
    from pyspark.sql.types import StructType

    if isinstance(columns, str):
        raise InvalidArgumentError(f"columns must be a list of names, not the string {columns!r}")
    reader = source_reader(spark, storage_options).option("readChangeFeed", "true")
    if starting_timestamp is not None:
        reader = reader.option("startingTimestamp", timestamp_text(starting_timestamp))
    else:
        reader = reader.option("startingVersion", str(starting_version or 0))
    if ending_timestamp is not None:
        reader = reader.option("endingTimestamp", timestamp_text(ending_timestamp))
    elif ending_version is not None:
        reader = reader.option("endingVersion", str(ending_version))
    try:
        if allow_out_of_range:
            log = DeltaLog.for_table(table_uri, storage_options)
            bounds = Bounds(starting_version, ending_version, starting_timestamp, ending_timestamp, True)
            latest = log.snapshot()
            if bounds.resolve(log.context, latest) is None:  # out of range: no changes
                empty = spark.createDataFrame([], StructType.fromJson(with_change_columns(latest.schema_json)))
                return empty if columns is None else empty.select(*columns, *CHANGE_COLUMNS)
        frame = reader.load(table_uri)
        if columns is None:
            return frame
        fields = {f.name: f for f in frame.schema.fields}
        unknown = [c for c in columns if c not in fields or c in CHANGE_COLUMNS]
        if unknown:
            raise InvalidArgumentError(f"unknown column {unknown[0]!r}; the table has {sorted(fields)}")
        chosen = [fields[c] for c in [*columns, *CHANGE_COLUMNS]]
        return reader.schema(StructType(chosen)).load(table_uri)
    except InvalidArgumentError:
        raise
    except Exception as exc:
        raise_carried(exc)
        raise


__all__ = ["read_changes"]
