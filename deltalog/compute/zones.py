"""Instants and wall-clock times in a session time zone, with Java's rules (``java.time``): a wall time that
falls in a daylight-saving gap moves forward by the gap, an ambiguous one takes the earlier offset."""

from __future__ import annotations

import datetime as dt
import functools
import zoneinfo

import numpy as np

from deltalog.errors import InvalidArgumentError

_EPOCH = dt.datetime(1970, 1, 1)
_MICROS = 1_000_000
_UTC_NAMES = {"UTC", "Z", "GMT", "Etc/UTC", "Etc/GMT", "UCT", "Zulu", "+00:00"}


@functools.cache
def zone(name: str) -> dt.tzinfo:
    """The zone named ``name``: a region (``America/Los_Angeles``), ``UTC`` or an offset (``+01:00``)."""
    if name in _UTC_NAMES:
        return dt.timezone.utc
    offset = _offset(name)
    if offset is not None:
        return dt.timezone(offset)
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise InvalidArgumentError(
            f"unknown time zone {name!r} (a region such as 'America/Los_Angeles', or 'UTC')"
        ) from None


def _offset(name: str) -> dt.timedelta | None:
    text = name[3:] if name[:3] in ("UTC", "GMT") and len(name) > 3 else name
    if not text or text[0] not in "+-":
        return None
    sign = -1 if text[0] == "-" else 1
    body = text[1:].replace(":", "")
    if not body.isdigit() or len(body) not in (1, 2, 4, 6):
        return None
    hours = int(body[:2]) if len(body) >= 2 else int(body)
    minutes = int(body[2:4]) if len(body) >= 4 else 0
    seconds = int(body[4:6]) if len(body) >= 6 else 0
    if hours > 18 or minutes > 59 or seconds > 59:
        return None
    return sign * dt.timedelta(hours=hours, minutes=minutes, seconds=seconds)


def is_utc(name: str) -> bool:
    return zone(name) is dt.timezone.utc


_FIRST = -62135596800 + 2 * 86_400  # 0001-01-03 in seconds since the epoch
_LAST = 253402300799 - 2 * 86_400  # 9999-12-29


def _offset_seconds_at_instant(tz: dt.tzinfo, seconds: int) -> int:
    # beyond Python's years the zone's rules at the edge hold (Java's zone rules repeat the last ones too)
    seconds = min(max(seconds, _FIRST), _LAST)
    when = _EPOCH + dt.timedelta(seconds=seconds)
    offset = when.replace(tzinfo=dt.timezone.utc).astimezone(tz).utcoffset()
    return int(offset.total_seconds()) if offset is not None else 0


def _offset_seconds_at_wall(tz: dt.tzinfo, seconds: int) -> int:
    seconds = min(max(seconds, _FIRST), _LAST)
    wall = _EPOCH + dt.timedelta(seconds=seconds)
    # fold=0: an ambiguous time takes its first (earlier) offset, a time in a gap the offset before the gap,
    # which moves it forward by the gap: java.time's ZonedDateTime.ofLocal
    offset = wall.replace(tzinfo=tz, fold=0).utcoffset()
    return int(offset.total_seconds()) if offset is not None else 0


def _in_range(seconds: np.ndarray) -> None:
    if len(seconds) and (seconds.min() < _FIRST or seconds.max() > _LAST):
        from deltalog.compute.columns import OUT_OF_RANGE
        from deltalog.compute.failures import refuse

        raise refuse(
            OUT_OF_RANGE,
            "a timestamp outside the years 1 to 9999 has no offset deltalog knows in a zone other than UTC",
        )


def to_wall(micros: np.ndarray, name: str) -> np.ndarray:
    """UTC instants (µs) as wall-clock µs in zone ``name``."""
    tz = zone(name)
    if tz is dt.timezone.utc:
        return micros
    seconds = np.floor_divide(micros, _MICROS)
    _in_range(seconds)
    uniq, inverse = np.unique(seconds, return_inverse=True)
    offsets = np.array([_offset_seconds_at_instant(tz, int(s)) for s in uniq], dtype=np.int64)
    return micros + offsets[inverse] * _MICROS


def from_wall(micros: np.ndarray, name: str) -> np.ndarray:
    """Wall-clock µs in zone ``name`` as UTC instants (µs)."""
    tz = zone(name)
    if tz is dt.timezone.utc:
        return micros
    seconds = np.floor_divide(micros, _MICROS)
    _in_range(seconds)
    uniq, inverse = np.unique(seconds, return_inverse=True)
    offsets = np.array([_offset_seconds_at_wall(tz, int(s)) for s in uniq], dtype=np.int64)
    return micros - offsets[inverse] * _MICROS


def offset_seconds(micros: int, name: str) -> int:
    """The zone's offset from UTC at one instant, in seconds."""
    return _offset_seconds_at_instant(zone(name), micros // _MICROS)


__all__ = ["from_wall", "is_utc", "offset_seconds", "to_wall", "zone"]
