"""ISO-8601 date-times as people and writers spell them, parsed the same way on every supported Python.

Why not ``datetime.fromisoformat``: before Python 3.11 it takes only what ``isoformat()`` writes, so a
fraction of other than 3 or 6 digits (``20:14:57.9``, the way Spark prints partition values), ``Z``,
and ``+0200`` or ``+02`` offsets are refused there and accepted on 3.11. One grammar here keeps a
``--timestamp`` that works on one interpreter working on all of them.

Accepted: ``YYYY-MM-DD``, optionally followed by ``T`` or one space and ``HH``, ``HH:MM`` or
``HH:MM:SS``, a fraction after ``.`` or ``,`` (any number of digits; past microseconds it is truncated,
as 3.11 does), and a zone: ``Z``, ``±HH``, ``±HHMM`` or ``±HH:MM``.
"""

from __future__ import annotations

import datetime as dt
import re

_PATTERN = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})"
    r"(?:[T ](?P<hour>\d{2})(?::(?P<minute>\d{2})(?::(?P<second>\d{2})(?:[.,](?P<fraction>\d+))?)?)?"
    r"(?P<zone>[Zz]|[+-]\d{2}(?::?\d{2})?)?)?",
    re.ASCII,
)


def _zone(text: str) -> dt.timezone:
    if text in ("Z", "z"):
        return dt.timezone.utc
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:] or 0)
    if minutes >= 60:
        raise ValueError(f"offset minutes out of range: {text!r}")
    return dt.timezone(sign * dt.timedelta(hours=hours, minutes=minutes))


def parse_datetime(text: str) -> dt.datetime:
    """The date-time ``text`` spells (naive when it names no zone); ``ValueError`` when it is not one."""
    match = _PATTERN.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not an ISO-8601 date-time: {text!r}")
    year, month, day = (int(part) for part in match["date"].split("-"))
    fraction = (match["fraction"] or "")[:6].ljust(6, "0")
    zone = _zone(match["zone"]) if match["zone"] else None
    return dt.datetime(
        year,
        month,
        day,
        int(match["hour"] or 0),
        int(match["minute"] or 0),
        int(match["second"] or 0),
        int(fraction),
        tzinfo=zone,
    )


__all__ = ["parse_datetime"]
