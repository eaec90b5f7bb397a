"""Delta per-file statistics (the ``stats`` field of an add) from Arrow data, as Delta Spark writes them.

These follow Delta Spark's ``StatisticsCollection`` conventions, not the parquet footer's raw values
(``../shared/docs/delta-protocol-notes.md`` 2.12):

* ``numRecords``; ``minValues``/``maxValues``/``nullCount`` nested like the schema (structs recurse). The keys
  are the names of the Arrow data given, so a writer passes the file's columns under their physical names.
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
  ``delta.dataSkippingStatsColumns``, plus any the caller always wants (clustering columns). Partition columns
  are not data columns and get no statistics.

A :class:`StatsCollector` takes a file's rows batch by batch, so a streaming writer holds one running min, max
and null count per column, never the file.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

STRING_PREFIX = 32
DEFAULT_INDEXED_COLS = 32
TIE_BREAKER = "\U0010ffff"
NUM_INDEXED_COLS = "delta.dataSkippingNumIndexedCols"
STATS_COLUMNS = "delta.dataSkippingStatsColumns"
_EPOCH = dt.datetime(1970, 1, 1)
_UNIT_PER_MS = {"s": None, "ms": 1, "us": 1_000, "ns": 1_000_000}

Path = tuple[str, ...]


# ---------------------------------------------------------------------------------------------- which columns


def indexed_column_limit(configuration: Mapping[str, str] | None) -> int:
    """``delta.dataSkippingNumIndexedCols`` (default 32; -1 means every leaf column)."""
    raw = (configuration or {}).get(NUM_INDEXED_COLS)
    if raw is None:
        return DEFAULT_INDEXED_COLS
    try:
        n = int(str(raw).strip())
    except ValueError:
        raise ValueError(f"{NUM_INDEXED_COLS} must be an integer >= -1, not {raw!r}") from None
    if n < -1:
        raise ValueError(f"{NUM_INDEXED_COLS} must be an integer >= -1, not {raw!r}")
    return n


def split_column_path(text: str) -> Path:
    """``a.`b.c`.d`` -> ``("a", "b.c", "d")``: dots inside backticks belong to the name, ``````  is a backtick."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    i = 0
    while i < len(text):
        c = text[i]
        if c == "`":
            if quoted and text[i + 1 : i + 2] == "`":
                current.append("`")
                i += 1
            else:
                quoted = not quoted
        elif c == "." and not quoted:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(c)
        i += 1
    parts.append("".join(current).strip())
    return tuple(parts)


def stats_column_names(configuration: Mapping[str, str] | None) -> list[Path] | None:
    """The column paths named by ``delta.dataSkippingStatsColumns`` (as written: logical names), or None."""
    raw = (configuration or {}).get(STATS_COLUMNS)
    if raw is None or not raw.strip():
        return None
    items: list[str] = []
    current: list[str] = []
    quoted = False
    for c in raw:
        if c == "`":
            quoted = not quoted  # a doubled backtick toggles twice: still the same state
        if c == "," and not quoted:
            items.append("".join(current))
            current = []
        else:
            current.append(c)
    items.append("".join(current))
    return [split_column_path(item) for item in items if item.strip()]


def _leaves(t: pa.DataType, prefix: Path) -> Iterable[Path]:
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            yield from _leaves(t.field(i).type, (*prefix, t.field(i).name))
    else:
        yield prefix


def select_leaves(
    schema: pa.Schema, limit: int, named: Sequence[Path] | None, always: Iterable[Path] = ()
) -> set[Path]:
    """The leaf paths of ``schema`` (data columns only) that get statistics.

    ``named`` (``dataSkippingStatsColumns``, in ``schema``'s names) wins over ``limit``; naming a struct selects
    every leaf under it. ``always`` (clustering columns) are added either way (PROTOCOL "Clustered Table").
    """
    leaves = [leaf for f in schema for leaf in _leaves(f.type, (f.name,))]
    wanted = list(named) if named is not None else leaves if limit < 0 else leaves[:limit]
    wanted = [*wanted, *always]
    return {leaf for leaf in leaves if any(leaf[: len(w)] == tuple(w) for w in wanted)}


# ---------------------------------------------------------------------------------------------- bounds


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


