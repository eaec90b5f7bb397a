"""Formatting and parsing instants with Spark's (Java's) datetime patterns, tokenised by
:mod:`deltalog.expr.datetime_patterns`."""

from __future__ import annotations

import calendar
import datetime as dt
import functools
import re
from dataclasses import dataclass

from deltalog.compute import zones
from deltalog.expr.datetime_patterns import Token, tokens

_MONTHS = [calendar.month_name[i] for i in range(1, 13)]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_EPOCH = dt.datetime(1970, 1, 1)


@functools.cache
def compiled(pattern: str) -> tuple[Token, ...]:
    return tokens(pattern)


def _offset_text(seconds: int, colon: bool, z: bool, with_minutes: bool = True) -> str:
    if seconds == 0 and z:
        return "Z"
    sign = "-" if seconds < 0 else "+"
    h, rem = divmod(abs(seconds), 3600)
    m = rem // 60
    if not with_minutes and m == 0:
        return f"{sign}{h:02d}"
    return f"{sign}{h:02d}:{m:02d}" if colon else f"{sign}{h:02d}{m:02d}"


def format_wall(wall_micros: int, pattern: str, zone_name: str, instant_micros: int | None = None) -> str:
    """``wall_micros`` (a local date-time) as ``pattern`` writes it; zone letters describe ``zone_name`` at
    ``instant_micros``."""
    when = _EPOCH + dt.timedelta(microseconds=wall_micros)
    offset = zones.offset_seconds(instant_micros, zone_name) if instant_micros is not None else 0
    out: list[str] = []
    for tok in compiled(pattern):
        c, n = tok.letter, tok.count
        if not c:
            out.append(tok.text)
        elif c == "y":
            y = when.year
            out.append(f"{y % 100:02d}" if n == 2 else f"{y:0{n}d}")
        elif c in "ML":
            out.append(
                _MONTHS[when.month - 1][:3] if n == 3 else _MONTHS[when.month - 1] if n >= 4 else f"{when.month:0{n}d}"
            )
        elif c == "d":
            out.append(f"{when.day:0{n}d}")
        elif c == "D":
            out.append(f"{when.timetuple().tm_yday:0{n}d}")
        elif c == "H":
            out.append(f"{when.hour:0{n}d}")
        elif c == "k":
            out.append(f"{when.hour or 24:0{n}d}")
        elif c == "h":
            out.append(f"{(when.hour % 12) or 12:0{n}d}")
        elif c == "K":
            out.append(f"{when.hour % 12:0{n}d}")
        elif c == "m":
            out.append(f"{when.minute:0{n}d}")
        elif c == "s":
            out.append(f"{when.second:0{n}d}")
        elif c == "S":
            out.append(f"{when.microsecond * 1000:09d}"[:n])
        elif c == "E":
            name = _DAYS[when.weekday()]
            out.append(name if n >= 4 else name[:3])
        elif c == "a":
            out.append("AM" if when.hour < 12 else "PM")
        elif c in "Qq":
            q = (when.month - 1) // 3 + 1
            out.append(
                f"{q:0{n}d}" if n <= 2 else f"Q{q}" if n == 3 else f"{q}{['st', 'nd', 'rd', 'th'][q - 1]} quarter"
            )
        elif c == "z":
            out.append(_zone_name(instant_micros, zone_name, n >= 4))
        elif c == "V":
            out.append(zone_name)
        elif c == "Z":
            if n <= 3:
                out.append(_offset_text(offset, False, False))
            elif n == 4:
                out.append("GMT" if offset == 0 else "GMT" + _offset_text(offset, True, False))
            else:
                out.append(_offset_text(offset, True, True))
        elif c in "Xx":
            z = c == "X"
            out.append(_offset_text(offset, n >= 3, z, n >= 2 or offset % 3600 != 0))
    return "".join(out)


def _zone_name(instant: int | None, zone_name: str, full: bool) -> str:
    tz = zones.zone(zone_name)
    if tz is dt.timezone.utc:
        return "Coordinated Universal Time" if full else "UTC"
    when = (_EPOCH + dt.timedelta(microseconds=instant or 0)).replace(tzinfo=dt.timezone.utc).astimezone(tz)
    return when.tzname() or zone_name


