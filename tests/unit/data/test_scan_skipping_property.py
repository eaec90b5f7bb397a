"""The skipping property: a scan with a filter returns exactly the full scan filtered, whatever the filter and
whatever the statistics say, as long as they are statistics some writer could have written.

Each example generates a small partitioned table (optionally column-mapped), files of a few rows drawn from
value pools full of edge cases (NaN, infinities, -0.0, 32-character string prefixes, U+10FFFF, timestamps a
microsecond either side of a millisecond, extreme integers, nulls), deletion vectors, and for every file and
column statistics in one of the styles writers use: exact; Spark's (strings cut to 32 characters with the
U+10FFFF tie-breaker, timestamps truncated down to milliseconds, NaN as the maximum); deltalake's (NaN left
out of float bounds); prefixes cut shorter with no tie-breaker; zone-less timestamps in the writer's zone;
wide bounds; ``tightBounds=false`` bounds and null counts over deleted rows too; missing or null values.
Filters are random trees of comparisons, IN lists, null and NaN tests, functions pyarrow cannot simplify,
``~``, ``&`` and ``|``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import operator
import random
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltalog.actions import Add
from deltalog.arrow.stats import truncate_max_string
from deltalog.data.dv import inline_deletion_vector
from deltalog.data.scan import TableDescription, plan, scan
from deltalog.data.skipping import shown
from deltalog.storage.local import LocalLogStore

UTC = dt.timezone.utc
T0 = dt.datetime(2024, 1, 1, tzinfo=UTC)
US = dt.timedelta(microseconds=1)
SETTINGS = settings(
    derandomize=True, deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow], database=None
)

#: the data columns: Delta type, Arrow type, value pool (None = null)
DATA: dict[str, tuple[str, pa.DataType, list[Any]]] = {
    "i": ("long", pa.int64(), [-(2**63), -5, -1, 0, 1, 2, 3, 7, 2**63 - 1, None]),
    "f": ("double", pa.float64(), [-math.inf, -1.5, -0.0, 0.0, 0.5, 1.0, 2.5, math.inf, math.nan, None]),
    "s": (
        "string",
        pa.string(),
        [
            *("", "a", "ab", "abc", "a" * 31 + "b", "a" * 32, "a" * 32 + "z", "a" * 40, "b", "é", None),
            *("\U0010ffff", "a\U0010ffffz", "\U0010ffff" * 33 + "x", "ab\U0010ffff"),
        ],
    ),
    "t": (
        "timestamp",
        pa.timestamp("us", tz="UTC"),
        [T0, T0 + 999 * US, T0 + 1000 * US, T0 + 1500 * US, T0 + dt.timedelta(seconds=1), T0 - US, None],
    ),
    "m": ("decimal(10,2)", pa.decimal128(10, 2), [Decimal("-1.25"), Decimal("0.00"), Decimal("3.10"), None]),
}
NESTED = ("st", "a", pa.int32(), [-3, 0, 4, 2**31 - 1, None])
PARTITIONS = {"p": ("string", ["a", "b", "us/east", None]), "d": ("date", ["2024-01-01", "2024-02-29", None])}


def _name(logical: str, mapped: bool) -> str:
    return f"col-{logical}" if mapped else logical


def _field(name: str, kind: Any, mapped: bool, ident: int) -> dict[str, Any]:
    meta = {"delta.columnMapping.physicalName": _name(name, True), "delta.columnMapping.id": ident} if mapped else {}
    return {"name": name, "type": kind, "nullable": True, "metadata": meta}


def delta_schema(mapped: bool) -> dict[str, Any]:
    fields = [_field(n, kind, mapped, i + 1) for i, (n, (kind, _, _)) in enumerate(DATA.items())]
    nested = {"type": "struct", "fields": [_field(NESTED[1], "integer", mapped, 20)]}
    fields.append(_field(NESTED[0], nested, mapped, 21))
    fields += [_field(n, kind, mapped, 30 + i) for i, (n, (kind, _)) in enumerate(PARTITIONS.items())]
    return {"type": "struct", "fields": fields}


# ---------------------------------------------------------------------------------------------- statistics
def _ms_floor(t: dt.datetime) -> dt.datetime:
    return t - dt.timedelta(microseconds=t.microsecond % 1000)


def _ts_text(t: dt.datetime, zone_hours: int | None) -> str:
    if zone_hours is None:
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
    local = (t + dt.timedelta(hours=zone_hours)).replace(tzinfo=None)
    return local.strftime("%Y-%m-%dT%H:%M:%S.") + f"{local.microsecond // 1000:03d}"


def _float_bounds(values: list[float], style: str, rnd: random.Random) -> tuple[Any, Any]:
    numbers = [v for v in values if not math.isnan(v)]
    nan: Any = math.nan if rnd.random() < 0.5 else "NaN"  # a JSON NaN token or Spark's string
    if style == "deltalake":  # NaN left out of the bounds
        return (min(numbers), max(numbers)) if numbers else (None, None)
    if len(numbers) < len(values):  # Spark orders NaN above every number
        return (min(numbers) if numbers else nan), nan
    return min(values), max(values)


def _bounds(column: str, values: list[Any], style: str, rnd: random.Random) -> tuple[Any, Any]:
    """(min, max) as a writer of ``style`` records them for non-null ``values``."""
    if not values or style == "missing":
        return None, None
    if column == "f":
        return _float_bounds(values, style, rnd)
    low, high = min(values), max(values)
    if column == "s":
        if style == "prefix":  # a shorter prefix, no tie-breaker
            cut = rnd.randint(1, 32)
            return low[:cut], high[:cut]
        if style in ("spark", "wide"):
            return low[:32], truncate_max_string(high)
        return low, high
    if column == "t":
        zone = rnd.randint(-12, 14) if style == "zoneless" else None
        if style == "exact":  # a writer keeping microseconds
            return low.isoformat(), high.isoformat()
        return _ts_text(_ms_floor(low), zone), _ts_text(_ms_floor(high), zone)
    if style == "wide":
        step = 1 if column != "m" else Decimal("0.5")
        return max(low - step, -(2**63)), min(high + step, 2**63 - 1)
    return low, high


def _dumps(value: Any) -> str:
    """JSON with decimals as exact numbers, as Delta Spark writes them."""
    text = json.dumps(value, default=lambda d: f"@@{d}@@")
    return text.replace('"@@', "").replace('@@"', "")


def file_stats(columns: dict[str, list[Any]], physical_rows: int, tight: bool, mapped: bool, rnd: random.Random) -> str:
    """A file's stats JSON (keyed by physical names), each column in a style drawn for it."""
    trees: tuple[dict[str, Any], dict[str, Any], dict[str, Any]] = ({}, {}, {})
    for name, rows in columns.items():
        style = rnd.choice(STYLES)
        low, high = _bounds(name, [v for v in rows if v is not None], style, rnd)
        nulls = sum(v is None for v in rows) if rnd.random() < 0.8 else None
        *parents, leaf = [_name(part, mapped) for part in name.split(".")]
        for tree, value in zip(trees, (low, high, nulls), strict=True):
            if value is None and rnd.random() < 0.5:
                continue  # absent rather than null
            for parent in parents:
                tree = tree.setdefault(parent, {})
            tree[leaf] = value
    stats: dict[str, Any] = dict(zip(("minValues", "maxValues", "nullCount"), trees, strict=True))
    stats["numRecords"] = physical_rows
    if not tight:
        stats["tightBounds"] = False
    return _dumps(stats)


