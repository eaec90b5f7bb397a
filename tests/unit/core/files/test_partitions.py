"""Partition values parsed by type, and the ``where`` mapping turned into conditions."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltalog.core.files.partitions import (
    HIVE_NULL,
    Condition,
    PartitionValueError,
    conditions_from_where,
    parse_value,
    typed_conditions,
)

SETTINGS = settings(max_examples=200, deadline=None, database=None)
UTC = dt.timezone.utc
JAN1 = dt.datetime(2024, 1, 1, tzinfo=UTC)
BIG_DECIMAL = "12345678901234567890.123456789012345678"


# ---------------------------------------------------------------------------------------------- parse_value


@pytest.mark.parametrize(
    "raw",
    [
        "2024-01-01 00:00:00",
        "2024-01-01T00:00:00Z",
        "2024-01-01T00:00:00.000000Z",
        "2024-01-01T00:00:00.000Z",
        "2024-01-01 00:00:00.000000",
        "2024-01-01T00:00:00+00:00",
        "2024-01-01T01:00:00+01:00",
        "2023-12-31T19:00:00-05:00",
        dt.datetime(2024, 1, 1),
        JAN1,
    ],
)
def test_timestamp_spellings_are_equal(raw: Any) -> None:
    value = parse_value("timestamp", raw)
    assert value == JAN1
    assert value.tzinfo is not None and value.utcoffset() == dt.timedelta(0)


def test_timestamp_fractions_are_kept() -> None:
    assert parse_value("timestamp", "2024-01-01 00:00:00.123456") == JAN1 + dt.timedelta(microseconds=123456)
    assert parse_value("timestamp", "2024-01-01T00:00:00.5Z") == JAN1 + dt.timedelta(milliseconds=500)


def test_timestamp_ntz_is_naive() -> None:
    v = parse_value("timestamp_ntz", "2024-01-01 12:30:00")
    assert v == dt.datetime(2024, 1, 1, 12, 30)
    assert v.tzinfo is None
    assert parse_value("timestamp_ntz", "2024-01-01T12:30:00.000000") == v


@pytest.mark.parametrize("t", ["string", "long", "integer", "date", "timestamp", "boolean", "decimal(10,2)", "double"])
@pytest.mark.parametrize("raw", [None, "", HIVE_NULL])
def test_null_spellings(t: str, raw: Any) -> None:
    assert parse_value(t, raw) is None


@pytest.mark.parametrize(
    ("t", "raw", "expected"),
    [
        ("long", "42", 42),
        ("long", "-9223372036854775808", -(2**63)),
        ("integer", " 7 ", 7),
        ("short", "007", 7),
        ("byte", "-1", -1),
        ("integer", 5, 5),
        ("double", "1.5", 1.5),
        ("float", "-0.25", -0.25),
        ("decimal(10,2)", "1.50", Decimal("1.5")),
        ("decimal(38,18)", BIG_DECIMAL, Decimal(BIG_DECIMAL)),
        ("decimal(5,0)", 3, Decimal(3)),
        ("boolean", "true", True),
        ("boolean", "false", False),
        ("boolean", "TRUE", True),
        ("boolean", False, False),
        ("date", "2024-02-29", dt.date(2024, 2, 29)),
        ("date", dt.date(2024, 2, 29), dt.date(2024, 2, 29)),
        ("date", dt.datetime(2024, 2, 29, 13), dt.date(2024, 2, 29)),
        ("string", "a b/c=d%20", "a b/c=d%20"),
        ("string", 12, "12"),
        ("binary", "\u0001\u0002", b"\x01\x02"),
    ],
)
def test_typed_values(t: str, raw: Any, expected: Any) -> None:
    value = parse_value(t, raw)
    assert value == expected
    assert type(value) is type(expected)


def test_decimals_compare_by_value() -> None:
    assert parse_value("decimal(10,3)", "1.500") == parse_value("decimal(10,3)", "1.5")


@pytest.mark.parametrize(
    ("t", "raw"),
    [
        ("long", "abc"),
        ("long", "1.0"),
        ("integer", "0x10"),
        ("boolean", "yes"),
        ("boolean", "1"),
        ("date", "2024-02-30"),
        ("date", "yesterday"),
        ("timestamp", "not a time"),
        ("timestamp", "2024-01-01 25:00:00"),
        ("decimal(10,2)", "1,5"),
        ("double", "one"),
    ],
)
def test_invalid_values(t: str, raw: str) -> None:
    with pytest.raises(PartitionValueError):
        parse_value(t, raw)


@SETTINGS
@given(st.integers(-(2**63), 2**63 - 1))
def test_long_round_trip(n: int) -> None:
    assert parse_value("long", str(n)) == n


@SETTINGS
@given(st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1)))
def test_timestamp_space_and_iso_z_spellings_agree(d: dt.datetime) -> None:
    space = d.strftime("%Y-%m-%d %H:%M:%S.%f")
    iso_z = d.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert parse_value("timestamp", space) == parse_value("timestamp", iso_z) == d.replace(tzinfo=UTC)


# ---------------------------------------------------------------------------------------------- where


def test_equality() -> None:
    assert conditions_from_where({"p": 1}) == [Condition("p", "=", (1,))]
    assert conditions_from_where({"p": "a"}) == [Condition("p", "=", ("a",))]
    assert conditions_from_where({"p": None}) == [Condition("p", "=", (None,))]


@pytest.mark.parametrize("values", [[1, 2], (1, 2)])
def test_list_is_in(values: Any) -> None:
    assert conditions_from_where({"p": values}) == [Condition("p", "in", (1, 2))]


def test_set_is_in() -> None:
    (cond,) = conditions_from_where({"p": {3}})
    assert (cond.column, cond.op, cond.values) == ("p", "in", (3,))


def test_operator_dict_is_a_range() -> None:
    conds = conditions_from_where({"d": {">=": "2024-01-01", "<": "2024-02-01"}, "p": {"IN": ["a"]}})
    assert conds == [
        Condition("d", ">=", ("2024-01-01",)),
        Condition("d", "<", ("2024-02-01",)),
        Condition("p", "in", ("a",)),
    ]


def test_all_operators_accepted() -> None:
    ops = {"=": 1, "==": 1, "!=": 1, "<": 1, "<=": 1, ">": 1, ">=": 1, "in": [1], "not in": [1]}
    conds = conditions_from_where({"c": ops})
    assert [c.op for c in conds] == list(ops)


@pytest.mark.parametrize(
    ("t", "raw"),
    [("long", [1]), ("integer", {"a": 1}), ("date", 5), ("decimal(5,2)", [1]), ("timestamp", 3.5), ("long", object())],
)
def test_wrongly_shaped_literals(t: str, raw: Any) -> None:
    with pytest.raises(PartitionValueError):
        parse_value(t, raw)


def test_in_needs_a_collection() -> None:
    with pytest.raises(PartitionValueError):
        conditions_from_where({"p": {"in": 5}})


def test_unknown_operator() -> None:
    with pytest.raises(PartitionValueError, match="like"):
        conditions_from_where({"p": {"like": "a%"}})


@pytest.mark.parametrize(
    ("op", "target", "value", "expected"),
    [
        ("=", 1, 1, True),
        ("=", 1, 2, False),
        ("=", None, None, True),
        ("=", 1, None, False),
        ("!=", 1, 2, True),
        ("!=", 1, 1, False),
        ("!=", 1, None, False),
        ("<", 5, 4, True),
        ("<", 5, 5, False),
        ("<=", 5, 5, True),
        (">", 5, 6, True),
        (">", 5, 5, False),
        (">=", 5, 5, True),
        (">=", 5, None, False),
        ("<", 5, "x", False),  # incomparable: no match rather than an error
    ],
)
def test_condition_matches(op: str, target: Any, value: Any, expected: bool) -> None:
    assert Condition("c", op, (target,)).matches(value) is expected


def test_in_and_not_in_with_nulls() -> None:
    assert Condition("c", "in", (1, 2)).matches(2)
    assert not Condition("c", "in", (1, 2)).matches(None)
    assert Condition("c", "in", (1, None)).matches(None)
    assert Condition("c", "not in", (1, 2)).matches(3)
    assert not Condition("c", "not in", (1, 2)).matches(1)
    assert not Condition("c", "not in", (1, 2)).matches(None)


def test_typed_conditions_parse_literals_by_column_type() -> None:
    conds = conditions_from_where(
        {"ts": "2024-01-01T00:00:00Z", "n": {">": "10"}, "d": ["2024-01-01", dt.date(2024, 1, 2)]}
    )
    typed = typed_conditions(conds, {"ts": "timestamp", "n": "long", "d": "date"})
    assert typed[0] == Condition("ts", "=", (JAN1,))
    assert typed[1] == Condition("n", ">", (10,))
    assert typed[2] == Condition("d", "in", (dt.date(2024, 1, 1), dt.date(2024, 1, 2)))
    # the log's other spelling of the same instant matches
    assert typed[0].matches(parse_value("timestamp", "2024-01-01 00:00:00"))
    assert typed[1].matches(parse_value("long", "11")) and not typed[1].matches(parse_value("long", "9"))


def test_typed_conditions_reject_bad_literals() -> None:
    with pytest.raises(PartitionValueError):
        typed_conditions(conditions_from_where({"n": "ten"}), {"n": "long"})
