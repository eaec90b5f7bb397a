"""Arrow input to the table's columns: matched by name, cast only where no value can change, NOT NULL enforced.

A writer gets whatever Arrow a caller holds (pandas' nanosecond timestamps, unsigned integers, dictionary or
view encodings, ``large_*`` types) and must write what the table's schema says, under the names the files
use. The rules, from PROTOCOL "Primitive Types" and ``../shared/docs/delta-write-rules.md`` section 13:

* Columns match by name as Spark resolves them: case-insensitively (table names are unique regardless of
  case); a data column the table lacks, or two data columns that differ only in case, are refused.
  A table column the data lacks is null (NOT NULL then refuses it; generated columns are computed later).
* Casts are *safe* casts: integers and decimals are range-checked, timestamps of any unit become
  microseconds (a lost nanosecond or an out-of-range instant is refused, never rounded or wrapped),
  zone-aware timestamps go only to ``timestamp`` and naive ones only to ``timestamp_ntz``, ``double`` never
  narrows to ``float``. Anything else is a :class:`~deltalog.errors.SchemaMismatchError` naming the column.
* ``void`` columns are never stored in data files (PROTOCOL): the data may only hold nulls for them. A table
  whose schema puts ``void`` in an array or map, has an all-``void`` struct or only ``void`` columns cannot
  take data files at all.
* The output uses physical names and carries ``PARQUET:field_id`` metadata at every nesting level on
  column-mapped tables, and declares every field nullable, as Delta Spark writes files ("makeOutputNullable"):
  nullability is the log's promise, enforced here, not the file's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow.schema import arrow_type
from deltalog.core.schema import COLUMN_ID, PHYSICAL_NAME, top_level_fields
from deltalog.data.conform import FIELD_ID, rebased_offsets
from deltalog.errors import NotNullViolationError, SchemaMismatchError, UnsupportedFeatureError


@dataclass(frozen=True)
class FieldPlan:
    """One table field as a writer sees it: logical and physical name, Delta type, and the file's Arrow field.

    ``kind`` is ``struct``, ``array`` (one child: the element), ``map`` (key, value), ``void`` (never stored)
    or ``leaf``. ``file_field`` is None for ``void``.
    """

    name: str
    physical: str
    delta_type: Any
    nullable: bool
    kind: str
    children: tuple[FieldPlan, ...]
    file_field: pa.Field | None

    @property
    def strict(self) -> bool:
        """Whether this field or any field below it is non-nullable (only those need a NOT NULL check)."""
        return not self.nullable or any(c.strict for c in self.children)

    @property
    def stored(self) -> tuple[FieldPlan, ...]:
        """The children a file holds (``void`` ones are left out)."""
        return tuple(c for c in self.children if c.kind != "void")


def _kind(delta_type: Any) -> str:
    if isinstance(delta_type, dict):
        return str(delta_type.get("type"))
    return "void" if delta_type == "void" else "leaf"


def _field_id(meta: Mapping[str, Any], mapped: bool) -> dict[bytes, bytes] | None:
    raw = meta.get(COLUMN_ID)
    if not mapped or raw is None:
        return None
    return {FIELD_ID: str(raw).encode()}


def _part(label: str, delta_type: Any, nullable: Any, mapped: bool, path: str) -> FieldPlan:
    """An array's element or a map's key or value (never ``void``: no file could hold it)."""
    child = _plan(label, label, delta_type, bool(nullable), {}, mapped, f"{path}.")
    if child.kind == "void":
        raise UnsupportedFeatureError(
            f"column {path} has void as its {label}, which no data file can hold", feature="void"
        )
    return child


def _plan(
    name: str, physical: str, delta_type: Any, nullable: bool, meta: Mapping[str, Any], mapped: bool, where: str
) -> FieldPlan:
    kind = _kind(delta_type)
    path = f"{where}{name}"
    children: tuple[FieldPlan, ...] = ()
    out: pa.DataType | None = None
    if kind == "struct":
        children = tuple(plan_field(f, mapped, f"{path}.") for f in delta_type.get("fields") or [])
        if children and all(c.kind == "void" for c in children):
            raise UnsupportedFeatureError(
                f"column {path} is a struct of void fields only, which no data file can hold", feature="void"
            )
        out = pa.struct([c.file_field for c in children if c.file_field is not None])
    elif kind == "array":
        element = _part("element", delta_type["elementType"], delta_type.get("containsNull", True), mapped, path)
        children = (element,)
        out = pa.list_(element.file_field)
    elif kind == "map":
        key = _part("key", delta_type["keyType"], False, mapped, path)
        value = _part("value", delta_type["valueType"], delta_type.get("valueContainsNull", True), mapped, path)
        children = (key, value)
        out = pa.map_(key.file_field.with_nullable(False), value.file_field)  # type: ignore[union-attr]
    elif kind == "leaf":
        if delta_type == "variant":
            raise UnsupportedFeatureError(
                f"column {path} is a variant, which deltalog does not write", feature="variantType"
            )
        out = arrow_type(delta_type)
    elif kind != "void":
        raise UnsupportedFeatureError(f"column {path} has unknown type {kind!r}", feature=kind)
    file_field = None if out is None else pa.field(physical, out, True, metadata=_field_id(meta, mapped))
    return FieldPlan(name, physical, delta_type, nullable, kind, children, file_field)


def plan_field(field: Mapping[str, Any], mapped: bool, where: str = "") -> FieldPlan:
    """The :class:`FieldPlan` of one Delta schema field; ``mapped`` when the table uses column mapping."""
    meta = field.get("metadata") or {}
    name = str(field["name"])
    physical = str(meta.get(PHYSICAL_NAME, name)) if mapped else name
    return _plan(name, physical, field["type"], bool(field.get("nullable", True)), meta, mapped, where)


def plan_schema(schema: Mapping[str, Any], mapped: bool) -> tuple[FieldPlan, ...]:
    """Every top-level field's plan; a table with only ``void`` columns cannot take data files."""
    plans = tuple(plan_field(f, mapped) for f in top_level_fields(schema))
    if plans and all(p.kind == "void" for p in plans):
        raise UnsupportedFeatureError("the table has only void columns, which no data file can hold", feature="void")
    return plans


