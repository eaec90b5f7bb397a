"""Commit times, "as of" resolution and history, as the protocol defines them, at the fewest requests.

Versions before in-commit timestamps were enabled use their files' modification times made monotonic;
versions from the enablement on use ``commitInfo.inCommitTimestamp``. The two parts are never mixed: a
table copy rewrites mtimes, but never in-commit timestamps, and "as of" a time at or after the enablement
searches only the versions that have them.

What each call reads, because on an object store every request is a round trip:

- :func:`entries` (history): one listing of the log (mtimes are made monotonic from the first commit on)
  and the commitInfos of the commits it shows, all requested at once; never the table's state.
- :func:`version_and_listing` ("as of"): one listing and the newest commit's commitInfo; on a table with
  in-commit timestamps, a binary search reading O(log N) commitInfos. The listing also gives the segment
  of the version found, so time travel lists once.

Whether a table has in-commit timestamps is a property of its latest version. A writer that has them on
stamps every commit with one, the commit that enables them included, and one that turns them off writes
none, so the newest commit's commitInfo tells: without an ``inCommitTimestamp`` the table does not use
them, and nothing more is read; with one, ``latest`` (a way to get the latest snapshot, a facade's cached
one) gives the enablement version and timestamp from the table's properties.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from deltalog.core.commit import engine_safety
from deltalog.core.features.ict import IctEnablement, ict_enablement
from deltalog.core.log import timetravel
from deltalog.core.log.jsonlines import commit_info_of
from deltalog.core.log.paths import LOG_DIR, Kind, LogPath, commit_name
from deltalog.core.log.segment import earliest_version
from deltalog.core.log.timetravel import monotonize, to_epoch_ms
from deltalog.core.state import CommitData
from deltalog.errors import CorruptLogError, TableNotFoundError
from deltalog.table.context import TableContext
from deltalog.table.listing import list_log
from deltalog.table.load import read_listed
from deltalog.table.snapshot import Snapshot

Timeline = list[tuple[int, int]]
Timestamp = Any  # str (ISO-8601), datetime, date, or epoch milliseconds
Latest = Callable[[], Snapshot]


def _str(info: dict[str, Any], key: str) -> str | None:
    value = info.get(key)
    return value if isinstance(value, str) else None


def _int(info: dict[str, Any], key: str) -> int | None:
    value = info.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _map(info: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = info.get(key)
    return dict(value) if isinstance(value, dict) else None


@dataclass(frozen=True)
class HistoryEntry:
    """One commit as history shows it: its version, its time and its commitInfo.

    ``timestamp`` (ms since the epoch) is the time "as of" resolves the version by: the in-commit timestamp
    from the table's enablement version on, the monotonised file time before it. The attributes are the
    fields Delta Spark's ``DESCRIBE HISTORY`` shows, typed, ``None`` where the commitInfo lacks the field or
    holds a value of another type (another engine wrote it); ``commit_info`` is the raw JSON object.
    """

    version: int
    timestamp: int
    commit_info: dict[str, Any]

    @property
    def operation(self) -> str | None:
        """The operation (``WRITE``, ``DELETE``, ``OPTIMIZE``...)."""
        return _str(self.commit_info, "operation")

    @property
    def operation_parameters(self) -> dict[str, Any] | None:
        """The operation's parameters (``operationParameters``: values as the writer encoded them)."""
        return _map(self.commit_info, "operationParameters")

    @property
    def operation_metrics(self) -> dict[str, Any] | None:
        """What the operation did (``operationMetrics``: numFiles, numOutputRows...)."""
        return _map(self.commit_info, "operationMetrics")

    @property
    def user_id(self) -> str | None:
        """``userId``."""
        return _str(self.commit_info, "userId")

    @property
    def user_name(self) -> str | None:
        """``userName``."""
        return _str(self.commit_info, "userName")

    @property
    def job(self) -> dict[str, Any] | None:
        """``job`` (the scheduler job that committed, on Databricks)."""
        return _map(self.commit_info, "job")

    @property
    def notebook(self) -> dict[str, Any] | None:
        """``notebook`` (the notebook that committed, on Databricks)."""
        return _map(self.commit_info, "notebook")

    @property
    def cluster_id(self) -> str | None:
        """``clusterId``."""
        return _str(self.commit_info, "clusterId")

    @property
    def read_version(self) -> int | None:
        """The version the transaction read (``readVersion``)."""
        return _int(self.commit_info, "readVersion")

    @property
    def isolation_level(self) -> str | None:
        """``isolationLevel`` (``Serializable``, ``WriteSerializable``, ``SnapshotIsolation``)."""
        return _str(self.commit_info, "isolationLevel")

    @property
    def is_blind_append(self) -> bool | None:
        """Whether the commit only added files without reading the table (``isBlindAppend``)."""
        value = self.commit_info.get("isBlindAppend")
        return value if isinstance(value, bool) else None

    @property
    def user_metadata(self) -> str | None:
        """``userMetadata``."""
        return _str(self.commit_info, "userMetadata")

    @property
    def engine_info(self) -> str | None:
        """The writing engine (``engineInfo``)."""
        return _str(self.commit_info, "engineInfo")

    @property
    def in_commit_timestamp(self) -> int | None:
        """The commit's ``inCommitTimestamp``, when it has one."""
        return _int(self.commit_info, "inCommitTimestamp")


