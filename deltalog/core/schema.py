"""Delta schema strings: parsing, and the logical-to-physical column names of column mapping.

With column mapping, the log (partition values, stats) and data files use physical names, while users
speak logical names. The map lives here so every user-facing API can translate in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

PHYSICAL_NAME = "delta.columnMapping.physicalName"
COLUMN_ID = "delta.columnMapping.id"


class SchemaError(ValueError):
    pass


def parse_schema(schema_string: str | None) -> dict[str, Any]:
    """The schema as a JSON struct; a missing string reads as an empty struct (as Delta Spark does)."""
    if schema_string is None:
        return {"type": "struct", "fields": []}
    try:
        schema = orjson.loads(schema_string)
    except orjson.JSONDecodeError as exc:
        raise SchemaError(f"schemaString is not valid JSON: {exc}") from None
    if not isinstance(schema, dict) or schema.get("type") != "struct" or not isinstance(schema.get("fields"), list):
        raise SchemaError("schemaString is not a struct type")
    problem = _shape_error(schema, "")
    if problem:
        raise SchemaError(f"schemaString is malformed: {problem}")
    return schema


def _shape_error(t: Any, where: str) -> str | None:
    """What makes data type ``t`` (at field path ``where``) unusable, or None: every consumer of a schema
    indexes ``name`` and ``type`` without asking, so a field without them is refused here, once."""
    if isinstance(t, str):
        return None
    if not isinstance(t, dict):
        return f"{where or 'the schema'} has type {t!r}, which is neither a name nor an object"
    kind = t.get("type")
    children: list[tuple[str, Any]]
    if kind == "struct":
        fields = t.get("fields")
        if not isinstance(fields, list):
            return f"struct {where or 'the schema'} has no list of fields"
        children = []
        for i, f in enumerate(fields):
            if not isinstance(f, dict) or not isinstance(f.get("name"), str):
                return f"field {i} of {where or 'the schema'} has no name"
            if f.get("type") is None:
                return f"field {(where + '.' if where else '') + f['name']!r} has no type"
            children.append(((where + "." if where else "") + f["name"], f["type"]))
    elif kind == "array":
        children = [(f"{where}.element", t.get("elementType"))]
    elif kind == "map":
        children = [(f"{where}.key", t.get("keyType")), (f"{where}.value", t.get("valueType"))]
    else:
        return f"{where or 'the schema'} has unknown complex type {kind!r}"
    for name, child in children:
        if child is None:
            return f"{name} has no type"
        problem = _shape_error(child, name)
        if problem:
            return problem
    return None


def top_level_fields(schema: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(schema.get("fields") or [])


def physical_names(schema: Mapping[str, Any], mode: str) -> dict[str, str]:
    """Top-level logical name -> physical name (identity when column mapping is off)."""
    out = {}
    for f in top_level_fields(schema):
        name = f["name"]
        meta = f.get("metadata") or {}
        out[name] = str(meta.get(PHYSICAL_NAME, name)) if mode in ("name", "id") else name
    return out


def field_type(schema: Mapping[str, Any], name: str) -> Any:
    for f in top_level_fields(schema):
        if f["name"] == name:
            return f["type"]
    raise SchemaError(f"no column {name!r} in the table schema")


__all__ = [
    "COLUMN_ID",
    "PHYSICAL_NAME",
    "SchemaError",
    "field_type",
    "parse_schema",
    "physical_names",
    "top_level_fields",
]
