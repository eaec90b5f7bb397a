"""Arrow arrays to and from numpy with their null masks, and per-value Python kernels for what no vectorised
kernel means exactly (each distinct value computed once)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.compute.failures import refuse

#: the error class of a date or timestamp outside the years deltalog evaluates (1..9999)
OUT_OF_RANGE = "DATETIME_OUT_OF_RANGE"


def valid(arr: pa.Array) -> np.ndarray:
    """True where ``arr`` holds a value."""
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    return np.asarray(pc.is_valid(arr).to_numpy(zero_copy_only=False), dtype=bool)


def numbers(arr: pa.Array, dtype: Any) -> np.ndarray:
    """``arr``'s values as a numpy array of ``dtype``, nulls as 0."""
    if pa.types.is_null(arr.type):
        return np.zeros(len(arr), dtype=dtype)
    if pa.types.is_timestamp(arr.type) or pa.types.is_date(arr.type):
        arr = arr.cast(pa.int64() if pa.types.is_timestamp(arr.type) else pa.int32())
    filled = arr.fill_null(0) if arr.null_count else arr
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=dtype)


def from_numbers(values: np.ndarray, mask: np.ndarray, t: pa.DataType) -> pa.Array:
    """An Arrow array of type ``t`` holding ``values`` where ``mask`` is True, null elsewhere."""
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        raw = pa.array(values.astype(np.int64 if pa.types.is_timestamp(t) else np.int32), mask=~mask)
        return raw.cast(t)
    return pa.array(values, type=t, mask=~mask)


def per_value(args: Sequence[pa.Array], out_type: pa.DataType, fn: Callable[..., Any], nulls: bool = True) -> pa.Array:
    """``fn`` applied to each row's Python values (``nulls``: a row with a null argument is null without
    calling ``fn``), each distinct combination computed once."""
    columns = [a.to_pylist() for a in args]
    n = len(args[0]) if args else 0
    cache: dict[Any, Any] = {}
    out: list[Any] = []
    for i in range(n):
        row = tuple(c[i] for c in columns)
        if nulls and any(v is None for v in row):
            out.append(None)
            continue
        try:
            key: Any = row
            hash(key)
        except TypeError:
            key = None
        if key is not None and key in cache:
            out.append(cache[key])
            continue
        try:
            value = fn(*row)
        except OverflowError:  # Python's dates stop at years 1 and 9999; Spark's go further
            raise refuse(
                OUT_OF_RANGE,
                f"a date or timestamp computed from {row!r} lies outside the years 1 to 9999, which deltalog "
                "evaluates (Spark's range is wider)",
                row,
            ) from None
        if key is not None:
            cache[key] = value
        out.append(value)
    return pa.array(out, type=out_type)


class Session(Protocol):
    """What a kernel may ask of the evaluation besides its arguments."""

    @property
    def session_time_zone(self) -> str: ...

    @property
    def now_micros(self) -> int: ...

    @property
    def num_rows(self) -> int: ...


__all__ = ["OUT_OF_RANGE", "Session", "from_numbers", "numbers", "per_value", "valid"]
