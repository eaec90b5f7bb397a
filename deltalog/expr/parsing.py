"""Strings read as Spark reads them in a cast (pure: the zone of a timestamp is applied by
:mod:`deltalog.compute.casts`): integers, Java floating-point literals, decimals, booleans,
dates and timestamps (``DateTimeUtils.stringToDate`` / ``stringToTimestamp``)."""

from __future__ import annotations

import calendar
import datetime as dt
import re
from decimal import Decimal, InvalidOperation

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?")
_SPECIAL = {"inf": float("inf"), "+inf": float("inf"), "infinity": float("inf"), "+infinity": float("inf"),
            "-inf": float("-inf"), "-infinity": float("-inf"), "nan": float("nan")}  # fmt: skip
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_TRUE = {"t", "true", "y", "yes", "1"}
_FALSE = {"f", "false", "n", "no", "0"}
_DATE = re.compile(r"([+-]?[0-9]{4,7})(?:-([0-9]{1,2})(?:-([0-9]{1,2}))?)?")
_TIME = re.compile(r"([0-9]{1,2})(?::([0-9]{1,2})(?::([0-9]{1,2})(?:\.([0-9]*))?)?)?")
_ZONE = re.compile(
    r"\s*(Z|UTC|GMT|UT|[+-][0-9]{1,2}(?::?[0-9]{2}(?::?[0-9]{2})?)?|(?:UTC|GMT|UT)[+-][0-9:]+|[A-Za-z][A-Za-z0-9_/+-]*)"
)


_TRIMMED = (
    "".join(chr(c) for c in range(33))
    + "\x7f\u0085\u00a0\u1680\u2028\u2029\u202f\u205f\u3000"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
)


def trimmed(text: str) -> str:
    """Spark's ``trimAll``: whitespace and ISO control characters off both ends."""
    return text.strip(_TRIMMED)


def integer(text: str) -> int | None:
    t = trimmed(text)
    return int(t) if _INT.fullmatch(t) else None


def floating(text: str) -> float | None:
    t = trimmed(text)
    special = _SPECIAL.get(t.lower())
    if special is not None:
        return special
    if not _FLOAT.fullmatch(t):
        return None
    body = t[:-1] if t[-1] in "fFdD" else t
    return float(body)


def decimal(text: str) -> Decimal | None:
    t = trimmed(text)
    if not _DECIMAL.fullmatch(t):
        return None
    try:
        return Decimal(t)
    except InvalidOperation:
        return None


def boolean(text: str) -> bool | None:
    t = trimmed(text).lower()
    return True if t in _TRUE else False if t in _FALSE else None


def _days(year: int, month: int, day: int) -> int | None:
    if not (1 <= month <= 12) or not 1 <= day <= (calendar.monthrange(year, month)[1] if 1 <= year <= 9999 else 31):
        return None
    if not 1 <= year <= 9999:
        return None
    return (dt.date(year, month, day) - dt.date(1970, 1, 1)).days


def date(text: str) -> int | None:
    """Days since the epoch of a date string (``yyyy``, ``yyyy-[m]m``, ``yyyy-[m]m-[d]d``, then anything after
    a space or ``T``), or None when Spark finds it malformed."""
    t = trimmed(text)
    m = _DATE.match(t)
    if m is None:
        return None
    rest = t[m.end() :]
    if rest and (m.group(3) is None or rest[0] not in " T"):
        return None
    return _days(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))


def timestamp_wall(text: str) -> tuple[int, str | None] | None:
    """A timestamp string as Spark parses it: a date, then optionally ``T`` or a space and
    ``h:m[:s[.fraction]]`` and a zone (``Z``, ``+hh:mm``, ``UTC``, a region). Returns the wall-clock
    microseconds and the zone written (None: none), or None when Spark finds it malformed."""
    t = trimmed(text)
    m = _DATE.match(t)
    if m is None:
        return None
    days = _days(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))
    if days is None:
        return None
    rest = t[m.end() :]
    micros = 0
    zone_name: str | None = None
    if rest:
        if m.group(3) is None or rest[0] not in " T":
            return None
        rest = rest[1:]
        tm = _TIME.match(rest)
        if tm is not None and tm.end() > 0:
            h, mi, s = int(tm.group(1)), int(tm.group(2) or 0), int(tm.group(3) or 0)
            if tm.group(2) is None:
                return None
            if h > 23 or mi > 59 or s > 59:
                return None
            frac = (tm.group(4) or "")[:6].ljust(6, "0")
            micros = ((h * 60 + mi) * 60 + s) * 1_000_000 + int(frac)
            rest = rest[tm.end() :]
        if rest.strip():
            zm = _ZONE.fullmatch(rest)
            if zm is None:
                return None
            zone_name = "UTC" if zm.group(1) == "UT" else zm.group(1)
    return days * 86_400_000_000 + micros, zone_name


__all__ = ["boolean", "date", "decimal", "floating", "integer", "timestamp_wall", "trimmed"]
