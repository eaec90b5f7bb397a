"""The evaluator: a bound tree on a batch, node by node, with Spark's order of evaluation.

Spark evaluates a function's arguments left to right and stops at the first null (a null-intolerant
expression is null there without looking further), ``AND``/``OR`` skip their right side once the left
decides, ``CASE``/``IF``/``COALESCE`` evaluate a branch only for the rows that take it, and ``IN`` stops at
the first match. Which rows reach an expression decides which rows can fail under ANSI
(``CASE WHEN d = 0 THEN 0 ELSE n / d END`` never divides by zero), so this evaluator narrows the rows the
same way: an argument is evaluated on the rows that reach it (a sub-batch) and scattered back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.compute import arith, casts, collections, datetimes, hashing, strings
from deltalog.compute.arrow_types import arrow_type
from deltalog.compute.columns import valid
from deltalog.errors import ExpressionValueError
from deltalog.expr import tree as X
from deltalog.expr import types as T

Kernel = Callable[["Evaluation", X.Call, list[pa.Array]], pa.Array]


@dataclass(frozen=True)
class Evaluation:
    """The rows an expression is evaluated on: one batch per relation of the scope it was bound in (physical
    column names), the session time zone and the statement's current time (one instant per evaluation, as
    Spark fixes ``current_timestamp()`` per query)."""

    relations: tuple[pa.RecordBatch, ...]
    session_time_zone: str = "UTC"
    now_micros: int = 0

    @classmethod
    def of(
        cls, *batches: pa.RecordBatch, session_time_zone: str | None = None, now_micros: int | None = None
    ) -> Evaluation:
        now = now_micros if now_micros is not None else time.time_ns() // 1000
        return cls(tuple(batches), session_time_zone or "UTC", now)

    @property
    def num_rows(self) -> int:
        return self.relations[0].num_rows if self.relations else 1

    def take(self, indices: np.ndarray) -> Evaluation:
        idx = pa.array(indices, pa.int64())
        return replace(self, relations=tuple(b.take(idx) for b in self.relations))

    def column(self, f: X.Field) -> pa.Array:
        batch = self.relations[f.relation]
        index = batch.schema.get_field_index(f.physical[0])
        if index < 0:
            arr: pa.Array = pa.nulls(batch.num_rows, arrow_type(_top_type(f)))
        else:
            arr = batch.column(index)
        for name in f.physical[1:]:
            if pa.types.is_null(arr.type):
                break
            arr = pc.struct_field(arr, [arr.type.get_field_index(name)])
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        want = arrow_type(f.type)
        if arr.type != want:
            arr = _normalised(arr, want)
        return arr


def _top_type(f: X.Field) -> T.DataType:
    return f.type if len(f.physical) == 1 else T.VOID


def _normalised(arr: pa.Array, want: pa.DataType) -> pa.Array:
    """A column as the evaluator's Arrow type (large strings, other timestamp units or zones, dictionaries)."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), want)
    if pa.types.is_timestamp(arr.type) and pa.types.is_timestamp(want):
        return pa.array(
            arr.cast(pa.int64()) if arr.type.unit == "us" else arr.cast(pa.timestamp("us")).cast(pa.int64())
        ).cast(want)
    try:
        return arr.cast(want)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return arr


def _constant(value: object, t: T.DataType, n: int) -> pa.Array:
    at = arrow_type(t)
    if value is None:
        return pa.nulls(n, at)
    if t in (T.DATE, T.TIMESTAMP, T.TIMESTAMP_NTZ):
        base = pa.scalar(value, pa.int32() if t == T.DATE else pa.int64())
        return pa.repeat(base, n).cast(at)
    return pa.repeat(pa.scalar(value, at), n)


def scatter(values: pa.Array, indices: np.ndarray, n: int) -> pa.Array:
    """``values`` (one per index) placed at ``indices`` of an array of ``n`` rows, null elsewhere."""
    if len(indices) == n:
        return values
    positions = np.full(n, len(values), dtype=np.int64)
    positions[indices] = np.arange(len(indices), dtype=np.int64)
    padded = pa.concat_arrays([values, pa.nulls(1, values.type)])
    return pc.take(padded, pa.array(positions))


def _on(ev: Evaluation, e: X.Expr, rows: np.ndarray | None) -> pa.Array:
    """``e`` on the rows ``rows`` (all when None), as a full-length array (null on the other rows)."""
    if rows is None:
        return _eval(ev, e)
    n = ev.num_rows
    if len(rows) == n:
        return _eval(ev, e)
    at = arrow_type(e.type) if e.type is not None else pa.null()
    if len(rows) == 0:
        return pa.nulls(n, at)
    return scatter(_eval(ev.take(rows), e), rows, n)


