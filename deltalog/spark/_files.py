"""Executor-side data file writing: pyarrow only (no pyspark), so it runs inside ``mapInArrow`` tasks.

Each task groups its rows by partition values, writes one parquet file per group (more when a group passes
``target_rows`` rows) under the hive-style directory, computes the file's Delta statistics, and yields one
small metadata row per file. Only those rows travel to the driver.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import os
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltalog.core.partitions import HIVE_NULL
from deltalog.stats import stats_json

#: what each task sends back to the driver, one row per data file written
RESULT_SCHEMA = pa.schema(
    [
        pa.field("path", pa.string()),  # storage key relative to the table root (not URI-encoded)
        pa.field("partition_values", pa.string()),  # JSON object column -> serialized value or null
        pa.field("size", pa.int64()),
        pa.field("modification_time", pa.int64()),
        pa.field("stats", pa.string()),
        pa.field("num_records", pa.int64()),
    ]
)
RESULT_DDL = "path string, partition_values string, size long, modification_time long, stats string, num_records long"

# apache/spark ExternalCatalogUtils.charToEscape (non-Windows)
_ESCAPED = frozenset([chr(c) for c in range(0x01, 0x20)] + list("\"#%'*/:=?\\\x7f{[]^"))


def escape_path_name(text: str) -> str:
    """Hive-style escaping of a partition column name or value (``%XX``, uppercase hex)."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def partition_dir(columns: Sequence[str], values: Sequence[str | None]) -> str:
    """``a=1/b=x%3Ay``: one directory per partition column; null is ``__HIVE_DEFAULT_PARTITION__``."""
    return "/".join(
        f"{escape_path_name(c)}={HIVE_NULL if v is None else escape_path_name(v)}"
        for c, v in zip(columns, values, strict=True)
    )


def serialize_partition_value(value: Any) -> str | None:
    """The protocol's string form of a partition value (notes 2.13); the empty string is null."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value or None
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, float):
        return (
            repr(value)
            if math.isfinite(value)
            else ("NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity"))
        )
    if isinstance(value, int):
        return str(value)
    raise TypeError(f"cannot use a {type(value).__name__} value as a partition value")


def _mask(table: pa.Table, columns: Sequence[str], values: Sequence[Any]) -> pa.Array:
    mask: Any = None
    for c, v in zip(columns, values, strict=True):
        col = table.column(c)
        m = pc.is_null(col) if v is None else pc.fill_null(pc.equal(col, pa.scalar(v, type=col.type)), False)
        mask = m if mask is None else pc.and_(mask, m)
    return mask


def split_by_partition(table: pa.Table, columns: Sequence[str]) -> Iterator[tuple[tuple[str | None, ...], pa.Table]]:
    """(serialized partition values, rows without the partition columns) per distinct combination."""
    if not columns:
        yield (), table
        return
    distinct = table.select(list(columns)).group_by(list(columns), use_threads=False).aggregate([])
    data = table.drop_columns(list(columns))
    for row in distinct.select(list(columns)).to_pylist():
        raw = [row[c] for c in columns]
        key = tuple(serialize_partition_value(v) for v in raw)
        yield key, data.filter(_mask(table, columns, raw))


class DataFiles:
    """Writes data files under one table root, through the local filesystem or fsspec."""

    def __init__(self, root: str, storage_options: Mapping[str, Any] | None = None) -> None:
        self.root = root.rstrip("/")
        self.local = "://" not in root and not root.startswith("file:")
        self._options = dict(storage_options or {})
        self._fs: Any = None
        self._base = self.root

    def _filesystem(self) -> tuple[Any, str]:
        if self._fs is None:
            import fsspec

            from deltalog.storage.options import parse_options

            scheme = self.root.split("://", 1)[0].lower()
            opts = parse_options(scheme, self._options)
            self._fs, self._base = fsspec.core.url_to_fs(self.root, **opts.fs_kwargs)
        return self._fs, self._base

    def put(self, key: str, data: bytes) -> None:
        if self.local:
            target = os.path.join(self.root, key)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "xb") as fh:  # a fresh UUID name: never overwrite
                fh.write(data)
            return
        fs, base = self._filesystem()
        fs.pipe_file(f"{base}/{key}", data)

    def delete(self, key: str) -> None:
        if self.local:
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(self.root, key))
            return
        fs, base = self._filesystem()
        with contextlib.suppress(FileNotFoundError):
            fs.rm_file(f"{base}/{key}")


def _encode(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="snappy")
    return sink.getvalue().to_pybytes()


def write_partitioned(
    batches: Iterator[pa.RecordBatch],
    *,
    root: str,
    storage_options: Mapping[str, Any] | None,
    partition_columns: Sequence[str],
    configuration: Mapping[str, str],
    target_schema: pa.Schema | None,
    target_rows: int,
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` body: write the task's rows as data files, yield one metadata row per file."""
    files = DataFiles(root, storage_options)
    buffers: dict[tuple[str | None, ...], list[pa.Table]] = {}
    counts: dict[tuple[str | None, ...], int] = {}

    def flush(key: tuple[str | None, ...]) -> pa.RecordBatch:
        data = pa.concat_tables(buffers.pop(key))
        counts.pop(key)
        if target_schema is not None:
            # same values; the table's Arrow spelling of the types where Spark's differs (a failed cast keeps Spark's)
            with contextlib.suppress(pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
                data = data.cast(target_schema)
        name = f"part-{uuid.uuid4()}.snappy.parquet"
        key_path = f"{partition_dir(partition_columns, key)}/{name}" if partition_columns else name
        blob = _encode(data)
        files.put(key_path, blob)
        values = dict(zip(partition_columns, key, strict=True))
        row = {
            "path": [key_path],
            "partition_values": [orjson.dumps(values).decode()],
            "size": [len(blob)],
            "modification_time": [int(time.time() * 1000)],
            "stats": [stats_json(data, configuration=configuration)],
            "num_records": [data.num_rows],
        }
        return pa.RecordBatch.from_pydict(row, schema=RESULT_SCHEMA)

    for batch in batches:
        if batch.num_rows == 0:
            continue
        for key, part in split_by_partition(pa.Table.from_batches([batch]), partition_columns):
            if part.num_rows == 0:
                continue
            buffers.setdefault(key, []).append(part)
            counts[key] = counts.get(key, 0) + part.num_rows
            if counts[key] >= target_rows:
                yield flush(key)
    for key in list(buffers):
        yield flush(key)


__all__ = [
    "RESULT_DDL",
    "RESULT_SCHEMA",
    "DataFiles",
    "escape_path_name",
    "partition_dir",
    "serialize_partition_value",
    "split_by_partition",
    "write_partitioned",
]
