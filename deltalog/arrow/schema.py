"""Delta schema JSON to a pyarrow schema, for users who hold data as Arrow."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pyarrow as pa

from deltalog.errors import UnsupportedFeatureError

_PRIMITIVES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "void": pa.null(),
    "variant": pa.struct([pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary(), False)]),
}
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)")


def arrow_type(t: Any) -> pa.DataType:
    if isinstance(t, str):
        if t in _PRIMITIVES:
            return _PRIMITIVES[t]
        if t == "decimal":
            return pa.decimal128(10, 0)
        m = _DECIMAL.fullmatch(t)
        if m:
            p, s = int(m[1]), int(m[2])
            return pa.decimal128(p, s) if p <= 38 else pa.decimal256(p, s)
        if t.startswith("string collate") or t.startswith("string"):
            return pa.string()
        raise UnsupportedFeatureError(f"unknown Delta type {t!r} in the table schema", feature=t)
    kind = t.get("type")
    if kind == "struct":
        return pa.struct([arrow_field(f) for f in t.get("fields", [])])
    if kind == "array":
        return pa.list_(pa.field("element", arrow_type(t["elementType"]), t.get("containsNull", True)))
    if kind == "map":
        return pa.map_(
            pa.field("key", arrow_type(t["keyType"]), False),
            pa.field("value", arrow_type(t["valueType"]), t.get("valueContainsNull", True)),
        )
    raise UnsupportedFeatureError(f"unknown Delta type {t!r} in the table schema", feature=str(kind))


def arrow_field(f: dict[str, Any]) -> pa.Field:
    meta = f.get("metadata") or {}
    md = {k: v if isinstance(v, str) else orjson.dumps(v).decode() for k, v in meta.items()} or None
    return pa.field(f["name"], arrow_type(f["type"]), bool(f.get("nullable", True)), metadata=md)


def to_arrow_schema(schema: dict[str, Any]) -> pa.Schema:
    return pa.schema([arrow_field(f) for f in schema.get("fields", [])])


__all__ = ["arrow_field", "arrow_type", "delta_field", "delta_type", "from_arrow_schema", "to_arrow_schema"]


#: Arrow integer types Delta has no name for, widened to the narrowest signed type holding every value.
#: ``uint64`` maps to ``long``: a writer range-checks the values (above 2**63-1 is refused, never wrapped).
_UNSIGNED = {pa.uint8(): "short", pa.uint16(): "integer", pa.uint32(): "long", pa.uint64(): "long"}
_SIMPLE: dict[pa.DataType, str] = {
    pa.string(): "string",
    pa.large_string(): "string",
    pa.string_view(): "string",
    pa.int64(): "long",
    pa.int32(): "integer",
    pa.int16(): "short",
    pa.int8(): "byte",
    pa.float16(): "float",
    pa.float32(): "float",
    pa.float64(): "double",
    pa.bool_(): "boolean",
    pa.binary(): "binary",
    pa.large_binary(): "binary",
    pa.binary_view(): "binary",
    pa.date32(): "date",
    pa.date64(): "date",
    pa.null(): "void",
    **_UNSIGNED,
}


def _refuse(t: pa.DataType, why: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(f"Arrow type {t} has no Delta equivalent: {why}", feature=str(t))


def delta_type(t: pa.DataType) -> Any:
    """The Delta type (JSON) that holds values of Arrow type ``t``, per PROTOCOL "Primitive Types".

    Timestamps of any unit become microsecond types: zone-aware ones ``timestamp`` (an instant), naive ones
    ``timestamp_ntz`` (wall time); unsigned integers widen (see ``_UNSIGNED``); large, view, fixed-size and
    dictionary encodings map to their base type. Types Delta cannot hold (time of day, durations, intervals,
    unions, extension types, decimals wider than 38 digits) are refused by name.
    """
    if t in _SIMPLE:
        return _SIMPLE[t]
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise _refuse(t, "Delta decimals hold at most 38 digits")
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_fixed_size_binary(t):
        return "binary"
    if pa.types.is_struct(t):
        return {"type": "struct", "fields": [delta_field(t.field(i)) for i in range(t.num_fields)]}
    if pa.types.is_map(t):
        return {
            "type": "map",
            "keyType": delta_type(t.key_type),
            "valueType": delta_type(t.item_type),
            "valueContainsNull": t.item_field.nullable,
        }
    if isinstance(t, (pa.ListType, pa.LargeListType, pa.FixedSizeListType, pa.ListViewType, pa.LargeListViewType)):
        return {"type": "array", "elementType": delta_type(t.value_type), "containsNull": t.value_field.nullable}
    if pa.types.is_dictionary(t):
        return delta_type(t.value_type)
    if isinstance(t, pa.ExtensionType):
        raise _refuse(t, "extension types are refused; convert to the storage type first")
    raise _refuse(t, "Delta has no time-of-day, duration, interval or union type")


def delta_field(f: pa.Field) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for k, v in (f.metadata or {}).items():
        key, text = k.decode(), v.decode()
        try:
            meta[key] = orjson.loads(text) if key.startswith("delta.") and text[:1] in "{[0123456789tf-" else text
        except orjson.JSONDecodeError:
            meta[key] = text
    return {"name": f.name, "type": delta_type(f.type), "nullable": f.nullable, "metadata": meta}


def from_arrow_schema(schema: pa.Schema) -> dict[str, Any]:
    """The Delta schema JSON for an Arrow schema (the inverse of :func:`to_arrow_schema`)."""
    return {"type": "struct", "fields": [delta_field(f) for f in schema]}