def commit_info(ctx: TableContext, version: int) -> dict[str, Any]:
    """The raw commitInfo of ``version``'s commit file (``{}`` when it has none)."""
    path = f"{LOG_DIR}/{commit_name(version)}"
    return commit_info_of(ctx.store.read(path), path)


def commit_infos(ctx: TableContext, versions: Sequence[int]) -> dict[int, dict[str, Any]]:
    """The raw commitInfos of ``versions``, all requested at once; a listed commit that is gone is a
    :class:`CorruptLogError` naming it."""
    paths = [f"{LOG_DIR}/{commit_name(v)}" for v in versions]
    datas = read_listed(ctx.store, paths)
    out = {}
    for v, p, d in zip(versions, paths, datas, strict=True):
        CommitData(v, p, d).check_not_empty()
        out[v] = commit_info_of(d, p)
    return out


def _enablement(latest: Latest) -> IctEnablement | None:
    snap = latest()
    return ict_enablement(snap.configuration, snap.protocol)


def _enablement_after(latest: Latest, newest_info: dict[str, Any]) -> IctEnablement | None:
    """The enablement, asking ``latest`` only when the newest commit carries an in-commit timestamp."""
    if _int(newest_info, "inCommitTimestamp") is None:
        return None
    return _enablement(latest)


def _ict(info: dict[str, Any], version: int) -> int:
    value = _int(info, "inCommitTimestamp")
    if value is None:
        path = f"{LOG_DIR}/{commit_name(version)}"
        raise CorruptLogError(f"{path} has no inCommitTimestamp although the table enables them", path=path)
    return value


def _commits(ctx: TableContext, paths: Sequence[LogPath]) -> list[LogPath]:
    if not paths:
        raise TableNotFoundError(f"no Delta table at {ctx.location}: {LOG_DIR} has no commits")
    return [p for p in paths if p.kind is Kind.COMMIT]


def timeline_parts(
    ctx: TableContext, latest: Latest, paths: Sequence[LogPath] | None = None
) -> tuple[Timeline, Timeline]:
    """The commits before in-commit timestamps (monotonized mtimes) and those with them (their ICT).

    ``paths`` is a listing of the whole log the caller already holds (mtimes are made monotonic from the
    first commit on, so nothing shorter will do); without it the log is listed here.
    """
    if paths is None:
        paths = list_log(ctx.store, 0)
    commits = _commits(ctx, paths)
    enablement = _enablement(latest)
    if enablement is None:
        return monotonize([(p.version, p.mtime) for p in commits]), []
    ict_from = enablement.version
    before = monotonize([(p.version, p.mtime) for p in commits if p.version < ict_from])
    versions = [p.version for p in commits if p.version >= ict_from]
    infos = commit_infos(ctx, versions)
    return before, [(v, _ict(infos[v], v)) for v in versions]


