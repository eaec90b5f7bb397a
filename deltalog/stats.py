"""Delta per-file statistics (the ``stats`` field of an add) from a pyarrow Table, as Delta Spark writes them.

These follow Delta Spark's ``StatisticsCollection`` conventions, not the parquet footer's raw values
(``../shared/docs/delta-protocol-notes.md`` 2.12):

* ``numRecords``; ``minValues``/``maxValues``/``nullCount`` nested like the schema (structs recurse).
* min/max only for numbers, strings, dates and timestamps (Spark's ``SkippingEligibleDataType``); booleans,
  binary, arrays and maps get ``nullCount`` only. A column with no non-null value has no min or max.
* Timestamps are truncated to milliseconds; a max that lost sub-millisecond digits is rounded *up* by 1 ms,
  so the bound still covers the value. ``timestamp`` is written ``2024-04-27T12:00:00.123Z``;
  ``timestamp_ntz`` without the ``Z`` (a zone on an NTZ bound is a known writer bug).
* Strings keep a 32-character prefix; a truncated max gets the tie-breaker U+10FFFF appended (the prefix is
  extended past any U+10FFFF characters, as Spark's ``truncateMaxStringAgg`` does, so it stays an upper bound).
* Decimals are exact JSON numbers.
* NaN and infinities: JSON cannot hold them, and Spark orders NaN above every number, so a min/max that ignored
  NaN would let a reader skip a file holding rows that match ``x > 5`` under Spark semantics. A float column
  with a NaN or an infinite value therefore gets no min/max at all (readers treat that as "unknown": fail open).
* Only the first 32 leaf columns (``delta.dataSkippingNumIndexedCols``; ``-1`` = all), or the columns named in
  ``delta.dataSkippingStatsColumns``. Partition columns are not data columns and get no statistics.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

STRING_PREFIX = 32
DEFAULT_INDEXED_COLS = 32
TIE_BREAKER = "\U0010ffff"
_EPOCH = dt.datetime(1970, 1, 1)
_UNIT_PER_MS = {"s": None, "ms": 1, "us": 1_000, "ns": 1_000_000}


def _indexed_cols(configuration: Mapping[str, str] | None, override: int | None) -> int:
    if override is not None:
        return override
    raw = (configuration or {}).get("delta.dataSkippingNumIndexedCols")
    if raw is None:
        return DEFAULT_INDEXED_COLS
    try:
        n = int(str(raw).strip())
    except ValueError:
        raise ValueError(f"delta.dataSkippingNumIndexedCols must be an integer >= -1, not {raw!r}") from None
    if n < -1:
        raise ValueError(f"delta.dataSkippingNumIndexedCols must be an integer >= -1, not {raw!r}")
    return n


def _stats_columns(configuration: Mapping[str, str] | None) -> list[tuple[str, ...]] | None:
    raw = (configuration or {}).get("delta.dataSkippingStatsColumns")
    if raw is None or not raw.strip():
        return None
    return [tuple(p.strip().strip("`") for p in name.split(".")) for name in raw.split(",") if name.strip()]


def _leaves(t: pa.DataType, prefix: tuple[str, ...]) -> Iterable[tuple[str, ...]]:
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            yield from _leaves(t.field(i).type, (*prefix, t.field(i).name))
    else:
        yield prefix


def _selected_leaves(
    schema: pa.Schema, partition_columns: Sequence[str], configuration: Mapping[str, str] | None, n: int | None
) -> set[tuple[str, ...]]:
    data = [f for f in schema if f.name not in set(partition_columns)]
    leaves = [leaf for f in data for leaf in _leaves(f.type, (f.name,))]
    named = _stats_columns(configuration)
    if named is not None:
        wanted = set(named)
        # naming a struct selects every leaf under it
        return {leaf for leaf in leaves if any(leaf[: len(w)] == w for w in wanted)}
    limit = _indexed_cols(configuration, n)
    return set(leaves if limit < 0 else leaves[:limit])


# ---------------------------------------------------------------------------------------------- min/max values


def _ts_bounds(col: pa.ChunkedArray, t: pa.TimestampType) -> tuple[str | None, str | None] | None:
    ints = col.cast(pa.int64()) if not pa.types.is_integer(col.type) else col
    mm = pc.min_max(ints)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if lo is None or hi is None:
        return None
    per_ms = _UNIT_PER_MS[t.unit]
    if per_ms is None:  # seconds: already whole milliseconds
        lo_ms, hi_ms = lo * 1000, hi * 1000
    else:
        lo_ms = lo // per_ms  # floor, also right for instants before 1970
        hi_ms = -(-hi // per_ms)  # ceiling: +1 ms when sub-millisecond digits were dropped
    z = t.tz is not None
    return _fmt_ts(lo_ms, z), _fmt_ts(hi_ms, z)


def _fmt_ts(ms: int, utc: bool) -> str | None:
    """ISO-8601 with milliseconds; None (no bound: readers fail open) outside years 1..9999, e.g. a max of
    ``9999-12-31 23:59:59.999999`` whose rounded-up bound would be in year 10000."""
    try:
        value = _EPOCH + dt.timedelta(milliseconds=ms)
    except OverflowError:
        return None
    text = value.strftime("%Y-%m-%dT%H:%M:%S") if value.year >= 1000 else value.isoformat(timespec="seconds")
    return f"{text}.{value.microsecond // 1000:03d}" + ("Z" if utc else "")


def truncate_min_string(s: str, prefix: int = STRING_PREFIX) -> str:
    return s[:prefix]


def truncate_max_string(s: str, prefix: int = STRING_PREFIX) -> str | None:
    """An upper bound for ``s`` at most a little longer than ``prefix`` characters.

    ``prefix + U+10FFFF`` is above every string starting with ``prefix`` unless the next character is itself
    U+10FFFF; the prefix is extended past those. If nothing is left to cut, ``s`` itself is the bound.
    """
    if len(s) <= prefix:
        return s
    cut = prefix
    while cut < len(s) and s[cut] == TIE_BREAKER:
        cut += 1
    if cut >= len(s):
        return s
    return s[:cut] + TIE_BREAKER


def _bounds(col: pa.ChunkedArray) -> tuple[Any, Any] | None:
    """(min, max) as JSON-ready values, or None when the column gets no min/max."""
    t = col.type
    if pa.types.is_dictionary(t):
        col = col.cast(t.value_type)
        t = t.value_type
    if col.length() - col.null_count == 0:
        return None
    if pa.types.is_timestamp(t):
        return _ts_bounds(col, t)
    if pa.types.is_floating(t):
        if pc.any(pc.is_nan(col)).as_py() or pc.any(pc.is_inf(col)).as_py():
            return None
        mm = pc.min_max(col)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if lo is None or not math.isfinite(lo) or not math.isfinite(hi):
            return None
        return lo, hi
    eligible = (
        pa.types.is_integer(t)
        or pa.types.is_decimal(t)
        or pa.types.is_date(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
    )
    if not eligible:
        return None
    mm = pc.min_max(col)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if lo is None:
        return None
    if isinstance(lo, str):
        return truncate_min_string(lo), truncate_max_string(hi)
    if isinstance(lo, dt.date):
        return lo.isoformat(), hi.isoformat()
    return lo, hi


# ---------------------------------------------------------------------------------------------- assembly


def _flat(col: pa.ChunkedArray) -> list[pa.ChunkedArray]:
    """The children of a struct column with the parent's nulls merged in (a null struct has null fields)."""
    t = col.type
    chunks = [c.flatten() for c in col.chunks]
    return [pa.chunked_array([c[i] for c in chunks], type=t.field(i).type) for i in range(t.num_fields)]


