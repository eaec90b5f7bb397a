"""Delta schema strings: parsing, the rules a schema must meet to be written, and the logical-to-physical
column names of column mapping.

With column mapping, the log (partition values, stats) and data files use physical names, while users
speak logical names. The map lives here so every user-facing API can translate in one place.

The write rules (:func:`check_schema`) are the protocol's and Delta Spark's: only the types the protocol
defines, names unique regardless of case at every level, names Spark can write without column mapping,
partition columns that can be partition columns. Other engines refuse a table that breaks them, so they are
checked before anything is written. Fields a table already has are not checked again: a table another
engine wrote must stay alterable, and rejecting its old columns would only make it read-only for us.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from deltalog.errors import SchemaError

PHYSICAL_NAME = "delta.columnMapping.physicalName"
COLUMN_ID = "delta.columnMapping.id"

#: the primitive type names of the protocol's "Schema Serialization Format" (``decimal(p,s)`` apart)
PRIMITIVE_TYPES = frozenset(
    {
        "string",
        "long",
        "integer",
        "short",
        "byte",
        "float",
        "double",
        "boolean",
        "binary",
        "date",
        "timestamp",
        "timestamp_ntz",
        "variant",
        "void",
    }
)
MAX_DECIMAL_PRECISION = 38
#: characters Delta Spark refuses in column names unless column mapping is on (SchemaUtils.checkFieldNames)
FORBIDDEN_NAME_CHARS = " ,;{}()\n\t="
#: types that cannot be partition columns: no partition value serialization exists for them
_NOT_PARTITIONABLE = frozenset({"variant", "void"})
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)")


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


# ---------------------------------------------------------------------------------------------- walking


@dataclass(frozen=True)
class FieldAt:
    """One struct field met while walking a schema: its dotted path and its JSON."""

    path: str
    field: Mapping[str, Any]


def walk_types(schema: Any) -> Iterator[tuple[str, Any]]:
    """Every type in ``schema`` with its path (``a``, ``a.b``, ``a.element``, ``m.key``, ``m.value``),
    parents before children. Iterative, so a deeply nested schema cannot exhaust the interpreter's stack."""
    stack: list[tuple[str, Any]] = [("", schema)]
    while stack:
        path, t = stack.pop()
        yield path, t
        if not isinstance(t, Mapping):
            continue
        kind = t.get("type")
        children: list[tuple[str, Any]] = []
        if kind == "struct" and isinstance(t.get("fields"), list):
            for f in t["fields"]:
                if isinstance(f, Mapping) and isinstance(f.get("name"), str):
                    children.append((_join(path, f["name"]), f.get("type")))
        elif kind == "array":
            children.append((_join(path, "element"), t.get("elementType")))
        elif kind == "map":
            children.extend([(_join(path, "key"), t.get("keyType")), (_join(path, "value"), t.get("valueType"))])
        stack.extend(reversed(children))


def walk_fields(schema: Any) -> Iterator[FieldAt]:
    """Every struct field in ``schema`` (nested in structs, arrays and maps too), with its path."""
    for path, t in walk_types(schema):
        if isinstance(t, Mapping) and t.get("type") == "struct" and isinstance(t.get("fields"), list):
            for f in t["fields"]:
                if isinstance(f, Mapping):
                    yield FieldAt(_join(path, str(f.get("name"))), f)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def type_text(t: Any) -> str:
    """A type as one comparable string: a primitive's name, or a complex type's JSON with sorted keys."""
    return t if isinstance(t, str) else orjson.dumps(t, option=orjson.OPT_SORT_KEYS).decode()


# ---------------------------------------------------------------------------------------------- rules


def check_schema(
    schema: Mapping[str, Any],
    partition_columns: Sequence[str] = (),
    *,
    column_mapping: bool = False,
    previous: Mapping[str, Any] | None = None,
    previous_partition_columns: Sequence[str] | None = None,
) -> None:
    """Refuse a schema (and its partitioning) that breaks a write rule, naming the field; see the module doc.

    ``previous`` is the table's schema before this commit: a field whose path and type it already has is
    not checked again, nor is the partitioning when neither it nor the schema changed.
    """
    old = _typed_paths(previous) if previous is not None else {}
    if not top_level_fields(schema) and (previous is None or top_level_fields(previous)):
        raise SchemaError("the schema has no columns: readers cannot scan a table without one", rule="valid-schema")
    for path, t in walk_types(schema):
        if not path:
            _check_struct(t, "the schema", old, column_mapping, path)
            continue
        if old.get(path) == type_text(t):
            continue  # the table already has this field with this type
        _check_type(t, path, void_allowed=old.get(path) == "void")
        if isinstance(t, Mapping) and t.get("type") == "struct":
            _check_struct(t, f"struct {path!r}", old, column_mapping, path)
    unchanged = (
        previous is not None
        and previous_partition_columns is not None
        and list(previous_partition_columns) == list(partition_columns)
        and type_text(previous) == type_text(schema)
    )
    if not unchanged:
        check_partition_columns(schema, partition_columns)


def _typed_paths(schema: Mapping[str, Any]) -> dict[str, str]:
    return {path: type_text(t) for path, t in walk_types(schema) if path}


