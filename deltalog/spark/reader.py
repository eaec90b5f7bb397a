"""Reading a Delta table (any version) into a Spark DataFrame: ``spark.read.format("deltalog")`` behind a function.

:func:`read` is the source (:mod:`deltalog.spark.source`) with its options spelled as Python arguments: the
driver replays the log and plans one task per group of live files, pruned by the filters Spark pushes;
executors read the files with the data plane's reader through deltalog's own stores, so:

* exactly the snapshot's live files are read (no directory listing: time travel works, files not live at that
  version are never read);
* deletion vectors are applied, column mapping (name and id) resolved, partition values typed from the log and
  older files conformed to today's schema, as ``Snapshot.scan`` does on one machine;
* an ``s3://``, ``abfs://`` or ``gs://`` table needs no Hadoop connector: the executors open it with deltalog's
  stores and the ``storage_options`` given here, which travel with the tasks.

The data never passes through the driver; only the file list does (the driver has it from the replay anyway).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deltalog.core.timetravel import format_ms
from deltalog.errors import InvalidArgumentError
from deltalog.log import Timestamp
from deltalog.spark._files import raise_carried
from deltalog.spark.options import NAME
from deltalog.spark.registration import register

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, DataFrameReader, SparkSession


def timestamp_text(timestamp: Timestamp) -> str:
    """A time travel timestamp as the ``timestampAsOf`` option takes it (ISO-8601 text)."""
    if isinstance(timestamp, bool):
        raise InvalidArgumentError(f"not a timestamp: {timestamp!r}")
    if isinstance(timestamp, (int, float)):
        return format_ms(int(timestamp))
    if isinstance(timestamp, (dt.datetime, dt.date)):
        return timestamp.isoformat()
    return str(timestamp)


def source_reader(spark: SparkSession, storage_options: Mapping[str, Any] | None) -> DataFrameReader:
    """``spark.read.format("deltalog")`` with the storage options (the source registered first)."""
    register(spark)
    reader = spark.read.format(NAME)
    for key, value in (storage_options or {}).items():
        reader = reader.option(key, str(value))
    return reader


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
    (``columns``, logical names, to read fewer; an unknown name is an ``InvalidArgumentError``): the same as
    ``spark.read.format("deltalog").option("versionAsOf", v).load(table_uri)``.

    The driver replays the log; executors read exactly the snapshot's live files with deltalog's own reader
    and stores, so deletion vectors are applied, column mapping resolved, partition values come from the log,
    and ``s3://``/``abfs://``/``gs://`` tables need no Hadoop connector (``storage_options`` travel with the
    tasks). A missing or corrupt file fails the Spark action that reads it (the DataFrame is lazy) with the
    deltalog error marked in the message; :func:`deltalog.spark.carried_error` rebuilds it.
    """
    from pyspark.sql.types import StructType

    if isinstance(columns, str):
        raise InvalidArgumentError(f"columns must be a list of names, not the string {columns!r}")
    reader = source_reader(spark, storage_options)
    if version is not None:
        reader = reader.option("versionAsOf", str(version))
    if timestamp is not None:
        reader = reader.option("timestampAsOf", timestamp_text(timestamp))
    try:
        frame = reader.load(table_uri)
        if columns is None:
            return frame
        fields = {f.name: f for f in frame.schema.fields}
        unknown = [c for c in columns if c not in fields]
        if unknown:
            raise InvalidArgumentError(f"unknown column {unknown[0]!r}; the table has {sorted(fields)}")
        # a schema naming some of the table's columns: the source reads those alone
        return reader.schema(StructType([fields[c] for c in columns])).load(table_uri)
    except InvalidArgumentError:
        raise
    except Exception as exc:
        raise_carried(exc)
        raise


__all__ = ["read", "source_reader", "timestamp_text"]