def _kind(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        return _kind(t.value_type)
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_floating(t):
        return "float"
    if (
        pa.types.is_integer(t)
        or pa.types.is_decimal(t)
        or pa.types.is_date(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_string_view(t)
    ):
        return "ordered"
    return "count"  # booleans, binary, arrays, maps: nullCount only


@dataclass
class _Leaf:
    """The running statistics of one leaf column."""

    type: pa.DataType
    kind: str
    nulls: int = 0
    lo: Any = None
    hi: Any = None
    unbounded: bool = False  # a NaN or infinity was seen

    def update(self, arr: pa.Array | pa.ChunkedArray) -> None:
        self.nulls += arr.null_count
        if self.kind == "count" or self.unbounded or len(arr) == arr.null_count:
            return
        if pa.types.is_dictionary(arr.type):
            arr = arr.cast(arr.type.value_type)
        if self.kind == "float" and pc.any(pc.invert(pc.is_finite(arr))).as_py():  # a NaN or an infinity
            self.unbounded = True
            return
        if self.kind == "timestamp":
            arr = arr.cast(pa.int64())
        mm = pc.min_max(arr)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if lo is None:
            return
        self.lo = lo if self.lo is None else min(self.lo, lo)
        self.hi = hi if self.hi is None else max(self.hi, hi)

    def bounds(self) -> tuple[Any, Any]:
        """(min, max) as JSON-ready values; (None, None) when the column gets none."""
        if self.lo is None or self.unbounded or self.kind == "count":
            return None, None
        if self.kind == "timestamp":
            t = self.type.value_type if pa.types.is_dictionary(self.type) else self.type
            per_ms = _UNIT_PER_MS[t.unit]
            if per_ms is None:  # seconds: already whole milliseconds
                lo_ms, hi_ms = self.lo * 1000, self.hi * 1000
            else:
                lo_ms = self.lo // per_ms  # floor, also right for instants before 1970
                hi_ms = -(-self.hi // per_ms)  # ceiling: +1 ms when sub-millisecond digits were dropped
            return _fmt_ts(lo_ms, t.tz is not None), _fmt_ts(hi_ms, t.tz is not None)
        if self.kind == "float" and (not math.isfinite(self.lo) or not math.isfinite(self.hi)):
            return None, None
        if isinstance(self.lo, str):
            return truncate_min_string(self.lo), truncate_max_string(self.hi)
        if isinstance(self.lo, dt.date):
            return self.lo.isoformat(), self.hi.isoformat()
        return self.lo, self.hi


class StatsCollector:
    """Statistics of one data file, fed its rows batch by batch (all with ``schema``)."""

    def __init__(self, schema: pa.Schema, leaves: set[Path]) -> None:
        self.schema = schema
        self.num_records = 0
        self._leaves: dict[Path, _Leaf] = {}
        self._used: dict[Path, bool] = {}  # every struct path that holds a wanted leaf
        for f in schema:
            self._plan(f.type, (f.name,), leaves)

    def _plan(self, t: pa.DataType, path: Path, wanted: set[Path]) -> bool:
        if pa.types.is_struct(t):
            used = [self._plan(t.field(i).type, (*path, t.field(i).name), wanted) for i in range(t.num_fields)]
            self._used[path] = any(used)
            return any(used)
        if path in wanted:
            self._leaves[path] = _Leaf(t, _kind(t))
            return True
        return False

    def update(self, data: pa.RecordBatch | pa.Table) -> None:
        self.num_records += data.num_rows
        for f, col in zip(data.schema, data.columns, strict=True):
            self._update(col, (f.name,))

    def _update(self, arr: pa.Array | pa.ChunkedArray, path: Path) -> None:
        """One column (all its chunks at once: one kernel call per leaf, not per chunk)."""
        if self._used.get(path):
            # flatten() merges the parent's nulls into the children: a null struct has null fields
            chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
            flat = [c.flatten() for c in chunks]
            for i, field in enumerate(arr.type):
                self._update(pa.chunked_array([f[i] for f in flat], type=field.type), (*path, field.name))
        elif path in self._leaves:
            self._leaves[path].update(arr)

    def stats(self) -> dict[str, Any]:
        """The stats document (``tightBounds`` is left out: fresh files have tight bounds, its default)."""
        mins: dict[str, Any] = {}
        maxs: dict[str, Any] = {}
        nulls: dict[str, Any] = {}
        for f in self.schema:
            self._assemble(f.type, (f.name,), mins, maxs, nulls)
        return {"numRecords": self.num_records, "minValues": mins, "maxValues": maxs, "nullCount": nulls}

    def _assemble(self, t: pa.DataType, path: Path, *docs: dict[str, Any]) -> None:
        """Put ``path``'s statistics into ``docs`` = (minValues, maxValues, nullCount) at its level."""
        mins, maxs, nulls = docs
        name = path[-1]
        if self._used.get(path):
            sub_min: dict[str, Any] = {}
            sub_max: dict[str, Any] = {}
            sub_nulls: dict[str, Any] = {}
            for i in range(t.num_fields):
                self._assemble(t.field(i).type, (*path, t.field(i).name), sub_min, sub_max, sub_nulls)
            nulls[name] = sub_nulls
            if sub_min:
                mins[name] = sub_min
            if sub_max:
                maxs[name] = sub_max
            return
        leaf = self._leaves.get(path)
        if leaf is None:
            return
        nulls[name] = leaf.nulls
        lo, hi = leaf.bounds()
        if lo is not None:
            mins[name] = lo
        if hi is not None:
            maxs[name] = hi


# ---------------------------------------------------------------------------------------------- whole tables


def file_stats(
    table: pa.Table,
    partition_columns: Sequence[str] = (),
    configuration: Mapping[str, str] | None = None,
    num_indexed_cols: int | None = None,
) -> dict[str, Any]:
    """The stats document of a data file holding ``table`` (partition columns, if present, are skipped)."""
    skip = set(partition_columns)
    data = table.select([i for i, name in enumerate(table.column_names) if name not in skip])
    limit = indexed_column_limit(configuration) if num_indexed_cols is None else num_indexed_cols
    collector = StatsCollector(data.schema, select_leaves(data.schema, limit, stats_column_names(configuration)))
    collector.update(data)
    return collector.stats()


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
    "NUM_INDEXED_COLS",
    "STATS_COLUMNS",
    "STRING_PREFIX",
    "TIE_BREAKER",
    "StatsCollector",
    "dumps",
    "file_stats",
    "indexed_column_limit",
    "select_leaves",
    "split_column_path",
    "stats_column_names",
    "stats_json",
    "truncate_max_string",
    "truncate_min_string",
]
