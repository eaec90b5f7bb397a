"""Candidate files narrowed by the source's join keys: a file none of whose key ranges holds a source key value
cannot hold a row the merge condition matches.

For each equi-join key whose target side is a plain top-level column (not a float: NaN orders apart; not under
``<=>``: NULL keys match there), the source's distinct non-null key values are collected once, sorted, and each
candidate file is kept only if some value lies within its bounds: its partition value for a partition column,
its statistics' minimum and maximum otherwise (:mod:`deltalog.data.bounds` widens them soundly; a file without
them is kept). A file must pass every such key. This narrows what is read, never what the transaction records
as read (Delta Spark's read predicate is the condition's target-only part only).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.actions import Add
from deltalog.compute import Evaluation
from deltalog.core.files.partitions import PartitionValueError, parse_value
from deltalog.core.schema import top_level_fields
from deltalog.data.bounds import column_bounds, leaves, parse_stats
from deltalog.data.scan import TableDescription
from deltalog.dml.merge.join import key_arrays
from deltalog.dml.merge.plan import KeyPair, MergePlan
from deltalog.dml.merge.source import MergeSource
from deltalog.expr import tree as X
from deltalog.expr import types as T

#: beyond this many distinct source key values of a type kept as Python values (strings, decimals), only their
#: minimum and maximum are used (numbers, dates and timestamps are searched as numpy arrays, however many)
MAX_VALUES = 100_000


def _prunable(k: KeyPair) -> str | None:
    """The top-level target column a key compares as it is, or None."""
    t = k.target
    if k.null_safe or not isinstance(t, X.Field) or len(t.path) != 1:
        return None
    if t.type in (T.FLOAT, T.DOUBLE, T.BOOLEAN, T.BINARY) or not T.is_atomic(t.type):
        return None
    return t.path[0]


def _numeric(values: pa.Array) -> np.ndarray | None:
    """Sorted values as int64 where their order is the numbers' (integers, dates, timestamps); else None."""
    t = values.type
    if pa.types.is_integer(t):
        return np.asarray(values.cast(pa.int64()).to_numpy(), dtype=np.int64)
    if pa.types.is_date32(t):
        return np.asarray(values.cast(pa.int32()).cast(pa.int64()).to_numpy(), dtype=np.int64)
    if pa.types.is_timestamp(t):
        return np.asarray(values.cast(pa.int64()).to_numpy(), dtype=np.int64)
    return None


@dataclass
class Keys:
    """A key's distinct source values, sorted: as int64 numbers where their order is the numbers', else as
    Python values (only the smallest and largest, ``ranged``, when there are too many)."""

    type: pa.DataType
    numbers: np.ndarray | None = None
    python: list[Any] = field(default_factory=list)
    ranged: bool = False

    def between(self, low: pa.Scalar | None, high: pa.Scalar | None) -> bool:
        """Whether some value lies within [low, high] (unknown bounds: maybe)."""
        if low is None or high is None:
            return True
        if self.numbers is not None:
            try:
                bounds = _numeric(pa.array([low.as_py(), high.as_py()], low.type).cast(self.type))
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                return True
            if bounds is None:
                return True
            i = int(np.searchsorted(self.numbers, bounds[0], side="left"))
            return i < len(self.numbers) and int(self.numbers[i]) <= int(bounds[1])
        return _holds(self.python, low.as_py(), high.as_py(), self.ranged)

    def holds(self, value: Any) -> bool:
        """Whether ``value`` (a Python value of the key's type) is one of the values."""
        try:
            scalar = pa.scalar(value).cast(self.type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return True
        return self.between(scalar, scalar)


def _values(k: KeyPair, source: MergeSource, plan: MergePlan, chunk_bytes: int, now: int) -> Keys | None:
    """The source's distinct non-null values of ``k`` (None: there are none), collected chunk by chunk (numbers
    with numpy's sort, so memory stays a few times the distinct keys)."""
    numbers: list[np.ndarray] = []
    others: list[pa.Array] = []
    count = 0
    low: Any = None
    high: Any = None
    key_type: pa.DataType | None = None
    for _, chunk in source.chunks(chunk_bytes):
        ev = Evaluation.of(chunk, session_time_zone=plan.session_time_zone, now_micros=now)
        (value,) = key_arrays((k,), "source", ev)
        value = value.drop_null()
        if len(value) == 0:
            continue
        key_type = value.type
        as_numbers = _numeric(value)
        if as_numbers is not None:
            numbers.append(np.unique(as_numbers))
            continue
        extremes = pc.min_max(value)
        lo, hi = extremes["min"].as_py(), extremes["max"].as_py()
        low = lo if low is None or lo < low else low
        high = hi if high is None or hi > high else high
        if count <= MAX_VALUES:
            distinct = pc.unique(value)
            count += len(distinct)
            others.append(distinct)
    if key_type is None:
        return None
    if numbers:
        return Keys(key_type, numbers=np.unique(np.concatenate(numbers)))
    if count > MAX_VALUES:
        return Keys(key_type, python=[low, high], ranged=True)
    values = pc.unique(pa.chunked_array(others).combine_chunks())
    return Keys(key_type, python=values.take(pc.sort_indices(values)).to_pylist())


def _holds(values: list[Any], low: Any, high: Any, ranged: bool) -> bool:
    if low is None or high is None:
        return True
    try:
        if ranged:
            return not (values[-1] < low or values[0] > high)
        i = bisect.bisect_left(values, low)
        return i < len(values) and values[i] <= high
    except TypeError:  # values Python cannot order against the bound (naive and aware instants): keep the file
        return True


def by_source_keys(
    plan: MergePlan,
    description: TableDescription,
    files: Sequence[Add],
    source: MergeSource,
    *,
    chunk_bytes: int,
    now_micros: int,
) -> list[Add]:
    """The files of ``files`` that may hold a row equal to some source row on every prunable key."""
    kept = list(files)
    fields = {f["name"]: f for f in top_level_fields(description.schema)}
    for k in plan.keys:
        column = _prunable(k)
        if column is None or not kept or column not in fields:
            continue
        values = _values(k, source, plan, chunk_bytes, now_micros)
        if values is None:
            return []  # no source row has a key: nothing can match
        if column in description.partition_columns:
            kept = [a for a in kept if _partition_holds(a, fields[column], description, values)]
            continue
        (leaf,) = [lf for lf in leaves([fields[column]], description.column_mapping) if lf.path == (column,)]
        bounds = column_bounds(leaf, [parse_stats(a.stats) for a in kept])
        kept = [a for a, (low, high) in zip(kept, bounds, strict=True) if values.between(low, high)]
    return kept


def _partition_holds(add: Add, field: dict[str, Any], description: TableDescription, values: Keys) -> bool:
    meta = field.get("metadata") or {}
    mapped = description.column_mapping != "none"
    physical = meta.get("delta.columnMapping.physicalName", field["name"]) if mapped else field["name"]
    raw = add.partition_values.get(physical)
    try:
        value = parse_value(field["type"], raw)
    except PartitionValueError:
        return True
    if value is None:
        return False  # a NULL key equals nothing
    return values.holds(value)


__all__ = ["MAX_VALUES", "by_source_keys"]
