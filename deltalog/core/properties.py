"""Table properties (``metaData.configuration``) read with Delta Spark's syntax and defaults.

Reading is lenient where a value has one obvious meaning; a value that has none is a :class:`PropertyError`
naming the key and the value and saying how to repair the table, since the table may have been written by
another engine and the reader is the one who has to fix it. Which values may be *written* is
:mod:`deltalog.core.property_rules`'.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from deltalog.errors import CorruptLogError, PropertyError

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
#: the checkpoint writer's codecs (``delta.parquet.compression.codec``; pyarrow has no LZO writer)
PARQUET_CODECS = ("snappy", "gzip", "zstd", "lz4", "brotli", "none")
DEFAULT_DELETED_FILE_RETENTION = "interval 1 week"


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


def unusable(key: str, value: object, reason: str) -> PropertyError:
    """The error for a table's value that cannot be used, with the repair (which works on such a table)."""
    return PropertyError(
        f"table property {key}={value!r} {reason}; fix the table with set_properties({{{key!r}: <valid value>}}) "
        f"or unset_properties([{key!r}])",
        key=key,
        value=str(value),
    )


def get_bool(conf: Mapping[str, str], key: str, default: bool = False) -> bool:
    v = conf.get(key)
    if v is None:
        return default
    return str(v).strip().lower() == "true"


def get_strict_bool(conf: Mapping[str, str], key: str, default: bool) -> bool:
    """A boolean that must be ``true`` or ``false`` (any case): for maintenance, where reading ``yes`` as
    false would silently do something else than the table asks."""
    v = conf.get(key)
    if v is None:
        return default
    low = str(v).strip().lower()
    if low not in ("true", "false"):
        raise unusable(key, v, "is not true or false")
    return low == "true"


def get_int(conf: Mapping[str, str], key: str, default: int) -> int:
    v = conf.get(key)
    if v is None:
        return default
    try:
        return int(str(v).strip())
    except ValueError:
        raise unusable(key, v, "is not an integer") from None


def get_interval_ms(conf: Mapping[str, str], key: str, default: str | None) -> int | None:
    v = conf.get(key, default)
    if v is None:
        return None
    try:
        return parse_interval_ms(v)
    except PropertyError as exc:
        raise unusable(key, v, f"is not a usable interval ({exc})") from None


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


def checkpoint_interval(conf: Mapping[str, str]) -> int:
    """``delta.checkpointInterval`` (default 10), which must be positive: with 0 or less no automatic
    checkpoint would ever be written, and reads would slow down with every commit."""
    n = get_int(conf, "delta.checkpointInterval", 10)
    if n <= 0:
        raise unusable("delta.checkpointInterval", conf.get("delta.checkpointInterval"), "is not a positive integer")
    return n


def checkpoint_stats_json(conf: Mapping[str, str]) -> bool:
    """``delta.checkpoint.writeStatsAsJson``: checkpoints carry each add's ``stats`` string (default true)."""
    return get_bool(conf, "delta.checkpoint.writeStatsAsJson", True)


def checkpoint_stats_struct(conf: Mapping[str, str]) -> bool:
    """``delta.checkpoint.writeStatsAsStruct``: checkpoints carry ``stats_parsed``. The spec's default is false
    (Delta Spark's is true); unset means the spec's default here."""
    return get_bool(conf, "delta.checkpoint.writeStatsAsStruct", False)


def parquet_codec(conf: Mapping[str, str]) -> str:
    """``delta.parquet.compression.codec`` (default snappy), lower-cased as pyarrow names codecs."""
    return str(conf.get("delta.parquet.compression.codec", "snappy")).lower()


def check_checkpoint_properties(conf: Mapping[str, str]) -> None:
    """Every property the checkpoint writer reads can be used; else the :class:`PropertyError` naming it.

    Checked before writing, so a bad value stops a checkpoint with its name, not with a parser's error
    halfway, and never silently (``writeStatsAsJson=yes`` would otherwise read as false).
    """
    deleted_file_retention_ms(conf)
    txn_retention_ms(conf)
    get_strict_bool(conf, "delta.checkpoint.writeStatsAsJson", True)
    get_strict_bool(conf, "delta.checkpoint.writeStatsAsStruct", False)
    codec = conf.get("delta.parquet.compression.codec")
    if codec is not None and str(codec).lower() not in PARQUET_CODECS:
        raise unusable("delta.parquet.compression.codec", codec, f"is not one of {', '.join(PARQUET_CODECS)}")


def check_string_values(conf: Mapping[str, object], source: str | None = None) -> None:
    """Refuse a configuration holding a value that is neither a string nor null (a JSON object or list another
    engine or a hand edit wrote; :func:`deltalog.core.codec` keeps it so the table loads and can be repaired).

    Before writing the configuration again: with ``source`` (a checkpoint of it, naming the file that holds the
    metaData) a :class:`CorruptLogError`; without (a commit of a metaData carrying it) a :class:`PropertyError`.
    Either says how to repair the table: ``set_properties`` or ``unset_properties`` of that key.
    """
    for key, value in conf.items():
        if value is None or isinstance(value, str):
            continue
        kinds: dict[type, str] = {dict: "a JSON object", list: "a JSON array"}
        kind = kinds.get(type(value), type(value).__name__)
        error = unusable(key, value, f"is {kind}, not a string (table properties are strings)")
        if source is None:
            raise error
        raise CorruptLogError(f"{source}: metaData.configuration: {error}", path=source)


def column_mapping_mode(conf: Mapping[str, str]) -> str:
    return str(conf.get("delta.columnMapping.mode", "none")).strip().lower()


__all__ = [
    "PARQUET_CODECS",
    "PropertyError",
    "check_checkpoint_properties",
    "check_string_values",
    "checkpoint_interval",
    "get_strict_bool",
    "unusable",
    "column_mapping_mode",
    "deleted_file_retention_ms",
    "get_bool",
    "get_int",
    "get_interval_ms",
    "log_retention_ms",
    "parse_interval_ms",
    "txn_retention_ms",
]
