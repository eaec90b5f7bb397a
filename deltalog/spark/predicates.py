"""Predicates Spark hands deltalog: a ``replaceWhere`` string, and the filters Spark pushes into a scan.

One door (:func:`table_predicate`) turns any predicate a caller writes (Spark SQL text, a pyarrow Expression,
DNF tuples, a mapping) into a checked :class:`~deltalog.data.predicate.RowFilter` against a table's schema:
what decides rows, which files can hold a match and which partitions the write reads (the one filter language
of :mod:`deltalog.data.filters` over the Spark SQL expression layer, :mod:`deltalog.expr`).

Pushed filters (``pyspark.sql.datasource.Filter``: ``EqualTo``, ``GreaterThan``, ``In``, ``IsNull``, ``Not``,
``StringStartsWith``, ...) become a pyarrow expression that every row Spark keeps satisfies
(:func:`pushed_expression`): each filter converts when its literal is exactly a value of the column's type,
and is left out otherwise. The expression only rules files out (partition pruning and statistics skipping);
Spark still evaluates every filter on the rows read, so a filter left out costs reading more, never a wrong
answer. The filters are matched by class name, so this module needs no pyspark.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.data.predicate import RowFilter, row_filter

#: the comparison filters and the pyarrow operator each becomes
_COMPARISONS = {
    "EqualTo": "__eq__",
    "EqualNullSafe": "__eq__",
    "GreaterThan": "__gt__",
    "GreaterThanOrEqual": "__ge__",
    "LessThan": "__lt__",
    "LessThanOrEqual": "__le__",
}
_MAX_CODE_POINT = 0x10FFFF


def table_predicate(
    predicate: Any,
    schema: Mapping[str, Any],
    partition_columns: Sequence[str] = (),
    session_time_zone: str | None = None,
) -> RowFilter:
    """``predicate`` (Spark SQL text such as ``"day = '2026-11-01'"``, a pyarrow Expression, DNF tuples or a
    mapping) checked against the table's Delta ``schema``, its text read in ``session_time_zone`` (UTC by
    default); an unknown column, text that does not parse or a value of the wrong type is an
    :class:`~deltalog.errors.InvalidArgumentError` naming it."""
    return row_filter(predicate, schema, partition_columns, session_time_zone)


def _field_type(schema: pa.Schema, path: Sequence[str]) -> pa.DataType | None:
    """The Arrow type at ``path`` (top-level name, then struct fields), or None when there is no such column."""
    if not path or path[0] not in schema.names:
        return None
    current: pa.DataType = schema.field(path[0]).type
    for name in path[1:]:
        if not pa.types.is_struct(current) or current.get_field_index(name) < 0:
            return None
        current = current.field(name).type
    return current


def _scalar(value: Any, arrow_type: pa.DataType) -> pa.Scalar | None:
    """``value`` as a scalar of ``arrow_type`` when it is exactly one (no rounding, no overflow), else None."""
    if value is None or isinstance(value, (list, tuple, dict)):
        return None
    try:
        if pa.types.is_boolean(arrow_type):
            return pa.scalar(value, arrow_type) if isinstance(value, bool) else None
        if pa.types.is_integer(arrow_type):
            ok = isinstance(value, int) and not isinstance(value, bool)
            return pa.scalar(value, arrow_type) if ok else None
        if pa.types.is_floating(arrow_type):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            return pa.scalar(float(value), pa.float64()) if ok else None
        if pa.types.is_decimal(arrow_type):
            if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal)):
                return None
            exact = decimal.Decimal(value)
            scalar = pa.scalar(exact, arrow_type)
            return scalar if scalar.as_py() == exact else None
        if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
            return pa.scalar(value, arrow_type) if isinstance(value, str) else None
        if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
            return pa.scalar(bytes(value), arrow_type) if isinstance(value, (bytes, bytearray)) else None
        if pa.types.is_date(arrow_type):
            ok = isinstance(value, dt.date) and not isinstance(value, dt.datetime)
            return pa.scalar(value, arrow_type) if ok else None
        if pa.types.is_timestamp(arrow_type):
            return _timestamp(value, arrow_type)
    except (pa.ArrowException, ValueError, TypeError, OverflowError, decimal.InvalidOperation):
        return None
    return None


def _timestamp(value: Any, arrow_type: pa.TimestampType) -> pa.Scalar | None:
    """A timestamp literal: an aware datetime compares as its instant with a zoned column; a naive one only with
    a zone-less (``timestamp_ntz``) column, where it is the wall-clock value itself."""
    if not isinstance(value, dt.datetime):
        return None
    zoned = arrow_type.tz is not None
    if zoned and value.tzinfo is not None:
        return pa.scalar(value.astimezone(dt.timezone.utc), arrow_type)
    if not zoned and value.tzinfo is None:
        return pa.scalar(value, arrow_type)
    return None


def _successor(prefix: str) -> str | None:
    """The smallest string above every string that starts with ``prefix`` (code point order, which is UTF-8
    byte order), or None when there is none."""
    chars = list(prefix)
    while chars:
        code = ord(chars[-1]) + 1
        if 0xD800 <= code <= 0xDFFF:
            code = 0xE000
        if code <= _MAX_CODE_POINT:
            chars[-1] = chr(code)
            return "".join(chars)
        chars.pop()
    return None


def _convert(item: Any, schema: pa.Schema) -> pc.Expression | None:
    """One pushed filter as a pyarrow expression every row passing it satisfies, or None (nothing to say)."""
    kind = type(item).__name__
    if kind == "Not":
        child = getattr(item, "child", None)
        if type(child).__name__ == "EqualTo":
            inner = _convert(child, schema)
            return None if inner is None else ~inner
        return None
    path = tuple(getattr(item, "attribute", ()) or ())
    arrow_type = _field_type(schema, path)
    if arrow_type is None:
        return None
    column = pc.field(*path)
    if kind == "IsNull":
        return column.is_null()
    if kind == "IsNotNull":
        return column.is_valid()
    value = getattr(item, "value", None)
    if kind == "EqualNullSafe" and value is None:
        return column.is_null()
    if kind in _COMPARISONS:
        scalar = _scalar(value, arrow_type)
        return None if scalar is None else getattr(column, _COMPARISONS[kind])(pc.scalar(scalar))
    if kind == "In":
        scalars = [_scalar(v, arrow_type) for v in value or () if v is not None]
        if not scalars or any(s is None for s in scalars):
            return None
        return column.isin(pa.array([s.as_py() for s in scalars if s is not None], scalars[0].type))  # type: ignore[union-attr]
    if kind == "StringStartsWith" and isinstance(value, str) and value:
        if not (pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)):
            return None
        low = column >= pc.scalar(pa.scalar(value, arrow_type))
        above = _successor(value)
        return low if above is None else low & (column < pc.scalar(pa.scalar(above, arrow_type)))
    return None


def pushed_expression(filters: Iterable[Any], schema: pa.Schema) -> pc.Expression | None:
    """The conjunction of the pushed ``filters`` deltalog can state over ``schema`` (the table's Arrow schema in
    logical names), or None when it can state none."""
    parts = [e for e in (_convert(f, schema) for f in filters) if e is not None]
    return functools.reduce(operator.and_, parts) if parts else None


__all__ = ["pushed_expression", "table_predicate"]
