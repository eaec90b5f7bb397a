"""``CAST`` and ``TRY_CAST`` between the types Spark allows (``Cast.canAnsiCast``), with ANSI's failures:
a malformed string (``CAST_INVALID_INPUT``), a number out of the target's range (``CAST_OVERFLOW``,
``NUMERIC_VALUE_OUT_OF_RANGE``). ``TRY_CAST`` gives null where ``CAST`` fails."""

from __future__ import annotations

from collections.abc import Callable
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal, localcontext
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.compute import text, zones
from deltalog.compute.arrow_types import arrow_type
from deltalog.compute.columns import from_numbers, numbers, valid
from deltalog.compute.failures import refuse, shown
from deltalog.errors import DeltaLogError
from deltalog.expr import parsing
from deltalog.expr import types as T

#: the error class of a cast of bytes that are not UTF-8 to STRING (Spark keeps such bytes; deltalog refuses)
INVALID_UTF8 = "INVALID_UTF8_STRING"
_MICROS = 1_000_000
_DAY = 86_400_000_000
_INT_RANGE = {T.BYTE: (-(2**7), 2**7 - 1), T.SHORT: (-(2**15), 2**15 - 1), T.INT: (-(2**31), 2**31 - 1),
              T.LONG: (-(2**63), 2**63 - 1)}  # fmt: skip


def parse_timestamp(text: str, session_zone: str, ntz: bool = False) -> int | None:
    """Microseconds since the epoch (UTC; the wall clock when ``ntz``) of a timestamp string; without a zone
    it is in ``session_zone``. None when malformed."""
    found = parsing.timestamp_wall(text)
    if found is None:
        return None
    wall, written = found
    if ntz:
        return wall
    name = written or session_zone
    try:
        zones.zone(name)
    except DeltaLogError:
        return None
    return int(zones.from_wall(np.array([wall], dtype=np.int64), name)[0])


class _Failed(Exception):
    def __init__(self, error: Exception) -> None:
        self.error = error


def _invalid(value: Any, frm: T.DataType, to: T.DataType) -> Exception:
    return refuse(
        "CAST_INVALID_INPUT",
        f"The value {shown(value)} of the type {frm.sql()} cannot be cast to {to.sql()} because it is malformed; "
        "use try_cast to tolerate malformed input",
        value,
    )


def _overflow(value: Any, frm: T.DataType, to: T.DataType) -> Exception:
    return refuse(
        "CAST_OVERFLOW",
        f"The value {shown(value)} of the type {frm.sql()} cannot be cast to {to.sql()} due to an overflow",
        value,
    )


def _out_of_range(value: Any, to: T.Decimal) -> Exception:
    return refuse(
        "NUMERIC_VALUE_OUT_OF_RANGE",
        f"{shown(value)} cannot be represented as Decimal({to.precision}, {to.scale})",
        value,
    )


def fit_decimal(value: Decimal, to: T.Decimal, rounding: str = ROUND_HALF_UP) -> Decimal | None:
    """``value`` rounded to ``to``'s scale, or None when it then has more digits than ``to`` holds."""
    with localcontext() as ctx:
        ctx.prec = 100
        q = value.quantize(Decimal(1).scaleb(-to.scale), rounding=rounding)
    digits = len(q.as_tuple().digits) if q != 0 else 0
    exponent = q.as_tuple().exponent
    assert isinstance(exponent, int)
    integral = max(digits + exponent, 0)
    return q if integral <= to.precision - to.scale else None


def _per_row(arr: pa.Array, out: pa.DataType, try_: bool, fn: Callable[[Any], Any]) -> pa.Array:
    values = arr.to_pylist()
    cache: dict[Any, Any] = {}
    result: list[Any] = []
    for v in values:
        if v is None:
            result.append(None)
            continue
        if v in cache:
            result.append(cache[v])
            continue
        try:
            r = fn(v)
        except _Failed as exc:
            if not try_:
                raise exc.error from None
            r = None
        cache[v] = r
        result.append(r)
    return pa.array(result, type=out)


def _check(ok: bool, error: Exception) -> None:
    if not ok:
        raise _Failed(error)


