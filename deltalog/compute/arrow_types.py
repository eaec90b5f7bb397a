"""Spark data types (:mod:`deltalog.expr.types`) as the Arrow types batches hold them in."""

from __future__ import annotations

import pyarrow as pa

from deltalog.expr import types as T

_ATOMIC = {
    "boolean": pa.bool_(),
    "byte": pa.int8(),
    "short": pa.int16(),
    "integer": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "void": pa.null(),
    "interval_day_time": pa.int64(),  # microseconds
    "interval_year_month": pa.int32(),  # months
}


def arrow_type(t: T.DataType) -> pa.DataType:
    if isinstance(t, T.Atomic):
        found = _ATOMIC.get(t.name)
        if found is None:
            raise TypeError(f"{t.sql()} has no Arrow form here")
        return found
    if isinstance(t, T.Decimal):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, T.Array):
        return pa.list_(arrow_type(t.element))
    if isinstance(t, T.Map):
        return pa.map_(arrow_type(t.key), arrow_type(t.value))
    return pa.struct([pa.field(f.stored_name, arrow_type(f.type)) for f in t.fields])


__all__ = ["arrow_type"]
