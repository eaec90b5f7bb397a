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


__all__ = ["arrow_field", "arrow_type", "to_arrow_schema"]
