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
    return schema


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