# ---------------------------------------------------------------------------------------------- matching


def match_names(given: Sequence[str], plans: Sequence[FieldPlan], where: str = "") -> list[int | None]:
    """For each plan, the index of the data column of that name (Spark: case-insensitive), or None."""
    folded: dict[str, int] = {}
    for i, name in enumerate(given):
        key = name.lower()
        if key in folded:
            raise SchemaMismatchError(
                f"the data has two columns named {where}{given[folded[key]]!r} and {where}{name!r}, which Delta "
                "treats as the same name",
                column=f"{where}{name}",
            )
        folded[key] = i
    known = {p.name.lower() for p in plans}
    extra = [n for n in given if n.lower() not in known]
    if extra:
        raise SchemaMismatchError(
            f"the data has columns the table does not: {[where + n for n in extra]} (the table has "
            f"{[where + p.name for p in plans]}; schema evolution is not done by the file writer)",
            column=f"{where}{extra[0]}",
        )
    return [folded.get(p.name.lower()) for p in plans]


def _castable(src: pa.DataType, delta_type: str) -> bool:
    """Whether a safe cast from ``src`` can fill a column of ``delta_type`` (values are checked by the cast)."""
    t = pa.types
    if delta_type == "boolean":
        return bool(t.is_boolean(src))
    if delta_type in ("byte", "short", "integer", "long"):
        return bool(t.is_integer(src))
    if delta_type == "float":
        return t.is_integer(src) or src in (pa.float16(), pa.float32())
    if delta_type == "double":
        return bool(t.is_integer(src) or t.is_floating(src))
    if delta_type.startswith("decimal"):
        return bool(t.is_integer(src) or t.is_decimal(src))
    if delta_type.startswith("string"):
        return bool(t.is_string(src) or t.is_large_string(src) or t.is_string_view(src))
    if delta_type == "binary":
        return bool(t.is_binary(src) or t.is_large_binary(src) or t.is_binary_view(src) or t.is_fixed_size_binary(src))
    if delta_type == "date":
        return bool(t.is_date(src))
    if delta_type == "timestamp":
        return t.is_timestamp(src) and src.tz is not None
    if delta_type == "timestamp_ntz":
        return t.is_timestamp(src) and src.tz is None
    return False


def _type_text(delta_type: Any) -> str:
    return delta_type if isinstance(delta_type, str) else str(delta_type.get("type"))


def _mismatch(path: str, src: pa.DataType, plan: FieldPlan, why: str = "") -> SchemaMismatchError:
    hint = ""
    if pa.types.is_timestamp(src) and plan.delta_type in ("timestamp", "timestamp_ntz"):
        hint = " (zone-aware timestamps fill `timestamp`, naive ones `timestamp_ntz`; convert explicitly)"
    return SchemaMismatchError(
        f"column {path}: data of type {src} cannot be written to the table's {_type_text(plan.delta_type)} column"
        f"{why or hint}",
        column=path,
    )


def _list_like(arr: pa.Array) -> pa.Array | None:
    """A list, large list, list view or fixed-size list as a plain list array; None for anything else."""
    ty = arr.type
    if pa.types.is_list(ty):
        return arr
    if isinstance(ty, (pa.LargeListType, pa.ListViewType, pa.LargeListViewType, pa.FixedSizeListType)):
        return arr.cast(pa.list_(ty.value_field))
    return None


