"""Partition values as typed values, and predicates over them.

The log stores partition values as strings, and one value can be spelled several ways (timestamps with a
space or a ``T``, with or without a zone or fraction). Comparing strings would call equal values different
and miss conflicts or prune files that match, so values are parsed by the column's type first. ``null``,
the empty string and ``__HIVE_DEFAULT_PARTITION__`` all mean null.

Reading is lenient (:func:`parse_value`: other engines wrote those values); writing is strict
(:func:`check_serialized`: the protocol's "Partition Value Serialization" formats only), because a value
one peer parses loosely another refuses, and a table whose partition values a reader cannot parse is
unreadable for it. :func:`serialize_partition_value` is the one writer of those formats, for the Python
writer, Spark's executors and declared intents alike: a year is always four digits (``0999-01-01``), which
``strftime("%Y")`` does not give before year 1000.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from deltalog.core.isotime import parse_datetime
from deltalog.errors import InvalidArgumentError

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

_OPS = ("=", "==", "!=", "<", "<=", ">", ">=", "in", "not in")

_INT_BITS = {"byte": 8, "short": 16, "integer": 32, "long": 64}
_FLOAT32_MAX = 3.4028234663852886e38
_INT_TEXT = re.compile(r"-?[0-9]+")
_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|NaN|[+-]?Infinity")
_DECIMAL_TYPE = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")
_DECIMAL_TEXT = re.compile(r"-?([0-9]+)(?:\.([0-9]+))?")
_DATE_TEXT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TS_TEXT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?")
_TS_UTC_TEXT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?Z")


class PartitionValueError(ValueError):
    pass


def _parse_timestamp(s: str, ntz: bool) -> dt.datetime:
    try:
        value = parse_datetime(s)
    except ValueError:
        raise PartitionValueError(f"not a timestamp: {s!r}") from None
    if ntz:
        return (
            value.replace(tzinfo=None)
            if value.tzinfo is None
            else value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        )
    if value.tzinfo is None:
        # Legacy writers stored local wall time without a zone; UTC is the only reading that does not depend
        # on this machine's zone.
        value = value.replace(tzinfo=dt.timezone.utc)
    return value.astimezone(dt.timezone.utc)


def parse_value(delta_type: Any, raw: Any) -> Any:
    """The typed value of a partition value string (or of a user's literal) for a column of ``delta_type``."""
    if raw is None:
        return None
    if isinstance(raw, (list, tuple, set, frozenset, dict)):
        raise PartitionValueError(f"{raw!r} is not a single value")
    if isinstance(raw, str) and (raw == "" or raw == HIVE_NULL):
        return None
    t = delta_type if isinstance(delta_type, str) else "complex"
    try:
        if t in ("long", "integer", "short", "byte"):
            return int(raw) if not isinstance(raw, str) else int(raw.strip())
        if t in ("float", "double"):
            return float(raw)
        if t.startswith("decimal"):
            return Decimal(str(raw))
        if t == "boolean":
            if isinstance(raw, bool):
                return raw
            low = str(raw).strip().lower()
            if low not in ("true", "false"):
                raise PartitionValueError(f"not a boolean: {raw!r}")
            return low == "true"
        if t == "date":
            if isinstance(raw, dt.datetime):
                return raw.date()
            if isinstance(raw, dt.date):
                return raw
            return dt.date.fromisoformat(str(raw).strip()[:10])
        if t in ("timestamp", "timestamp_ntz"):
            ntz = t == "timestamp_ntz"
            if isinstance(raw, dt.datetime):
                if ntz:
                    return raw.replace(tzinfo=None)
                return (raw if raw.tzinfo else raw.replace(tzinfo=dt.timezone.utc)).astimezone(dt.timezone.utc)
            return _parse_timestamp(str(raw), ntz)
        if t == "binary":
            return raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
    except (ValueError, TypeError, InvalidOperation) as exc:
        raise PartitionValueError(f"{raw!r} is not a valid {t} value") from exc
    return raw if isinstance(raw, str) else str(raw)


def format_timestamp(value: dt.datetime) -> str:
    """A timestamp as the protocol spells it, microseconds always: zone-aware values as ISO-8601 in UTC
    (``YYYY-MM-DDTHH:MM:SS.ffffffZ``, the protocol's recommended form), naive ones (``timestamp_ntz``) as
    ``YYYY-MM-DD HH:MM:SS.ffffff``. A zone-aware value whose UTC instant falls outside years 1-9999 has no
    spelling and is refused (:class:`~deltalog.errors.InvalidArgumentError`)."""
    if value.tzinfo is None:
        return value.isoformat(" ", "microseconds")
    try:
        utc = value.astimezone(dt.timezone.utc)
    except OverflowError:
        raise InvalidArgumentError(
            f"timestamp {value.isoformat()} is outside the years 0001-9999 in UTC, which Delta timestamps cover"
        ) from None
    return utc.replace(tzinfo=None).isoformat("T", "microseconds") + "Z"


def serialize_partition_value(value: Any) -> str | None:
    """The protocol's string form of a typed partition value (PROTOCOL "Partition Value Serialization");
    :func:`check_serialized` accepts every string it returns and :func:`parse_value` reads the value back.

    The empty string is null (Spark writes ``""`` as null); dates are ``YYYY-MM-DD``, timestamps as
    :func:`format_timestamp` writes them; decimals in plain notation; floats as ``repr`` or ``NaN`` /
    ``[-]Infinity``. Other types are refused (:class:`~deltalog.errors.InvalidArgumentError`).
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value or None
    if isinstance(value, dt.datetime):
        return format_timestamp(value)
    if isinstance(value, dt.date):
        return value.isoformat()  # four-digit years, unlike strftime("%Y") on glibc
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, float):
        if math.isfinite(value):
            return repr(value)
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, int):
        return str(value)
    raise InvalidArgumentError(f"cannot use a {type(value).__name__} value as a partition value")


def check_serialized(delta_type: Any, raw: Any) -> Any:
    """The typed value of a partition value about to be written, if it is in the protocol's serialization
    format for ``delta_type`` (``""`` and ``None`` are null); :class:`PartitionValueError` says why not.

    Formats (PROTOCOL.md "Partition Value Serialization"): integers in their type's range; floats as
    numbers, ``NaN`` or ``[-]Infinity`` within range; decimals with exactly their scale's digits after the
    point (as Delta Spark writes them; kernel-rs, the reader in duckdb and deltalake, requires it);
    ``true`` / ``false``; dates ``YYYY-MM-DD``; timestamps ``YYYY-MM-DD HH:MM:SS[.ffffff]`` or, for
    ``timestamp`` only, ISO-8601 in UTC with ``Z``. The conversion itself is :func:`parse_value`'s, so
    reading and writing agree.
    """
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):
        raise PartitionValueError(f"{raw!r} is not a string")
    if raw == HIVE_NULL:
        raise PartitionValueError(f"{HIVE_NULL} is a directory name for null; write null (None) instead")
    t = delta_type if isinstance(delta_type, str) else "complex"
    if t in ("string", "binary"):
        return parse_value(t, raw)
    if t in _INT_BITS:
        bits = _INT_BITS[t]
        if not _INT_TEXT.fullmatch(raw) or not -(2 ** (bits - 1)) <= int(raw) < 2 ** (bits - 1):
            raise PartitionValueError(f"{raw!r} is not a valid {t} value (a whole number within {bits} bits)")
        return int(raw)
    if t in ("float", "double"):
        limit = _FLOAT32_MAX if t == "float" else 1.7976931348623157e308
        value = float(raw) if _FLOAT_TEXT.fullmatch(raw) else None
        finite_text = raw not in ("NaN", "Infinity", "+Infinity", "-Infinity")
        if value is None or (finite_text and not abs(value) <= limit):
            raise PartitionValueError(f"{raw!r} is not a {t} (a number within range, NaN or [-]Infinity)")
        return value
    m = _DECIMAL_TYPE.fullmatch(t)
    if m:
        precision, scale = int(m[1]), int(m[2])
        d = _DECIMAL_TEXT.fullmatch(raw)
        whole = d[1].lstrip("0") if d else ""
        if d is None or len(d[2] or "") != scale or len(whole) > precision - scale:
            raise PartitionValueError(
                f"{raw!r} is not a {t} value as Delta writes it: at most {precision - scale} digits before the "
                f"point and exactly {scale} after (no point when the scale is 0)"
            )
        return parse_value(t, raw)
    if t == "boolean":
        if raw not in ("true", "false"):
            raise PartitionValueError(f"{raw!r} is not a boolean: write true or false")
        return raw == "true"
    if t == "date":
        if not _DATE_TEXT.fullmatch(raw):
            raise PartitionValueError(f"{raw!r} is not a date in the form YYYY-MM-DD")
        return parse_value(t, raw)
    if t in ("timestamp", "timestamp_ntz"):
        if not (_TS_TEXT.fullmatch(raw) or (t == "timestamp" and _TS_UTC_TEXT.fullmatch(raw))):
            utc = " or YYYY-MM-DDTHH:MM:SS[.ffffff]Z" if t == "timestamp" else ""
            raise PartitionValueError(f"{raw!r} is not a {t} in the form YYYY-MM-DD HH:MM:SS[.ffffff]{utc}")
        return parse_value(t, raw)
    raise PartitionValueError(f"a {t} column cannot hold partition values")


@dataclass(frozen=True)
class Condition:
    """``column op value(s)`` on one partition column (logical name)."""

    column: str
    op: str
    values: tuple[Any, ...]

    def matches(self, value: Any) -> bool:
        if self.op in ("in", "not in"):
            hit = value in self.values
            if self.op == "in":
                return hit
            # SQL: NOT IN over a list holding NULL is never true, and NULL NOT IN (...) is not true either.
            return value is not None and not hit and None not in self.values
        target = self.values[0]
        if self.op in ("=", "=="):
            return bool(value == target)
        if value is None or target is None:
            return False
        try:
            if self.op == "!=":
                return bool(value != target)
            if self.op == "<":
                return bool(value < target)
            if self.op == "<=":
                return bool(value <= target)
            if self.op == ">":
                return bool(value > target)
            return bool(value >= target)
        except TypeError:
            return False


def conditions_from_where(where: Mapping[str, Any]) -> list[Condition]:
    """Turn the user's ``where`` mapping into conditions.

    ``{"c": v}`` is equality, ``{"c": [v1, v2]}`` is IN, ``{"c": {">=": a, "<": b}}`` is a range (each
    operator one condition, all of them ANDed).
    """
    out: list[Condition] = []
    for column, spec in where.items():
        if isinstance(spec, Mapping):
            for op, value in spec.items():
                op_norm = str(op).strip().lower()
                if op_norm not in _OPS:
                    raise PartitionValueError(f"unknown operator {op!r} for column {column!r}")
                if op_norm in ("in", "not in"):
                    if not isinstance(value, (list, tuple, set, frozenset)):
                        raise PartitionValueError(f"{op!r} on column {column!r} needs a list of values, not {value!r}")
                    out.append(Condition(column, op_norm, tuple(value)))
                else:
                    out.append(Condition(column, op_norm, (value,)))
        elif isinstance(spec, (list, tuple, set, frozenset)):
            out.append(Condition(column, "in", tuple(spec)))
        else:
            out.append(Condition(column, "=", (spec,)))
    return out


def typed_conditions(conds: Iterable[Condition], types: Mapping[str, Any]) -> list[Condition]:
    """Parse each condition's literals with its column's type, so they compare with parsed log values."""
    return [Condition(c.column, c.op, tuple(parse_value(types[c.column], v) for v in c.values)) for c in conds]


__all__ = [
    "HIVE_NULL",
    "Condition",
    "PartitionValueError",
    "check_serialized",
    "conditions_from_where",
    "format_timestamp",
    "parse_value",
    "serialize_partition_value",
    "typed_conditions",
]
