"""Per-file statistics follow Delta Spark's conventions, including the edge values that break file skipping."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import orjson
import pyarrow as pa
import pytest

from deltalog.arrow.stats import TIE_BREAKER, dumps, file_stats, stats_json, truncate_max_string

UTC = dt.timezone.utc


def test_basic_numbers_strings_dates_and_null_counts() -> None:
    t = pa.table(
        {
            "i": pa.array([3, None, -7], pa.int64()),
            "s": pa.array(["b", "a", None]),
            "d": pa.array([dt.date(2024, 1, 2), dt.date(1969, 12, 31), None]),
            "b": pa.array([True, False, None]),
        }
    )
    doc = orjson.loads(stats_json(t))
    assert doc == {
        "numRecords": 3,
        "minValues": {"i": -7, "s": "a", "d": "1969-12-31"},
        "maxValues": {"i": 3, "s": "b", "d": "2024-01-02"},
        "nullCount": {"i": 1, "s": 1, "d": 1, "b": 1},
    }


def test_timestamp_truncated_to_ms_and_max_rounded_up() -> None:
    values = [
        dt.datetime(2024, 4, 27, 12, 0, 0, 123456, tzinfo=UTC),
        dt.datetime(2024, 4, 27, 12, 0, 0, 1, tzinfo=UTC),
    ]
    t = pa.table({"ts": pa.array(values, pa.timestamp("us", tz="UTC"))})
    doc = file_stats(t)
    assert doc["minValues"]["ts"] == "2024-04-27T12:00:00.000Z"
    assert doc["maxValues"]["ts"] == "2024-04-27T12:00:00.124Z"  # .123456 -> .124, still >= the value


def test_timestamp_exact_ms_max_not_rounded_and_other_zone_is_utc() -> None:
    berlin = dt.timezone(dt.timedelta(hours=2))
    v = dt.datetime(2024, 4, 27, 14, 0, 0, 5000, tzinfo=berlin)  # 12:00:00.005 UTC
    t = pa.table({"ts": pa.array([v], pa.timestamp("us", tz="Europe/Berlin"))})
    doc = file_stats(t)
    assert doc["minValues"]["ts"] == doc["maxValues"]["ts"] == "2024-04-27T12:00:00.005Z"


def test_timestamp_before_epoch_floors_and_ceils() -> None:
    v = dt.datetime(1969, 12, 31, 23, 59, 59, 999500, tzinfo=UTC)
    t = pa.table({"ts": pa.array([v], pa.timestamp("us", tz="UTC"))})
    doc = file_stats(t)
    assert doc["minValues"]["ts"] == "1969-12-31T23:59:59.999Z"
    assert doc["maxValues"]["ts"] == "1970-01-01T00:00:00.000Z"


def test_timestamp_ns_and_ntz_without_zone() -> None:
    ns = pa.array([1_700_000_000_123_456_789], pa.timestamp("ns"))
    doc = file_stats(pa.table({"t": ns}))
    assert doc["minValues"]["t"] == "2023-11-14T22:13:20.123"
    assert doc["maxValues"]["t"] == "2023-11-14T22:13:20.124"


def test_max_timestamp_value_is_covered() -> None:
    v = dt.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)
    doc = file_stats(pa.table({"ts": pa.array([v], pa.timestamp("us", tz="UTC"))}))
    assert doc["maxValues"]["ts"] == "9999-12-31T23:59:59.999Z"
    # rounding 9999-12-31 23:59:59.999999 up leaves year 9999: no max at all (unknown), never a smaller one
    top = dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    low = dt.datetime(2000, 1, 1, tzinfo=UTC)
    doc = file_stats(pa.table({"ts": pa.array([low, top], pa.timestamp("us", tz="UTC"))}))
    assert doc["minValues"] == {"ts": "2000-01-01T00:00:00.000Z"}
    assert doc["maxValues"] == {}
    assert doc["nullCount"] == {"ts": 0}


def test_long_strings_truncated_with_tie_breaker() -> None:
    long_a = "a" * 40
    long_z = "z" * 31 + "yx" + "w" * 10
    doc = file_stats(pa.table({"s": [long_a, long_z]}))
    assert doc["minValues"]["s"] == "a" * 32
    assert doc["maxValues"]["s"] == "z" * 31 + "y" + TIE_BREAKER
    assert doc["maxValues"]["s"] >= long_z
    exact = "q" * 32
    doc = file_stats(pa.table({"s": [exact]}))
    assert doc["maxValues"]["s"] == exact  # not truncated: no tie-breaker


def test_tie_breaker_prefix_extended_past_max_code_points() -> None:
    s = "a" * 32 + TIE_BREAKER * 2 + "b"
    bound = truncate_max_string(s)
    assert bound is not None and bound >= s
    assert truncate_max_string("a" * 32 + TIE_BREAKER * 3) == "a" * 32 + TIE_BREAKER * 3
    # multi-byte characters count as one character each
    doc = file_stats(pa.table({"s": ["é" * 40]}))
    assert doc["minValues"]["s"] == "é" * 32


def test_stats_json_round_trips_non_ascii() -> None:
    text = stats_json(pa.table({"s": ["x" * 33]}))
    assert orjson.loads(text)["maxValues"]["s"] == "x" * 32 + TIE_BREAKER


def test_decimals_are_exact_json_numbers() -> None:
    values = [Decimal("12345678901234567890.123456789"), Decimal("-0.000000001")]
    t = pa.table({"d": pa.array(values, pa.decimal128(38, 9))})
    text = stats_json(t)
    assert '"d":12345678901234567890.123456789' in text
    assert '"d":-0.000000001' in text
    parsed = orjson.loads(text.replace("12345678901234567890.123456789", "1"))  # valid JSON
    assert parsed["nullCount"]["d"] == 0


def test_nan_and_infinity_drop_bounds_but_keep_counts() -> None:
    t = pa.table(
        {
            "nan": pa.array([1.0, float("nan"), None]),
            "inf": pa.array([1.0, float("inf"), None]),
            "ok": pa.array([1.5, -2.5, None], pa.float32()),
        }
    )
    text = stats_json(t)
    assert "NaN" not in text and "Infinity" not in text
    doc = orjson.loads(text)
    assert "nan" not in doc["minValues"] and "nan" not in doc["maxValues"]
    assert "inf" not in doc["minValues"] and "inf" not in doc["maxValues"]
    assert doc["minValues"]["ok"] == -2.5 and doc["maxValues"]["ok"] == 1.5
    assert doc["nullCount"] == {"nan": 1, "inf": 1, "ok": 1}


def test_dumps_refuses_non_finite() -> None:
    with pytest.raises(ValueError):
        dumps({"x": float("nan")})
    with pytest.raises(ValueError):
        dumps({"x": Decimal("NaN")})


def test_binary_arrays_maps_booleans_get_only_null_count() -> None:
    t = pa.table(
        {
            "bin": pa.array([b"\x00", None]),
            "arr": pa.array([[1, 2], None]),
            "map": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int64())),
            "flag": pa.array([True, True]),
        }
    )
    doc = file_stats(t)
    assert doc["minValues"] == {} and doc["maxValues"] == {}
    assert doc["nullCount"] == {"bin": 1, "arr": 1, "map": 1, "flag": 0}


def test_nested_structs_follow_schema_and_parent_nulls_count() -> None:
    inner = pa.array(
        [{"x": 1, "y": "p"}, None, {"x": None, "y": "q"}],
        pa.struct([("x", pa.int32()), ("y", pa.string())]),
    )
    doc = file_stats(pa.table({"s": inner}))
    assert doc["minValues"] == {"s": {"x": 1, "y": "p"}}
    assert doc["maxValues"] == {"s": {"x": 1, "y": "q"}}
    assert doc["nullCount"] == {"s": {"x": 2, "y": 1}}


def test_all_null_and_empty_columns_have_no_bounds() -> None:
    doc = file_stats(pa.table({"a": pa.array([None, None], pa.int64())}))
    assert doc == {"numRecords": 2, "minValues": {}, "maxValues": {}, "nullCount": {"a": 2}}
    empty = file_stats(pa.table({"a": pa.array([], pa.int64())}))
    assert empty == {"numRecords": 0, "minValues": {}, "maxValues": {}, "nullCount": {"a": 0}}


def test_first_32_leaves_then_property_and_minus_one() -> None:
    cols = {f"c{i:02d}": [i] for i in range(40)}
    t = pa.table(cols)
    assert len(file_stats(t)["nullCount"]) == 32
    assert "c31" in file_stats(t)["nullCount"] and "c32" not in file_stats(t)["nullCount"]
    five = file_stats(t, configuration={"delta.dataSkippingNumIndexedCols": "5"})
    assert sorted(five["nullCount"]) == [f"c{i:02d}" for i in range(5)]
    assert len(file_stats(t, configuration={"delta.dataSkippingNumIndexedCols": "-1"})["nullCount"]) == 40
    assert file_stats(t, num_indexed_cols=0)["nullCount"] == {}
    with pytest.raises(ValueError):
        file_stats(t, configuration={"delta.dataSkippingNumIndexedCols": "-2"})


def test_leaf_limit_counts_nested_leaves() -> None:
    t = pa.table(
        {
            "s": pa.array(
                [{"a": 1, "b": 2, "c": 3}], pa.struct([("a", pa.int8()), ("b", pa.int8()), ("c", pa.int8())])
            ),
            "z": [1],
        }
    )
    doc = file_stats(t, num_indexed_cols=2)
    assert doc["nullCount"] == {"s": {"a": 0, "b": 0}}


def test_stats_columns_property_wins() -> None:
    t = pa.table({"a": [1], "b": [2], "s": pa.array([{"x": 1}], pa.struct([("x", pa.int64())]))})
    doc = file_stats(t, configuration={"delta.dataSkippingStatsColumns": "b, s.x"})
    assert doc["nullCount"] == {"b": 0, "s": {"x": 0}}


def test_partition_columns_are_excluded_and_do_not_count() -> None:
    t = pa.table({"p": ["x"], "a": [1], "b": [2]})
    doc = file_stats(t, partition_columns=["p"], num_indexed_cols=1)
    assert doc["nullCount"] == {"a": 0}
    assert "p" not in doc["minValues"]


def test_integer_extremes_and_dictionary_strings() -> None:
    t = pa.table(
        {
            "i": pa.array([-(2**63), 2**63 - 1], pa.int64()),
            "d": pa.array(["b", "a"]).dictionary_encode(),
        }
    )
    doc = orjson.loads(stats_json(t))
    assert doc["minValues"] == {"i": -(2**63), "d": "a"}
    assert doc["maxValues"] == {"i": 2**63 - 1, "d": "b"}
