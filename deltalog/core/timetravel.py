"""Commit timestamps and "as of" resolution.

Without in-commit timestamps a commit's time is its file's modification time, which copies and clock skew
can reorder; the protocol makes them monotonic (a time not after its predecessor's becomes predecessor + 1
ms). With in-commit timestamps, versions from the enablement version on use ``commitInfo.inCommitTimestamp``,
which writers keep strictly increasing.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from deltalog.core.isotime import parse_datetime
from deltalog.core.properties import get_bool
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
            raise InvalidArgumentError(f"not an ISO-8601 timestamp: {value!r}") from None
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
    if not timeline:
        raise VersionNotFoundError("the table has no commits to travel to")
    times = [t for _, t in timeline]
    i = bisect.bisect_right(times, ts_ms)
    if i == 0:
        first_v, first_t = timeline[0]
        raise VersionNotFoundError(
            f"timestamp {format_ms(ts_ms)} is before the earliest available commit "
            f"(version {first_v} at {format_ms(first_t)})",
            earliest=first_v,
            latest=timeline[-1][0],
        )
    if i == len(times) and ts_ms > times[-1] and not allow_after_latest:
        last_v, last_t = timeline[-1]
        raise VersionNotFoundError(
            f"timestamp {format_ms(ts_ms)} is after the latest commit (version {last_v} at {format_ms(last_t)})",
            earliest=timeline[0][0],
            latest=last_v,
        )
    return timeline[i - 1][0]


@dataclass(frozen=True)
class IctEnablement:
    """Where in-commit timestamps start: commits from ``version`` on carry ``commitInfo.inCommitTimestamp``.

    ``timestamp`` is the enablement's own (``None`` when the table does not record it, or records something
    that is not a number); history then takes the first in-commit timestamp.
    """

    version: int
    timestamp: int | None


def ict_enablement(configuration: Mapping[str, str]) -> IctEnablement | None:
    """The in-commit timestamp enablement of a table's properties; ``None`` when they are off.

    Lenient, as readers must be: an enablement version that is not a number counts as 0 (every commit
    carries one), an enablement timestamp that is not one is unknown.
    """
    if not get_bool(configuration, "delta.enableInCommitTimestamps"):
        return None
    try:
        version = int(configuration.get("delta.inCommitTimestampEnablementVersion", "0"))
    except ValueError:
        version = 0
    raw_ts = configuration.get("delta.inCommitTimestampEnablementTimestamp")
    try:
        ts = int(raw_ts) if raw_ts is not None else None
    except ValueError:
        ts = None
    return IctEnablement(version, ts)


def format_ms(ms: int) -> str:
    return (
        dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


__all__ = ["IctEnablement", "format_ms", "ict_enablement", "monotonize", "to_epoch_ms", "version_at"]
