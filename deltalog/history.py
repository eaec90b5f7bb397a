"""Commit times, "as of" resolution and history, as the protocol defines them.

Versions before in-commit timestamps were enabled use their files' modification times made monotonic;
versions from the enablement on use ``commitInfo.inCommitTimestamp``. The two parts are never mixed: a
table copy rewrites mtimes, but never in-commit timestamps, and "as of" a time at or after the enablement
searches only the versions that have them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog.core.paths import LOG_DIR, Kind, LogPath
from deltalog.core.segment import earliest_version
from deltalog.core.timetravel import monotonize, to_epoch_ms
from deltalog.core.timetravel import version_at as _version_at
from deltalog.errors import CorruptLogError, TableNotFoundError

if TYPE_CHECKING:
    from deltalog.log import DeltaLog, Timestamp

Timeline = list[tuple[int, int]]


@dataclass(frozen=True)
class HistoryEntry:
    """One commit as history shows it: its version, its time (ms), and its commitInfo (raw JSON object)."""

    version: int
    timestamp: int
    commit_info: dict[str, Any]

    @property
    def operation(self) -> str | None:
        op = self.commit_info.get("operation")
        return op if isinstance(op, str) else None


def _ict_enablement(log: DeltaLog) -> tuple[int, int | None] | None:
    """(enablement version, enablement timestamp) when the table uses in-commit timestamps."""
    # The latest snapshot also vets the protocol: history of a table we cannot read is refused too.
    conf = log.snapshot().configuration
    if str(conf.get("delta.enableInCommitTimestamps", "false")).lower() != "true":
        return None
    try:
        version = int(conf.get("delta.inCommitTimestampEnablementVersion", "0"))
    except ValueError:
        version = 0
    raw_ts = conf.get("delta.inCommitTimestampEnablementTimestamp")
    try:
        ts = int(raw_ts) if raw_ts is not None else None
    except ValueError:
        ts = None
    return version, ts


def timeline_parts(log: DeltaLog, paths: Sequence[LogPath] | None = None) -> tuple[Timeline, Timeline]:
    """The commits before in-commit timestamps (monotonized mtimes) and those with them (their ICT).

    ``paths`` is a listing of the whole log the caller already holds (mtimes are made monotonic from the
    first commit on, so nothing shorter will do); without it the log is listed here.
    """
    if paths is None:
        paths = log.list_log(0)
    commits = [p for p in paths if p.kind is Kind.COMMIT]
    if not paths:
        raise TableNotFoundError(f"no Delta table at {log.location}: {LOG_DIR} has no commits")
    enablement = _ict_enablement(log)
    if enablement is None:
        return monotonize([(p.version, p.mtime) for p in commits]), []
    ict_from = enablement[0]
    before = monotonize([(p.version, p.mtime) for p in commits if p.version < ict_from])
    ict: Timeline = []
    for p in commits:
        if p.version < ict_from:
            continue
        value = log._commit_info(p.version).get("inCommitTimestamp")
        if not isinstance(value, int) or isinstance(value, bool):
            path = f"{LOG_DIR}/{p.name}"
            raise CorruptLogError(f"{path} has no inCommitTimestamp although the table enables them", path=path)
        ict.append((p.version, value))
    return before, ict


def commit_timeline(log: DeltaLog) -> Timeline:
    """(version, commit time ms) for every commit file present, ascending."""
    before, ict = timeline_parts(log)
    return before + ict


def version_at(log: DeltaLog, timestamp: Timestamp, allow_after_latest: bool = False) -> int:
    """The latest version committed at or before ``timestamp``, among the reconstructable ones."""
    ts = to_epoch_ms(timestamp)
    paths = log.list_log(0)  # one listing for both the earliest version and the timeline
    earliest = earliest_version(paths)
    if earliest is None:
        raise TableNotFoundError(f"no Delta table at {log.location}: {LOG_DIR} has no commits")
    before, ict = timeline_parts(log, paths)
    before = [(v, t) for v, t in before if v >= earliest]
    ict = [(v, t) for v, t in ict if v >= earliest]
    if ict:
        enablement = _ict_enablement(log)
        enabled_at = enablement[1] if enablement and enablement[1] is not None else ict[0][1]
        if ts >= enabled_at or not before:
            return _version_at(ict, ts, allow_after_latest=allow_after_latest)
        return _version_at(before, ts, allow_after_latest=True)
    return _version_at(before, ts, allow_after_latest=allow_after_latest)


def entries(log: DeltaLog, limit: int | None = None) -> Iterator[HistoryEntry]:
    """Commits newest first: version, time (ms, as time travel sees it) and commitInfo."""
    newest_first = list(reversed(commit_timeline(log)))
    for version, ts in newest_first if limit is None else newest_first[:limit]:
        yield HistoryEntry(version, ts, log._commit_info(version))


__all__ = ["HistoryEntry", "Timeline", "commit_timeline", "entries", "timeline_parts", "version_at"]