# ---------------------------------------------------------------------------------------------- tables
STYLES = ["exact", "spark", "deltalake", "prefix", "zoneless", "wide", "missing"]


@dataclass(frozen=True)
class GeneratedFile:
    partition: dict[str, Any]
    values: dict[str, list[Any]]  # logical names, the nested field as "st.a"
    deleted: list[int]
    stats: str | None

    @property
    def live(self) -> list[int]:
        return [i for i in range(len(self.values["i"])) if i not in self.deleted]


def _window(pool: list[Any], rnd: random.Random) -> list[Any]:
    """A file's values come from a few neighbours in the pool, nulls, and (for floats, often) NaN, so its bounds
    are narrow and NaN hides beside them."""
    nan = [v for v in pool if isinstance(v, float) and math.isnan(v)]
    ordered = sorted(v for v in pool if v is not None and v not in nan)
    start = rnd.randrange(len(ordered))
    return [*ordered[start : start + rnd.randint(1, 3)], None, *(nan if rnd.random() < 0.5 else [])]


def generate(rnd: random.Random) -> tuple[bool, list[GeneratedFile]]:
    """A table: whether it maps columns, and 1-4 files."""
    mapped = rnd.random() < 0.5
    pools = {c: pool for c, (_, _, pool) in DATA.items()} | {"st.a": NESTED[3]}
    files = []
    for _ in range(rnd.randint(1, 4)):
        n = rnd.randint(0, 6)
        values = {c: [rnd.choice(w) for _ in range(n)] for c, w in ((c, _window(p, rnd)) for c, p in pools.items())}
        parts = {p: rnd.choice(pool) for p, (_, pool) in PARTITIONS.items()}
        deleted = sorted(rnd.sample(range(n), rnd.randint(1, n))) if n and rnd.random() < 0.4 else []
        tight = not deleted or rnd.random() < 0.3
        rows = [i for i in range(n) if i not in deleted] if tight else list(range(n))
        basis = {c: [v[i] for i in rows] for c, v in values.items()}
        stats = file_stats(basis, n, tight, mapped, rnd) if rnd.random() < 0.85 else None
        files.append(GeneratedFile(parts, values, deleted, stats))
    return mapped, files


