"""Commit timestamps and "as of" resolution.

Without in-commit timestamps a commit's time is its file's modification time, which copies and clock skew
can reorder; the protocol makes them monotonic (a time not after its predecessor's becomes predecessor + 1
ms). With in-commit timestamps, versions from the enablement version on use ``commitInfo.inCommitTimestamp``,
which writers keep strictly increasing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

from deltalog.core.isotime import parse_datetime
from deltalog.errors import InvalidArgumentError, VersionNotFoundError

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def monotonize(times: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """(version, time ms) pairs in ascending version order, made strictly increasing in time."""
    out: list[tuple[int, int]] = []
    prev: int | None = None
    for version, t in times:
        if prev is not None and t <= prev:
            t = prev + 1
        out.append((version, t))
        prev = t
    return out


def to_epoch_ms(value: str | dt.datetime | dt.date | int | float) -> int:
    """Milliseconds since the epoch for a user's timestamp. Naive values are UTC, never this machine's zone."""
    if isinstance(value, bool):
        raise InvalidArgumentError(f"not a timestamp: {value!r}")
    if isinstance(value, (int, float)):
        if value != value or value in (float("inf"), float("-inf")):
            raise InvalidArgumentError(f"not a timestamp: {value!r}")
        return int(value)
    if isinstance(value, str):
        try:
            value = parse_datetime(value)
        except ValueError:
            raise InvalidArgumentError(
                f"not an ISO-8601 timestamp: {value!r} (e.g. 2026-11-01, 2026-11-01T10:00:00Z or "
                "'2026-11-01 10:00:00+02:00'; no zone means UTC)"
            ) from None
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return (value - _EPOCH) // dt.timedelta(milliseconds=1)  # integer arithmetic: no float rounding


def version_at(timeline: Sequence[tuple[int, int]], ts_ms: int, allow_after_latest: bool = False) -> int:
    """The latest version whose commit time is ``<= ts_ms`` in an ascending, monotonic timeline.

    A time after the latest commit is an error unless ``allow_after_latest``: as in Delta Spark, "as of" a
    moment the log has not reached yet is more often a clock or zone mistake than a wish for the latest.
    """
    return search(len(timeline), timeline.__getitem__, ts_ms, allow_after_latest)


def search(count: int, entry: Callable[[int], tuple[int, int]], ts_ms: int, allow_after_latest: bool = False) -> int:
    """:func:`version_at` over a timeline of ``count`` entries that ``entry(i)`` gives one at a time.

    Why: with in-commit timestamps each time is in a commit file, so a search that asks for O(log count)
    entries reads O(log count) commits where building the timeline would read them all (Delta Spark's
    history manager searches the same way).
    """
    if count == 0:
        raise VersionNotFoundError("the table has no commits to travel to")
    lo, hi = 0, count  # the first entry later than ts_ms
    while lo < hi:
        mid = (lo + hi) // 2
        if entry(mid)[1] <= ts_ms:
            lo = mid + 1
        else:
            hi = mid
    if lo == 0:
        first_v, first_t = entry(0)
        raise VersionNotFoundError(
            f"timestamp {format_ms(ts_ms)} is before the earliest available commit "
            f"(version {first_v} at {format_ms(first_t)})",
            earliest=first_v,
            latest=entry(count - 1)[0],
        )
    if lo == count and not allow_after_latest:
        last_v, last_t = entry(count - 1)
        if ts_ms > last_t:
            raise VersionNotFoundError(
                f"timestamp {format_ms(ts_ms)} is after the latest commit (version {last_v} at {format_ms(last_t)})",
                earliest=entry(0)[0],
                latest=last_v,
            )
    return entry(lo - 1)[0]


def format_ms(ms: int) -> str:
    return (
        dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


__all__ = ["format_ms", "monotonize", "search", "to_epoch_ms", "version_at"]