def _rows(mask: np.ndarray) -> np.ndarray:
    return np.flatnonzero(mask)


# ---------------------------------------------------------------------------------------------- special forms
def _boolean_values(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    ok = valid(arr)
    values = (
        np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool) if len(arr) else np.zeros(0, bool)
    )
    return values, ok


def _and_or(ev: Evaluation, call: X.Call) -> pa.Array:
    is_and = call.name == "and"
    out = _eval(ev, call.args[0])
    for arg in call.args[1:]:
        values, ok = _boolean_values(out)
        undecided = ~(ok & (values != is_and)) if is_and else ~(ok & values)
        right = _on(ev, arg, _rows(undecided))
        out = pc.and_kleene(out, right) if is_and else pc.or_kleene(out, right)
    return out


def _case(
    ev: Evaluation, branches: Sequence[tuple[X.Expr, X.Expr]], otherwise: X.Expr | None, t: T.DataType
) -> pa.Array:
    n = ev.num_rows
    remaining = np.ones(n, dtype=bool)
    result = pa.nulls(n, arrow_type(t))
    for cond, value in branches:
        c = _on(ev, cond, _rows(remaining))
        values, ok = _boolean_values(c)
        taken = remaining & ok & values
        if taken.any():
            result = pc.if_else(pa.array(taken), _on(ev, value, _rows(taken)), result)
        remaining &= ~taken
    if otherwise is not None and remaining.any():
        result = pc.if_else(pa.array(remaining), _on(ev, otherwise, _rows(remaining)), result)
    return result


def _coalesce(ev: Evaluation, call: X.Call) -> pa.Array:
    assert call.type is not None
    n = ev.num_rows
    result = pa.nulls(n, arrow_type(call.type))
    missing = np.ones(n, dtype=bool)
    for arg in call.args:
        if not missing.any():
            break
        value = _on(ev, arg, _rows(missing))
        result = pc.coalesce(result, value)
        missing = ~valid(result)
    return result


def _in(ev: Evaluation, call: X.Call) -> pa.Array:
    value = _eval(ev, call.args[0])
    n = ev.num_rows
    undecided = valid(value)
    matched = np.zeros(n, dtype=bool)
    saw_null = np.zeros(n, dtype=bool)
    for item in call.args[1:]:
        if not undecided.any():
            break
        candidate = _on(ev, item, _rows(undecided))
        eq = arith.compare("=", value, candidate, call.args[0].type)
        values, ok = _boolean_values(eq)
        hit = undecided & ok & values
        saw_null |= undecided & ~valid(candidate)
        matched |= hit
        undecided &= ~hit
    known = valid(value)
    result_valid = known & (matched | ~saw_null)
    return pa.array(matched, mask=~result_valid)


#: Spark evaluates a division's divisor first (``DivModLike``): a null or zero divisor skips the dividend
_DIVISOR_FIRST = {"/", "%", "div", "pmod"}


def _strict(ev: Evaluation, call: X.Call) -> list[pa.Array]:
    """Arguments in Spark's order (left to right; a division's divisor first), each on the rows where every
    argument evaluated before it was not null."""
    order = [1, 0] if call.name in _DIVISOR_FIRST and len(call.args) == 2 else list(range(len(call.args)))
    out: list[pa.Array | None] = [None] * len(call.args)
    reach: np.ndarray | None = None
    for k in order:
        value = _on(ev, call.args[k], None if reach is None else _rows(reach))
        out[k] = value
        if value.null_count:
            ok = valid(value)
            reach = ok if reach is None else reach & ok
    return [v for v in out if v is not None]


_ALL_ARGS = {"concat", "concat_ws", "greatest", "least", "hash", "xxhash64", "<=>", "is_null", "is_not_null",
             "is_true", "is_false", "is_not_true", "is_not_false", "nullif"}  # fmt: skip


def _call(ev: Evaluation, call: X.Call) -> pa.Array:
    if call.name in ("and", "or"):
        return _and_or(ev, call)
    if call.name == "if":
        assert call.type is not None
        return _case(ev, [(call.args[0], call.args[1])], call.args[2], call.type)
    if call.name == "coalesce":
        return _coalesce(ev, call)
    if call.name == "in":
        return _in(ev, call)
    kernel = KERNELS.get(call.name)
    if kernel is None:
        raise TypeError(f"no kernel for {call.name}")
    args = [_eval(ev, a) for a in call.args] if call.name in _ALL_ARGS else _strict(ev, call)
    return kernel(ev, call, args)


