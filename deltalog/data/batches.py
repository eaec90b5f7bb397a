"""Arrow input as record batches, and a batch's rows grouped by partition values.

A writer takes whatever Arrow a caller holds, lazily: an in-memory table is sliced (zero-copy), a reader or a
dataset is pulled batch by batch, anything exporting ``__arrow_c_stream__`` (polars, duckdb results)
is read through that stream, and a pandas frame without the index its history left
(:mod:`deltalog.data.frames`). Rows are grouped for partitioned writes by the key columns' dictionary codes: a
batch of one partition passes whole, two are filtered out, more are sorted by code and sliced.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.data.frames import frame_to_arrow, is_pandas_frame
from deltalog.data.memory import DATA_POOL
from deltalog.errors import InvalidArgumentError

TABLE_CHUNK_ROWS = 262_144  # an in-memory table is taken in slices of this many rows (zero-copy)


#: up to this many groups in a batch, each group is taken by one filter pass; beyond, by one sort and one take
#: (one sort of the integer codes and one take cost about two filter passes over a batch of strings)
FILTER_GROUPS = 2


def _codes(keys: pa.RecordBatch) -> tuple[pa.Array, list[int], list[tuple[Any, ...]]]:
    """A group code per row (rows with equal keys, null equal to null, share one), the codes present in order
    of first appearance, and each one's key values as Python objects. Codes come from the key columns'
    dictionary encodings (each value hashed once, never compared), combined in mixed radix."""
    codes: pa.Array | None = None
    dictionaries = []
    for column in keys.columns:
        encoded = pc.dictionary_encode(column, null_encoding="encode")
        size = len(encoded.dictionary)
        indices = encoded.indices.cast(pa.int64())
        codes = indices if codes is None else pc.add(pc.multiply(codes, size), indices)
        dictionaries.append((encoded.dictionary.to_pylist(), size))
    assert codes is not None
    present = pc.unique(codes).to_pylist()
    values = []
    for code in present:
        row = []
        for names, size in reversed(dictionaries):
            code, index = divmod(code, size)
            row.append(names[index])
        values.append(tuple(reversed(row)))
    return codes, present, values


def group_rows(keys: pa.RecordBatch, data: pa.RecordBatch) -> Iterator[tuple[Sequence[Any], pa.RecordBatch]]:
    """(key values as Python objects, rows of ``data`` with those keys) for every distinct key of ``keys``
    (row-aligned with ``data``). One group is ``data`` itself; two are filtered out one pass each; more are
    sorted by code (integers: the values themselves are never compared) and sliced, zero-copy after one take."""
    if keys.num_rows == 0:
        return
    codes, present, values = _codes(keys)
    if len(present) == 1:
        yield list(values[0]), data
        return
    if len(present) <= FILTER_GROUPS:
        for code, key in zip(present, values, strict=True):
            yield list(key), pc.filter(data, pc.equal(codes, code), memory_pool=DATA_POOL)
        return
    order = pc.sort_indices(codes)
    taken, ordered = pc.take(data, order, memory_pool=DATA_POOL), np.asarray(codes.take(order).to_numpy())
    bounds = [0, *(np.flatnonzero(np.diff(ordered)) + 1).tolist(), len(ordered)]
    by_code = dict(zip(present, values, strict=True))
    for start, end in itertools.pairwise(bounds):
        yield list(by_code[int(ordered[start])]), taken.slice(start, end - start)


def batches(data: Any) -> Iterator[pa.RecordBatch]:
    """Record batches from a RecordBatchReader, Table, RecordBatch, Dataset, any ``__arrow_c_stream__``
    exporter (polars, duckdb results), a pandas DataFrame (:mod:`deltalog.data.frames`: an unnamed index is
    dropped, a named one refused) or an iterable of batches/tables, read lazily."""
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
    if is_pandas_frame(data):  # before its __arrow_c_stream__, which would keep a filtered frame's index
        yield from batches(frame_to_arrow(data))
        return
    if hasattr(data, "__arrow_c_stream__"):
        yield from pa.RecordBatchReader.from_stream(data)
        return
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes, Mapping)):
        for item in data:
            yield from batches(item)
        return
    raise InvalidArgumentError(f"cannot write {type(data).__name__}: expected Arrow data (a table, batches, a reader)")


def input_stream(data: Any, preserve_index: bool | None = None) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The data's schema and its batches, read lazily (an iterable of batches is peeked at for the schema); a
    pandas frame's index as :func:`~deltalog.data.frames.frame_to_arrow` decides with ``preserve_index``."""
    if is_pandas_frame(data):  # other inputs have no index: ``preserve_index`` has nothing to say about them
        data = frame_to_arrow(data, preserve_index)
    if isinstance(data, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)):
        return data.schema, batches(data)
    if hasattr(data, "to_batches") and isinstance(getattr(data, "schema", None), pa.Schema):  # Dataset, Scanner
        return data.schema, batches(data)
    if hasattr(data, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(data)
        return reader.schema, iter(reader)
    stream = batches(data)
    first = next(stream, None)
    if first is None:
        raise InvalidArgumentError("no data to write: the iterable is empty, so it has no schema either")
    return first.schema, itertools.chain([first], stream)


__all__ = ["FILTER_GROUPS", "TABLE_CHUNK_ROWS", "batches", "group_rows", "input_stream"]