# ---------------------------------------------------------------------------------------------- from strings
def _from_string(arr: pa.Array, to: T.DataType, try_: bool, tz: str) -> pa.Array:
    out = arrow_type(to)
    frm = T.STRING

    if to in _INT_RANGE:
        low, high = _INT_RANGE[to]

        def to_int(v: str) -> int:
            n = parsing.integer(v)
            _check(n is not None and low <= n <= high, _invalid(v, frm, to))
            return n  # type: ignore[return-value]

        return _per_row(arr, out, try_, to_int)
    if to in (T.FLOAT, T.DOUBLE):

        def to_float(v: str) -> float:
            f = parsing.floating(v)
            _check(f is not None, _invalid(v, frm, to))
            return f  # type: ignore[return-value]

        values = _per_row(arr, pa.float64(), try_, to_float)
        return values.cast(out, safe=False) if to == T.FLOAT else values
    if isinstance(to, T.Decimal):

        def to_decimal(v: str) -> Decimal:
            d = parsing.decimal(v)
            _check(d is not None, _invalid(v, frm, to))
            fitted = fit_decimal(d, to)  # type: ignore[arg-type]
            _check(fitted is not None, _out_of_range(d, to))
            return fitted  # type: ignore[return-value]

        return _per_row(arr, out, try_, to_decimal)
    if to == T.BOOLEAN:

        def to_bool(v: str) -> bool:
            b = parsing.boolean(v)
            _check(b is not None, _invalid(v, frm, to))
            return b  # type: ignore[return-value]

        return _per_row(arr, out, try_, to_bool)
    if to == T.DATE:

        def to_date(v: str) -> int:
            d = parsing.date(v)
            _check(d is not None, _invalid(v, frm, to))
            return d  # type: ignore[return-value]

        return _per_row(arr, pa.int32(), try_, to_date).cast(pa.date32())
    if to in (T.TIMESTAMP, T.TIMESTAMP_NTZ):
        ntz = to == T.TIMESTAMP_NTZ

        def to_ts(v: str) -> int:
            m = parse_timestamp(v, tz, ntz)
            _check(m is not None, _invalid(v, frm, to))
            return m  # type: ignore[return-value]

        return _per_row(arr, pa.int64(), try_, to_ts).cast(out)
    if to == T.BINARY:
        return pc.cast(arr, pa.binary())
    raise TypeError(f"no cast from STRING to {to.sql()}")


# ---------------------------------------------------------------------------------------------- to strings
def _to_string(arr: pa.Array, frm: T.DataType, tz: str) -> pa.Array:
    if frm == T.STRING:
        return arr
    if T.is_integral(frm):
        return pc.cast(arr, pa.string())
    if frm == T.BOOLEAN:
        return pc.if_else(arr, pa.scalar("true"), pa.scalar("false"))
    if frm in (T.FLOAT, T.DOUBLE):
        single = frm == T.FLOAT
        values = arr.to_pylist()
        return pa.array([None if v is None else text.java_float_text(v, single) for v in values], pa.string())
    if isinstance(frm, T.Decimal):
        return pa.array([None if v is None else text.decimal_text(v) for v in arr.to_pylist()], pa.string())
    if frm == T.DATE:
        days = numbers(arr, np.int64)
        mask = valid(arr)
        return pa.array([text.date_text(int(d)) if ok else None for d, ok in zip(days, mask, strict=True)], pa.string())
    if frm in (T.TIMESTAMP, T.TIMESTAMP_NTZ):
        micros = numbers(arr, np.int64)
        wall = zones.to_wall(micros, tz) if frm == T.TIMESTAMP else micros
        mask = valid(arr)
        return pa.array(
            [text.timestamp_text(int(w)) if ok else None for w, ok in zip(wall, mask, strict=True)], pa.string()
        )
    if frm == T.BINARY:

        def decoded(v: bytes) -> str:
            try:
                return v.decode("utf-8")
            except UnicodeDecodeError:  # Spark keeps the bytes as they are; an Arrow string cannot
                raise refuse(
                    INVALID_UTF8, f"the bytes {shown(v)} are not UTF-8, which a string deltalog holds must be", v
                ) from None

        return pa.array([None if v is None else decoded(v) for v in arr.to_pylist()], pa.string())
    if frm == T.VOID:
        return pa.nulls(len(arr), pa.string())
    raise TypeError(f"no cast from {frm.sql()} to STRING")


# ---------------------------------------------------------------------------------------------- numbers
def _int_dtype(out: pa.DataType) -> np.dtype[Any]:
    """numpy's integer of an Arrow integer type: ``DataType.to_pandas_dtype`` imports pandas on some pyarrow
    versions, and pandas is not a dependency of deltalog."""
    return np.dtype(f"int{out.bit_width}")


