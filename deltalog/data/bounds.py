"""Per-file statistics turned into bounds a reader may rely on (PROTOCOL "Per-file Statistics").

A bound that is too tight loses rows, one that is too loose only reads a file it could have skipped, so every
doubt widens or drops a bound:

* Stats are keyed by physical names at every depth (column mapping); a :class:`Leaf` carries both paths, so the
  guarantee speaks the logical names a filter uses while the lookup uses the log's.
* Decimals are parsed exactly (the stdlib parser with ``Decimal`` when a decimal column is asked for; a float
  would round a bound inwards) and rounded outwards to the column's scale. Integer bounds are rounded inwards
  to integers (sound: values are integers). Float bounds are widened by a float32 ulp: a column widened from
  ``float`` to ``double`` holds ``float32(1.1)`` = 1.10000002 where its stats say ``1.1``, and a ``float``
  bound parsed through a double can round the wrong way. A NaN bound (Spark orders NaN above every number)
  drops both bounds.
* String bounds are prefixes (Spark keeps 32 characters, other writers other lengths, and the log does not say
  which): the minimum stays a lower bound as it is, the maximum becomes its *successor* (its last code point
  that can grow, grown by one), which is above every string the prefix starts. This also covers Spark's
  ``prefix + U+10FFFF`` tie-breaker, which is not a bound for values that continue past a U+10FFFF.
* Timestamps were truncated down to milliseconds by Spark: the maximum is widened by 999 µs. A ``timestamp``
  bound written without a zone (a writer's local time) is widened by the largest zone offset, 14 hours.
* Collated strings, booleans, binary and variants get no bounds (Arrow's order is not the writer's, or no
  writer records them); missing, malformed or out-of-range values mean "unknown".
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation
from typing import Any

import orjson
import pyarrow as pa

from deltalog.core.files.partitions import PartitionValueError, parse_value
from deltalog.data.conform import Column, plan_field

#: Delta types whose min/max statistics bound values in Arrow's order
_INTEGERS = ("byte", "short", "integer", "long")
_FLOATS = ("float", "double")
_WIDEN_FLOAT = 2.0**-22
_MS_TRUNCATION = dt.timedelta(microseconds=999)
_ANY_ZONE = dt.timedelta(hours=14)
_MISSING = object()


@dataclass(frozen=True)
class Leaf:
    """A column statistics can describe: its path in logical names (a filter's) and in physical names (the
    stats'), its Arrow type, and its primitive Delta type (None for arrays and maps: null counts only)."""

    path: tuple[str, ...]
    physical: tuple[str, ...]
    type: pa.DataType
    delta_type: str | None

    @property
    def nested(self) -> bool:
        return len(self.path) > 1

    @property
    def floating(self) -> bool:
        return self.delta_type in _FLOATS

    @property
    def decimal(self) -> bool:
        return (self.delta_type or "").startswith("decimal")

    @property
    def strict_upper(self) -> bool:
        """Whether the upper bound lies above every value (a string's successor) rather than at the largest."""
        return self.delta_type == "string"


def leaves(fields: Iterable[Mapping[str, Any]], mode: str) -> Iterator[Leaf]:
    """The leaves of top-level Delta schema fields, descending into structs (stats nest like the schema)."""
    for field in fields:
        column = plan_field(dict(field), mode)
        yield from _walk(field["type"], column, (column.name,), (column.physical,))


def _walk(delta_type: Any, column: Column, path: tuple[str, ...], physical: tuple[str, ...]) -> Iterator[Leaf]:
    if isinstance(delta_type, dict) and delta_type.get("type") == "struct":
        for child_field, child in zip(delta_type.get("fields") or [], column.children, strict=False):
            yield from _walk(child_field["type"], child, (*path, child.name), (*physical, child.physical))
        return
    yield Leaf(path, physical, column.type, delta_type if isinstance(delta_type, str) else None)


@dataclass(frozen=True)
class Stats:
    """One file's parsed statistics; the three maps nest like the schema, keyed by physical names."""

    num_records: int | None
    min_values: Mapping[str, Any]
    max_values: Mapping[str, Any]
    null_count: Mapping[str, Any]

    def lookup(self, tree: Mapping[str, Any], physical: Sequence[str]) -> Any:
        node: Any = tree
        for name in physical:
            if not isinstance(node, Mapping) or name not in node:
                return _MISSING
            node = node[name]
        return node

    def nulls(self, leaf: Leaf) -> int | None:
        value = self.lookup(self.null_count, leaf.physical)
        return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_stats(text: str | None, exact: bool = False) -> Stats | None:
    """A file's ``stats`` JSON; None when absent or malformed.

    ``exact`` parses numbers with fractions as :class:`Decimal` (for decimal columns: a float would round a
    bound inwards); otherwise orjson parses (floats correctly rounded), and the stdlib parser only takes what
    orjson refuses, such as Spark's bare ``NaN`` and ``Infinity`` tokens.
    """
    if not text:
        return None
    raw: Any = None
    if not exact:
        try:
            raw = orjson.loads(text)
        except orjson.JSONDecodeError:
            exact = True
    if exact:
        try:
            raw = json.loads(text, parse_float=Decimal)
        except (ValueError, RecursionError):
            return None
    if not isinstance(raw, dict):
        return None
    records = raw.get("numRecords")

    def tree(key: str) -> Mapping[str, Any]:
        value = raw.get(key)
        return value if isinstance(value, dict) else {}

    return Stats(
        records if isinstance(records, int) and not isinstance(records, bool) else None,
        tree("minValues"),
        tree("maxValues"),
        tree("nullCount"),
    )


def string_successor(s: str) -> str | None:
    """The shortest string above every string that starts with ``s`` (None when ``s`` is all U+10FFFF).

    UTF-8 byte order is code point order, so growing the last code point that can grow (past the surrogates,
    which UTF-8 cannot hold) gives a string above ``s`` and all its continuations in Arrow's order.
    """
    chars = list(s)
    while chars:
        code = ord(chars[-1])
        if code < 0x10FFFF:
            grown = code + 1 if code + 1 < 0xD800 or code + 1 > 0xDFFF else 0xE000
            return "".join(chars[:-1]) + chr(grown)
        chars.pop()
    return None


def _is_nan(raw: Any) -> bool:
    if isinstance(raw, str):
        return raw.strip().lower() == "nan"
    if isinstance(raw, Decimal):
        return raw.is_nan()
    return isinstance(raw, float) and math.isnan(raw)


def _number(raw: Any) -> Decimal | None:
    if isinstance(raw, bool) or not isinstance(raw, (int, Decimal, str, float)):
        return None
    try:
        value = Decimal(raw) if not isinstance(raw, float) else Decimal(repr(raw))
    except (InvalidOperation, ValueError):
        return None
    return value if value.is_finite() else None


def _float(raw: Any, upper: bool) -> float | None:
    if isinstance(raw, str) and raw.strip().lower() in ("infinity", "+infinity", "-infinity", "inf", "-inf"):
        return -math.inf if raw.strip().startswith("-") else math.inf
    if isinstance(raw, float) and math.isinf(raw):
        return raw
    number = _number(raw)
    if number is None:
        return None
    value = float(number)
    step = abs(value) * _WIDEN_FLOAT
    return value + step if upper else value - step


def _has_zone(raw: str) -> bool:
    try:
        return dt.datetime.fromisoformat(raw.strip().replace(" ", "T", 1).replace("Z", "+00:00")).tzinfo is not None
    except ValueError:
        return False


def _python_value(leaf: Leaf, raw: Any, upper: bool) -> Any:
    """The bound in Python terms (None when unknown), widened or rounded outwards."""
    kind = leaf.delta_type or ""
    if kind in _INTEGERS:
        number = _number(raw)
        if number is None:
            return None
        return int(number.to_integral_value(ROUND_FLOOR if upper else ROUND_CEILING))
    if kind in _FLOATS:
        return _float(raw, upper)
    if kind.startswith("decimal"):
        number = _number(raw)
        if number is None or not pa.types.is_decimal(leaf.type):
            return None
        step = Decimal(1).scaleb(-leaf.type.scale)
        return number.quantize(step, rounding=ROUND_CEILING if upper else ROUND_FLOOR)
    if not isinstance(raw, str):
        return None
    if kind == "string":
        return string_successor(raw) if upper else raw
    if kind == "date":
        return parse_value("date", raw)
    if kind in ("timestamp", "timestamp_ntz"):
        value = parse_value(kind, raw)
        widen = _ANY_ZONE if kind == "timestamp" and not _has_zone(raw) else dt.timedelta(0)
        return value + _MS_TRUNCATION + widen if upper else value - widen
    return None


def _value(leaf: Leaf, raw: Any, upper: bool) -> Any:
    if raw is _MISSING or raw is None:
        return None
    try:
        return _python_value(leaf, raw, upper)
    except (PartitionValueError, ValueError, TypeError, OverflowError, ArithmeticError):
        return None


def _scalar(value: Any, type: pa.DataType) -> pa.Scalar | None:
    try:
        return pa.scalar(value, type=type)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        return None


def _scalars(values: list[Any], type: pa.DataType) -> list[pa.Scalar | None]:
    """Python values as Arrow scalars of ``type``, None where unknown or out of the type's range (one array
    conversion for the whole column; value by value only when some value does not fit)."""
    try:
        array = pa.array(values, type=type)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        return [None if v is None else _scalar(v, type) for v in values]
    return [None if v is None else array[i] for i, v in enumerate(values)]


def column_bounds(leaf: Leaf, files: Sequence[Stats | None]) -> list[tuple[pa.Scalar | None, pa.Scalar | None]]:
    """The lower and upper bound of ``leaf``'s live values in each file (None where unknown).

    Column at a time, because a scan asks for one column of thousands of files and an Arrow array is built
    far faster than a scalar per value.
    """
    if leaf.delta_type is None:
        return [(None, None)] * len(files)
    lows: list[Any] = []
    highs: list[Any] = []
    for stats in files:
        low = high = None
        if stats is not None:
            low_raw = stats.lookup(stats.min_values, leaf.physical)
            high_raw = stats.lookup(stats.max_values, leaf.physical)
            if not (leaf.floating and (_is_nan(low_raw) or _is_nan(high_raw))):
                low, high = _value(leaf, low_raw, upper=False), _value(leaf, high_raw, upper=True)
            if low is not None and high is not None and low > high:
                low = high = None  # contradictory stats carry no information
        lows.append(low)
        highs.append(high)
    return list(zip(_scalars(lows, leaf.type), _scalars(highs, leaf.type), strict=True))


def bounds(leaf: Leaf, stats: Stats) -> tuple[pa.Scalar | None, pa.Scalar | None]:
    """The lower and upper bound of ``leaf``'s live values in one file (None where unknown)."""
    return column_bounds(leaf, [stats])[0]


__all__ = ["Leaf", "Stats", "bounds", "column_bounds", "leaves", "parse_stats", "string_successor"]
