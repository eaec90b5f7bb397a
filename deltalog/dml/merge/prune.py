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
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.actions import Add
from deltalog.compute import Evaluation
from deltalog.core.partitions import PartitionValueError, parse_value
from deltalog.core.schema import top_level_fields
from deltalog.data.bounds import column_bounds, leaves, parse_stats
from deltalog.data.scan import TableDescription
from deltalog.dml.merge.join import key_arrays
from deltalog.dml.merge.plan import KeyPair, MergePlan
from deltalog.dml.merge.source import MergeSource
from deltalog.expr import tree as X
from deltalog.expr import types as T

#: beyond this many distinct source key values, only their minimum and maximum are used
MAX_VALUES = 4_000_000


def _prunable(k: KeyPair) -> str | None:
    """The top-level target column a key compares as it is, or None."""
    t = k.target
    if k.null_safe or not isinstance(t, X.Field) or len(t.path) != 1:
        return None
    if t.type in (T.FLOAT, T.DOUBLE, T.BOOLEAN, T.BINARY) or not T.is_atomic(t.type):
        return None
    return t.path[0]


def _values(k: KeyPair, source: MergeSource, plan: MergePlan, chunk_bytes: int, now: int) -> tuple[list[Any], bool]:
    """The source's distinct non-null values of ``k``, sorted (Python values), and whether they are only the
    smallest and largest (too many to keep: any value between them may match)."""
    seen: list[pa.Array] = []
    for _, chunk in source.chunks(chunk_bytes):
        (value,) = key_arrays(
            (k,), "source", Evaluation.of(chunk, session_time_zone=plan.session_time_zone, now_micros=now)
        )
        seen.append(pc.unique(value.drop_null()))
    if not seen:
        return [], False
    values = pc.unique(pa.chunked_array(seen).combine_chunks())
    values = values.take(pc.sort_indices(values))
    if len(values) > MAX_VALUES:
        return [values[0].as_py(), values[len(values) - 1].as_py()], True
    return list(values.to_pylist()), False


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
        values, ranged = _values(k, source, plan, chunk_bytes, now_micros)
        if not values:
            return []  # no source row has a key: nothing can match
        if column in description.partition_columns:
            kept = [a for a in kept if _partition_holds(a, fields[column], description, values, ranged)]
            continue
        (leaf,) = [lf for lf in leaves([fields[column]], description.column_mapping) if lf.path == (column,)]
        bounds = column_bounds(leaf, [parse_stats(a.stats) for a in kept])
        kept = [
            a
            for a, (low, high) in zip(kept, bounds, strict=True)
            if _holds(
                values, low.as_py() if low is not None else None, high.as_py() if high is not None else None, ranged
            )
        ]
    return kept


def _py(bound: pa.Scalar | None) -> Any:
    return None if bound is None else bound.as_py()


def _partition_holds(
    add: Add, field: dict[str, Any], description: TableDescription, values: list[Any], ranged: bool
) -> bool:
    meta = field.get("metadata") or {}
    physical = (
        meta.get("delta.columnMapping.physicalName", field["name"])
        if description.column_mapping != "none"
        else field["name"]
    )
    raw = add.partition_values.get(physical)
    try:
        value = parse_value(field["type"], raw)
    except PartitionValueError:
        return True
    if value is None:
        return False  # a NULL key equals nothing
    if ranged:
        return _holds(values, value, value, True)
    try:
        i = bisect.bisect_left(values, value)
        return i < len(values) and values[i] == value
    except TypeError:
        return True


__all__ = ["MAX_VALUES", "by_source_keys"]
