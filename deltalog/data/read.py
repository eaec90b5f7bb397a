"""One data file to the table's logical rows, in batches: what a table scan does per file.

The log, not the file, says what the rows are: partition values come from the ``add`` (typed per the schema,
PROTOCOL "Partition Value Serialization"), deleted rows from its deletion vector, column names and types
from today's schema (see :mod:`deltalog.data.conform`). The reader streams: it holds one parquet batch at a
time, so a scanner can read many files in parallel with bounded memory. A :class:`ReadSchema` is built once
per snapshot and shared by every file read.

Local files are opened by path, so pyarrow reads them natively (without the GIL); other files through the
table's store.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.actions import Add, DeletionVector
from deltalog.core.partitions import PartitionValueError, parse_value
from deltalog.core.schema import top_level_fields
from deltalog.core.state.columns import bool_array
from deltalog.data.conform import Column, conform, match, plan_field
from deltalog.data.dv import read_deletion_vector
from deltalog.data.locate import failures_named, native_path, open_input, resolve
from deltalog.errors import CorruptDataError, InvalidArgumentError
from deltalog.storage.base import LogStore

#: rows per batch handed out (pyarrow's own default)
BATCH_ROWS = 65_536


@dataclass(frozen=True)
class ReadSchema:
    """What every file read of one table version shares: the output columns and how to find each.

    ``columns`` are the projected top-level columns in output order; ``partition`` maps those that are
    partition columns to their Delta type (their values come from the log, never from the file).
    """

    columns: tuple[Column, ...]
    partition: Mapping[str, Any]
    mode: str
    schema: pa.Schema


def read_schema(
    schema: Mapping[str, Any],
    partition_columns: Sequence[str] = (),
    mode: str = "none",
    columns: Sequence[str] | None = None,
) -> ReadSchema:
    """The :class:`ReadSchema` for a Delta schema (JSON), its partition columns, column-mapping mode and an
    optional projection (logical names, output in that order); an unknown column is an
    :class:`InvalidArgumentError` naming it."""
    fields = {f["name"]: f for f in top_level_fields(schema)}
    names = list(fields) if columns is None else list(columns)
    unknown = [n for n in names if n not in fields]
    if unknown:
        raise InvalidArgumentError(f"unknown column {unknown[0]!r}; the table has {sorted(fields) or 'no columns'}")
    planned = tuple(plan_field(fields[n], mode) for n in names)
    partition = {n: fields[n]["type"] for n in names if n in set(partition_columns)}
    return ReadSchema(planned, partition, mode, pa.schema([c.field for c in planned]))


@dataclass(frozen=True)
class DataFile:
    """One live file as the log describes it: ``path`` as the log spells it (a URI reference, relative to
    the table root or absolute), partition values keyed by physical name, its DV, and ``num_records`` from
    its stats when known."""

    path: str
    partition_values: Mapping[str, str | None]
    deletion_vector: DeletionVector | None = None
    num_records: int | None = None

    @classmethod
    def of(cls, add: Add) -> DataFile:
        """The file an ``add`` action names (``numRecords`` taken from its stats when they parse)."""
        return cls(add.path, dict(add.partition_values), add.deletion_vector, _num_records(add.stats))


def _num_records(stats: str | None) -> int | None:
    if not stats:
        return None
    try:
        value = orjson.loads(stats).get("numRecords")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def partition_scalars(spec: ReadSchema, file: DataFile, source: str) -> dict[str, pa.Scalar]:
    """The typed values of ``spec``'s partition columns for ``file`` (a null value is a null scalar); a value
    that is not of its column's type is a :class:`CorruptDataError` naming ``source``."""
    out = {}
    for column in spec.columns:
        if column.name not in spec.partition:
            continue
        raw = file.partition_values.get(column.physical)
        try:
            out[column.name] = pa.scalar(parse_value(spec.partition[column.name], raw), type=column.type)
        except (PartitionValueError, pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as exc:
            raise CorruptDataError(
                f"{source}: partition value {raw!r} of column {column.name!r} is not a {column.type}: {exc}",
                path=source,
            ) from None
    return out


@contextlib.contextmanager
def _parquet_errors(source: str) -> Iterator[None]:
    """Arrow's complaints about a file's bytes are corrupt data; I/O failures are the store's."""
    with failures_named(source):
        try:
            yield
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise CorruptDataError(f"{source}: not a readable parquet file: {exc}", path=source) from None


def _kept(deleted: np.ndarray, start: int, n: int) -> pa.Array | None:
    """The keep-mask of rows ``[start, start + n)``; None when the DV deletes none of them."""
    lo, hi = np.searchsorted(deleted, [start, start + n])
    if lo == hi:
        return None
    keep = np.ones(n, dtype=bool)
    keep[deleted[lo:hi] - start] = False
    return bool_array(keep)


def read_batches(
    store: LogStore,
    spec: ReadSchema,
    file: DataFile,
    batch_rows: int = BATCH_ROWS,
    *,
    positions: str | None = None,
    raw_columns: Sequence[pa.Field] = (),
    wanted_rows: np.ndarray | None = None,
) -> Iterator[pa.RecordBatch]:
    """The file's live rows in ``spec``'s schema, batch by batch (deleted rows dropped, empty batches skipped).

    ``positions`` names a column appended with each row's physical position in the file (what a deletion
    vector counts: rows a vector deletes still take their place); ``raw_columns`` are file columns outside the
    table's schema, read by their exact stored name and appended as typed (null where the file lacks one):
    the materialized row-tracking columns a rewrite must carry over. ``wanted_rows`` (physical positions,
    ascending) reads only the row groups holding one of them (the rest of those row groups' rows come too).

    Every failure is typed and names the file: missing or corrupt data or DV files, a DV that disagrees
    with the file, a partition value that is not of its column's type.
    """
    source = file.path
    partitions = partition_scalars(spec, file, source)
    deleted = None
    if file.deletion_vector is not None:
        deleted = read_deletion_vector(store, file.deletion_vector)
    where = resolve(store, file.path)
    with contextlib.ExitStack() as stack:
        with _parquet_errors(source):
            local = native_path(store, where)
            handle: Any = local if local is not None else stack.enter_context(open_input(store, where, source))
            parquet = pq.ParquetFile(handle, coerce_int96_timestamp_unit="us")
            stack.callback(parquet.close)
            rows = parquet.metadata.num_rows
            file_fields = list(parquet.schema_arrow)
        _check_rows(file, deleted, rows, source)
        wanted = [c for c in spec.columns if c.name not in partitions]
        found = {c.name: match(file_fields, c, spec.mode, source) for c in wanted}
        stored = [f.name for f in file_fields]
        raw = {f.name: (stored.index(f.name) if f.name in stored else None) for f in raw_columns}
        selected = sorted({i for i in [*found.values(), *raw.values()] if i is not None})
        names = [file_fields[i].name for i in selected]
        # pyarrow reads "a.b" as a nested path: with such a name, read every column and pick by position
        by_name = not any("." in n for n in names)
        position = {i: (k if by_name else i) for k, i in enumerate(selected)}
        with _parquet_errors(source):
            for start, batch in _row_batches(parquet, batch_rows, names if by_name else None, wanted_rows):
                n = batch.num_rows
                keep = None if deleted is None else _kept(deleted, start, n)
                at = np.arange(start, start + n, dtype=np.int64) if positions is not None else None
                if keep is not None:
                    batch = batch.filter(keep)
                    at = at[keep.to_numpy(zero_copy_only=False)] if at is not None else None
                if batch.num_rows == 0:
                    continue
                out = _assemble(spec, batch, found, position, partitions, source)
                for f in raw_columns:
                    i = raw[f.name]
                    value = pa.nulls(out.num_rows, f.type) if i is None else batch.column(position[i]).cast(f.type)
                    out = out.append_column(f, value)
                if at is not None and positions is not None:
                    out = out.append_column(positions, pa.array(at))
                yield out


def _row_batches(
    parquet: pq.ParquetFile, batch_rows: int, columns: list[str] | None, wanted: np.ndarray | None
) -> Iterator[tuple[int, pa.RecordBatch]]:
    """(first row's physical position, batch) of the file, or of the row groups holding ``wanted`` rows."""
    if wanted is None:
        start = 0
        for batch in parquet.iter_batches(batch_size=batch_rows, columns=columns):
            yield start, batch
            start += batch.num_rows
        return
    meta = parquet.metadata
    sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
    offsets = np.cumsum([0, *sizes])
    groups = np.unique(np.searchsorted(offsets, wanted, side="right") - 1)
    for g in groups[(groups >= 0) & (groups < len(sizes))]:
        start = int(offsets[g])
        for batch in parquet.iter_batches(batch_size=batch_rows, row_groups=[int(g)], columns=columns):
            yield start, batch
            start += batch.num_rows


def _check_rows(file: DataFile, deleted: np.ndarray | None, rows: int, source: str) -> None:
    if deleted is None:
        return
    if file.num_records is not None and file.num_records != rows:
        raise CorruptDataError(
            f"{source}: the file has {rows} rows, its numRecords says {file.num_records} (a DV needs them equal)",
            path=source,
        )
    if len(deleted) and int(deleted[-1]) >= rows:
        raise CorruptDataError(
            f"{source}: its deletion vector deletes row {int(deleted[-1])} of {rows}",
            path=source,
        )


def _assemble(
    spec: ReadSchema,
    batch: pa.RecordBatch,
    found: Mapping[str, int | None],
    position: Mapping[int, int],
    partitions: Mapping[str, pa.Scalar],
    source: str,
) -> pa.RecordBatch:
    n = batch.num_rows
    arrays = []
    for column in spec.columns:
        if column.name in partitions:
            arrays.append(pa.repeat(partitions[column.name], n))
            continue
        i = found.get(column.name)
        if i is None:
            arrays.append(pa.nulls(n, column.type))
        else:
            arrays.append(conform(batch.column(position[i]), column, spec.mode, source))
    return pa.RecordBatch.from_arrays(arrays, schema=spec.schema)


def physical_rows(store: LogStore, file: DataFile) -> int:
    """How many rows the data file holds, deleted ones included (what a deletion vector counts): its
    ``numRecords``, else the parquet footer's count."""
    if file.num_records is not None:
        return file.num_records
    source = file.path
    where = resolve(store, file.path)
    with contextlib.ExitStack() as stack, _parquet_errors(source):
        local = native_path(store, where)
        handle: Any = local if local is not None else stack.enter_context(open_input(store, where, source))
        return int(pq.ParquetFile(handle).metadata.num_rows)


def read_file(store: LogStore, spec: ReadSchema, file: DataFile) -> pa.Table:
    """All live rows of one file as a table (tests and small files; scans use :func:`read_batches`)."""
    return pa.Table.from_batches(list(read_batches(store, spec, file)), schema=spec.schema)


__all__ = [
    "BATCH_ROWS",
    "DataFile",
    "ReadSchema",
    "partition_scalars",
    "physical_rows",
    "read_batches",
    "read_file",
    "read_schema",
]