def _arrays(file: GeneratedFile, mapped: bool, rows: Sequence[int]) -> dict[str, pa.Array]:
    arrays = {_name(c, mapped): pa.array([file.values[c][i] for i in rows], type=t) for c, (_, t, _) in DATA.items()}
    inner = pa.struct([(_name("a", mapped), NESTED[2])])
    arrays[_name("st", mapped)] = pa.array([{_name("a", mapped): file.values["st.a"][i]} for i in rows], inner)
    return arrays


def _write(root: Path, mapped: bool, files: Sequence[GeneratedFile]) -> list[Add]:
    for k, file in enumerate(files):
        pq.write_table(pa.table(_arrays(file, mapped, range(len(file.values["i"])))), root / f"part-{k}.parquet")
    return _adds(files, mapped)


def live_rows(file: GeneratedFile) -> pa.Table:
    """A file's live rows as the table's logical rows (partition columns typed), built without parquet."""
    rows = file.live
    table = pa.table(_arrays(file, False, rows))
    for p, (kind, _) in PARTITIONS.items():
        raw = file.partition[p]
        value = None if raw is None else (dt.date.fromisoformat(raw) if kind == "date" else raw)
        table = table.append_column(p, pa.array([value] * len(rows), pa.date32() if kind == "date" else pa.string()))
    return table


# ---------------------------------------------------------------------------------------------- filters
OPS = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]


def _near(values: Sequence[Any], step: Any) -> list[Any]:
    """Each value and its neighbours one ``step`` away: the literals that sit exactly on and beside bounds."""
    return sorted({x for v in values for x in (v - step, v, v + step)})


#: per filterable column: its Arrow type and literals (every data value, its neighbours, prefixes)
LITERALS: dict[str, tuple[pa.DataType, list[Any]]] = {
    "i": (pa.int64(), [-(2**63), 2**63 - 1, *_near([-5, -1, 0, 1, 2, 3, 7], 1)]),
    "f": (pa.float64(), [-math.inf, -1.5, -0.0, 0.0, 0.5, 1.0, 2.5, 3.0, math.inf, math.nan]),
    "s": (
        pa.string(),
        [
            *("", "a", "ab", "abc", "abd", "a" * 31 + "b", "a" * 32, "a" * 33, "a" * 32 + "z", "a" * 40),
            *("a" * 32 + "\U0010ffff", "b", "é", "\U0010ffff", "\U0010ffff" * 33, "a\U0010ffffz", "ab\U0010ffff"),
        ],
    ),
    "t": (pa.timestamp("us", tz="UTC"), _near([v for v in DATA["t"][2] if v is not None], US)),
    "m": (pa.decimal128(10, 2), _near([Decimal("-1.25"), Decimal("0.00"), Decimal("3.10")], Decimal("0.01"))),
    "p": (pa.string(), ["a", "b", "us/east", "c", ""]),
    "d": (pa.date32(), [dt.date(2024, 1, 1), dt.date(2024, 2, 29), dt.date(2023, 12, 31)]),
    "st.a": (pa.int32(), [-(2**31), 2**31 - 1, *_near([-3, 0, 4], 1)]),
}