def commit_timeline(ctx: TableContext, latest: Latest) -> Timeline:
    """(version, commit time ms) for every commit file present, ascending."""
    before, ict = timeline_parts(ctx, latest)
    return before + ict


def version_at(ctx: TableContext, latest: Latest, timestamp: Timestamp, allow_after_latest: bool = False) -> int:
    """The latest version committed at or before ``timestamp``, among the reconstructable ones."""
    return version_and_listing(ctx, latest, timestamp, allow_after_latest)[0]


def version_and_listing(
    ctx: TableContext, latest: Latest, timestamp: Timestamp, allow_after_latest: bool = False
) -> tuple[int, list[LogPath]]:
    """:func:`version_at`, and the listing of the whole log it was found in (which holds its segment)."""
    ts = to_epoch_ms(timestamp)
    paths = list_log(ctx.store, 0)  # one listing for the earliest version, the mtimes and the segment
    commits = _commits(ctx, paths)
    earliest = earliest_version(paths)
    if earliest is None:
        raise TableNotFoundError(f"no Delta table at {ctx.location}: {LOG_DIR} has no commits")
    if not commits:
        return timetravel.version_at([], ts), paths
    newest = commits[-1].version
    cache = commit_infos(ctx, [newest])
    enablement = _enablement_after(latest, cache[newest])
    ict_from = enablement.version if enablement is not None else newest + 1
    before = monotonize([(p.version, p.mtime) for p in commits if p.version < ict_from])
    before = [(v, t) for v, t in before if v >= earliest]
    with_ict = [p.version for p in commits if p.version >= max(ict_from, earliest)]
    if not with_ict:
        return timetravel.version_at(before, ts, allow_after_latest=allow_after_latest), paths

    def entry(i: int) -> tuple[int, int]:
        v = with_ict[i]
        if v not in cache:
            cache.update(commit_infos(ctx, [v]))
        return v, _ict(cache[v], v)

    enabled_at = enablement.timestamp if enablement and enablement.timestamp is not None else entry(0)[1]
    if ts >= enabled_at or not before:
        return timetravel.search(len(with_ict), entry, ts, allow_after_latest=allow_after_latest), paths
    return timetravel.version_at(before, ts, allow_after_latest=True), paths


def entries(ctx: TableContext, latest: Latest, limit: int | None = None) -> list[HistoryEntry]:
    """Commits newest first, at most ``limit`` of them: version, time (ms, as time travel sees it) and
    commitInfo; a commit by an engine that cannot share this store safely is reported once
    (:meth:`TableContext.warn_engine_risk`)."""
    commits = _commits(ctx, list_log(ctx.store, 0))
    shown = list(reversed(commits))
    if limit is not None:
        shown = shown[: max(0, limit)]
    if not shown:
        return []
    infos = commit_infos(ctx, [p.version for p in shown])
    enablement = _enablement_after(latest, infos[commits[-1].version])
    ict_from = enablement.version if enablement is not None else commits[-1].version + 1
    file_times = dict(monotonize([(p.version, p.mtime) for p in commits if p.version < ict_from]))
    out = []
    for p in shown:
        info = infos[p.version]
        ctx.warn_engine_risk(engine_safety.engine_risk(info.get("engineInfo"), ctx.location, p.version))
        ts = file_times[p.version] if p.version < ict_from else _ict(info, p.version)
        out.append(HistoryEntry(p.version, ts, info))
    return out


__all__ = [
    "HistoryEntry",
    "Latest",
    "Timeline",
    "Timestamp",
    "commit_info",
    "commit_infos",
    "commit_timeline",
    "entries",
    "timeline_parts",
    "version_and_listing",
    "version_at",
]
