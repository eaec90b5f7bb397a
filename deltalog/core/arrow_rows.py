"""File actions parsed by Arrow's JSON reader, reshaped into the replay's layout without Python objects.

Numbers and masks travel as numpy buffers wrapped zero-copy: ``pa.array`` and ``to_numpy`` would import
pandas (see :func:`deltalog.core.file_columns.array_of`). Rows are dropped by slicing where few are, so
the stats strings are never copied.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.core.file_columns import STRING_MAP, array_of

try:
    import numpy as np
except ImportError:  # pragma: no cover - bulk replay checks for numpy before it comes here
    np = None


def as_numpy(arr: pa.Array) -> Any:
    """A null-free fixed-width Arrow array as numpy, zero-copy (``to_numpy`` would import pandas)."""
    width = arr.type.bit_width // 8
    return np.frombuffer(
        arr.buffers()[1], dtype=f"<i{width}" if pa.types.is_signed_integer(arr.type) else f"<u{width}"
    )[arr.offset : arr.offset + len(arr)]


def int_array(values: Any, type: pa.DataType | None = None) -> pa.Array:
    """A numpy integer vector as Arrow, zero-copy (``pa.array`` would import pandas: see ``array_of``)."""
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(type or pa.int64(), len(values), [None, pa.py_buffer(values)])


def bool_array(values: Any) -> pa.Array:
    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(np.packbits(values, bitorder="little"))])


def struct_to_map(col: pa.Array) -> pa.Array:
    """A parsed ``partitionValues`` struct back to the map the rest of deltalog holds."""
    n = len(col)
    names = [f.name for f in col.type]
    k = len(names)
    mask = col.is_null() if col.null_count else None
    offsets = int_array(np.arange(n + 1, dtype="int32") * k, pa.int32())
    if k == 0:
        empty = pa.nulls(0, pa.string())
        return pa.MapArray.from_arrays(offsets, empty, empty, type=STRING_MAP, mask=mask)
    fields = [col.field(i) for i in range(k)]
    if k == 1:
        items = fields[0]
    else:
        order = (np.arange(k, dtype="int64")[None, :] * n + np.arange(n, dtype="int64")[:, None]).ravel()
        items = pa.concat_arrays(fields).take(int_array(order))
    keys = pc.take(array_of(names, pa.string()), int_array(np.tile(np.arange(k, dtype="int64"), n)))
    return pa.MapArray.from_arrays(offsets, keys, items, type=STRING_MAP, mask=mask)


def to_table(chunks: list[pa.StructArray], fields: list[pa.Field]) -> pa.Table:
    schema = pa.schema(fields)
    batches = []
    for col in chunks:
        arrays = []
        for f in fields:
            if f.name == "tags":
                arrays.append(pa.nulls(len(col), STRING_MAP))
            elif col.type.get_field_index(f.name) < 0:  # stats, when the parse skipped them
                arrays.append(pa.nulls(len(col), f.type))
            elif f.name == "partitionValues":
                arrays.append(struct_to_map(col.field(f.name)))
            else:
                arrays.append(col.field(f.name))
        batches.append(pa.RecordBatch.from_arrays(arrays, schema=schema))
    return pa.Table.from_batches(batches, schema=schema)


def runs(col: pa.StructArray, gaps: Any) -> list[pa.StructArray]:
    """``col`` without the rows at ``gaps`` (sorted), as zero-copy slices: no copy of the stats strings."""
    out = []
    start = 0
    for g in gaps.tolist():
        if g > start:
            out.append(col.slice(start, g - start))
        start = g + 1
    if start < len(col):
        out.append(col.slice(start))
    return out


def valid_rows(col: pa.StructArray, offset: int) -> tuple[list[pa.StructArray], Any]:
    """The non-null rows of ``col`` and their positions in the whole run (slices when few rows are null)."""
    n = len(col)
    if not col.null_count:
        return [col], np.arange(offset, offset + n, dtype="int64")
    valid = col.is_valid()
    positions = as_numpy(pc.indices_nonzero(valid)).astype("int64") + offset
    if col.null_count == n:
        return [], positions
    if col.null_count <= 64:
        return runs(col, as_numpy(pc.indices_nonzero(pc.invert(valid)))), positions
    return [col.filter(valid)], positions


__all__ = ["as_numpy", "bool_array", "int_array", "runs", "struct_to_map", "to_table", "valid_rows"]
