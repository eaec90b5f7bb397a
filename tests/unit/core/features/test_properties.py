"""Table properties read with Delta Spark's syntax and defaults."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltalog.core.features.properties import (
    PropertyError,
    column_mapping_mode,
    deleted_file_retention_ms,
    get_bool,
    get_int,
    get_interval_ms,
    log_retention_ms,
    parse_interval_ms,
    txn_retention_ms,
)

SETTINGS = settings(max_examples=200, deadline=None, database=None)
SEC, MIN, HOUR, DAY, WEEK = 1000, 60_000, 3_600_000, 86_400_000, 604_800_000


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("interval 30 days", 30 * DAY),
        ("interval 1 day", DAY),
        ("INTERVAL 1 WEEK", WEEK),
        ("interval 1 weeks", WEEK),
        ("7 days", 7 * DAY),
        ("  interval   2 hours  ", 2 * HOUR),
        ("interval 1 hour 30 minutes", HOUR + 30 * MIN),
        ("2 weeks 3 hours", 2 * WEEK + 3 * HOUR),
        ("interval 90 seconds", 90 * SEC),
        ("interval 1 second", SEC),
        ("interval 250 milliseconds", 250),
        ("interval 5000 microseconds", 5),
        ("interval 1 minute", MIN),
        ("1d", DAY),
        ("3h", 3 * HOUR),
        ("10s", 10 * SEC),
        ("15 mins", 15 * MIN),
        ("100 ms", 100),
        ("interval 1.5 hours", 90 * MIN),
        ("interval 0 days", 0),
    ],
)
def test_parse_interval(text: str, ms: int) -> None:
    assert parse_interval_ms(text) == ms


@pytest.mark.parametrize(
    "text",
    [
        "",
        "interval",
        "interval 1 month",
        "interval 2 months",
        "interval 1 year",
        "interval 1 fortnight",
        "interval 1 days 2",
        "interval days",
        "30",
        "interval 1 day and 2 hours",
        "forever",
    ],
)
def test_parse_interval_rejects(text: str) -> None:
    with pytest.raises(PropertyError):
        parse_interval_ms(text)


@SETTINGS
@given(
    st.lists(
        st.tuples(st.integers(0, 10_000), st.sampled_from(["days", "hours", "minutes", "seconds", "weeks"])),
        min_size=1,
        max_size=4,
    )
)
def test_parse_interval_sums_parts(parts: list[tuple[int, str]]) -> None:
    unit = {"days": DAY, "hours": HOUR, "minutes": MIN, "seconds": SEC, "weeks": WEEK}
    text = "interval " + " ".join(f"{n} {u}" for n, u in parts)
    assert parse_interval_ms(text) == sum(n * unit[u] for n, u in parts)


def test_defaults() -> None:
    assert txn_retention_ms({}) is None
    assert deleted_file_retention_ms({}) == WEEK
    assert log_retention_ms({}) == 30 * DAY
    assert column_mapping_mode({}) == "none"


def test_configured_values() -> None:
    conf = {
        "delta.setTransactionRetentionDuration": "interval 2 days",
        "delta.deletedFileRetentionDuration": "interval 1 day",
        "delta.logRetentionDuration": "interval 12 hours",
        "delta.columnMapping.mode": " Name ",
    }
    assert txn_retention_ms(conf) == 2 * DAY
    assert deleted_file_retention_ms(conf) == DAY
    assert log_retention_ms(conf) == 12 * HOUR
    assert column_mapping_mode(conf) == "name"


def test_bad_interval_property_raises() -> None:
    with pytest.raises(PropertyError):
        txn_retention_ms({"delta.setTransactionRetentionDuration": "interval 1 month"})


def test_get_bool() -> None:
    assert get_bool({"k": "true"}, "k") is True
    assert get_bool({"k": " TRUE "}, "k") is True
    assert get_bool({"k": "false"}, "k") is False
    assert get_bool({"k": "yes"}, "k") is False
    assert get_bool({}, "k") is False
    assert get_bool({}, "k", default=True) is True


def test_get_int() -> None:
    assert get_int({"k": " 10 "}, "k", 3) == 10
    assert get_int({}, "k", 3) == 3
    with pytest.raises(PropertyError, match="k"):
        get_int({"k": "ten"}, "k", 3)


def test_get_interval_ms() -> None:
    assert get_interval_ms({}, "k", None) is None
    assert get_interval_ms({}, "k", "interval 1 hour") == HOUR
    assert get_interval_ms({"k": "2 hours"}, "k", "interval 1 hour") == 2 * HOUR
