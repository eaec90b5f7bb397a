"""Comparisons and arithmetic with Spark's meaning: NaN equal to itself and above every number; integral
overflow, division and remainder by zero raise (ANSI, for doubles too); decimals exact, rounded half-up to
the result type Spark gives and refused when they do not fit it."""

from __future__ import annotations

from collections.abc import Callable
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, localcontext
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.compute.arrow_types import arrow_type
from deltalog.compute.casts import fit_decimal
from deltalog.compute.columns import Session, from_numbers, numbers, per_value, valid
from deltalog.compute.failures import refuse, shown
from deltalog.expr import tree as X
from deltalog.expr import types as T

_PLAIN = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def _nan_aware(op: str, a: pa.Array, b: pa.Array) -> pa.Array:
    """Spark's float order: NaN equals NaN and is above every other value; nulls stay null."""
    na, nb = pc.is_nan(a), pc.is_nan(b)
    ca, cb = pc.if_else(na, 0.0, a), pc.if_else(nb, 0.0, b)
    both_nan, neither = pc.and_(na, nb), pc.and_(pc.invert(na), pc.invert(nb))
    eq = pc.or_(both_nan, pc.and_(neither, pc.equal(ca, cb)))
    lt = pc.or_(pc.and_(pc.invert(na), nb), pc.and_(neither, pc.less(ca, cb)))
    gt = pc.or_(pc.and_(na, pc.invert(nb)), pc.and_(neither, pc.greater(ca, cb)))
    return {"=": eq, "!=": pc.invert(eq), "<": lt, ">": gt, "<=": pc.or_(lt, eq), ">=": pc.or_(gt, eq)}[op]


def compare(op: str, a: pa.Array, b: pa.Array, t: T.DataType | None) -> pa.Array:
    """``a op b`` for two arrays of one type ``t``; ``<=>`` is null-safe equality."""
    if op == "<=>":
        eq = pc.fill_null(compare("=", a, b, t), False)
        both_null = pc.and_(pc.is_null(a), pc.is_null(b))
        return pc.or_(pc.and_(pc.is_valid(a), pc.and_(pc.is_valid(b), eq)), both_null)
    if pa.types.is_null(a.type) or pa.types.is_null(b.type):
        return pa.nulls(len(a), pa.bool_())
    if t in (T.FLOAT, T.DOUBLE):
        return _nan_aware(op, a, b)
    return _PLAIN[op](a, b)


# ---------------------------------------------------------------------------------------------- helpers
def _overflow(what: str) -> Exception:
    return refuse("ARITHMETIC_OVERFLOW", f"{what} caused overflow; use try_ functions to tolerate it")


def _both(args: list[pa.Array]) -> np.ndarray:
    both: np.ndarray = valid(args[0]) & valid(args[1])
    return both


def _decimal_kernel(out: T.Decimal, fn: Callable[[Decimal, Decimal], Decimal], name: str) -> Callable[..., Any]:
    def apply(a: Decimal, b: Decimal) -> Decimal:
        with localcontext() as ctx:
            ctx.prec = 120
            exact = fn(a, b)
        fitted = fit_decimal(exact, out)
        if fitted is None:
            raise refuse(
                "NUMERIC_VALUE_OUT_OF_RANGE",
                f"{shown(exact)} ({name}) cannot be represented as Decimal({out.precision}, {out.scale})",
                exact,
            )
        return fitted

    return apply


def _zero_divisor(args: list[pa.Array], t: T.DataType | None, error_class: str) -> None:
    """A zero divisor fails whatever the dividend (Spark checks it before evaluating the dividend)."""
    b = args[1]
    both = valid(b)
    if t in (T.FLOAT, T.DOUBLE) or T.is_integral(t) if t is not None else False:
        zero = both & (numbers(b, np.float64) == 0)
    else:
        zero = both & np.array([v is not None and v == 0 for v in b.to_pylist()], dtype=bool)
    if zero.any():
        message = "Division by zero" if error_class == "DIVIDE_BY_ZERO" else "Remainder by zero"
        raise refuse(error_class, f"{message}; use try_divide or try_mod to tolerate a zero divisor")


