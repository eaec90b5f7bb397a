"""What a predicate says about partition columns, and the files it therefore rules out.

A predicate's partition-only conjuncts decide a file from its partition values alone. A predicate on the
source column of a generated partition column says something about that column too, as Delta Spark's
``OptimizablePartitionExpression`` derives it: ``ts = v`` gives ``g = gen(v)`` for any generation expression
of one column, and a range on ``ts`` gives the same range (``<`` widened to ``<=``) on ``g`` when ``gen`` never
decreases as ``ts`` grows: ``CAST(ts AS DATE)``, ``to_date``, ``YEAR``, ``trunc``, ``date_trunc``,
``date_format`` with year-to-hour fields in order, ``substring(s, 1, n)``, ``left``. Those derived conjuncts are
evaluated in the session time zone, as Delta Spark evaluates them in its own; a table whose generated column was
computed in another zone may then prune wrongly, so the zone the writer used is the one to pass.

Pruning evaluates the partition part exactly, with the evaluator, on each distinct tuple of partition values;
a tuple whose evaluation fails (a malformed value under ANSI) keeps its files, and the rows decide.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.compute import Evaluation, evaluate, evaluate_scalar
from deltalog.compute.arrow_types import arrow_type
from deltalog.core.partitions import PartitionValueError, parse_value
from deltalog.core.schema import top_level_fields
from deltalog.core.state.columns import scalar_of
from deltalog.data.expressions import logical_scope, raw_value
from deltalog.errors import DeltaLogError, ExpressionValueError
from deltalog.expr import bind
from deltalog.expr import tree as X
from deltalog.expr import types as T
from deltalog.expr.datetime_patterns import PatternError, tokens

GENERATION = "delta.generationExpression"
_WIDEN = {"=": "=", "<": "<=", "<=": "<=", ">": ">=", ">=": ">="}
_MIRROR = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_MONOTONE_CALLS = {"year", "to_date", "trunc", "date_trunc", "date_format", "substring", "left"}


def _only_partitions(e: X.Expr, partition: set[str]) -> bool:
    refs = X.references(e)
    if any(len(f.path) != 1 or f.path[0] not in partition for f in refs):
        return False
    return not any(isinstance(n, X.Call) and n.name in ("current_date", "current_timestamp") for n in X.walk(e))


def _source(gen: X.Expr) -> X.Field | None:
    refs = X.references(gen)
    return refs[0] if len(refs) == 1 and len(refs[0].path) == 1 else None


def _monotone_pattern(pattern: object) -> bool:
    if not isinstance(pattern, str):
        return False
    try:
        toks = tokens(pattern)
    except PatternError:
        return False
    fields = [(t.letter, t.count) for t in toks if t.letter]
    order = [("y", 4), ("M", 2), ("d", 2), ("H", 2)]
    return bool(fields) and fields == order[: len(fields)]


def _monotone(e: X.Expr, src: X.Field) -> bool:
    """Whether ``e`` never decreases as ``src`` grows (Delta Spark's optimizable partition expressions)."""
    if e == src:
        return True
    if isinstance(e, X.Cast):
        inner = e.operand.type
        return e.to in (T.DATE, T.TIMESTAMP, T.TIMESTAMP_NTZ) and T.is_datetime(inner) and _monotone(e.operand, src)
    if not isinstance(e, X.Call) or e.name not in _MONOTONE_CALLS:
        return False
    args = e.args
    if e.name in ("year", "to_date"):
        return len(args) == 1 and _monotone(args[0], src)
    if e.name == "trunc":
        return isinstance(args[1], X.Literal) and _monotone(args[0], src)
    if e.name == "date_trunc":
        return isinstance(args[0], X.Literal) and _monotone(args[1], src)
    if e.name == "date_format":
        return isinstance(args[1], X.Literal) and _monotone_pattern(args[1].value) and _monotone(args[0], src)
    if e.name == "substring":
        start = args[1]
        return isinstance(start, X.Literal) and start.value == 1 and _monotone(args[0], src)
    return isinstance(args[1], X.Literal) and _monotone(args[0], src)  # left(s, n)


def _substitute(e: X.Expr, src: X.Field, value: X.Literal) -> X.Expr:
    if e == src:
        return value
    kids = X.children(e)
    return X.with_children(e, [_substitute(k, src, value) for k in kids]) if kids else e


def _generated(schema: Mapping[str, Any], partition_columns: Sequence[str]) -> list[tuple[X.Field, X.Expr, X.Field]]:
    """(partition column, its bound generation expression, the one column it reads) for each generated
    partition column whose expression reads one column."""
    scope = logical_scope(schema)
    out = []
    for f in top_level_fields(schema):
        text = (f.get("metadata") or {}).get(GENERATION)
        if text is None or f["name"] not in partition_columns:
            continue
        try:
            gen = bind(str(text), scope)
            column = bind(X.Column((f["name"],)), scope)
        except DeltaLogError:
            continue
        src = _source(gen)
        if src is not None and isinstance(column, X.Field) and src.path != column.path:
            out.append((column, gen, src))
    return out


def _value_of(gen: X.Expr, src: X.Field, literal: X.Literal, target: X.Field, tz: str) -> X.Literal | None:
    """``gen`` at ``src = literal``, as a literal of the generated column's type; None when it fails."""
    expr = _substitute(gen, src, literal)
    if expr.type != target.type:
        expr = X.Cast(expr, target.type, False, True)
    try:
        value = evaluate_scalar(expr, tz)
    except (ExpressionValueError, pa.ArrowException, TypeError, ValueError):
        return None
    return X.Literal(raw_value(value, target.type), target.type)


def _derived(conjunct: X.Expr, generated: Sequence[tuple[X.Field, X.Expr, X.Field]], tz: str) -> list[X.Expr]:
    out: list[X.Expr] = []
    if not isinstance(conjunct, X.Call):
        return out
    for column, gen, src in generated:
        if conjunct.name == "in" and conjunct.args[0] == src:
            items = [
                _value_of(gen, src, i, column, tz) if isinstance(i, X.Literal) and i.value is not None else None
                for i in conjunct.args[1:]
            ]
            if items and all(i is not None for i in items):
                out.append(X.Call("in", (column, *[i for i in items if i is not None]), T.BOOLEAN))
            continue
        if conjunct.name not in _MIRROR or len(conjunct.args) != 2:
            continue
        left, right, op = conjunct.args[0], conjunct.args[1], conjunct.name
        if right == src and isinstance(left, X.Literal):
            left, right, op = right, left, _MIRROR[op]
        if left != src or not isinstance(right, X.Literal) or right.value is None or right.type != src.type:
            continue
        if op != "=" and not _monotone(gen, src):
            continue
        value = _value_of(gen, src, right, column, tz)
        if value is not None and value.value is not None:
            out.append(X.Call(_WIDEN[op], (column, value), T.BOOLEAN))
    return out


def partition_part(
    tree: X.Expr, schema: Mapping[str, Any], partition_columns: Sequence[str], tz: str
) -> tuple[X.Expr | None, bool]:
    """What bound, folded ``tree`` implies about partition columns alone (None: nothing), and whether that is
    all of it (every conjunct partition-only)."""
    partition = set(partition_columns)
    if not partition:
        return None, False
    generated = _generated(schema, partition_columns)
    kept: list[X.Expr] = []
    exact = True
    for c in X.conjuncts(tree):
        if _only_partitions(c, partition):
            kept.append(c)
            continue
        exact = False
        kept.extend(_derived(c, generated, tz))
    if not kept:
        return None, False
    return X.and_(*kept, bound=True), exact


def partition_mask(
    table: pa.Table,
    predicate: X.Expr,
    schema: Mapping[str, Any],
    physical: Mapping[str, str],
    tz: str = "UTC",
    strict: bool = False,
) -> pa.Array:
    """A boolean mask over ``table`` (adds in the log's field names) keeping the files whose partition values
    make ``predicate`` (bound, on partition columns only) TRUE. A value that does not parse keeps its files;
    so does one whose evaluation fails, unless ``strict`` (then the failure is raised)."""
    columns = {f["name"]: f for f in top_level_fields(dict(schema))}
    names = list(dict.fromkeys(f.path[0] for f in X.references(predicate)))
    n = table.num_rows
    if n == 0:
        return pa.array([], pa.bool_())
    raw_columns = []
    for name in names:
        key = scalar_of(physical.get(name, name), pa.string())
        raw = pc.map_lookup(table.column("partitionValues"), key, "first")
        raw_columns.append(raw.to_pylist())
    tuples: dict[tuple[Any, ...], list[int]] = {}
    for i, row in enumerate(zip(*raw_columns, strict=True)) if raw_columns else enumerate([()] * n):
        tuples.setdefault(tuple(row), []).append(i)
    keys = list(tuples)
    typed_columns: list[list[Any]] = [[] for _ in names]
    parsed_ok = np.ones(len(keys), dtype=bool)
    for k, key in enumerate(keys):
        for j, name in enumerate(names):
            try:
                typed_columns[j].append(parse_value(columns[name]["type"], key[j]))
            except PartitionValueError:
                typed_columns[j].append(None)
                parsed_ok[k] = False
    arrays = []
    for name, values in zip(names, typed_columns, strict=True):
        t = arrow_type(T.from_delta(columns[name]["type"], physical=False))
        arrays.append(pa.array(values, t))
    batch = pa.RecordBatch.from_arrays(arrays, names=names) if names else pa.record_batch({"_": pa.nulls(len(keys))})
    try:
        value = evaluate(predicate, Evaluation.of(batch, session_time_zone=tz))
        keep_key = np.asarray(pc.fill_null(value, False).to_numpy(zero_copy_only=False), dtype=bool)
    except ExpressionValueError:
        if strict:
            raise
        keep_key = np.ones(len(keys), dtype=bool)
    keep_key |= ~parsed_ok
    mask = np.zeros(n, dtype=bool)
    for k, key in enumerate(keys):
        if keep_key[k]:
            mask[tuples[key]] = True
    return pa.array(mask)


__all__ = ["GENERATION", "partition_mask", "partition_part"]
