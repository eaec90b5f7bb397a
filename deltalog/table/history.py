"""Commit times, "as of" resolution and history, as the protocol defines them.

Versions before in-commit timestamps were enabled use their files' modification times made monotonic;
versions from the enablement on use ``commitInfo.inCommitTimestamp``. The two parts are never mixed: a
table copy rewrites mtimes, but never in-commit timestamps, and "as of" a time at or after the enablement
searches only the versions that have them.

Whether a table has in-commit timestamps is a property of its latest version, so every function here takes
``latest``: a way to get the latest snapshot (a facade's cached one), asked only once the log has commits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from deltalog.core import engine_safety, timetravel
from deltalog.core.ict import IctEnablement, ict_enablement
from deltalog.core.jsonlines import commit_info_of
from deltalog.core.paths import LOG_DIR, Kind, LogPath, commit_name
from deltalog.core.segment import earliest_version
from deltalog.core.timetravel import monotonize, to_epoch_ms
from deltalog.errors import CorruptLogError, TableNotFoundError
from deltalog.table.context import TableContext
from deltalog.table.listing import list_log
from deltalog.table.snapshot import Snapshot

Timeline = list[tuple[int, int]]
Timestamp = Any  # str (ISO-8601), datetime, date, or epoch milliseconds
Latest = Callable[[], Snapshot]


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


def commit_info(ctx: TableContext, version: int) -> dict[str, Any]:
    """The raw commitInfo of ``version``'s commit file (``{}`` when it has none)."""
    path = f"{LOG_DIR}/{commit_name(version)}"
    return commit_info_of(ctx.store.read(path), path)


def _enablement(latest: Latest) -> IctEnablement | None:
    # The latest snapshot also vets the protocol: history of a table we cannot read is refused too.
    snap = latest()
    return ict_enablement(snap.configuration, snap.protocol)


def timeline_parts(
    ctx: TableContext, latest: Latest, paths: Sequence[LogPath] | None = None
) -> tuple[Timeline, Timeline]:
    """The commits before in-commit timestamps (monotonized mtimes) and those with them (their ICT).

    ``paths`` is a listing of the whole log the caller already holds (mtimes are made monotonic from the
    first commit on, so nothing shorter will do); without it the log is listed here.
    """
    if paths is None:
        paths = list_log(ctx.store, 0)
    commits = [p for p in paths if p.kind is Kind.COMMIT]
    if not paths:
        raise TableNotFoundError(f"no Delta table at {ctx.location}: {LOG_DIR} has no commits")
    enablement = _enablement(latest)
    if enablement is None:
        return monotonize([(p.version, p.mtime) for p in commits]), []
    ict_from = enablement.version
    before = monotonize([(p.version, p.mtime) for p in commits if p.version < ict_from])
    ict: Timeline = []
    for p in commits:
        if p.version < ict_from:
            continue
        value = commit_info(ctx, p.version).get("inCommitTimestamp")
        if not isinstance(value, int) or isinstance(value, bool):
            path = f"{LOG_DIR}/{p.name}"
            raise CorruptLogError(f"{path} has no inCommitTimestamp although the table enables them", path=path)
        ict.append((p.version, value))
    return before, ict


def commit_timeline(ctx: TableContext, latest: Latest) -> Timeline:
    """(version, commit time ms) for every commit file present, ascending."""
    before, ict = timeline_parts(ctx, latest)
    return before + ict


def version_at(ctx: TableContext, latest: Latest, timestamp: Timestamp, allow_after_latest: bool = False) -> int:
    """The latest version committed at or before ``timestamp``, among the reconstructable ones."""
    ts = to_epoch_ms(timestamp)
    paths = list_log(ctx.store, 0)  # one listing for both the earliest version and the timeline
    earliest = earliest_version(paths)
    if earliest is None:
        raise TableNotFoundError(f"no Delta table at {ctx.location}: {LOG_DIR} has no commits")
    before, ict = timeline_parts(ctx, latest, paths)
    before = [(v, t) for v, t in before if v >= earliest]
    ict = [(v, t) for v, t in ict if v >= earliest]
    if ict:
        enablement = _enablement(latest)
        enabled_at = enablement.timestamp if enablement and enablement.timestamp is not None else ict[0][1]
        if ts >= enabled_at or not before:
            return timetravel.version_at(ict, ts, allow_after_latest=allow_after_latest)
        return timetravel.version_at(before, ts, allow_after_latest=True)
    return timetravel.version_at(before, ts, allow_after_latest=allow_after_latest)


def entries(ctx: TableContext, latest: Latest, limit: int | None = None) -> Iterator[HistoryEntry]:
    """Commits newest first: version, time (ms, as time travel sees it) and commitInfo; a commit by an engine
    that cannot share this store safely is reported once (:meth:`TableContext.warn_engine_risk`)."""
    newest_first = list(reversed(commit_timeline(ctx, latest)))
    for version, ts in newest_first if limit is None else newest_first[:limit]:
        info = commit_info(ctx, version)
        ctx.warn_engine_risk(engine_safety.engine_risk(info.get("engineInfo"), ctx.location, version))
        yield HistoryEntry(version, ts, info)


__all__ = [
    "HistoryEntry",
    "Latest",
    "Timeline",
    "Timestamp",
    "commit_info",
    "commit_timeline",
    "entries",
    "timeline_parts",
    "version_at",
]
