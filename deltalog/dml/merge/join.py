"""The join of target rows with source rows on a merge's equi-join keys, in pyarrow's Acero hash join.

Why Acero: measured on this machine (``python -m benchmarks.merge_join``: 10M target keys against 100k source
keys, half of them matching, best of three), Acero's hash join built on the smaller side takes 0.07 s for
``long`` keys and 0.10 s for ``string`` keys, duckdb's join over the same Arrow tables 0.18 s and 0.81 s (its
Arrow scan and result conversion dominate), and pyarrow is already what every file passes through: no new
dependency, no copy. DataFusion is not installed here (it would be one more native engine for the same join).

Semantics are Spark's, not the engine's: keys are evaluated by deltalog's evaluator (Spark's casts, ANSI
errors) before the engine sees them; ``NULL`` never equals anything (Acero's inner join drops null keys), except
under ``<=>``, whose keys become (is-null flag, value with nulls filled) so that NULL meets NULL; floating keys
are normalised as Spark normalises join keys (``-0.0`` is ``0.0``, every NaN one NaN), so the engine's bitwise
equality is Spark's ``=``. What is left of the condition (the residual) is evaluated on the pairs by the caller.
Without any key the pairs are the cross product, built by the same engine on a constant key, in slices.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.compute import Evaluation, evaluate
from deltalog.dml.merge.plan import KeyPair

_LEFT = "__deltalog_left"
_RIGHT = "__deltalog_right"
#: pairs of a keyless (cross) join built at once
CROSS_PAIRS = 1 << 22


def key_arrays(keys: Sequence[KeyPair], side: str, ev: Evaluation) -> list[pa.Array]:
    """The join columns of one side (``target`` or ``source``), evaluated and normalised for the engine."""
    out: list[pa.Array] = []
    for k in keys:
        value = evaluate(k.target if side == "target" else k.source, ev)
        if isinstance(value, pa.ChunkedArray):
            value = value.combine_chunks()
        if k.floating:
            value = _normal_float(value)
        if k.null_safe:
            out.append(pc.is_null(value))
            value = pc.if_else(pc.is_null(value), _zero(value.type), value)
        out.append(value)
    return out


def _normal_float(arr: pa.Array) -> pa.Array:
    zero = pa.scalar(0.0, arr.type)
    nan = pa.scalar(float("nan"), arr.type)
    arr = pc.if_else(pc.equal(arr, zero), zero, arr)  # -0.0 == 0.0: both become 0.0
    return pc.if_else(pc.is_nan(arr), nan, arr)


def _zero(t: pa.DataType) -> pa.Scalar:
    """Some non-null value of ``t`` (what a null key becomes beside its is-null flag)."""
    if pa.types.is_boolean(t):
        return pa.scalar(False, t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.scalar(b"", t)
    if pa.types.is_decimal(t):
        return pa.scalar(Decimal(0), t)
    if pa.types.is_date32(t):
        return pa.scalar(0, pa.int32()).cast(t)
    if pa.types.is_timestamp(t):
        return pa.scalar(0, pa.int64()).cast(t)
    if pa.types.is_floating(t):
        return pa.scalar(0.0, t)
    return pa.scalar(0, t)


def pairs(
    target: Sequence[pa.Array], source: Sequence[pa.Array], n_target: int, n_source: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(target row, source row) index pairs whose keys are equal, in slices; every pair when there are no keys.
    The hash table is built on the smaller side."""
    if not target:
        yield from _cross(n_target, n_source)
        return
    names = [f"k{i}" for i in range(len(target))]
    left = pa.table([*target, pa.array(np.arange(n_target, dtype=np.int64))], names=[*names, _LEFT])
    right = pa.table([*source, pa.array(np.arange(n_source, dtype=np.int64))], names=[*names, _RIGHT])
    if n_target < n_source:  # Acero builds its hash table on the right-hand side
        joined = right.join(left, keys=names, join_type="inner", coalesce_keys=True)
    else:
        joined = left.join(right, keys=names, join_type="inner", coalesce_keys=True)
    t = joined.column(_LEFT).to_numpy()
    s = joined.column(_RIGHT).to_numpy()
    yield np.asarray(t, dtype=np.int64), np.asarray(s, dtype=np.int64)


def _cross(n_target: int, n_source: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    if n_target == 0 or n_source == 0:
        return
    per = max(1, CROSS_PAIRS // max(n_source, 1))
    for start in range(0, n_target, per):
        stop = min(n_target, start + per)
        left = pa.table({"k": pa.array(np.zeros(stop - start, np.int8)), _LEFT: np.arange(start, stop, dtype=np.int64)})
        right = pa.table({"k": pa.array(np.zeros(n_source, np.int8)), _RIGHT: np.arange(n_source, dtype=np.int64)})
        joined = left.join(right, keys="k", join_type="inner")
        yield (
            np.asarray(joined.column(_LEFT).to_numpy(), dtype=np.int64),
            np.asarray(joined.column(_RIGHT).to_numpy(), dtype=np.int64),
        )


__all__ = ["CROSS_PAIRS", "key_arrays", "pairs"]
