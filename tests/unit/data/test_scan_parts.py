"""The pieces of a scan: statistics as bounds (deltalog.data.bounds), guarantees and filter checks
(deltalog.data.skipping), and the ordered, bounded parallel reader (deltalog.data.parallel)."""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from deltalog.data.bounds import Leaf, bounds, leaves, parse_stats, string_successor
from deltalog.data.parallel import ordered
from deltalog.data.skipping import Candidate, FilterPlan, referenced_columns, shown
from deltalog.errors import InvalidArgumentError

UTC = dt.timezone.utc


def leaf(kind: str, arrow: pa.DataType) -> Leaf:
    return Leaf(("c",), ("c",), arrow, kind)


def stats(low: Any, high: Any) -> Any:
    parsed = parse_stats(json.dumps({"numRecords": 1, "minValues": {"c": low}, "maxValues": {"c": high}}))
    assert parsed is not None
    return parsed


# ---------------------------------------------------------------------------------------------- bounds
@pytest.mark.parametrize(
    ("text", "successor"),
    [
        ("abc", "abd"),
        ("a\U0010ffff", "b"),
        ("a\ud7ff", "a\ue000"),  # the surrogates are skipped: UTF-8 cannot hold them
        ("x" * 32 + "\U0010ffff", "x" * 31 + "y"),  # Spark's tie-breaker
        ("\U0010ffff\U0010ffff", None),
        ("", None),
    ],
)
def test_a_string_maximum_becomes_a_successor_above_every_continuation(text: str, successor: str | None) -> None:
    assert string_successor(text) == successor
    if successor is not None:
        for continuation in ("", "\U0010ffff", "\U0010ffff" * 3 + "z", "zzz"):
            assert (text + continuation).encode() < successor.encode()


def test_timestamp_maxima_widen_by_999_microseconds_and_zoneless_ones_by_any_zone() -> None:
    t = leaf("timestamp", pa.timestamp("us", tz="UTC"))
    low, high = bounds(t, stats("2024-01-01T00:00:00.001Z", "2024-01-01T00:00:00.006Z"))
    assert low is not None and high is not None
    assert (low.as_py(), high.as_py()) == (
        dt.datetime(2024, 1, 1, 0, 0, 0, 1000, UTC),
        dt.datetime(2024, 1, 1, 0, 0, 0, 6999, UTC),
    )
    low, high = bounds(t, stats("2024-01-01T00:00:00.000", "2024-01-01T00:00:00.000"))
    assert low is not None and high is not None
    assert high.as_py() - low.as_py() == dt.timedelta(hours=28, microseconds=999)
    ntz = leaf("timestamp_ntz", pa.timestamp("us"))
    low, high = bounds(ntz, stats("2024-01-01T00:00:00.000", "2024-01-01"))  # a date: widened from date
    assert low is not None and high is not None and high.as_py() == dt.datetime(2024, 1, 1, 0, 0, 0, 999)


def test_numbers_are_exact_and_rounded_outwards() -> None:
    d = leaf("decimal(38,2)", pa.decimal128(38, 2))
    low, high = bounds(
        d,
        parse_stats('{"minValues":{"c":12345678901234567890.125},"maxValues":{"c":1.001}}', exact=True) or stats(0, 0),
    )
    assert low is None and high is None  # contradictory once exact: no information
    low, high = bounds(
        d,
        parse_stats('{"minValues":{"c":-0.125},"maxValues":{"c":12345678901234567890.125}}', exact=True) or stats(0, 0),
    )
    assert low is not None and high is not None
    assert (low.as_py(), high.as_py()) == (Decimal("-0.13"), Decimal("12345678901234567890.13"))
    i = leaf("integer", pa.int32())
    assert [b.as_py() if b else None for b in bounds(i, stats(1.5, 2**40))] == [2, None]  # out of range: unknown
    f = leaf("float", pa.float32())
    low, high = bounds(f, stats(1.1, 1.1))
    assert low is not None and high is not None and low.as_py() < 1.1 < high.as_py()  # float32(1.1) > 1.1
    assert bounds(leaf("double", pa.float64()), stats(1.0, "NaN")) == (None, None)
    assert bounds(leaf("double", pa.float64()), stats("-Infinity", 2.0))[0] == pa.scalar(float("-inf"))


def test_unusable_statistics_mean_unknown() -> None:
    s = leaf("string", pa.string())
    assert bounds(s, stats(1, ["x"])) == (None, None)
    assert bounds(leaf("boolean", pa.bool_()), stats(False, True)) == (None, None)
    assert bounds(leaf("string collate ICU.en", pa.string()), stats("a", "b")) == (None, None)
    assert bounds(leaf("date", pa.date32()), stats("yesterday", "2024-13-01")) == (None, None)
    for text in ("", "[]", "{", '{"numRecords": true, "minValues": 3}', "1e999999"):
        parsed = parse_stats(text)
        assert parsed is None or (parsed.num_records is None and parsed.min_values == {})


