"""One data file's columns, as the table's schema says they are now.

A file holds what its writer wrote: physical names (column mapping) or parquet field ids (id mode), columns
added since missing, types narrower than today's (type widening), extra columns the table does not have
(``_change_type``, materialized row-tracking columns), Spark's list and timestamp spellings. A
:class:`Column` tree, built once per table schema, says for every (nested) field how to find it in a file
and what Arrow type it has for the reader; :func:`conform` rebuilds one file column to that shape without
copying values that need no cast.

Matching follows PROTOCOL "Reader Requirements for Column Mapping": ``none`` by name (exact, else the one
case-insensitive match, as Spark resolves), ``name`` by physical name, ``id`` by the parquet field id. A
field the file lacks reads as nulls; a file without any field ids in ``id`` mode is refused, as the protocol
allows, because reading it by name could return another column's values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow.schema import arrow_type
from deltalog.core.schema import COLUMN_ID, PHYSICAL_NAME
from deltalog.data.memory import DATA_POOL
from deltalog.errors import CorruptDataError, UnsupportedFeatureError

FIELD_ID = b"PARQUET:field_id"
VARIANT = arrow_type("variant")


@dataclass(frozen=True)
class Column:
    """How to read one (nested) field: its logical name, how a file names it, and its Arrow type.

    ``children`` are a struct's fields, a list's element, or a map's key and value.
    """

    name: str
    physical: str
    field_id: int | None
    type: pa.DataType
    nullable: bool
    kind: str  # "struct", "array", "map" or "leaf"
    children: tuple[Column, ...] = ()

    @property
    def field(self) -> pa.Field:
        return pa.field(self.name, self.type, self.nullable)


def _column(name: str, physical: str, field_id: int | None, delta_type: Any, nullable: bool, mode: str) -> Column:
    kind = delta_type.get("type") if isinstance(delta_type, dict) else "leaf"
    children: tuple[Column, ...] = ()
    if kind == "struct":
        children = tuple(plan_field(f, mode) for f in delta_type.get("fields") or [])
        out: pa.DataType = pa.struct([c.field for c in children])
    elif kind == "array":
        element = _column("element", "element", None, delta_type["elementType"], True, mode)
        children = (element,)
        out = pa.list_(pa.field("element", element.type, bool(delta_type.get("containsNull", True))))
    elif kind == "map":
        key = _column("key", "key", None, delta_type["keyType"], False, mode)
        value = _column("value", "value", None, delta_type["valueType"], True, mode)
        children = (key, value)
        out = pa.map_(key.type, pa.field("value", value.type, bool(delta_type.get("valueContainsNull", True))))
    else:
        kind = "leaf"
        out = arrow_type(delta_type)
    return Column(name, physical, field_id, out, nullable, kind, children)


def plan_field(delta_field: dict[str, Any], mode: str) -> Column:
    """The :class:`Column` of one Delta schema field (with its metadata) under a column-mapping mode."""
    meta = delta_field.get("metadata") or {}
    name = delta_field["name"]
    physical = str(meta.get(PHYSICAL_NAME, name)) if mode in ("name", "id") else name
    raw_id = meta.get(COLUMN_ID) if mode == "id" else None
    field_id = int(raw_id) if isinstance(raw_id, (int, str)) and str(raw_id).lstrip("-").isdigit() else None
    return _column(name, physical, field_id, delta_field["type"], bool(delta_field.get("nullable", True)), mode)


def _file_id(f: pa.Field) -> int | None:
    raw = (f.metadata or {}).get(FIELD_ID)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def match(file_fields: Sequence[pa.Field], column: Column, mode: str, source: str) -> int | None:
    """The index of ``column`` among a file's fields at one level, or None when the file lacks it."""
    if mode == "id" and column.field_id is not None:
        ids = [_file_id(f) for f in file_fields]
        if file_fields and all(i is None for i in ids):
            raise CorruptDataError(
                f"{source}: the table maps columns by id but the file has no parquet field ids "
                f"(looking for {column.name!r}, id {column.field_id})",
                path=source,
            )
        return ids.index(column.field_id) if column.field_id in ids else None
    names = [f.name for f in file_fields]
    if column.physical in names:
        return names.index(column.physical)
    if mode == "none":
        folded = [i for i, n in enumerate(names) if n.lower() == column.physical.lower()]
        if len(folded) == 1:
            return folded[0]
    return None


def rebased_offsets(arr: pa.Array) -> tuple[pa.Array, int, int]:
    """A sliced list/map's offsets rebased to start at 0, with the child range they cover."""
    offsets = arr.offsets
    start = offsets[0].as_py()
    end = offsets[-1].as_py()
    return pc.subtract(offsets, pa.scalar(start, offsets.type)), start, end - start


def _cast(arr: pa.Array, column: Column, source: str) -> pa.Array:
    if arr.type == column.type:
        return arr
    if pa.types.is_struct(arr.type) and arr.type.get_field_index("typed_value") >= 0 and column.type == VARIANT:
        raise UnsupportedFeatureError(
            f"{source}: column {column.name!r} holds a shredded variant, which this reader does not reassemble",
            feature="variantShredding",
            path=source,
        )
    try:
        return pc.cast(arr, column.type, memory_pool=DATA_POOL)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise CorruptDataError(
            f"{source}: column {column.name!r} holds {arr.type}, which does not read as the table's {column.type}: "
            f"{exc}",
            path=source,
        ) from None


def conform(arr: pa.Array, column: Column, mode: str, source: str) -> pa.Array:
    """``arr`` (one file column) in ``column``'s shape: nested fields matched and renamed, types cast."""
    mask = arr.is_null() if arr.null_count else None
    if column.kind == "struct" and pa.types.is_struct(arr.type):
        children = conform_children(
            [arr.field(i) for i in range(arr.type.num_fields)], list(arr.type), column.children, len(arr), mode, source
        )
        if not children:
            return _cast(arr, column, source)
        return pa.StructArray.from_arrays(children, fields=[c.field for c in column.children], mask=mask)
    if column.kind == "array" and pa.types.is_large_list(arr.type):
        arr = _cast(arr, replace(column, type=pa.list_(arr.type.value_field)), source)  # int32 offsets
    if column.kind == "array" and pa.types.is_list(arr.type):
        offsets, start, length = rebased_offsets(arr)
        values = conform(arr.values.slice(start, length), column.children[0], mode, source)
        return pa.ListArray.from_arrays(offsets, values, type=column.type, mask=mask)
    if column.kind == "map" and pa.types.is_map(arr.type):
        offsets, start, length = rebased_offsets(arr)
        keys = conform(arr.keys.slice(start, length), column.children[0], mode, source)
        items = conform(arr.items.slice(start, length), column.children[1], mode, source)
        return pa.MapArray.from_arrays(offsets, keys, items, type=column.type, mask=mask)
    return _cast(arr, column, source)


def conform_children(
    arrays: Sequence[pa.Array],
    file_fields: Sequence[pa.Field],
    columns: Sequence[Column],
    length: int,
    mode: str,
    source: str,
) -> list[pa.Array]:
    """Each of ``columns`` taken from a file's fields at one level (nulls where the file lacks it)."""
    out = []
    for column in columns:
        i = match(file_fields, column, mode, source)
        out.append(pa.nulls(length, column.type) if i is None else conform(arrays[i], column, mode, source))
    return out


__all__ = ["FIELD_ID", "Column", "conform", "conform_children", "match", "plan_field", "rebased_offsets"]