def _check_struct(t: Any, what: str, old: Mapping[str, str], column_mapping: bool, path: str) -> None:
    if not isinstance(t, Mapping) or not isinstance(t.get("fields"), list):
        raise SchemaError(f"{what} has no list of fields", field=path or None)
    fields = t["fields"]
    for f in fields:
        if not isinstance(f, Mapping) or not isinstance(f.get("name"), str):
            raise SchemaError(f"{what} holds a field without a name: {f!r}", field=path or None)
    fresh = {f["name"] for f in fields if _join(path, f["name"]) not in old}
    seen: dict[str, str] = {}
    for f in fields:
        name = f["name"]
        fpath = _join(path, name)
        if "type" not in f:
            raise SchemaError(f"field {fpath!r} has no type", field=fpath)
        if not isinstance(f.get("nullable"), bool):
            raise SchemaError(
                f"field {fpath!r}: nullable must be true or false, not {f.get('nullable')!r}", field=fpath
            )
        if not isinstance(f.get("metadata", {}), Mapping):
            raise SchemaError(f"field {fpath!r}: metadata must be a JSON object", field=fpath)
        if name in fresh:
            check_name(name, fpath, column_mapping)
        low = name.lower()
        if low in seen and fresh:
            raise SchemaError(
                f"{what} has the columns {seen[low]!r} and {name!r}: names must be unique regardless of case",
                field=fpath,
                rule="unique-column-names",
            )
        seen[low] = name


def check_name(name: str, path: str, column_mapping: bool) -> None:
    """A column name Delta Spark accepts: not empty, and without ``FORBIDDEN_NAME_CHARS`` unless column
    mapping is on (then data files use physical names, so any logical name works)."""
    if not name:
        raise SchemaError(f"column {path!r} has an empty name", field=path, rule="column-names")
    if column_mapping:
        return
    bad = sorted({c for c in name if c in FORBIDDEN_NAME_CHARS})
    if bad:
        raise SchemaError(
            f"column name {path!r} contains {''.join(bad)!r}: without column mapping Delta does not allow "
            f"any of {FORBIDDEN_NAME_CHARS!r} in names",
            field=path,
            rule="column-names",
        )


def _check_type(t: Any, path: str, void_allowed: bool) -> None:
    if isinstance(t, str):
        if t == "void":
            if not void_allowed:
                raise SchemaError(
                    f"column {path!r} has type void: new columns cannot be void (no data file can hold one, "
                    "and readers such as duckdb refuse tables with them)",
                    field=path,
                    rule="valid-types",
                )
            return
        if t in PRIMITIVE_TYPES:
            return
        m = _DECIMAL.fullmatch(t)
        if m:
            precision, scale = int(m[1]), int(m[2])
            if not 1 <= precision <= MAX_DECIMAL_PRECISION or not 0 <= scale <= precision:
                raise SchemaError(
                    f"column {path!r} has type {t}: a decimal needs 1 <= precision <= {MAX_DECIMAL_PRECISION} "
                    "and 0 <= scale <= precision",
                    field=path,
                    rule="valid-types",
                )
            return
        raise SchemaError(
            f"column {path!r} has type {t!r}, which the Delta protocol does not define", field=path, rule="valid-types"
        )
    if not isinstance(t, Mapping):
        raise SchemaError(
            f"column {path!r} has type {t!r}, which the Delta protocol does not define", field=path, rule="valid-types"
        )
    kind = t.get("type")
    if kind == "struct":
        return  # its fields are checked as the walk reaches them
    if kind == "array":
        if "elementType" not in t or not isinstance(t.get("containsNull"), bool):
            raise SchemaError(
                f"array column {path!r} needs elementType and a boolean containsNull", field=path, rule="valid-types"
            )
        return
    if kind == "map":
        if "keyType" not in t or "valueType" not in t or not isinstance(t.get("valueContainsNull"), bool):
            raise SchemaError(
                f"map column {path!r} needs keyType, valueType and a boolean valueContainsNull",
                field=path,
                rule="valid-types",
            )
        return
    raise SchemaError(
        f"column {path!r} has type {type_text(t)}, which the Delta protocol does not define",
        field=path,
        rule="valid-types",
    )


def check_partition_columns(schema: Mapping[str, Any], partition_columns: Sequence[str]) -> None:
    """Partition columns are distinct top-level columns of a primitive type, and not every column."""
    fields = {f.get("name"): f for f in top_level_fields(schema) if isinstance(f, Mapping)}
    if len(set(partition_columns)) != len(partition_columns):
        raise SchemaError(f"a partition column is listed twice in {list(partition_columns)}", rule="partition-columns")
    for p in partition_columns:
        if p not in fields:
            raise SchemaError(
                f"partition column {p!r} is not a column of the schema", field=p, rule="partition-columns"
            )
        t = fields[p].get("type")
        if not isinstance(t, str) or t in _NOT_PARTITIONABLE:
            raise SchemaError(
                f"column {p!r} of type {type_text(t)} cannot be a partition column: only primitive types can",
                field=p,
                rule="partition-columns",
            )
    if partition_columns and len(partition_columns) >= len(fields):
        raise SchemaError(
            f"every column is a partition column ({list(partition_columns)}): at least one must hold data",
            rule="partition-columns",
        )


__all__ = [
    "COLUMN_ID",
    "FORBIDDEN_NAME_CHARS",
    "MAX_DECIMAL_PRECISION",
    "PHYSICAL_NAME",
    "PRIMITIVE_TYPES",
    "FieldAt",
    "SchemaError",
    "check_name",
    "check_partition_columns",
    "check_schema",
    "field_type",
    "parse_schema",
    "physical_names",
    "top_level_fields",
    "type_text",
    "walk_fields",
    "walk_types",
]
