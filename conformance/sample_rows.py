"""A few rows for any table schema, so the write runner can append a real data file to every corpus table.

Values come from the Delta type (so variant, void and decimals get values their types allow) and become
arrays of the snapshot's Arrow type. Numbers are small and positive, which keeps simple CHECK constraints
such as ``x > 0`` satisfied; the last row is null wherever the schema allows, partition columns included,
so the writer's null handling (``__HIVE_DEFAULT_PARTITION__``, null counts) is exercised too. Generated
and identity columns are left out: computing them is the writer's job (an identity column that allows explicit
values too: generating them is what the append should exercise).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import pyarrow as pa

ROWS = 3
GENERATION_KEY = "delta.generationExpression"
IDENTITY_KEY = "delta.identity.start"
_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")
# a variant holding null: metadata header (version 1, empty dictionary, one offset), value header 0 (null)
_NULL_VARIANT = {"metadata": b"\x01\x00\x00", "value": b"\x00"}


def _scalar(kind: str, i: int) -> Any:
    if kind in ("byte", "short", "integer", "long"):
        return i + 1
    if kind in ("float", "double"):
        return i + 0.5
    if kind == "boolean":
        return i % 2 == 0
    if kind == "string":
        return f"s{i}"
    if kind == "binary":
        return f"b{i}".encode()
    if kind == "date":
        return dt.date(2024, 1, 1 + i)
    if kind == "timestamp":
        return dt.datetime(2024, 1, 1, 12, 0, i, tzinfo=dt.timezone.utc)
    if kind == "timestamp_ntz":
        return dt.datetime(2024, 1, 1, 12, 0, i)
    if kind == "void":
        return None
    if kind == "variant":
        return dict(_NULL_VARIANT)
    m = _DECIMAL.fullmatch(kind)
    if m:
        return Decimal(i + 1).scaleb(-int(m[2]))  # below 1 when scale > 0: fits any precision
    raise ValueError(f"no sample value for Delta type {kind!r}")


def sample_value(delta_type: Any, i: int, nulls: bool, nullable: bool = True) -> Any:
    """Row ``i``'s value of a Delta type (a type name or a struct/array/map dict); null on the last row when
    ``nulls`` and the type is nullable where it stands."""
    if nulls and nullable and i == ROWS - 1:
        return None
    if isinstance(delta_type, str):
        return _scalar(delta_type, i)
    kind = delta_type.get("type")
    if kind == "struct":
        return {
            f["name"]: sample_value(f["type"], i, nulls, bool(f.get("nullable", True))) for f in delta_type["fields"]
        }
    if kind == "array":
        null_ok = bool(delta_type.get("containsNull", True))
        return [sample_value(delta_type["elementType"], j, nulls, null_ok) for j in (i, ROWS - 1)]
    if kind == "map":
        key = sample_value(delta_type["keyType"], i, False, False)
        value = sample_value(delta_type["valueType"], ROWS - 1, nulls, bool(delta_type.get("valueContainsNull", True)))
        return [(key, value)]
    raise ValueError(f"no sample value for Delta type {delta_type!r}")


def sample_table(
    schema_json: Mapping[str, Any], arrow_schema: pa.Schema, *, nulls: bool = True, rows: int = ROWS
) -> pa.Table:
    """``rows`` rows of the table's logical columns (generated and identity columns left out), typed as
    ``arrow_schema``."""
    arrays, names = [], []
    for field in schema_json.get("fields", []):
        metadata = field.get("metadata") or {}
        if GENERATION_KEY in metadata or IDENTITY_KEY in metadata:
            continue
        nullable = bool(field.get("nullable", True))
        values = [sample_value(field["type"], i % ROWS, nulls, nullable) for i in range(rows)]
        arrays.append(pa.array(values, type=arrow_schema.field(field["name"]).type))
        names.append(field["name"])
    return pa.Table.from_arrays(arrays, names=names)


__all__ = ["ROWS", "sample_table", "sample_value"]
