"""Arrow input as record batches, and a batch's rows grouped by partition values.

A writer takes whatever Arrow a caller holds, lazily: an in-memory table is sliced (zero-copy), a reader or a
dataset is pulled batch by batch, anything exporting ``__arrow_c_stream__`` (pandas, polars, duckdb results)
is read through that stream. Rows are grouped for partitioned writes with one sort and one take per batch, so
each partition's rows are a zero-copy slice, whatever the number of partitions.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import InvalidArgumentError

TABLE_CHUNK_ROWS = 262_144  # an in-memory table is taken in slices of this many rows (zero-copy)


def _changes(keys: pa.RecordBatch) -> Any:
    """For rows 1..n-1: whether any key differs from the row before (null equals null)."""
    change: Any = None
    for col in keys.columns:
        a, b = col.slice(1), col.slice(0, len(col) - 1)
        differ = pc.not_equal(a, b)
        differ = pc.if_else(pc.is_null(differ), pc.xor(pc.is_null(a), pc.is_null(b)), differ)
        change = differ if change is None else pc.or_(change, differ)
    return change


def run_starts(keys: pa.RecordBatch) -> list[int]:
    """The rows of (sorted) ``keys`` that start a run of equal values; the first row always does."""
    if keys.num_rows == 0:
        return []
    return [0, *(pc.indices_nonzero(_changes(keys)).to_numpy() + 1).tolist()]


def group_rows(keys: pa.RecordBatch, data: pa.RecordBatch) -> Iterator[tuple[Sequence[Any], pa.RecordBatch]]:
    """(key values as Python objects, rows of ``data`` with those keys) for every distinct key of ``keys``
    (row-aligned with ``data``); rows are reordered only when the keys are not already grouped."""
    if keys.num_rows > 1 and pc.any(_changes(keys)).as_py():
        order = pc.sort_indices(keys, sort_keys=[(n, "ascending", "at_end") for n in keys.schema.names])
        keys, data = keys.take(order), data.take(order)
    bounds = [*run_starts(keys), data.num_rows]
    for start, end in itertools.pairwise(bounds):
        yield [col[start].as_py() for col in keys.columns], data.slice(start, end - start)


def batches(data: Any) -> Iterator[pa.RecordBatch]:
    """Record batches from a RecordBatchReader, Table, RecordBatch, Dataset, any ``__arrow_c_stream__``
    exporter (pandas, polars, duckdb results) or an iterable of batches/tables, read lazily."""
    if isinstance(data, pa.RecordBatch):
        yield data
        return
    if isinstance(data, pa.Table):
        yield from data.to_batches(max_chunksize=TABLE_CHUNK_ROWS)
        return
    if isinstance(data, pa.RecordBatchReader):
        yield from data
        return
    if hasattr(data, "to_batches") and hasattr(data, "schema"):  # a pyarrow Dataset or Scanner
        yield from data.to_batches()
        return
    if hasattr(data, "__arrow_c_stream__"):
        yield from pa.RecordBatchReader.from_stream(data)
        return
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes, Mapping)):
        for item in data:
            yield from batches(item)
        return
    raise InvalidArgumentError(f"cannot write {type(data).__name__}: expected Arrow data (a table, batches, a reader)")


__all__ = ["TABLE_CHUNK_ROWS", "batches", "group_rows", "run_starts"]