def _collect(
    col: pa.ChunkedArray, path: tuple[str, ...], wanted: set[tuple[str, ...]]
) -> tuple[dict[str, Any] | Any, dict[str, Any] | Any, dict[str, Any] | int] | None:
    """(min, max, nullCount) for one column, nested for structs; None when nothing under it is indexed."""
    if pa.types.is_struct(col.type):
        mins: dict[str, Any] = {}
        maxs: dict[str, Any] = {}
        nulls: dict[str, Any] = {}
        for field, child in zip(col.type, _flat(col), strict=True):
            got = _collect(child, (*path, field.name), wanted)
            if got is None:
                continue
            lo, hi, n = got
            nulls[field.name] = n
            if lo is not None and lo != {}:
                mins[field.name] = lo
            if hi is not None and hi != {}:
                maxs[field.name] = hi
        if not nulls:
            return None
        return mins, maxs, nulls
    if path not in wanted:
        return None
    bounds = _bounds(col)
    lo, hi = bounds if bounds is not None else (None, None)
    return lo, hi, col.null_count


def file_stats(
    table: pa.Table,
    partition_columns: Sequence[str] = (),
    configuration: Mapping[str, str] | None = None,
    num_indexed_cols: int | None = None,
) -> dict[str, Any]:
    """The stats document of a data file holding ``table`` (partition columns, if present, are skipped)."""
    wanted = _selected_leaves(table.schema, partition_columns, configuration, num_indexed_cols)
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    skip = set(partition_columns)
    for field, col in zip(table.schema, table.columns, strict=True):
        if field.name in skip:
            continue
        got = _collect(col, (field.name,), wanted)
        if got is None:
            continue
        lo, hi, n = got
        nulls[field.name] = n
        if lo is not None and lo != {}:
            mins[field.name] = lo
        if hi is not None and hi != {}:
            maxs[field.name] = hi
    return {"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}


def dumps(value: Any) -> str:
    """JSON text for a stats document; decimals as exact JSON numbers, never NaN or Infinity."""
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{orjson.dumps(str(k)).decode()}:{dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{value} cannot be a JSON number")
        return format(value, "f")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value} cannot be a JSON number")
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    return orjson.dumps(value).decode()


def stats_json(
    table: pa.Table,
    partition_columns: Sequence[str] = (),
    configuration: Mapping[str, str] | None = None,
    num_indexed_cols: int | None = None,
) -> str:
    """:func:`file_stats` as the JSON string an add action carries."""
    return dumps(file_stats(table, partition_columns, configuration, num_indexed_cols))


__all__ = [
    "STRING_PREFIX",
    "TIE_BREAKER",
    "dumps",
    "file_stats",
    "stats_json",
    "truncate_max_string",
    "truncate_min_string",
]