def _eval(ev: Evaluation, e: X.Expr) -> pa.Array:
    if isinstance(e, X.Literal):
        return _constant(e.value, e.type, ev.num_rows)
    if isinstance(e, X.Field):
        return ev.column(e)
    if isinstance(e, X.Cast):
        operand = _eval(ev, e.operand)
        assert e.operand.type is not None
        return casts.cast(operand, e.operand.type, e.to, e.try_, ev.session_time_zone)
    if isinstance(e, X.Case):
        assert e.type is not None
        return _case(ev, e.branches, e.otherwise, e.type)
    if isinstance(e, X.Call):
        return _call(ev, e)
    raise TypeError(f"{X.to_sql(e)} is not bound")


def evaluate(e: X.Expr, ev: Evaluation, text: str | None = None) -> pa.Array:
    """The value of bound expression ``e`` for every row of ``ev`` (an array of ``e``'s Arrow type).

    A value Spark's ANSI mode refuses raises :class:`~deltalog.errors.ExpressionValueError` naming it and
    the expression (``text``, or ``e`` as SQL)."""
    try:
        return _eval(ev, e)
    except ExpressionValueError as exc:
        shown = text if text is not None else X.to_sql(e)
        raise ExpressionValueError(
            f"{exc} (evaluating {shown})", error_class=exc.error_class, expression=shown, value=exc.value
        ) from None


def evaluate_scalar(e: X.Expr, session_time_zone: str | None = None, now_micros: int | None = None) -> Any:
    """A constant expression's value as Python (dates as ``date``, timestamps as ``datetime``)."""
    ev = Evaluation.of(pa.record_batch({"_": pa.nulls(1)}), session_time_zone=session_time_zone, now_micros=now_micros)
    return evaluate(e, ev)[0].as_py()


# ---------------------------------------------------------------------------------------------- simple kernels
def _not(ev: Evaluation, call: X.Call, args: list[pa.Array]) -> pa.Array:
    return pc.invert(args[0])


def _is(ev: Evaluation, call: X.Call, args: list[pa.Array]) -> pa.Array:
    a = args[0]
    if call.name == "is_null":
        return pc.is_null(a)
    if call.name == "is_not_null":
        return pc.is_valid(a)
    true = pc.fill_null(a, False)
    false = pc.fill_null(pc.invert(a), False)
    return {"is_true": true, "is_false": false, "is_not_true": pc.invert(true), "is_not_false": pc.invert(false)}[
        call.name
    ]


def _comparison(ev: Evaluation, call: X.Call, args: list[pa.Array]) -> pa.Array:
    return arith.compare(call.name, args[0], args[1], call.args[0].type)


def _nullif(ev: Evaluation, call: X.Call, args: list[pa.Array]) -> pa.Array:
    eq = pc.fill_null(arith.compare("=", args[0], args[1], call.args[0].type), False)
    return pc.if_else(eq, pa.nulls(len(eq), args[2].type), args[2])


def _extreme(ev: Evaluation, call: X.Call, args: list[pa.Array]) -> pa.Array:
    t = call.args[0].type
    result = args[0]
    for a in args[1:]:
        better = arith.compare(">" if call.name == "greatest" else "<", a, result, t)
        take = pc.or_(pc.is_null(result), pc.fill_null(better, False))
        result = pc.if_else(pc.and_(take, pc.is_valid(a)), a, result)
    return result


KERNELS: dict[str, Kernel] = {
    "not": _not,
    **dict.fromkeys(("is_null", "is_not_null", "is_true", "is_false", "is_not_true", "is_not_false"), _is),
    **dict.fromkeys(("=", "!=", "<", "<=", ">", ">=", "<=>"), _comparison),
    "nullif": _nullif,
    "greatest": _extreme,
    "least": _extreme,
    **arith.KERNELS,
    **strings.KERNELS,
    **datetimes.KERNELS,
    **hashing.KERNELS,
    **collections.KERNELS,
}
SPECIAL = ("and", "or", "if", "coalesce", "in")


def kernel_names() -> list[str]:
    """Every call name the evaluator runs."""
    return sorted({*KERNELS, *SPECIAL})


__all__ = ["KERNELS", "Evaluation", "evaluate", "evaluate_scalar", "kernel_names", "scatter"]
