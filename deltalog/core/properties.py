"""Table properties (``metaData.configuration``) read with Delta Spark's syntax and defaults."""

from __future__ import annotations

import re
from collections.abc import Mapping

from deltalog.errors import DeltaLogError

_UNITS_MS = {
    "nanosecond": 1e-6,
    "microsecond": 1e-3,
    "millisecond": 1,
    "second": 1000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
    "week": 604_800_000,
}
_UNIT_ALIASES = {
    "ns": "nanosecond",
    "us": "microsecond",
    "ms": "millisecond",
    "s": "second",
    "sec": "second",
    "min": "minute",
    "mins": "minute",
    "h": "hour",
    "d": "day",
    "w": "week",
}
_PART = re.compile(r"([+-]?\d+(?:\.\d+)?)\s*([a-zA-Z]+)")

DEFAULT_LOG_RETENTION = "interval 30 days"
DEFAULT_DELETED_FILE_RETENTION = "interval 1 week"


class PropertyError(DeltaLogError, ValueError):
    """A table property holds a value that cannot mean anything (e.g. an interval in months)."""


def parse_interval_ms(text: str) -> int:
    """Milliseconds in a Spark calendar interval such as ``interval 1 days`` or ``2 weeks 3 hours``.

    Months and years are refused, as Spark refuses them: their length in milliseconds is not fixed.
    """
    s = text.strip().lower()
    if s.startswith("interval"):
        s = s[len("interval") :].strip()
    if not s:
        raise PropertyError(f"empty interval {text!r}")
    total = 0.0
    pos = 0
    for m in _PART.finditer(s):
        if s[pos : m.start()].strip():
            raise PropertyError(f"cannot parse interval {text!r}")
        pos = m.end()
        unit = _UNIT_ALIASES.get(m[2].lower(), m[2].lower())
        if unit not in _UNITS_MS and unit.endswith("s"):
            unit = unit[:-1]
        if unit in ("month", "year"):
            raise PropertyError(f"interval {text!r} uses {unit}s, which have no fixed length")
        if unit not in _UNITS_MS:
            raise PropertyError(f"unknown unit {m[2]!r} in interval {text!r}")
        total += float(m[1]) * _UNITS_MS[unit]
    if s[pos:].strip():
        raise PropertyError(f"cannot parse interval {text!r}")
    return int(total)


def get_bool(conf: Mapping[str, str], key: str, default: bool = False) -> bool:
    v = conf.get(key)
    if v is None:
        return default
    return str(v).strip().lower() == "true"


def get_int(conf: Mapping[str, str], key: str, default: int) -> int:
    v = conf.get(key)
    if v is None:
        return default
    try:
        return int(str(v).strip())
    except ValueError:
        raise PropertyError(f"table property {key}={v!r} is not an integer") from None


def get_interval_ms(conf: Mapping[str, str], key: str, default: str | None) -> int | None:
    v = conf.get(key, default)
    if v is None:
        return None
    try:
        return parse_interval_ms(v)
    except PropertyError as exc:
        raise PropertyError(f"table property {key}={v!r}: {exc}") from None


def txn_retention_ms(conf: Mapping[str, str]) -> int | None:
    return get_interval_ms(conf, "delta.setTransactionRetentionDuration", None)


def deleted_file_retention_ms(conf: Mapping[str, str]) -> int:
    v = get_interval_ms(conf, "delta.deletedFileRetentionDuration", DEFAULT_DELETED_FILE_RETENTION)
    assert v is not None
    return v


def log_retention_ms(conf: Mapping[str, str]) -> int:
    v = get_interval_ms(conf, "delta.logRetentionDuration", DEFAULT_LOG_RETENTION)
    assert v is not None
    return v


def column_mapping_mode(conf: Mapping[str, str]) -> str:
    return str(conf.get("delta.columnMapping.mode", "none")).strip().lower()


__all__ = [
    "PropertyError",
    "column_mapping_mode",
    "deleted_file_retention_ms",
    "get_bool",
    "get_int",
    "get_interval_ms",
    "log_retention_ms",
    "parse_interval_ms",
    "txn_retention_ms",
]
