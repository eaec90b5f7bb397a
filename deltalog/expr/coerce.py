"""Spark 4's type coercion under ANSI mode (``AnsiTypeCoercion``), as rules over :mod:`deltalog.expr.types`.

Which operand types meet in which common type, which casts are allowed explicitly (``Cast.canAnsiCast``) and
which implicitly (a function's argument of another type than it takes). Checked against pyspark with ANSI on
(``tests/integration/test_expression_differential.py``); where this module says no, Spark's analyzer says no.
"""

from __future__ import annotations

from deltalog.expr import types as T

_NUMERIC_ORDER = (T.BYTE, T.SHORT, T.INT, T.LONG, T.FLOAT, T.DOUBLE)


def decimal_of_integral_literal(value: int) -> T.Decimal:
    """Spark types an integral *literal* in decimal arithmetic by its digits (``DecimalType.fromLiteral``)."""
    return T.Decimal(max(len(str(abs(value))), 1), 0)


def wider_decimal(a: T.Decimal, b: T.Decimal) -> T.Decimal:
    scale = max(a.scale, b.scale)
    integral = max(a.precision - a.scale, b.precision - b.scale)
    return T.bounded_decimal(integral + scale, scale)


def wider_numeric(a: T.DataType, b: T.DataType) -> T.DataType | None:
    """The common type of two numeric types: integral widening, FLOAT with anything but FLOAT is DOUBLE
    (Spark 4), a decimal with an integral widens the decimal, a decimal with a float is DOUBLE."""
    if a == b:
        return a
    da, db = isinstance(a, T.Decimal), isinstance(b, T.Decimal)
    if da or db:
        if T.is_fractional(a) or T.is_fractional(b):
            return T.DOUBLE
        x, y = T.as_decimal(a), T.as_decimal(b)
        return wider_decimal(x, y) if x is not None and y is not None else None
    if a in _NUMERIC_ORDER and b in _NUMERIC_ORDER:
        if T.FLOAT in (a, b):
            return T.DOUBLE
        return max(a, b, key=_NUMERIC_ORDER.index)
    return None


def _datetime_wider(a: T.DataType, b: T.DataType) -> T.DataType | None:
    pair = {a, b}
    if pair == {T.DATE, T.TIMESTAMP} or pair == {T.TIMESTAMP, T.TIMESTAMP_NTZ}:
        return T.TIMESTAMP
    if pair == {T.DATE, T.TIMESTAMP_NTZ}:
        return T.TIMESTAMP_NTZ
    return None


def string_promotion(other: T.DataType) -> T.DataType | None:
    """What a STRING operand becomes beside ``other`` (ANSI): integral -> BIGINT, decimal or float ->
    DOUBLE, dates, timestamps, booleans and binaries -> that type."""
    if T.is_integral(other):
        return T.LONG
    if isinstance(other, T.Decimal) or T.is_fractional(other):
        return T.DOUBLE
    if other in (T.DATE, T.TIMESTAMP, T.TIMESTAMP_NTZ, T.BOOLEAN, T.BINARY):
        return other
    return None


def wider(a: T.DataType, b: T.DataType, strings: bool = True) -> T.DataType | None:
    """The type both ``a`` and ``b`` are cast to where they meet (comparison, IN, CASE, COALESCE...); None:
    Spark's analyzer rejects the pair. ``strings``: whether a STRING may be promoted to the other type
    (comparisons and CASE yes; ``greatest``/``least`` no)."""
    if a == b:
        return a
    if a == T.VOID:
        return b
    if b == T.VOID:
        return a
    if T.is_numeric(a) and T.is_numeric(b):
        return wider_numeric(a, b)
    d = _datetime_wider(a, b)
    if d is not None:
        return d
    if strings and a == T.STRING and T.is_atomic(b):
        promoted = string_promotion(b)
        return wider(promoted, b) if promoted is not None else None
    if strings and b == T.STRING and T.is_atomic(a):
        promoted = string_promotion(a)
        return wider(a, promoted) if promoted is not None else None
    if isinstance(a, T.Array) and isinstance(b, T.Array):
        element = wider(a.element, b.element, strings)
        return T.Array(element, a.contains_null or b.contains_null) if element is not None else None
    return None


def wider_all(types: list[T.DataType], strings: bool = True) -> T.DataType | None:
    out: T.DataType | None = T.VOID
    for t in types:
        out = wider(out, t, strings) if out is not None else None
    return out


