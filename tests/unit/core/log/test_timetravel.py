"""Commit timestamps: monotonization, "as of" resolution, and users' timestamps in epoch milliseconds."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from deltalog.core.features.ict import IctEnablement, ict_enablement
from deltalog.core.log.timetravel import format_ms, monotonize, to_epoch_ms, version_at
from deltalog.errors import InvalidArgumentError, VersionNotFoundError

SETTINGS = settings(max_examples=200, deadline=None, database=None)
UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
T = 1_704_067_200_000  # 2024-01-01T00:00:00Z


def exact_ms(d: dt.datetime) -> int:
    return (d - EPOCH) // dt.timedelta(milliseconds=1)


# ---------------------------------------------------------------------------------------------- monotonize


def test_monotonize_leaves_increasing_times() -> None:
    assert monotonize([(0, 10), (1, 20), (2, 30)]) == [(0, 10), (1, 20), (2, 30)]


def test_monotonize_bumps_equal_and_earlier_times() -> None:
    assert monotonize([(0, 100), (1, 100), (2, 50), (3, 103), (4, 200)]) == [
        (0, 100),
        (1, 101),
        (2, 102),
        (3, 103),
        (4, 200),
    ]


def test_monotonize_empty() -> None:
    assert monotonize([]) == []


@SETTINGS
@given(st.lists(st.integers(0, 10**13), max_size=40))
def test_monotonize_properties(times: list[int]) -> None:
    pairs = list(enumerate(times))
    out = monotonize(pairs)
    assert [v for v, _ in out] == [v for v, _ in pairs]
    ts = [t for _, t in out]
    assert all(a < b for a, b in itertools.pairwise(ts))
    assert all(o >= t for o, t in zip(ts, times, strict=False))
    # a time already after its (monotonized) predecessor is kept as is
    for i in range(1, len(ts)):
        if times[i] > ts[i - 1]:
            assert ts[i] == times[i]


# ---------------------------------------------------------------------------------------------- version_at

TIMELINE = [(3, 1000), (4, 2000), (5, 3000)]


@pytest.mark.parametrize(("ts", "version"), [(1000, 3), (1999, 3), (2000, 4), (2500, 4), (3000, 5)])
def test_version_at(ts: int, version: int) -> None:
    assert version_at(TIMELINE, ts) == version


def test_version_at_before_earliest() -> None:
    with pytest.raises(VersionNotFoundError) as exc:
        version_at(TIMELINE, 999)
    assert (exc.value.earliest, exc.value.latest) == (3, 5)
    assert "before the earliest" in str(exc.value)
    assert format_ms(1000) in str(exc.value)


def test_version_at_after_latest() -> None:
    with pytest.raises(VersionNotFoundError) as exc:
        version_at(TIMELINE, 3001)
    assert (exc.value.earliest, exc.value.latest) == (3, 5)
    assert "after the latest" in str(exc.value)
    assert version_at(TIMELINE, 3001, allow_after_latest=True) == 5
    assert version_at(TIMELINE, 10**15, allow_after_latest=True) == 5


def test_version_at_empty_timeline() -> None:
    with pytest.raises(VersionNotFoundError):
        version_at([], 0)


@SETTINGS
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=30), st.integers(0, 2 * 10**6))
def test_version_at_is_latest_commit_not_after(times: list[int], ts: int) -> None:
    timeline = monotonize(list(enumerate(times)))
    if ts < timeline[0][1]:
        with pytest.raises(VersionNotFoundError):
            version_at(timeline, ts)
        return
    got = version_at(timeline, ts, allow_after_latest=True)
    assert got == max(v for v, t in timeline if t <= ts)


def test_format_ms() -> None:
    assert format_ms(T) == "2024-01-01T00:00:00.000Z"
    assert format_ms(T + 1) == "2024-01-01T00:00:00.001Z"


# ---------------------------------------------------------------------------------------------- to_epoch_ms


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-01-01T00:00:00Z", T),
        ("2024-01-01T00:00:00z", T),
        ("2024-01-01T00:00:00.000Z", T),
        ("2024-01-01T00:00:00.001Z", T + 1),
        ("2024-01-01T00:00:00.000001Z", T),
        ("2024-01-01T00:00:00+00:00", T),
        ("2024-01-01T02:00:00+02:00", T),
        ("2023-12-31T19:00:00-05:00", T),
        ("2024-01-01T05:30:00+05:30", T),
        ("2024-01-01T00:00:00", T),  # naive means UTC
        ("2024-01-01 00:00:00", T),
        ("  2024-01-01 00:00:00  ", T),
        ("2024-01-01 00:00:00.250", T + 250),
        ("2024-01-01", T),
        ("2024-01-02", T + 86_400_000),
        (dt.date(2024, 1, 1), T),
        (dt.datetime(2024, 1, 1), T),
        (dt.datetime(2024, 1, 1, tzinfo=UTC), T),
        (dt.datetime(2024, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))), T),
        (T, T),
        (0, 0),
        (float(T), T),
    ],
)
def test_to_epoch_ms(value: object, expected: int) -> None:
    assert to_epoch_ms(value) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value", ["yesterday", "2024-13-01", "2024-01-01T25:00:00", "", True, False, float("nan"), float("inf")]
)
def test_to_epoch_ms_rejects(value: object) -> None:
    with pytest.raises(InvalidArgumentError):
        to_epoch_ms(value)  # type: ignore[arg-type]


def test_to_epoch_ms_independent_of_local_zone() -> None:
    import os
    import time

    original = os.environ.get("TZ")
    try:
        for zone in ("America/New_York", "Asia/Kolkata", "UTC"):
            os.environ["TZ"] = zone
            time.tzset()
            assert to_epoch_ms("2024-01-01 00:00:00") == T
            assert to_epoch_ms(dt.datetime(2024, 1, 1)) == T
            assert to_epoch_ms(dt.date(2024, 1, 1)) == T
    finally:
        if original is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = original
        time.tzset()


@pytest.mark.parametrize(
    "text",
    [
        # float arithmetic (timestamp() * 1000) lands just below these exact instants
        "2004-04-17T19:04:30.370Z",
        "2039-05-03T04:12:37.765Z",
        "2038-06-19T21:43:37.088Z",
    ],
)
def test_to_epoch_ms_is_exact_at_millisecond_instants(text: str) -> None:
    d = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    assert to_epoch_ms(text) == exact_ms(d)
    assert to_epoch_ms(d) == exact_ms(d)
    # round trip through the format the engine prints in its own error messages
    assert to_epoch_ms(format_ms(exact_ms(d))) == exact_ms(d)


@SETTINGS
@given(st.integers(exact_ms(dt.datetime(2000, 1, 1, tzinfo=UTC)), exact_ms(dt.datetime(2100, 1, 1, tzinfo=UTC))))
@example(1_087_437_887_409)  # 2004-06-17T02:04:47.409Z
def test_to_epoch_ms_round_trips_format_ms(ms: int) -> None:
    """Any commit time printed by the engine must resolve back to that same millisecond."""
    assert to_epoch_ms(format_ms(ms)) == ms
    assert to_epoch_ms(EPOCH + dt.timedelta(milliseconds=ms)) == ms


# ---------------------------------------------------------------------------------------------- ICT enablement
ICT = "delta.enableInCommitTimestamps"
ICT_VERSION = "delta.inCommitTimestampEnablementVersion"
ICT_TS = "delta.inCommitTimestampEnablementTimestamp"


@pytest.mark.parametrize(
    ("conf", "expected"),
    [
        ({}, None),
        ({ICT: "false", ICT_VERSION: "3"}, None),
        ({ICT: "yes"}, None),  # only true is true
        ({ICT: "true"}, IctEnablement(0, None)),  # enabled at creation: every commit has one
        ({ICT: " TRUE ", ICT_VERSION: "5", ICT_TS: "1700000000000"}, IctEnablement(5, 1_700_000_000_000)),
        ({ICT: "true", ICT_VERSION: "five", ICT_TS: "soon"}, IctEnablement(0, None)),  # lenient, as readers are
    ],
)
def test_ict_enablement_is_read_leniently_from_the_properties(conf: dict[str, str], expected: object) -> None:
    assert ict_enablement(conf) == expected
