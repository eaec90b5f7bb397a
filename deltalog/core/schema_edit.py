"""Edits of a Delta schema (JSON): renaming, dropping and retyping one field, by its dotted logical path.

Pure: each edit returns a new schema and leaves ids, physical names and other field metadata to the field
(a renamed column keeps its column-mapping pair, which is what makes a rename free of rewrites). The rules
that depend on the table (column mapping on, partition and clustering columns, expressions naming the
column) are the callers'; the rules of the schema itself (the name free among its siblings, the last column
of a table or struct) are checked here, naming the column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from deltalog.errors import SchemaError


def _copy(schema: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = orjson.loads(orjson.dumps(schema))
    return out


def resolve(schema: Mapping[str, Any], column: str) -> tuple[str, ...]:
    """The field names (as the schema spells them) of dotted ``column``, through nested structs; a name with
    dots that is itself a top-level column wins, and names match regardless of case as Spark matches them.
    An unknown column is a :class:`SchemaError` naming it."""
    top = [f["name"] for f in schema.get("fields") or ()]
    exact = [n for n in top if n == column] or [n for n in top if n.lower() == column.lower()]
    if exact:
        return (exact[0],)
    out: list[str] = []
    struct: Any = schema
    for part in column.split("."):
        fields = struct.get("fields") if isinstance(struct, Mapping) and struct.get("type") == "struct" else None
        match = next((f for f in fields or () if f["name"] == part), None) or next(
            (f for f in fields or () if f["name"].lower() == part.lower()), None
        )
        if match is None:
            raise SchemaError(f"no column {column!r} in the table schema", field=column)
        out.append(match["name"])
        struct = match["type"]
    return tuple(out)


def _siblings(schema: dict[str, Any], path: Sequence[str]) -> list[dict[str, Any]]:
    """The field list holding the last name of ``path`` (resolved)."""
    struct = schema
    for name in path[:-1]:
        struct = next(f for f in struct["fields"] if f["name"] == name)["type"]
    fields: list[dict[str, Any]] = struct["fields"]
    return fields


def field_at(schema: Mapping[str, Any], path: Sequence[str]) -> dict[str, Any]:
    """The field at resolved ``path``."""
    return next(f for f in _siblings(dict(schema), path) if f["name"] == path[-1])


def renamed(schema: Mapping[str, Any], path: Sequence[str], new_name: str) -> dict[str, Any]:
    """``schema`` with the field at resolved ``path`` named ``new_name``; a sibling already called that
    (regardless of case) is refused, a change of case only is not."""
    dotted = ".".join(path)
    if not isinstance(new_name, str) or not new_name:
        raise SchemaError(f"column {dotted!r} needs a new name, not {new_name!r}", field=dotted)
    out = _copy(schema)
    fields = _siblings(out, path)
    taken = [f["name"] for f in fields if f["name"] != path[-1] and f["name"].lower() == new_name.lower()]
    if taken:
        raise SchemaError(f"cannot rename {dotted!r} to {new_name!r}: column {taken[0]!r} exists", field=dotted)
    next(f for f in fields if f["name"] == path[-1])["name"] = new_name
    return out


def dropped(schema: Mapping[str, Any], paths: Sequence[Sequence[str]]) -> dict[str, Any]:
    """``schema`` without the fields at resolved ``paths``; a table or struct left with no field is refused,
    naming the last column."""
    out = _copy(schema)
    for path in paths:
        fields = _siblings(out, path)
        kept = [f for f in fields if f["name"] != path[-1]]
        if not kept:
            where = "the table" if len(path) == 1 else f"struct {'.'.join(path[:-1])!r}"
            raise SchemaError(f"cannot drop {'.'.join(path)!r}: it is the last column of {where}", field=".".join(path))
        fields[:] = kept
    return out


def retyped(
    schema: Mapping[str, Any], path: Sequence[str], new_type: Any, metadata: Mapping[str, Any]
) -> dict[str, Any]:
    """``schema`` with the field at resolved ``path`` of type ``new_type`` and field metadata ``metadata``."""
    out = _copy(schema)
    field = next(f for f in _siblings(out, path) if f["name"] == path[-1])
    field["type"] = new_type
    field["metadata"] = dict(metadata)
    return out


__all__ = ["dropped", "field_at", "renamed", "resolve", "retyped"]
