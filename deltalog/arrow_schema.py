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


__all__ = ["arrow_field", "arrow_type", "delta_field", "from_arrow_schema", "to_arrow_schema"]


def _delta_type(t: pa.DataType) -> Any:
    simple = {
        pa.string(): "string",
        pa.large_string(): "string",
        pa.int64(): "long",
        pa.int32(): "integer",
        pa.int16(): "short",
        pa.int8(): "byte",
        pa.float32(): "float",
        pa.float64(): "double",
        pa.bool_(): "boolean",
        pa.binary(): "binary",
        pa.large_binary(): "binary",
        pa.date32(): "date",
        pa.null(): "void",
    }
    if t in simple:
        return simple[t]
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_struct(t):
        return {"type": "struct", "fields": [delta_field(t.field(i)) for i in range(t.num_fields)]}
    if pa.types.is_map(t):
        return {
            "type": "map",
            "keyType": _delta_type(t.key_type),
            "valueType": _delta_type(t.item_type),
            "valueContainsNull": t.item_field.nullable,
        }
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"type": "array", "elementType": _delta_type(t.value_type), "containsNull": t.value_field.nullable}
    if pa.types.is_dictionary(t):
        return _delta_type(t.value_type)
    raise UnsupportedFeatureError(f"Arrow type {t} has no Delta equivalent", feature=str(t))


def delta_field(f: pa.Field) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for k, v in (f.metadata or {}).items():
        key, text = k.decode(), v.decode()
        try:
            meta[key] = orjson.loads(text) if key.startswith("delta.") and text[:1] in "{[0123456789tf-" else text
        except orjson.JSONDecodeError:
            meta[key] = text
    return {"name": f.name, "type": _delta_type(f.type), "nullable": f.nullable, "metadata": meta}


def from_arrow_schema(schema: pa.Schema) -> dict[str, Any]:
    """The Delta schema JSON for an Arrow schema (the inverse of :func:`to_arrow_schema`)."""
    return {"type": "struct", "fields": [delta_field(f) for f in schema]}