@dataclass(frozen=True)
class _Parser:
    regex: re.Pattern[str]
    fields: tuple[Token, ...]


@functools.cache
def _parser(pattern: str) -> _Parser:
    parts: list[str] = []
    fields: list[Token] = []
    for tok in compiled(pattern):
        c, n = tok.letter, tok.count
        if not c:
            parts.append(re.escape(tok.text))
            continue
        if c == "y":
            parts.append(r"([0-9]{2})" if n == 2 else rf"([+-]?[0-9]{{{max(n, 1)},9}})")
        elif c in "ML" and n >= 3:
            names = [m[:3] for m in _MONTHS] if n == 3 else _MONTHS
            parts.append("(" + "|".join(names) + ")")
        elif c == "E":
            names = [d[:3] for d in _DAYS] if n < 4 else _DAYS
            parts.append("(" + "|".join(names) + ")")
        elif c == "a":
            parts.append("(AM|PM)")
        elif c == "S":
            parts.append(rf"([0-9]{{1,{n}}})")
        elif c in "zV":
            parts.append(r"([A-Za-z][A-Za-z0-9_/+-]*)")
        elif c in "ZXx":
            parts.append(r"(Z|[+-][0-9]{2}(?::?[0-9]{2})?)")
        elif c == "D":
            parts.append(rf"([0-9]{{{n},3}})")
        else:
            parts.append(r"([0-9]{1,2})" if n == 1 else rf"([0-9]{{{n}}})")
        fields.append(tok)
    return _Parser(re.compile("".join(parts), re.IGNORECASE), tuple(fields))


def parse(text: str, pattern: str, session_zone: str) -> int | None:
    """Microseconds since the epoch (UTC) of ``text`` read with ``pattern``; None when it does not match or
    names no valid date-time. Fields the pattern lacks default as Java's do (1970-01-01 00:00)."""
    p = _parser(pattern)
    m = p.regex.fullmatch(text)
    if m is None:
        return None
    year, month, day, doy = 1970, 1, 1, None
    hour, minute, second, micros = 0, 0, 0, 0
    pm: bool | None = None
    half: int | None = None
    zone_name: str | None = None
    for tok, value in zip(p.fields, m.groups(), strict=True):
        c, n = tok.letter, tok.count
        if c == "y":
            year = 2000 + int(value) if n == 2 else int(value)
        elif c in "ML":
            low = value.lower()
            if n >= 3:
                month = next(i + 1 for i, name in enumerate(_MONTHS) if name.lower().startswith(low[:3]))
            else:
                month = int(value)
        elif c == "d":
            day = int(value)
        elif c == "D":
            doy = int(value)
        elif c in "Hk":
            hour = int(value) % 24 if c == "k" else int(value)
        elif c in "hK":
            half = int(value) % 12
        elif c == "m":
            minute = int(value)
        elif c == "s":
            second = int(value)
        elif c == "S":
            micros = int(value.ljust(9, "0")[:6])
        elif c == "a":
            pm = value.upper() == "PM"
        elif c in "zVZXx":
            zone_name = "UTC" if value.upper() == "Z" else value
    if half is not None:
        hour = half + (12 if pm else 0)
    try:
        if doy is not None:
            date = dt.date(year, 1, 1) + dt.timedelta(days=doy - 1)
            if date.year != year:
                return None
        else:
            date = dt.date(year, month, day)
        if hour > 23 or minute > 59 or second > 59:
            return None
    except ValueError:
        return None
    wall = ((date - _EPOCH.date()).days * 86_400 + hour * 3600 + minute * 60 + second) * 1_000_000 + micros
    import numpy as np

    name = zone_name or session_zone
    try:
        zones.zone(name)
    except Exception:
        return None
    return int(zones.from_wall(np.array([wall], dtype=np.int64), name)[0])


__all__ = ["compiled", "format_wall", "parse"]
