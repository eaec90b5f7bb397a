"""Partition values as typed values, and predicates over them.

The log stores partition values as strings, and one value can be spelled several ways (timestamps with a
space or a ``T``, with or without a zone or fraction). Comparing strings would call equal values different
and miss conflicts or prune files that match, so values are parsed by the column's type first. ``null``,
the empty string and ``__HIVE_DEFAULT_PARTITION__`` all mean null.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from deltalog.core.isotime import parse_datetime

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

_OPS = ("=", "==", "!=", "<", "<=", ">", ">=", "in", "not in")


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
            return value == target
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
    "conditions_from_where",
    "parse_value",
    "typed_conditions",
]