def test_leaves_follow_structs_with_logical_and_physical_paths() -> None:
    schema = {
        "name": "s",
        "type": {
            "type": "struct",
            "fields": [{"name": "a", "type": "long", "metadata": {"delta.columnMapping.physicalName": "p-a"}}],
        },
        "metadata": {"delta.columnMapping.physicalName": "p-s"},
    }
    (found,) = leaves([schema], "name")
    assert (found.path, found.physical, found.delta_type, found.nested) == (("s", "a"), ("p-s", "p-a"), "long", True)


# ---------------------------------------------------------------------------------------------- filters
SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "x", "type": "long", "nullable": True, "metadata": {}},
        {"name": "s", "type": {"type": "struct", "fields": [{"name": "a", "type": "integer"}]}, "nullable": True},
        {"name": "é z", "type": "string", "nullable": True, "metadata": {}},
    ],
}


def test_filters_are_checked_and_unknown_columns_named_at_any_depth() -> None:
    with pytest.raises(InvalidArgumentError, match="'nope'"):
        FilterPlan(SCHEMA, [], "none", pc.field("nope") == 1)
    with pytest.raises(InvalidArgumentError, match=r"'s\.b'"):
        FilterPlan(SCHEMA, [], "none", pc.field("s", "b") == 1)
    with pytest.raises(InvalidArgumentError, match="boolean"):
        FilterPlan(SCHEMA, [], "none", pc.field("x"))
    with pytest.raises(InvalidArgumentError, match="does not apply"):
        FilterPlan(SCHEMA, [], "none", pc.field("x") == "a")
    plan = FilterPlan(SCHEMA, [], "none", (pc.field("s", "a") > 1) | pc.field("é z").is_null())
    assert plan.columns == ("s", "é z")
    assert referenced_columns(pc.scalar(True), plan.schema) == []


def test_a_filter_pyarrow_cannot_print_is_still_shown() -> None:
    # pyarrow cuts a long IN list inside a character, then fails to decode its own text
    long = pc.field("é z").isin(pa.array(["€" * 60] * 2))
    with pytest.raises(UnicodeDecodeError):
        str(long)
    assert shown(long) == "<a filter pyarrow cannot print>"
    assert shown(pc.field("x") > 1) == "(x > 1)"


def test_nested_bounds_and_null_counts_skip_files() -> None:
    one = Candidate(
        "1",
        {},
        json.dumps(
            {
                "numRecords": 2,
                "minValues": {"s": {"a": 5}},
                "maxValues": {"s": {"a": 9}},
                "nullCount": {"s": {"a": 0}, "x": 2},
            }
        ),
    )
    plan = FilterPlan(SCHEMA, [], "none", pc.field("s", "a") < 5)
    assert plan.surviving([one]) == []
    # a nested nullCount of 0 is not trusted (writers disagree on null parents), so is_null cannot skip
    assert FilterPlan(SCHEMA, [], "none", pc.field("s", "a").is_null()).surviving([one]) == [0]
    assert FilterPlan(SCHEMA, [], "none", pc.field("x") == 1).surviving([one]) == []  # all null


# ---------------------------------------------------------------------------------------------- parallel
def test_items_come_out_in_producer_order_whatever_the_timing() -> None:
    gates = [threading.Event() for _ in range(4)]

    def producer(i: int) -> Iterator[int]:
        if i == 0:
            gates[3].wait(timeout=30)  # the first finishes only after the last has started
        gates[i].set()
        yield from (i * 10 + k for k in range(3))

    assert list(ordered([lambda i=i: producer(i) for i in range(4)], workers=4)) == [
        i * 10 + k for i in range(4) for k in range(3)
    ]


def test_at_most_workers_times_depth_items_wait_and_early_stops_end_the_workers() -> None:
    made: list[int] = []
    lock = threading.Lock()

    def producer(i: int) -> Iterator[int]:
        for k in range(100):
            with lock:
                made.append(i)
            yield k

    existing = set(threading.enumerate())
    items = ordered([lambda i=i: producer(i) for i in range(10)], workers=2, depth=2)
    assert next(items) == 0
    before = {t for t in threading.enumerate() if t.name == "deltalog-scan"} - existing
    assert len(before) == 2
    # each worker can hold one item in hand beyond its queue of two; the consumer took one
    with lock:
        assert len(made) <= 2 * (2 + 1) + 1
    items.close()
    for thread in before:
        thread.join(timeout=30)
    assert not any(t.is_alive() for t in before)


def test_a_failure_is_raised_when_the_consumer_reaches_its_producer() -> None:
    def bad() -> Iterator[int]:
        yield 7
        raise InvalidArgumentError("boom")

    items = ordered([lambda: iter([1, 2]), bad, lambda: iter([3])], workers=3)
    assert [next(items), next(items), next(items)] == [1, 2, 7]
    with pytest.raises(InvalidArgumentError, match="boom"):
        next(items)
    assert list(ordered([], workers=2)) == []
