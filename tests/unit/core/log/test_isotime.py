"""ISO-8601 parsing that is the same on Python 3.10 and 3.11+ (``datetime.fromisoformat`` is not)."""

from __future__ import annotations

import datetime as dt

import pytest

from deltalog.core.files.partitions import parse_value
from deltalog.core.log.isotime import parse_datetime
from deltalog.core.log.timetravel import to_epoch_ms

UTC = dt.timezone.utc


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-23", dt.datetime(2026, 11, 23)),
        ("2026-11-23 20:14:57.9", dt.datetime(2026, 11, 23, 20, 14, 57, 900_000)),  # fails on 3.10's fromisoformat
        ("2026-11-23T20:14:57.123456789", dt.datetime(2026, 11, 23, 20, 14, 57, 123_456)),  # truncated, as 3.11
        ("2026-11-23T20:14:57,5", dt.datetime(2026, 11, 23, 20, 14, 57, 500_000)),
        ("2026-11-23T20:14", dt.datetime(2026, 11, 23, 20, 14)),
        ("2026-11-23T20", dt.datetime(2026, 11, 23, 20)),
        ("2026-11-23T20:14:57Z", dt.datetime(2026, 11, 23, 20, 14, 57, tzinfo=UTC)),
        ("2026-11-23T20:14:57.250z", dt.datetime(2026, 11, 23, 20, 14, 57, 250_000, tzinfo=UTC)),
        ("2026-11-23T22:14:57+02:00", dt.datetime(2026, 11, 23, 20, 14, 57, tzinfo=UTC)),
        ("2026-11-23T22:14:57+0200", dt.datetime(2026, 11, 23, 20, 14, 57, tzinfo=UTC)),
        ("2026-11-23T18:14:57-02", dt.datetime(2026, 11, 23, 20, 14, 57, tzinfo=UTC)),
        ("  2026-11-23T20:14:57Z ", dt.datetime(2026, 11, 23, 20, 14, 57, tzinfo=UTC)),
    ],
)
def test_accepted(text: str, expected: dt.datetime) -> None:
    assert parse_datetime(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "yesterday", "2026-13-01", "2026-11-23T25:00", "2026-11-23T20:14:57+02:75", "2026-11-23X20", "20261123"],
)
def test_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_datetime(text)


def test_time_travel_and_partition_values_use_it() -> None:
    assert to_epoch_ms("2026-11-23 20:14:57.9") == to_epoch_ms("2026-11-23T20:14:57.900Z")
    value = parse_value("timestamp", "2026-11-23 20:14:57.9")
    assert value == dt.datetime(2026, 11, 23, 20, 14, 57, 900_000, tzinfo=UTC)