def _integral_to(arr: pa.Array, frm: T.DataType, to: T.DataType, try_: bool) -> pa.Array:
    out = arrow_type(to)
    if to in _INT_RANGE:
        low, high = _INT_RANGE[to]
        values, mask = numbers(arr, np.int64), valid(arr)
        bad = mask & ((values < low) | (values > high))
        if bad.any():
            if not try_:
                raise _overflow(int(values[bad][0]), frm, to)
            mask = mask & ~bad
        return from_numbers(np.where(mask, values, 0).astype(_int_dtype(out)), mask, out)
    if to in (T.FLOAT, T.DOUBLE):
        return pc.cast(arr, out, safe=False)
    if isinstance(to, T.Decimal):
        return _decimal_to(pc.cast(arr, pa.decimal128(20, 0)), T.Decimal(20, 0), to, try_)
    if to == T.BOOLEAN:
        return pc.not_equal(arr, pa.scalar(0, arr.type))
    if to == T.TIMESTAMP:
        values, mask = numbers(arr, object), valid(arr)
        return _seconds_to_timestamp([int(v) for v in values], mask, frm, try_)
    raise TypeError(f"no cast from {frm.sql()} to {to.sql()}")


def _seconds_to_timestamp(seconds: list[Any], mask: np.ndarray, frm: T.DataType, try_: bool) -> pa.Array:
    out: list[int | None] = []
    for s, ok in zip(seconds, mask, strict=True):
        if not ok:
            out.append(None)
            continue
        out.append(min(max(s * _MICROS, -(2**63)), 2**63 - 1))  # TimeUnit.toMicros saturates
    return pa.array(out, pa.int64()).cast(pa.timestamp("us", tz="UTC"))


def _fractional_to(arr: pa.Array, frm: T.DataType, to: T.DataType, try_: bool) -> pa.Array:
    out = arrow_type(to)
    if to in _INT_RANGE:
        low, high = _INT_RANGE[to]
        values, mask = numbers(arr, np.float64), valid(arr)
        truncated = np.trunc(values)
        with np.errstate(invalid="ignore"):
            bad = mask & ~((truncated >= low) & (truncated <= high))
        if bad.any():
            if not try_:
                first = values[bad][0]
                raise _overflow(text.java_float_text(float(first), frm == T.FLOAT), frm, to)
            mask = mask & ~bad
        safe = np.where(mask, truncated, 0)
        return from_numbers(safe.astype(_int_dtype(out)), mask, out)
    if to in (T.FLOAT, T.DOUBLE):
        return pc.cast(arr, out, safe=False)
    if isinstance(to, T.Decimal):

        def to_decimal(v: float) -> Decimal | None:
            if v != v or v in (float("inf"), float("-inf")):
                return None  # Spark: NaN and infinities cast to decimal are null, ANSI or not
            d = Decimal(text.java_float_text(v, frm == T.FLOAT).replace("E", "e"))
            fitted = fit_decimal(d, to)
            _check(fitted is not None, _out_of_range(d, to))
            return fitted

        return _per_row(arr, out, try_, to_decimal)
    if to == T.BOOLEAN:
        values, mask = numbers(arr, np.float64), valid(arr)
        return from_numbers(values != 0, mask, pa.bool_())
    if to == T.TIMESTAMP:

        def to_ts(v: float) -> int:
            _check(v == v and abs(v) != float("inf"), _overflow(v, frm, to))
            micros = int(v * _MICROS)
            _check(-(2**63) <= micros < 2**63, _overflow(v, frm, to))
            return micros

        return _per_row(arr, pa.int64(), try_, to_ts).cast(pa.timestamp("us", tz="UTC"))
    raise TypeError(f"no cast from {frm.sql()} to {to.sql()}")


def _decimal_to(arr: pa.Array, frm: T.Decimal, to: T.DataType, try_: bool) -> pa.Array:
    out = arrow_type(to)
    if isinstance(to, T.Decimal):

        def rescale(v: Decimal) -> Decimal:
            fitted = fit_decimal(v, to)
            _check(fitted is not None, _out_of_range(v, to))
            return fitted  # type: ignore[return-value]

        return _per_row(arr, out, try_, rescale)
    if to in _INT_RANGE:
        low, high = _INT_RANGE[to]

        def to_int(v: Decimal) -> int:
            n = int(v.to_integral_value(rounding=ROUND_DOWN))
            _check(low <= n <= high, _overflow(v, frm, to))
            return n

        return _per_row(arr, out, try_, to_int)
    if to in (T.FLOAT, T.DOUBLE):
        return pa.array([None if v is None else float(v) for v in arr.to_pylist()], out)
    if to == T.BOOLEAN:
        return pa.array([None if v is None else v != 0 for v in arr.to_pylist()], pa.bool_())
    if to == T.TIMESTAMP:

        def to_ts(v: Decimal) -> int:
            micros = int((v * _MICROS).to_integral_value(rounding=ROUND_DOWN))
            _check(-(2**63) <= micros < 2**63, _overflow(v, frm, to))
            return micros

        return _per_row(arr, pa.int64(), try_, to_ts).cast(pa.timestamp("us", tz="UTC"))
    raise TypeError(f"no cast from {frm.sql()} to {to.sql()}")