def can_cast(a: T.DataType, b: T.DataType) -> bool:
    """Whether ``CAST(a AS b)`` is allowed under ANSI (``Cast.canAnsiCast``) for the types deltalog evaluates."""
    if a == b or a == T.VOID:
        return True
    if b == T.STRING:
        return T.is_atomic(a) and a not in (T.DAY_TIME, T.YEAR_MONTH)
    if a == T.STRING:
        return T.is_atomic(b) and b not in (T.DAY_TIME, T.YEAR_MONTH)
    if T.is_numeric(a) or a == T.BOOLEAN:
        return T.is_numeric(b) or b == T.BOOLEAN or (T.is_numeric(a) and b == T.TIMESTAMP)
    if a == T.DATE:
        return b in (T.TIMESTAMP, T.TIMESTAMP_NTZ)
    if a == T.TIMESTAMP:
        return b in (T.DATE, T.TIMESTAMP_NTZ) or T.is_numeric(b)
    if a == T.TIMESTAMP_NTZ:
        return b in (T.DATE, T.TIMESTAMP)
    if a == T.BINARY:
        return False
    if isinstance(a, T.Array) and isinstance(b, T.Array):
        return can_cast(a.element, b.element)
    return False


def implicit(a: T.DataType, expected: T.DataType) -> bool:
    """Whether an argument of type ``a`` is cast to ``expected`` without being asked (ANSI implicit casts):
    numeric widening, anything atomic to STRING, STRING to any atomic type, DATE to the timestamps,
    TIMESTAMP to DATE."""
    if a == expected or a == T.VOID:
        return True
    if T.is_numeric(a) and T.is_numeric(expected):
        w = wider_numeric(a, expected)
        return w == expected or (isinstance(expected, T.Decimal) and isinstance(w, T.Decimal))
    if expected == T.STRING:
        return T.is_atomic(a) and a not in (T.DAY_TIME, T.YEAR_MONTH)
    if a == T.STRING:
        return T.is_atomic(expected) and expected not in (T.DAY_TIME, T.YEAR_MONTH)
    if a == T.DATE:
        return expected in (T.TIMESTAMP, T.TIMESTAMP_NTZ)
    if a in (T.TIMESTAMP, T.TIMESTAMP_NTZ):
        return expected in (T.DATE, T.TIMESTAMP, T.TIMESTAMP_NTZ)
    return False


def store_assignable(a: T.DataType, b: T.DataType) -> bool:
    """Whether a value of type ``a`` may be written into a column of type ``b`` (Spark's ANSI store
    assignment, ``Cast.canANSIStoreAssign``, which MERGE and UPDATE apply to every assignment): the same type,
    NULL, numbers into numbers (checked for overflow when evaluated), anything atomic into STRING, dates and
    timestamps into each other, LONG and TIMESTAMP both ways; arrays and maps by their elements; structs by
    field name (Delta resolves them by name), each field of the column given once. Never STRING into a number
    or a date: a value that may not fit is no safe assignment."""
    if a == b or a == T.VOID:
        return True
    if T.is_numeric(a) and T.is_numeric(b):
        return True
    if b == T.STRING:
        return T.is_atomic(a) and a not in (T.DAY_TIME, T.YEAR_MONTH)
    datetimes = (T.DATE, T.TIMESTAMP, T.TIMESTAMP_NTZ)
    if a in datetimes and b in datetimes:
        return True
    if (a, b) in ((T.TIMESTAMP, T.LONG), (T.LONG, T.TIMESTAMP)):
        return True
    if isinstance(a, T.Array) and isinstance(b, T.Array):
        return store_assignable(a.element, b.element)
    if isinstance(a, T.Map) and isinstance(b, T.Map):
        return store_assignable(a.key, b.key) and store_assignable(a.value, b.value)
    if isinstance(a, T.Struct) and isinstance(b, T.Struct):
        wanted = {f.name.lower(): f for f in b.fields}
        given = {f.name.lower(): f for f in a.fields}
        return set(given) <= set(wanted) and all(store_assignable(f.type, wanted[k].type) for k, f in given.items())
    return False


__all__ = [
    "can_cast",
    "store_assignable",
    "decimal_of_integral_literal",
    "implicit",
    "string_promotion",
    "wider",
    "wider_all",
    "wider_decimal",
    "wider_numeric",
]
