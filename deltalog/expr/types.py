"""Spark SQL's data types as values: what a bound expression and each of its operands is.

The tree never holds Arrow types (the expression package is pure); :mod:`deltalog.compute.arrow_types`
maps these to Arrow where batches are evaluated. Names and their SQL spelling are Spark's
(``INT``, ``BIGINT``, ``TIMESTAMP_NTZ``...), so a type error reads as Spark's analyzer would write it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_SQL_NAMES = {
    "boolean": "BOOLEAN",
    "byte": "TINYINT",
    "short": "SMALLINT",
    "integer": "INT",
    "long": "BIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "string": "STRING",
    "binary": "BINARY",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
    "timestamp_ntz": "TIMESTAMP_NTZ",
    "void": "VOID",
    "interval_day_time": "INTERVAL DAY TO SECOND",
    "interval_year_month": "INTERVAL YEAR TO MONTH",
}


@dataclass(frozen=True)
class Atomic:
    """A type without parameters; ``name`` is Delta's (``integer``, ``long``, ``timestamp_ntz``...) or one of
    the two interval types literals and date arithmetic use (``interval_day_time``, ``interval_year_month``)."""

    name: str

    def sql(self) -> str:
        return _SQL_NAMES.get(self.name, self.name.upper())


@dataclass(frozen=True)
class Decimal:
    precision: int
    scale: int

    def sql(self) -> str:
        return f"DECIMAL({self.precision},{self.scale})"


@dataclass(frozen=True)
class Array:
    element: DataType
    contains_null: bool = True

    def sql(self) -> str:
        return f"ARRAY<{self.element.sql()}>"


@dataclass(frozen=True)
class Map:
    key: DataType
    value: DataType
    value_contains_null: bool = True

    def sql(self) -> str:
        return f"MAP<{self.key.sql()}, {self.value.sql()}>"


@dataclass(frozen=True)
class StructField:
    """A struct field: ``name`` logical, ``physical`` the name files use (column mapping), None: the same."""

    name: str
    type: DataType
    nullable: bool = True
    physical: str | None = None

    @property
    def stored_name(self) -> str:
        return self.physical if self.physical is not None else self.name


@dataclass(frozen=True)
class Struct:
    fields: tuple[StructField, ...]

    def sql(self) -> str:
        return "STRUCT<" + ", ".join(f"{f.name}: {f.type.sql()}" for f in self.fields) + ">"


DataType = Atomic | Decimal | Array | Map | Struct

BOOLEAN = Atomic("boolean")
BYTE = Atomic("byte")
SHORT = Atomic("short")
INT = Atomic("integer")
LONG = Atomic("long")
FLOAT = Atomic("float")
DOUBLE = Atomic("double")
STRING = Atomic("string")
BINARY = Atomic("binary")
DATE = Atomic("date")
TIMESTAMP = Atomic("timestamp")
TIMESTAMP_NTZ = Atomic("timestamp_ntz")
VOID = Atomic("void")
DAY_TIME = Atomic("interval_day_time")
YEAR_MONTH = Atomic("interval_year_month")

#: integral types by width, narrowest first, and the decimal each converts to exactly (Spark's DecimalType.forType)
INTEGRAL = (BYTE, SHORT, INT, LONG)
INTEGRAL_DECIMAL: dict[DataType, Decimal] = {
    BYTE: Decimal(3, 0),
    SHORT: Decimal(5, 0),
    INT: Decimal(10, 0),
    LONG: Decimal(20, 0),
}
INTEGRAL_BITS: dict[DataType | None, int] = {BYTE: 8, SHORT: 16, INT: 32, LONG: 64}
MAX_PRECISION = 38
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)")
_ATOMIC_NAMES = {
    "boolean", "byte", "short", "integer", "long", "float", "double", "string", "binary", "date",
    "timestamp", "timestamp_ntz", "void",
}  # fmt: skip


def is_integral(t: DataType | None) -> bool:
    return t in INTEGRAL


def is_fractional(t: DataType | None) -> bool:
    return t in (FLOAT, DOUBLE)


def is_numeric(t: DataType | None) -> bool:
    return is_integral(t) or is_fractional(t) or isinstance(t, Decimal)


def is_datetime(t: DataType | None) -> bool:
    return t in (DATE, TIMESTAMP, TIMESTAMP_NTZ)


def is_atomic(t: DataType | None) -> bool:
    return isinstance(t, (Atomic, Decimal))


def as_decimal(t: DataType) -> Decimal | None:
    """The decimal type holding every value of ``t`` exactly (integral or decimal types), else None."""
    if isinstance(t, Decimal):
        return t
    return INTEGRAL_DECIMAL.get(t)


def bounded_decimal(precision: int, scale: int) -> Decimal:
    """Spark's ``DecimalType.bounded``: both capped at 38."""
    return Decimal(min(precision, MAX_PRECISION), min(scale, MAX_PRECISION))