def conform_array(arr: pa.Array, plan: FieldPlan, path: str) -> pa.Array:
    """``arr`` as the file stores ``plan``'s column: physical names, the table's types (safely cast)."""
    if isinstance(arr.type, pa.ExtensionType):
        arr = arr.storage
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    out_type = plan.file_field.type  # type: ignore[union-attr]
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), out_type)
    mask = arr.is_null() if arr.null_count else None
    if plan.kind == "struct":
        if not pa.types.is_struct(arr.type):
            raise _mismatch(path, arr.type, plan)
        given = [arr.type.field(i).name for i in range(arr.type.num_fields)]
        found = match_names(given, plan.children, f"{path}.")
        children = []
        for child, index in zip(plan.children, found, strict=True):
            value = pa.nulls(len(arr)) if index is None else arr.field(index)
            if child.kind == "void":
                check_void(value, f"{path}.{child.name}")
            else:
                children.append(conform_array(value, child, f"{path}.{child.name}"))
        return pa.StructArray.from_arrays(children, fields=list(out_type), mask=mask)
    if plan.kind == "array":
        lists = _list_like(arr)
        if lists is None:
            raise _mismatch(path, arr.type, plan)
        offsets, start, length = rebased_offsets(lists)
        values = conform_array(lists.values.slice(start, length), plan.children[0], f"{path}.element")
        return pa.ListArray.from_arrays(offsets, values, type=out_type, mask=mask)
    if plan.kind == "map":
        if not pa.types.is_map(arr.type):
            raise _mismatch(path, arr.type, plan)
        offsets, start, length = rebased_offsets(arr)
        keys = conform_array(arr.keys.slice(start, length), plan.children[0], f"{path}.key")
        items = conform_array(arr.items.slice(start, length), plan.children[1], f"{path}.value")
        return pa.MapArray.from_arrays(offsets, keys, items, type=out_type, mask=mask)
    if not _castable(arr.type, str(plan.delta_type)):
        raise _mismatch(path, arr.type, plan)
    try:
        return arr.cast(out_type, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise _mismatch(path, arr.type, plan, f": {exc}") from None


def check_void(arr: pa.Array, path: str) -> None:
    """A ``void`` column holds nothing: data for it must be all null."""
    if arr.null_count != len(arr):
        raise SchemaMismatchError(
            f"column {path} is void (it stores no values) but the data holds values in it", column=path
        )


# ---------------------------------------------------------------------------------------------- NOT NULL


def _violation(path: str, bad: pa.Array, nested: bool) -> NotNullViolationError | None:
    if not pc.any(bad).as_py():
        return None
    first = int(pc.index(bad, True).as_py())
    where = "an element" if nested else f"row {first}"
    return NotNullViolationError(
        f"NOT NULL constraint violated: column {path} is non-nullable but the data has a null in {where}",
        column=path,
        row=None if nested else {"row": first},
    )


def _map_entries(arr: pa.MapArray) -> list[pa.Array]:
    """Keys and values of the present maps of ``arr`` (pyarrow has no flatten kernel for maps)."""
    offsets, start, length = rebased_offsets(arr)
    mask = arr.is_null() if arr.null_count else None
    keys = pa.ListArray.from_arrays(offsets, arr.keys.slice(start, length), mask=mask).flatten()
    items = pa.ListArray.from_arrays(offsets, arr.items.slice(start, length), mask=mask).flatten()
    return [keys, items]


def check_not_null(arr: pa.Array, plan: FieldPlan, path: str, valid: pa.Array | None, nested: bool = False) -> None:
    """Refuse a null where ``plan`` (or any field below it) is non-nullable; ``valid`` marks the rows whose
    parents are present (a null struct's non-nullable field may be null: Spark checks fields of present
    parents only)."""
    if not plan.strict:
        return
    present = arr.is_valid()
    if not plan.nullable:
        bad = pc.invert(present) if valid is None else pc.and_(valid, pc.invert(present))
        error = _violation(path, bad, nested)
        if error is not None:
            raise error
    if plan.kind == "struct":
        here = present if valid is None else pc.and_(valid, present)
        for i, child in enumerate(plan.stored):
            check_not_null(arr.field(i), child, f"{path}.{child.name}", here, nested)
    elif plan.kind in ("array", "map"):
        parts = [arr.flatten()] if plan.kind == "array" else _map_entries(arr)
        for part, child in zip(parts, plan.children, strict=True):
            check_not_null(part, child, f"{path}.{child.name}", None, True)


__all__ = [
    "FieldPlan",
    "check_not_null",
    "check_void",
    "conform_array",
    "match_names",
    "plan_field",
    "plan_schema",
]
