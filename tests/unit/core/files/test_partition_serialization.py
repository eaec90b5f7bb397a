"""Partition values a commit may write: the protocol's serialization formats, checked before writing."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltalog.core import actions as A
from deltalog.core.commit.rules import validate_actions
from deltalog.core.files.partitions import (
    HIVE_NULL,
    PartitionValueError,
    check_serialized,
    parse_value,
    serialize_partition_value,
)
from deltalog.errors import InvalidArgumentError, InvalidCommitError

SETTINGS = settings(max_examples=200, deadline=None, database=None)
UTC = dt.timezone.utc


@pytest.mark.parametrize(
    ("t", "raw", "expected"),
    [
        ("string", "a b/c=d%", "a b/c=d%"),
        ("string", HIVE_NULL.lower(), HIVE_NULL.lower()),
        ("binary", "\u0001\u0002", b"\x01\x02"),
        ("byte", "-128", -128),
        ("short", "32767", 32767),
        ("integer", "007", 7),
        ("long", "-9223372036854775808", -(2**63)),
        ("double", "NaN", None),
        ("double", "-Infinity", float("-inf")),
        ("double", "1e10", 1e10),
        ("float", "3.4028234663852886e38", 3.4028234663852886e38),
        ("decimal(5,2)", "-123.45", Decimal("-123.45")),
        ("decimal(5,0)", "12345", Decimal(12345)),
        ("decimal(38,38)", "0." + "1" * 38, Decimal("0." + "1" * 38)),
        ("boolean", "true", True),
        ("boolean", "false", False),
        ("date", "2024-02-29", dt.date(2024, 2, 29)),
        ("date", "0001-01-01", dt.date(1, 1, 1)),
        ("timestamp", "2024-01-01 00:00:00", dt.datetime(2024, 1, 1, tzinfo=UTC)),
        ("timestamp", "2024-01-01 00:00:00.5", dt.datetime(2024, 1, 1, 0, 0, 0, 500000, tzinfo=UTC)),
        ("timestamp", "2024-01-01T00:00:00.123456Z", dt.datetime(2024, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)),
        ("timestamp_ntz", "2024-01-01 12:30:00.000001", dt.datetime(2024, 1, 1, 12, 30, 0, 1)),
    ],
)
def test_serialized_values_are_accepted(t: str, raw: str, expected: Any) -> None:
    value = check_serialized(t, raw)
    if expected is None:
        assert value != value  # NaN
    else:
        assert value == expected


@pytest.mark.parametrize("t", ["string", "long", "date", "timestamp", "decimal(5,2)", "boolean", "binary"])
@pytest.mark.parametrize("raw", [None, ""])
def test_empty_string_and_none_are_null_for_every_type(t: str, raw: Any) -> None:
    assert check_serialized(t, raw) is None


@pytest.mark.parametrize(
    ("t", "raw"),
    [
        ("integer", "abc"),
        ("integer", "2147483648"),
        ("byte", "128"),
        ("long", "1.0"),
        ("long", " 7"),
        ("long", "+7"),
        ("long", "1_000"),
        ("double", "one"),
        ("double", "1e400"),
        ("float", "1e39"),
        ("decimal(5,2)", "1.5"),  # kernel-rs needs exactly the scale's digits
        ("decimal(5,2)", "1234.50"),
        ("decimal(5,2)", "1,50"),
        ("decimal(5,0)", "12.0"),
        ("boolean", "TRUE"),
        ("boolean", "1"),
        ("date", "not-a-date"),
        ("date", "2024-02-30"),
        ("date", "2024-1-1"),
        ("date", "2024-01-01 00:00:00"),
        ("timestamp", "2024-01-01T00:00:00"),
        ("timestamp", "2024-01-01T01:00:00+01:00"),
        ("timestamp", "2024-01-01 25:00:00"),
        ("timestamp", "2024-01-01 00:00:00.1234567"),
        ("timestamp_ntz", "2024-01-01T00:00:00Z"),
        ("long", HIVE_NULL),
        ("string", HIVE_NULL),
        ("long", 7),
        ("struct", "x"),
    ],
)
def test_values_outside_the_serialization_formats_are_refused(t: str, raw: Any) -> None:
    with pytest.raises(PartitionValueError):
        check_serialized(t, raw)


@SETTINGS
@given(st.datetimes(timezones=st.just(UTC)), st.booleans())
def test_writer_spellings_of_timestamps_pass_and_read_back_equal(value: dt.datetime, iso: bool) -> None:
    naive = value.replace(tzinfo=None)
    text = naive.isoformat("T", "microseconds") + "Z" if iso else naive.isoformat(" ", "microseconds")
    assert check_serialized("timestamp", text) == parse_value("timestamp", text) == value


@SETTINGS
@given(st.integers(1, 38).flatmap(lambda p: st.tuples(st.just(p), st.integers(0, p))), st.data())
def test_decimals_at_their_scale_pass(ps: tuple[int, int], data: st.DataObject) -> None:
    precision, scale = ps
    whole = data.draw(st.integers(0, 10 ** (precision - scale) - 1))
    frac = data.draw(st.integers(0, 10**scale - 1))
    text = f"{whole}.{frac:0{scale}d}" if scale else str(whole)
    assert check_serialized(f"decimal({precision},{scale})", text) == Decimal(text)


# ---------------------------------------------------------------------------------------------- the writer's spelling
FIRST = dt.datetime(1, 1, 1)
LAST = dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
OFFSETS = st.builds(
    dt.timezone, st.timedeltas(dt.timedelta(hours=-23, minutes=-59), dt.timedelta(hours=23, minutes=59))
)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (dt.datetime(999, 1, 1, tzinfo=UTC), "0999-01-01T00:00:00.000000Z"),
        (dt.datetime(999, 1, 1), "0999-01-01 00:00:00.000000"),
        (dt.datetime(1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=-1))), "0001-01-01T01:00:00.000000Z"),
        (LAST, "9999-12-31 23:59:59.999999"),
        (dt.date(42, 3, 4), "0042-03-04"),
    ],
)
def test_years_before_1000_are_written_with_four_digits(value: Any, text: str) -> None:
    """Issue 23 item 6: strftime("%Y") wrote ``999-01-01 ...``, which the commit check then refused."""
    assert serialize_partition_value(value) == text


@SETTINGS
@given(st.datetimes(FIRST, LAST), st.sampled_from(["timestamp", "timestamp_ntz"]))
def test_every_representable_timestamp_is_written_in_the_protocol_format_and_reads_back(
    value: dt.datetime, t: str
) -> None:
    typed = value.replace(tzinfo=UTC) if t == "timestamp" else value
    text = serialize_partition_value(typed)
    assert check_serialized(t, text) == parse_value(t, text) == typed


@SETTINGS
@given(st.datetimes(FIRST, LAST, timezones=OFFSETS))
def test_a_zoned_timestamp_is_written_in_utc_or_refused_when_utc_leaves_the_years_1_to_9999(value: dt.datetime) -> None:
    try:
        instant = value.astimezone(UTC)
    except OverflowError:
        with pytest.raises(InvalidArgumentError, match="0001-9999"):
            serialize_partition_value(value)
        return
    text = serialize_partition_value(value)
    assert text is not None and text.endswith("Z")
    assert check_serialized("timestamp", text) == instant


@SETTINGS
@given(st.dates())
def test_every_representable_date_is_written_in_the_protocol_format_and_reads_back(value: dt.date) -> None:
    text = serialize_partition_value(value)
    assert check_serialized("date", text) == parse_value("date", text) == value


# ---------------------------------------------------------------------------------------------- commit rules
SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "n", "type": "integer", "nullable": False, "metadata": {}},
        {"name": "d", "type": "date", "nullable": True, "metadata": {}},
    ],
}
META = A.Metadata(id="t", schema_string=orjson.dumps(SCHEMA).decode(), partition_columns=("n", "d"))


def add(n: str | None, d: str | None) -> A.Add:
    return A.Add("f.parquet", {"n": n, "d": d}, 1, 1, True)


@pytest.mark.parametrize(
    ("n", "d", "match"),
    [
        ("abc", "2024-01-01", "n='abc'"),
        ("1", "not-a-date", "d='not-a-date'"),
        (None, "2024-01-01", "'n' is not nullable"),
        ("", "2024-01-01", "'n' is not nullable"),
    ],
)
def test_adds_with_values_that_do_not_fit_are_refused(n: str | None, d: str | None, match: str) -> None:
    with pytest.raises(InvalidCommitError, match=match) as info:
        validate_actions([add(n, d)], META)
    assert info.value.rule == "partition-values"
    assert "f.parquet" in str(info.value)


def test_adds_with_fitting_values_pass() -> None:
    validate_actions([add("1", "2024-01-01"), replace_path(add("-5", None), "g.parquet")], META)


def test_removes_are_checked_as_readers_parse_them() -> None:
    """A remove repeats what an add once wrote, perhaps another engine's spelling: readable is enough."""
    validate_actions([A.Remove("f.parquet", 1, True, partition_values={"n": " 7", "d": HIVE_NULL})], META)
    with pytest.raises(InvalidCommitError, match="n='abc'"):
        validate_actions([A.Remove("f.parquet", 1, True, partition_values={"n": "abc", "d": None})], META)


def replace_path(a: A.Add, path: str) -> A.Add:
    return A.Add(path, a.partition_values, a.size, a.modification_time, a.data_change)