def _boolean_to(arr: pa.Array, to: T.DataType, try_: bool) -> pa.Array:
    as_int = pc.cast(arr, pa.int8())
    if to == T.BOOLEAN:
        return arr
    return _integral_to(as_int, T.BYTE, to, try_)


# ---------------------------------------------------------------------------------------------- datetimes
def _datetime_to(arr: pa.Array, frm: T.DataType, to: T.DataType, try_: bool, tz: str) -> pa.Array:
    mask = valid(arr)
    if frm == T.DATE:
        days = numbers(arr, np.int64)
        if (mask & ((days < -106_751_991) | (days > 106_751_990))).any():  # beyond a long of microseconds
            if not try_:
                raise refuse("ARITHMETIC_OVERFLOW", "long overflow: the date cannot be a timestamp")
            mask = mask & (days >= -106_751_991) & (days <= 106_751_990)
            days = np.where(mask, days, 0)
        wall = days * _DAY
        if to == T.TIMESTAMP_NTZ:
            return from_numbers(wall, mask, pa.timestamp("us"))
        return from_numbers(zones.from_wall(wall, tz), mask, pa.timestamp("us", tz="UTC"))
    micros = numbers(arr, np.int64)
    wall = zones.to_wall(micros, tz) if frm == T.TIMESTAMP else micros
    if to == T.DATE:
        return from_numbers(np.floor_divide(wall, _DAY), mask, pa.date32())
    if to == T.TIMESTAMP_NTZ:
        return from_numbers(wall, mask, pa.timestamp("us"))
    if to == T.TIMESTAMP:
        return from_numbers(zones.from_wall(wall, tz), mask, pa.timestamp("us", tz="UTC"))
    # a timestamp to a number: seconds since the epoch (floor for integral types); TIMESTAMP_NTZ its wall clock's
    if to == T.DOUBLE or to == T.FLOAT:
        return from_numbers(micros / _MICROS, mask, pa.float64()).cast(arrow_type(to), safe=False)
    seconds = np.floor_divide(micros, _MICROS)
    as_long = from_numbers(seconds, mask, pa.int64())
    if isinstance(to, T.Decimal):
        exact = pa.array(
            [None if v is None else Decimal(v) / _MICROS for v in numbers(arr, object).tolist()], pa.decimal128(38, 6)
        )
        exact = pa.array(
            [e if ok else None for e, ok in zip(exact.to_pylist(), mask, strict=True)], pa.decimal128(38, 6)
        )
        return _decimal_to(exact, T.Decimal(38, 6), to, try_)
    return _integral_to(as_long, T.LONG, to, try_)


def cast(arr: pa.Array, frm: T.DataType, to: T.DataType, try_: bool, tz: str) -> pa.Array:
    """``arr`` (of Spark type ``frm``) as ``to``; failures raise unless ``try_``."""
    if frm == to:
        return arr
    if frm == T.VOID:
        return pa.nulls(len(arr), arrow_type(to))
    if to == T.STRING:
        return _to_string(arr, frm, tz)
    if frm == T.STRING:
        return _from_string(arr, to, try_, tz)
    if T.is_integral(frm):
        return _integral_to(arr, frm, to, try_)
    if frm in (T.FLOAT, T.DOUBLE):
        return _fractional_to(arr, frm, to, try_)
    if isinstance(frm, T.Decimal):
        return _decimal_to(arr, frm, to, try_)
    if frm == T.BOOLEAN:
        return _boolean_to(arr, to, try_)
    if T.is_datetime(frm):
        return _datetime_to(arr, frm, to, try_, tz)
    if frm == T.BINARY and to == T.BINARY:
        return arr
    if isinstance(frm, T.Array) and isinstance(to, T.Array):
        values = cast(arr.flatten(), frm.element, to.element, try_, tz)
        return pa.ListArray.from_arrays(arr.offsets, values, mask=pc.is_null(arr))
    raise TypeError(f"no cast from {frm.sql()} to {to.sql()}")


__all__ = ["INVALID_UTF8", "cast", "fit_decimal", "parse_timestamp"]
