"""Date and time functions in the session time zone, with Spark's meaning (``DateTimeUtils``): ISO weeks,
Sunday-first day of week, month ends kept by ``add_months``, ``months_between``'s 31-day months, truncation
in local time, Java's datetime patterns; a malformed string or an impossible date raises under ANSI."""

from __future__ import annotations

import calendar
import datetime as dt
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.compute import casts, patterns, zones
from deltalog.compute.columns import OUT_OF_RANGE, Session, from_numbers, numbers, per_value, valid
from deltalog.compute.failures import refuse, shown
from deltalog.expr import tree as X
from deltalog.expr import types as T

_DAY = 86_400_000_000
_MICROS = 1_000_000
_EPOCH = dt.date(1970, 1, 1)


def _days(arr: pa.Array) -> np.ndarray:
    return numbers(arr, np.int64)


_FIRST_DAY, _LAST_DAY = -719162, 2932896  # 0001-01-01 and 9999-12-31


def _in_range(days: pa.Array) -> None:
    values, ok = numbers(days, np.int64), valid(days)
    if (ok & ((values < _FIRST_DAY) | (values > _LAST_DAY))).any():
        raise refuse(OUT_OF_RANGE, "a date outside the years 1 to 9999 is beyond what deltalog evaluates")


def _date_part(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    d = args[0]
    _in_range(d)
    fn = {
        "year": pc.year,
        "month": pc.month,
        "day": pc.day,
        "dayofyear": pc.day_of_year,
        "quarter": pc.quarter,
        "weekofyear": pc.iso_week,
    }.get(call.name)
    if fn is not None:
        return fn(d).cast(pa.int32())
    # dayofweek: 1 = Sunday .. 7 = Saturday
    return pc.day_of_week(d, count_from_zero=False, week_start=7).cast(pa.int32())


def _wall(ev: Session, arr: pa.Array, t: T.DataType | None) -> np.ndarray:
    micros = numbers(arr, np.int64)
    return micros if t == T.TIMESTAMP_NTZ else zones.to_wall(micros, ev.session_time_zone)


def _time_part(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    wall = _wall(ev, args[0], call.args[0].type)
    in_day = np.mod(wall, _DAY) // _MICROS
    value = {"hour": in_day // 3600, "minute": (in_day // 60) % 60, "second": in_day % 60}[call.name]
    return from_numbers(value.astype(np.int32), valid(args[0]), pa.int32())


def _month_start(days: int) -> dt.date:
    d = _EPOCH + dt.timedelta(days=days)
    return d.replace(day=1)


def _trunc_date(days: int, unit: str) -> int | None:
    d = _EPOCH + dt.timedelta(days=days)
    u = unit.upper()
    if u in ("YEAR", "YYYY", "YY"):
        t = d.replace(month=1, day=1)
    elif u == "QUARTER":
        t = d.replace(month=(d.month - 1) // 3 * 3 + 1, day=1)
    elif u in ("MONTH", "MM", "MON"):
        t = d.replace(day=1)
    elif u == "WEEK":
        t = d - dt.timedelta(days=d.weekday())
    else:
        return None
    return (t - _EPOCH).days


def _trunc(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    days = per_value([args[0].cast(pa.int32()), args[1]], pa.int32(), lambda d, u: _trunc_date(d, u))
    return days.cast(pa.date32())


def _date_trunc(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    tz = ev.session_time_zone

    def trunc(unit: str, micros: int) -> int | None:
        u = unit.upper()
        if u == "MICROSECOND":
            return micros
        if u == "MILLISECOND":
            return micros - micros % 1000
        if u == "SECOND":
            return micros - micros % _MICROS
        wall = int(zones.to_wall(np.array([micros], dtype=np.int64), tz)[0])
        size = {"MINUTE": 60 * _MICROS, "HOUR": 3600 * _MICROS, "DAY": _DAY, "DD": _DAY}.get(u)
        if size is not None:
            truncated = wall - wall % size
        else:
            days = _trunc_date(wall // _DAY, u)
            if days is None:
                return None
            truncated = days * _DAY
        return int(zones.from_wall(np.array([truncated], dtype=np.int64), tz)[0])

    return per_value([args[0], args[1].cast(pa.int64())], pa.int64(), trunc).cast(pa.timestamp("us", tz="UTC"))


def _format(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    tz = ev.session_time_zone
    ntz = call.args[0].type == T.TIMESTAMP_NTZ

    def fmt(micros: int, pattern: str) -> str:
        wall = micros if ntz else int(zones.to_wall(np.array([micros], dtype=np.int64), tz)[0])
        return patterns.format_wall(wall, pattern, tz, micros)

    return per_value([args[0].cast(pa.int64()), args[1]], pa.string(), fmt)


def _parse_failure(value: str, pattern: str) -> Exception:
    return refuse(
        "CANNOT_PARSE_TIMESTAMP",
        f"Text {shown(value)} could not be parsed with the pattern {shown(pattern)}; try_to_timestamp tolerates it",
        value,
    )


def _parsed(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    """``args[0]`` read with the pattern ``args[1]`` as TIMESTAMP micros (an array of int64)."""
    tz = ev.session_time_zone
    if call.args[0].type in (T.DATE, T.TIMESTAMP, T.TIMESTAMP_NTZ):
        t = call.args[0].type
        assert t is not None
        return casts.cast(args[0], t, T.TIMESTAMP, False, tz).cast(pa.int64())

    def read(value: str, pattern: str) -> int:
        micros = patterns.parse(value, pattern, tz)
        if micros is None:
            raise _parse_failure(value, pattern)
        return micros

    return per_value(args[:2], pa.int64(), read)


def _to_date(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    if len(args) == 1:
        return args[0]
    micros = _parsed(ev, call, args).cast(pa.timestamp("us", tz="UTC"))
    return casts.cast(micros, T.TIMESTAMP, T.DATE, False, ev.session_time_zone)


def _to_timestamp(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    if len(args) == 1:
        return args[0]
    return _parsed(ev, call, args).cast(pa.timestamp("us", tz="UTC"))


def _date_add(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    days, amount = _days(args[0]), numbers(args[1], np.int64)
    sign = -1 if call.name == "date_sub" else 1
    out = (days + sign * amount + 2**31) % 2**32 - 2**31  # Spark adds the days as ints, which wrap
    ok = valid(args[0]) & valid(args[1])
    return from_numbers(out.astype(np.int32), ok, pa.date32())


def _add_months_days(days: int, months: int) -> int:
    d = _EPOCH + dt.timedelta(days=days)
    total = d.year * 12 + d.month - 1 + months
    year, month = divmod(total, 12)
    if not 1 <= year <= 9999:
        raise refuse("DATETIME_OVERFLOW", f"adding {months} months to {d} leaves the supported range")
    last = calendar.monthrange(year, month + 1)[1]
    return (dt.date(year, month + 1, min(d.day, last)) - _EPOCH).days


def _add_months(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    return per_value([args[0].cast(pa.int32()), args[1]], pa.int32(), _add_months_days).cast(pa.date32())


def _add_interval_months(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    t = call.type
    tz = ev.session_time_zone
    if t == T.DATE:
        return _add_months(ev, call, args)

    def shift(micros: int, months: int) -> int:
        wall = micros if t == T.TIMESTAMP_NTZ else int(zones.to_wall(np.array([micros], dtype=np.int64), tz)[0])
        days, rest = divmod(wall, _DAY)
        moved = _add_months_days(days, months) * _DAY + rest
        return moved if t == T.TIMESTAMP_NTZ else int(zones.from_wall(np.array([moved], dtype=np.int64), tz)[0])

    out = per_value([args[0].cast(pa.int64()), args[1]], pa.int64(), shift)
    return out.cast(pa.timestamp("us") if t == T.TIMESTAMP_NTZ else pa.timestamp("us", tz="UTC"))


def _add_interval_micros(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    t = call.type
    tz = ev.session_time_zone
    if t == T.TIMESTAMP and not zones.is_utc(tz):
        # Spark adds whole days in the local calendar (a day across a DST change is 23 or 25 hours)
        def shift(micros: int, interval: int) -> int:
            if interval % _DAY:
                return micros + interval
            wall = int(zones.to_wall(np.array([micros], dtype=np.int64), tz)[0]) + interval
            return int(zones.from_wall(np.array([wall], dtype=np.int64), tz)[0])

        out = per_value([args[0].cast(pa.int64()), args[1].cast(pa.int64())], pa.int64(), shift)
        return out.cast(pa.timestamp("us", tz="UTC"))
    try:
        out = pc.add_checked(args[0].cast(pa.int64()), args[1].cast(pa.int64()))
    except pa.ArrowInvalid:
        raise refuse("ARITHMETIC_OVERFLOW", "the timestamp is out of range") from None
    return out.cast(pa.timestamp("us") if t == T.TIMESTAMP_NTZ else pa.timestamp("us", tz="UTC"))


def _datediff(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    a, b = _days(args[0]), _days(args[1])
    return from_numbers((a - b).astype(np.int32), valid(args[0]) & valid(args[1]), pa.int32())


def _split(days: int) -> tuple[int, int, int, int]:
    d = _EPOCH + dt.timedelta(days=days)
    last = calendar.monthrange(d.year, d.month)[1]
    return d.year, d.month, d.day, last - d.day


def _months_between(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    tz = ev.session_time_zone

    def between(t1: int, t2: int, round_off: bool) -> float:
        w1, w2 = (int(x) for x in zones.to_wall(np.array([t1, t2], dtype=np.int64), tz))
        d1, d2 = w1 // _DAY, w2 // _DAY
        y1, m1, day1, end1 = _split(d1)
        y2, m2, day2, end2 = _split(d2)
        diff = float((y1 * 12 + m1) - (y2 * 12 + m2))
        if day1 == day2 or (end1 == 0 and end2 == 0):
            return diff
        # seconds since local midnight as elapsed time (Spark: time - daysToMicros(date, zone)), not wall time
        m1, m2 = (int(x) for x in zones.from_wall(np.array([d1 * _DAY, d2 * _DAY], dtype=np.int64), tz))
        s1 = (t1 - m1) // _MICROS
        s2 = (t2 - m2) // _MICROS
        seconds = (day1 - day2) * 86_400 + s1 - s2
        value = diff + seconds / (31 * 86_400)
        return math.floor(value * 1e8 + 0.5) / 1e8 if round_off else value

    return per_value([args[0].cast(pa.int64()), args[1].cast(pa.int64()), args[2]], pa.float64(), between)


def _current_date(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    wall = int(zones.to_wall(np.array([ev.now_micros], dtype=np.int64), ev.session_time_zone)[0])
    return pa.array([wall // _DAY] * ev.num_rows, pa.int32()).cast(pa.date32())


def _current_timestamp(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    return pa.array([ev.now_micros] * ev.num_rows, pa.int64()).cast(pa.timestamp("us", tz="UTC"))


def _make_date(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    def make(y: int, m: int, d: int) -> int:
        try:
            return (dt.date(y, m, d) - _EPOCH).days
        except ValueError:
            raise refuse(
                "DATETIME_FIELD_OUT_OF_BOUNDS",
                f"make_date({y}, {m}, {d}) is not a valid date; use try_make_date",
                (y, m, d),
            ) from None

    return per_value(args, pa.int32(), make).cast(pa.date32())


def _unix_timestamp(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    micros = _parsed(ev, call, args) if len(args) == 2 else args[0].cast(pa.int64())
    values, ok = numbers(micros, np.int64), valid(micros)
    whole = np.where(values < 0, -((-values) // _MICROS), values // _MICROS)  # Java's division: toward zero
    return from_numbers(whole, ok, pa.int64())


def _from_unixtime(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    tz = ev.session_time_zone

    def fmt(seconds: int, pattern: str) -> str:
        micros = seconds * _MICROS
        wall = int(zones.to_wall(np.array([micros], dtype=np.int64), tz)[0])
        return patterns.format_wall(wall, pattern, tz, micros)

    return per_value(args, pa.string(), fmt)


KERNELS = {
    **dict.fromkeys(("year", "month", "day", "dayofweek", "dayofyear", "quarter", "weekofyear"), _date_part),
    **dict.fromkeys(("hour", "minute", "second"), _time_part),
    "trunc": _trunc,
    "date_trunc": _date_trunc,
    "date_format": _format,
    "to_date": _to_date,
    "to_timestamp": _to_timestamp,
    "date_add": _date_add,
    "date_sub": _date_add,
    "add_months": _add_months,
    "add_interval_months": _add_interval_months,
    "add_interval_micros": _add_interval_micros,
    "datediff": _datediff,
    "months_between": _months_between,
    "current_date": _current_date,
    "current_timestamp": _current_timestamp,
    "make_date": _make_date,
    "unix_timestamp": _unix_timestamp,
    "from_unixtime": _from_unixtime,
}

__all__ = ["KERNELS"]
