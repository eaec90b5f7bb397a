"""Reading a Delta table (any version) into a Spark DataFrame from deltalog's snapshot.

deltalog replays the log on the driver; Spark reads exactly the snapshot's live files with
``spark.read.parquet`` on the file list (no directory listing, so files that are not live at that version are
never read, and time travel works). Partition columns are not in the data files: they are restored from the
log's partition values, typed per the table schema, one ``lit(value).cast(type)`` per partition directory,
and the per-partition frames are unioned.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import orjson

from deltalog.core.partitions import parse_value
from deltalog.core.schema import top_level_fields
from deltalog.errors import UnsupportedFeatureError
from deltalog.log import DeltaLog, Timestamp

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from deltalog.table.snapshot import Snapshot


def _check_supported(snap: Snapshot, location: str) -> None:
    if snap.column_mapping_mode != "none":
        raise UnsupportedFeatureError(
            f"{location} uses column mapping ({snap.column_mapping_mode}); the Spark reader reads columns by name",
            feature="columnMapping",
        )
    files = snap.files()
    if files.num_rows and files.column("deletion_vector").null_count != files.num_rows:
        raise UnsupportedFeatureError(
            f"{location} version {snap.version} has files with deletion vectors; the Spark reader would return "
            "deleted rows",
            feature="deletionVectors",
        )


def _absolute(root: str, path: str) -> str:
    """The data file's location for Spark: a log path decoded once, resolved against the table root."""
    decoded = unquote(path)
    if "://" in path or path.startswith("file:"):
        return path if not path.startswith("file:") else "file://" + unquote(path.split(":", 1)[1].lstrip("/"))
    if decoded.startswith("/"):
        return decoded
    return f"{root.rstrip('/')}/{decoded}"


def _spark_root(location: str) -> str:
    if "://" in location:
        return location
    return "file://" + location if location.startswith("/") else location


def read(
    spark: SparkSession,
    table_uri: str,
    version: int | None = None,
    timestamp: Timestamp | None = None,
    storage_options: dict[str, Any] | None = None,
) -> DataFrame:
    """The table at ``version`` / ``timestamp`` (default: latest) as a DataFrame with the table's columns."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    log = DeltaLog.for_table(table_uri, storage_options)
    snap = log.snapshot(version=version, timestamp=timestamp)
    _check_supported(snap, log.location)
    schema = StructType.fromJson(snap.schema_json)
    partition_columns = snap.partition_columns
    data_schema = StructType([f for f in schema.fields if f.name not in partition_columns])
    columns = [f.name for f in schema.fields]
    files = snap.files()
    if files.num_rows == 0:
        return spark.createDataFrame([], schema)

    root = _spark_root(log.location)
    types = {f["name"]: f["type"] for f in top_level_fields(snap.schema_json)}
    groups: dict[bytes, tuple[dict[str, Any], list[str]]] = {}
    for path, values in zip(
        files.column("path").to_pylist(), files.column("partition_values").to_pylist(), strict=True
    ):
        pv = dict(values or [])
        key = orjson.dumps([pv.get(c) for c in partition_columns])
        groups.setdefault(key, (pv, []))[1].append(_absolute(root, path))

    frames = []
    for pv, paths in groups.values():
        frame = spark.read.schema(data_schema).parquet(*paths).select(*[F.col(f"`{f.name}`") for f in data_schema])
        for c in partition_columns:
            value = parse_value(types[c], pv.get(c))
            spark_type = schema[c].dataType
            frame = frame.withColumn(c, F.lit(value).cast(spark_type))
        frames.append(frame.select(*[F.col(f"`{c}`") for c in columns]))
    return _union(frames)


def _union(frames: Sequence[DataFrame]) -> DataFrame:
    return functools.reduce(lambda a, b: a.unionByName(b), frames)


__all__ = ["read"]
