"""The table schema as the checker needs it (PROTOCOL.md "Schema Serialization Format", "Column Mapping").

``parse_schema`` walks every struct field, nested through structs, arrays and maps, and records its
logical path, its physical path (``delta.columnMapping.physicalName`` where present) and its column
mapping id, so the rules can ask "which physical names exist", "is there a ``timestamp_ntz`` anywhere".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import orjson

PHYSICAL = "delta.columnMapping.physicalName"
COLUMN_ID = "delta.columnMapping.id"


@dataclass(frozen=True)
class FieldInfo:
    path: tuple[str, ...]  # logical names from the top level down
    physical_path: tuple[str, ...]  # physical names where given, else the logical ones
    type: Any
    metadata: dict[str, Any]
    nullable: Any

    @property
    def column_id(self) -> Any:
        return self.metadata.get(COLUMN_ID)

    @property
    def physical_name(self) -> Any:
        return self.metadata.get(PHYSICAL)


@dataclass(frozen=True)
class SchemaInfo:
    fields: tuple[FieldInfo, ...] = ()
    error: str | None = None
    primitive_types: frozenset[str] = field(default_factory=frozenset)

    def top_level(self) -> dict[str, FieldInfo]:
        return {f.path[0]: f for f in self.fields if len(f.path) == 1}

    def find(self, logical_name: str) -> FieldInfo | None:
        """A top-level field by logical name: exact first, then case-insensitively (names are case-insensitive)."""
        tops = self.top_level()
        if logical_name in tops:
            return tops[logical_name]
        lowered = {k.lower(): v for k, v in tops.items()}
        return lowered.get(logical_name.lower())

    def has_type(self, prefix: str) -> bool:
        return any(t == prefix or t.startswith(prefix + "(") for t in self.primitive_types)


def _walk(typ: Any, path: tuple[str, ...], physical: tuple[str, ...], out: list[FieldInfo], prims: set[str]) -> None:
    if isinstance(typ, str):
        prims.add(typ)
        return
    if not isinstance(typ, dict):
        raise ValueError(f"type at {'.'.join(path) or '<root>'} is {type(typ).__name__}, not a string or object")
    kind = typ.get("type")
    if kind == "struct":
        fields = typ.get("fields")
        if not isinstance(fields, list):
            raise ValueError(f"struct at {'.'.join(path) or '<root>'} has no fields list")
        for f in fields:
            if not isinstance(f, dict) or not isinstance(f.get("name"), str) or "type" not in f:
                raise ValueError(f"field in {'.'.join(path) or '<root>'} lacks a name or type")
            meta = f.get("metadata") if isinstance(f.get("metadata"), dict) else {}
            phys = meta.get(PHYSICAL) if isinstance(meta.get(PHYSICAL), str) else f["name"]
            info = FieldInfo((*path, f["name"]), (*physical, phys), f["type"], meta, f.get("nullable"))
            out.append(info)
            _walk(f["type"], info.path, info.physical_path, out, prims)
    elif kind == "array":
        _walk(typ.get("elementType"), path, physical, out, prims)
    elif kind == "map":
        _walk(typ.get("keyType"), path, physical, out, prims)
        _walk(typ.get("valueType"), path, physical, out, prims)
    elif isinstance(kind, str):
        prims.add(kind)  # e.g. {"type": "variant"} or a user-defined type object
    else:
        raise ValueError(f"type object at {'.'.join(path) or '<root>'} has no type name")


def parse_schema(schema_string: Any) -> SchemaInfo:
    """The walked schema, or a :class:`SchemaInfo` whose ``error`` says why it could not be read."""
    if not isinstance(schema_string, str):
        return SchemaInfo(error="schemaString is missing or not a string")
    return _parse(schema_string)


@lru_cache(maxsize=256)
def _parse(schema_string: str) -> SchemaInfo:
    try:
        root = orjson.loads(schema_string)
    except orjson.JSONDecodeError as exc:
        return SchemaInfo(error=f"schemaString is not JSON: {exc}")
    if not isinstance(root, dict) or root.get("type") != "struct":
        return SchemaInfo(error="schemaString is not a struct type")
    out: list[FieldInfo] = []
    prims: set[str] = set()
    try:
        _walk(root, (), (), out, prims)
    except (ValueError, RecursionError) as exc:
        return SchemaInfo(error=f"schemaString: {exc}")
    return SchemaInfo(tuple(out), None, frozenset(prims))