def _checked(kernel: Any, what: str) -> Callable[[pa.Array, pa.Array], pa.Array]:
    def run(a: pa.Array, b: pa.Array) -> pa.Array:
        try:
            return kernel(a, b)
        except pa.ArrowInvalid:
            raise _overflow(what) from None

    return run


# ---------------------------------------------------------------------------------------------- kernels
def _add_sub_mul(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    t = call.type
    if isinstance(t, T.Decimal):
        fn = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y}[call.name]
        return per_value(args, arrow_type(t), _decimal_kernel(t, fn, call.name))
    if T.is_integral(t) or t in (T.DAY_TIME, T.YEAR_MONTH):
        kernel = {"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked}[call.name]
        return _checked(kernel, f"{t.sql() if t else ''} {call.name}")(args[0], args[1])
    kernel = {"+": pc.add, "-": pc.subtract, "*": pc.multiply}[call.name]
    return kernel(args[0], args[1])


def _divide(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    t = call.type
    _zero_divisor(args, call.args[1].type, "DIVIDE_BY_ZERO")
    if isinstance(t, T.Decimal):
        return per_value(args, arrow_type(t), _decimal_kernel(t, lambda x, y: x / y, "/"))
    both = _both(args)
    a, b = numbers(args[0], np.float64), numbers(args[1], np.float64)
    with np.errstate(all="ignore"):
        out = np.where(both, a / np.where(both, b, 1.0), 0.0)
    return from_numbers(out, both, pa.float64())


def _java_rem(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Java's ``%`` on integers: the sign of the dividend; ``MIN % -1`` is 0."""
    safe_b = np.where(b == 0, 1, b)
    minus_one = safe_b == -1
    with np.errstate(all="ignore"):
        r = np.fmod(a, np.where(minus_one, 1, safe_b))
    return np.where(minus_one, 0, r)


def _remainder(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    t = call.type
    pmod = call.name == "pmod"
    _zero_divisor(args, call.args[1].type, "REMAINDER_BY_ZERO")
    if isinstance(t, T.Decimal):

        def rem(x: Decimal, y: Decimal) -> Decimal:
            r = x % y  # Decimal's % takes the sign of the dividend, as Java's BigDecimal.remainder
            if pmod and r < 0:
                r = (r + y) % y
            return r

        return per_value(args, arrow_type(t), _decimal_kernel(t, rem, call.shown_name))
    both = _both(args)
    if T.is_integral(t):
        a, b = numbers(args[0], np.int64), numbers(args[1], np.int64)
        r = _java_rem(a, b)
        if pmod:
            adjust = r < 0
            r = np.where(adjust, _java_rem(r + b, b), r)
        return from_numbers(r, both, arrow_type(t))  # type: ignore[arg-type]
    fa, fb = numbers(args[0], np.float64), numbers(args[1], np.float64)
    with np.errstate(all="ignore"):
        r = np.fmod(fa, np.where(both, fb, 1.0))
        if pmod:
            r = np.where(r < 0, np.fmod(r + fb, np.where(both, fb, 1.0)), r)
    return from_numbers(r, both, arrow_type(t)).cast(arrow_type(t))  # type: ignore[arg-type]


def _int_divide(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    _zero_divisor(args, call.args[1].type, "DIVIDE_BY_ZERO")
    if isinstance(call.args[0].type, T.Decimal):

        def div(x: Decimal, y: Decimal) -> int:
            with localcontext() as ctx:
                ctx.prec = 120
                q = int((x / y).to_integral_value(rounding=ROUND_DOWN))
            if not _LONG_MIN <= q <= _LONG_MAX:
                raise _overflow("integral divide")
            return q

        return per_value(args, pa.int64(), div)
    both = _both(args)
    a, b = numbers(args[0], np.int64), numbers(args[1], np.int64)
    if (both & (a == _LONG_MIN) & (b == -1)).any():
        raise _overflow("integral divide")
    safe_b = np.where(both & (b != 0), b, 1)
    safe_a = np.where((a == _LONG_MIN) & (safe_b == -1), 0, a)
    q = np.floor_divide(safe_a, safe_b)
    q = np.where((np.fmod(safe_a, safe_b) != 0) & ((safe_a < 0) != (safe_b < 0)), q + 1, q)
    return from_numbers(q, both, pa.int64())


def _negate(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    t = call.type
    if isinstance(t, T.Decimal):
        return per_value(args, arrow_type(t), lambda v: -v)
    try:
        if call.name == "abs":
            return pc.abs_checked(args[0]) if T.is_integral(t) else pc.abs(args[0])
        return pc.negate_checked(args[0]) if T.is_integral(t) or t in (T.DAY_TIME, T.YEAR_MONTH) else pc.negate(args[0])
    except pa.ArrowInvalid:
        raise _overflow(f"{call.shown_name} of the type's minimum") from None


def _abs(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    if isinstance(call.type, T.Decimal):
        return per_value(args, arrow_type(call.type), abs)
    return _negate(ev, call, args)


def _shortest_decimal(v: float, single: bool) -> Decimal:
    from deltalog.compute.text import java_float_text

    return Decimal(java_float_text(v, single).replace("E", "e"))


def _round(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    t = call.type
    assert t is not None
    arg_type = call.args[0].type
    scale_value = call.args[1]
    scale = int(scale_value.value) if isinstance(scale_value, X.Literal) and isinstance(scale_value.value, int) else 0
    mode = ROUND_HALF_UP if call.name == "round" else ROUND_HALF_EVEN
    quantum = Decimal(1).scaleb(-scale)

    def rounded(v: Decimal) -> Decimal:
        with localcontext() as ctx:
            ctx.prec = 1000  # a double's digits up to 1e308, exactly
            return v.quantize(quantum, rounding=mode)

    if isinstance(t, T.Decimal):

        def dec(v: Decimal) -> Decimal:
            fitted = fit_decimal(rounded(v), t)
            if fitted is None:
                raise _overflow(call.shown_name)
            return fitted

        return per_value(args[:1], arrow_type(t), dec)
    if T.is_integral(t):
        if scale >= 0:
            return args[0]
        bits = T.INTEGRAL_BITS[t]

        def whole(v: int) -> int:
            r = int(rounded(Decimal(v)))
            if not -(2 ** (bits - 1)) <= r < 2 ** (bits - 1):
                raise _overflow(call.shown_name)
            return r

        return per_value(args[:1], arrow_type(t), whole)
    single = arg_type == T.FLOAT

    def fractional(v: float) -> float:
        if v != v or v in (float("inf"), float("-inf")):
            return v
        return float(rounded(_shortest_decimal(v, single)))

    return per_value(args[:1], arrow_type(t), fractional)


def _floor_ceil(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    t = call.type
    arg_type = call.args[0].type
    up = call.name == "ceil"
    if isinstance(t, T.Decimal):
        rounding = "ROUND_CEILING" if up else "ROUND_FLOOR"
        return per_value(args, arrow_type(t), lambda v: v.to_integral_value(rounding=rounding))
    if T.is_integral(arg_type):
        return args[0].cast(pa.int64())
    values, ok = numbers(args[0], np.float64), valid(args[0])
    whole = np.ceil(values) if up else np.floor(values)
    nan = np.isnan(whole)
    with np.errstate(invalid="ignore"):
        bad = ok & ~nan & ~((whole >= -(2.0**63)) & (whole < 2.0**63))
    if bad.any():
        raise _overflow(f"{call.shown_name}({values[bad][0]!r})")
    result = np.where(ok & ~nan & ~bad, whole, 0).astype(np.int64)
    return from_numbers(result, ok, pa.int64())


def _sign(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    values, ok = numbers(args[0], np.float64), valid(args[0])
    return from_numbers(np.sign(values), ok, pa.float64())


KERNELS = {
    "+": _add_sub_mul,
    "-": _add_sub_mul,
    "*": _add_sub_mul,
    "/": _divide,
    "%": _remainder,
    "pmod": _remainder,
    "div": _int_divide,
    "neg": _negate,
    "abs": _abs,
    "round": _round,
    "bround": _round,
    "floor": _floor_ceil,
    "ceil": _floor_ceil,
    "sign": _sign,
}

__all__ = ["KERNELS", "compare"]
