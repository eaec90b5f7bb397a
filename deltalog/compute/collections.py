"""Arrays, maps and structs: ``element_at`` (1-based; an index out of range raises under ANSI, a missing map
key is null), ``arr[i]`` (0-based, raises out of range), ``size`` (null for null), struct fields."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.compute.arrow_types import arrow_type
from deltalog.compute.columns import Session
from deltalog.compute.failures import refuse
from deltalog.expr import tree as X
from deltalog.expr import types as T


def _element(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    container, key = args
    t = call.args[0].type
    assert call.type is not None
    out_type = arrow_type(call.type)
    one_based = call.name == "element_at"
    values: list[Any] = []
    if isinstance(t, T.Map):
        for entries, k in zip(container.to_pylist(), key.to_pylist(), strict=True):
            if entries is None or k is None:
                values.append(None)
                continue
            values.append(next((v for kk, v in entries if kk == k), None))
        return pa.array(values, out_type)
    for items, i in zip(container.to_pylist(), key.to_pylist(), strict=True):
        if items is None or i is None:
            values.append(None)
            continue
        n = len(items)
        if one_based:
            if i == 0:
                raise refuse(
                    "INVALID_INDEX_OF_ZERO", "The index 0 is invalid: element_at counts from 1 (or -1 from the end)"
                )
            if abs(i) > n:
                raise refuse(
                    "INVALID_ARRAY_INDEX_IN_ELEMENT_AT",
                    f"The index {i} is out of bounds. The array has {n} elements; use try_element_at to tolerate it",
                    i,
                )
            values.append(items[i - 1] if i > 0 else items[n + i])
        else:
            if not 0 <= i < n:
                raise refuse("INVALID_ARRAY_INDEX", f"The index {i} is out of bounds. The array has {n} elements", i)
            values.append(items[i])
    return pa.array(values, out_type)


def _size(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    arr = args[0]
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), pa.int32())
    if pa.types.is_map(arr.type):
        arr = pa.ListArray.from_arrays(arr.offsets, arr.keys, mask=arr.is_null())
    return pc.list_value_length(arr).cast(pa.int32())


def _get_field(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    index = call.args[1]
    assert isinstance(index, X.Literal) and isinstance(index.value, int)
    return pc.struct_field(args[0], [index.value])


KERNELS = {"element_at": _element, "subscript": _element, "size": _size, "get_field": _get_field}

__all__ = ["KERNELS"]
