"""A range of versions, commit by commit and in order: each version's actions and its commit time.

What every reader of "what changed" walks: the change data feed (:mod:`deltalog.dml.changes`), the reader of
new files for append-only pipelines, and Spark's batch and streaming readers of them. It reads only commit
files, a chunk at a time (all of a chunk requested at once, :func:`deltalog.storage.bulk.read_many`), so a long
range costs a few round trips per chunk and holds one chunk's actions in memory.

A version's time is the one time travel resolves it by (:mod:`deltalog.table.history`): its in-commit timestamp
from the table's enablement version on, before it its commit file's modification time made monotonic over the
whole log. So ``changes(starting_timestamp=t)`` and ``snapshot(timestamp=t)`` meet at the same versions, and a
row's ``_commit_timestamp`` is the time ``history()`` shows for its version.

Versions log cleanup deleted are refused by name, typed (:class:`~deltalog.errors.VersionNotFoundError`), as
is a start or an end outside the log.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deltalog.core import actions as A
from deltalog.core.codec import decode_commit
from deltalog.core.ict import IctEnablement
from deltalog.core.paths import LOG_DIR, Kind, LogPath, commit_name
from deltalog.core.timetravel import format_ms, monotonize, to_epoch_ms
from deltalog.errors import CorruptLogError, VersionNotFoundError
from deltalog.table import history
from deltalog.table.context import TableContext
from deltalog.table.listing import list_log
from deltalog.table.load import read_listed

#: commit files requested at once (one chunk's actions are held while its versions are handed out)
CHUNK = 128

Timestamp = Any  # str (ISO-8601), datetime, date, or epoch milliseconds


@dataclass(frozen=True)
class VersionCommit:
    """One version as its commit file holds it: its actions (in file order), its commitInfo, and its time (ms)
    as time travel resolves it."""

    version: int
    timestamp: int
    commit_info: Mapping[str, Any] | None
    actions: tuple[A.Action, ...]


class VersionWalk:
    """The commits of one table as one listing of its whole log showed them.

    ``enablement`` is the table's in-commit-timestamp enablement (the latest version's properties: what time
    travel reads too), None when the table does not use in-commit timestamps.
    """

    def __init__(self, ctx: TableContext, enablement: IctEnablement | None, paths: Sequence[LogPath] | None = None):
        self.ctx = ctx
        self._paths = list(paths) if paths is not None else list_log(ctx.store, 0)
        self._commits = {p.version: p for p in self._paths if p.kind is Kind.COMMIT}
        self._ict_from = enablement.version if enablement is not None else None
        limit = self._ict_from if self._ict_from is not None else float("inf")
        self._file_times = dict(monotonize([(v, p.mtime) for v, p in sorted(self._commits.items()) if v < limit]))

    @property
    def paths(self) -> list[LogPath]:
        """The listing the walk reads from (the whole log, as it was when the walk began)."""
        return list(self._paths)

    @property
    def first_commit(self) -> int | None:
        """The oldest version whose commit file is still there (None when there is none)."""
        return min(self._commits) if self._commits else None

    @property
    def last_commit(self) -> int | None:
        """The newest version whose commit file the listing showed."""
        return max(self._commits) if self._commits else None

    def _missing(self, version: int) -> VersionNotFoundError:
        first, last = self.first_commit, self.last_commit
        if last is not None and version > last:
            return VersionNotFoundError(
                f"version {version} is after the latest commit ({last})", earliest=first, latest=last
            )
        kept = f"the oldest commit kept is version {first}" if first is not None else "no commit is kept"
        return VersionNotFoundError(
            f"version {version}'s commit file ({LOG_DIR}/{commit_name(version)}) is gone: log cleanup removed it "
            f"({kept}), so what changed in it cannot be read",
            earliest=first,
            latest=last,
        )

    def check_range(self, start: int, end: int) -> None:
        """Every commit of ``start..end`` is in the listing; the first one missing is refused by version."""
        for v in range(start, end + 1):
            if v not in self._commits:
                raise self._missing(v)

    def _time(self, version: int, info: Mapping[str, Any] | None) -> int:
        if self._ict_from is None or version < self._ict_from:
            return self._file_times[version]
        value = (info or {}).get("inCommitTimestamp")
        if not isinstance(value, int) or isinstance(value, bool):
            path = f"{LOG_DIR}/{commit_name(version)}"
            raise CorruptLogError(f"{path} has no inCommitTimestamp although the table enables them", path=path)
        return value

    def commits(self, start: int, end: int, chunk: int = CHUNK) -> Iterator[VersionCommit]:
        """Versions ``start..end`` in order, read ``chunk`` commit files at a time; a version log cleanup
        removed is a :class:`VersionNotFoundError` naming it, raised before anything is read."""
        self.check_range(start, end)
        for lo in range(start, end + 1, max(1, chunk)):
            versions = list(range(lo, min(end, lo + max(1, chunk) - 1) + 1))
            paths = [f"{LOG_DIR}/{self._commits[v].name}" for v in versions]
            for v, path, data in zip(versions, paths, read_listed(self.ctx.store, paths), strict=True):
                decoded = decode_commit(data, path)
                info = decoded.commit_info
                yield VersionCommit(v, self._time(v, info), info, decoded.actions)


# ---------------------------------------------------------------------------------------------- bounds by time
def first_version_from(ctx: TableContext, latest: history.Latest, timestamp: Timestamp) -> int:
    """The first version committed at or after ``timestamp`` (Delta Spark's starting version for a timestamp):
    the oldest kept version for a time before it, the latest version + 1 for a time after the latest commit."""
    ts = to_epoch_ms(timestamp)
    try:
        return history.version_at(ctx, latest, ts - 1, allow_after_latest=True) + 1
    except VersionNotFoundError as exc:
        if exc.earliest is None:
            raise
        return exc.earliest


def last_version_until(ctx: TableContext, latest: history.Latest, timestamp: Timestamp) -> int:
    """The last version committed at or before ``timestamp`` (time travel's "as of"); a time after the latest
    commit gives the latest version, one before the oldest kept commit is a :class:`VersionNotFoundError`."""
    return history.version_at(ctx, latest, timestamp, allow_after_latest=True)


def shown_time(timestamp: Timestamp) -> str:
    """A caller's timestamp as messages show it."""
    return format_ms(to_epoch_ms(timestamp))


__all__ = [
    "CHUNK",
    "Timestamp",
    "VersionCommit",
    "VersionWalk",
    "first_version_from",
    "last_version_until",
    "shown_time",
]