def _ref(name: str) -> pc.Expression:
    return pc.field(*name.split("."))


@st.composite
def atoms(draw: Callable[[Any], Any], focus: str) -> pc.Expression:
    """One condition, on the focus column three times in four."""
    column = focus if draw(st.integers(0, 3)) else draw(st.sampled_from(sorted(LITERALS)))
    kind, pool = LITERALS[column]
    ref = _ref(column)
    shape = draw(st.sampled_from(["compare", "compare", "compare", "compare", "null", "valid", "in", "function"]))
    if shape == "compare":
        return draw(st.sampled_from(OPS))(ref, pa.scalar(draw(st.sampled_from(pool)), kind))
    if shape == "null":
        return pc.is_null(ref, nan_is_null=column == "f" and draw(st.booleans()))
    if shape == "valid":
        return ref.is_valid()
    if shape == "in":
        return ref.isin(pa.array(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3)), kind))
    if column == "f":
        return pc.is_nan(ref) if draw(st.booleans()) else pc.multiply(ref, 2.0) > 3.0
    if column in ("s", "p"):
        return pc.starts_with(ref, "a") if draw(st.booleans()) else pc.utf8_length(ref) > 32
    return ref.cast(pa.string()) == pa.scalar("0", pa.string()) if column != "t" else pc.year(ref) == 2024


def _trees(focus: str) -> st.SearchStrategy[pc.Expression]:
    return st.recursive(
        atoms(focus),
        lambda inner: st.one_of(
            inner.map(operator.invert),
            st.tuples(inner, inner).map(lambda ab: ab[0] & ab[1]),
            st.tuples(inner, inner).map(lambda ab: ab[0] | ab[1]),
        ),
        max_leaves=4,
    )


#: filters: random trees of conditions, mostly on one column so that conditions meet the same bounds
filters = st.one_of(*[_trees(column) for column in sorted(LITERALS)])


def _canon(rows: list[dict[str, Any]]) -> list[Any]:
    return [{k: "NaN" if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()} for r in rows]


def _description(root: Path, mapped: bool) -> TableDescription:
    return TableDescription(LocalLogStore(str(root)), delta_schema(mapped), ("p", "d"), "name" if mapped else "none")


@settings(SETTINGS, max_examples=400)
@given(rnd=st.randoms(use_true_random=False), many=st.lists(filters, min_size=12, max_size=12))
def test_a_file_is_skipped_only_when_none_of_its_live_rows_match(rnd: random.Random, many: list[pc.Expression]) -> None:
    """Skipping decisions against each file's live rows (fast: no parquet, so many tables and filters)."""
    mapped, files = generate(rnd)
    description = _description(Path("/nonexistent"), mapped)
    adds = _adds(files, mapped)
    rows = [live_rows(file) for file in files]
    for filter in many:
        kept = {f.data.path for f in plan(adds, description, filter)}
        for k, file in enumerate(files):
            if f"part-{k}.parquet" not in kept:
                assert rows[k].filter(filter).num_rows == 0, (k, file, shown(filter))


def _adds(files: Sequence[GeneratedFile], mapped: bool) -> list[Add]:
    out = []
    for k, file in enumerate(files):
        n = len(file.values["i"])
        dv = inline_deletion_vector(file.deleted, num_records=n) if file.deleted else None
        pv = {_name(p, mapped): v for p, v in file.partition.items()}
        out.append(Add(f"part-{k}.parquet", pv, 1, 0, True, file.stats, deletion_vector=dv))
    return out


@SETTINGS
@given(rnd=st.randoms(use_true_random=False), filter=filters)
def test_a_scan_with_a_filter_is_the_full_scan_filtered(rnd: random.Random, filter: pc.Expression) -> None:
    """End to end: parquet files (physical names when mapped), deletion vectors, the parallel reader."""
    mapped, files = generate(rnd)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        adds = _write(root, mapped, files)
        description = _description(root, mapped)
        full = scan(adds, description).read_all()
        skipped = scan(adds, description, filter=filter).read_all()
    assert skipped.schema == full.schema
    assert _canon(skipped.to_pylist()) == _canon(full.filter(filter).to_pylist())