def adjusted_decimal(precision: int, scale: int) -> Decimal:
    """Spark's ``DecimalType.adjustPrecisionScale`` (allowPrecisionLoss, the default): a result wider than 38
    digits keeps its integral digits and at least 6 (or its own, if fewer) fractional ones."""
    if precision <= MAX_PRECISION:
        return Decimal(precision, scale)
    if scale < 0:
        return Decimal(MAX_PRECISION, scale)
    integral = precision - scale
    min_scale = min(scale, 6)
    return Decimal(MAX_PRECISION, max(MAX_PRECISION - integral, min_scale))


def from_delta(t: Any, physical: bool = True) -> DataType:
    """A Delta schema type (JSON: a name or a dict) as a data type; struct fields keep their physical names
    (``delta.columnMapping.physicalName``) so a bound column reads the names files use."""
    if isinstance(t, str):
        if t in _ATOMIC_NAMES:
            return Atomic(t)
        m = _DECIMAL.fullmatch(t.strip())
        if m:
            return Decimal(int(m[1]), int(m[2]))
        return Atomic(t)  # variant, a collated string, ...: bound as an opaque type nothing accepts
    kind = t.get("type") if isinstance(t, dict) else None
    if kind == "array":
        return Array(from_delta(t["elementType"], physical), bool(t.get("containsNull", True)))
    if kind == "map":
        return Map(
            from_delta(t["keyType"], physical),
            from_delta(t["valueType"], physical),
            bool(t.get("valueContainsNull", True)),
        )
    if kind == "struct":
        return Struct(tuple(struct_field(f, physical) for f in t.get("fields") or []))
    return Atomic(str(kind))


def struct_field(f: Any, physical: bool = True) -> StructField:
    """A Delta schema field (JSON) as a struct field."""
    meta = f.get("metadata") or {}
    name = str(f["name"])
    stored = meta.get("delta.columnMapping.physicalName") if physical else None
    return StructField(name, from_delta(f.get("type"), physical), bool(f.get("nullable", True)), stored)


def schema_fields(schema: Any, physical: bool = True) -> tuple[StructField, ...]:
    """The top-level fields of a Delta schema (JSON)."""
    return tuple(struct_field(f, physical) for f in (schema or {}).get("fields") or [])


__all__ = [
    "BINARY",
    "BOOLEAN",
    "BYTE",
    "DATE",
    "DAY_TIME",
    "DOUBLE",
    "FLOAT",
    "INT",
    "INTEGRAL",
    "INTEGRAL_BITS",
    "INTEGRAL_DECIMAL",
    "LONG",
    "MAX_PRECISION",
    "SHORT",
    "STRING",
    "TIMESTAMP",
    "TIMESTAMP_NTZ",
    "VOID",
    "YEAR_MONTH",
    "Array",
    "Atomic",
    "DataType",
    "Decimal",
    "Map",
    "Struct",
    "StructField",
    "adjusted_decimal",
    "as_decimal",
    "bounded_decimal",
    "from_delta",
    "is_atomic",
    "is_datetime",
    "is_fractional",
    "is_integral",
    "is_numeric",
    "schema_fields",
    "struct_field",
]
