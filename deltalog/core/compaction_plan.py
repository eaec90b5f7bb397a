"""Which commits a log compaction file may cover, decided on a listing (PROTOCOL "Log Compaction Files").

A compaction file stands in for its commits in every later replay that reads it (Delta Spark reads them by
default), so a range is refused unless every commit in it is there to be reconciled: a gap is a damaged
log, and commits below the oldest one left were deleted by log cleanup. One commit is no compaction (the
protocol asks for ``end > start``, and it would save nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from deltalog.core.paths import Kind, LogPath
from deltalog.core.segment import commits_by_version, complete_checkpoints
from deltalog.errors import CorruptLogError, InvalidArgumentError, VersionNotFoundError

#: the fewest commits a compaction file covers
MIN_COMMITS = 2


@dataclass(frozen=True)
class CompactionRange:
    """The commits ``start..end`` (inclusive) of one compaction file, in version order."""

    start: int
    end: int
    commits: tuple[LogPath, ...]


def default_start(paths: Sequence[LogPath]) -> int:
    """Right after what a latest load already skips: the newest complete checkpoint, or the furthest end of a
    compaction file; the oldest commit listed when there is neither."""
    marks = [c.version for c in complete_checkpoints(paths)]
    marks += [p.end_version for p in paths if p.kind is Kind.COMPACTION and p.end_version is not None and p.size]
    if marks:
        return max(marks) + 1
    commits = commits_by_version(paths)
    return min(commits) if commits else 0


def plan_range(paths: Sequence[LogPath], start: int | None, end: int | None, where: str) -> CompactionRange:
    """The range to compact: ``start`` (default :func:`default_start`) to ``end`` (default the latest commit).

    Raises :class:`InvalidArgumentError` for fewer than :data:`MIN_COMMITS` commits,
    :class:`VersionNotFoundError` for a range reaching past the latest commit or below the oldest one left
    (cleaned up), and :class:`CorruptLogError` naming the first missing commit of a gap.
    """
    commits = commits_by_version(paths)
    if not commits:
        raise VersionNotFoundError(f"{where} has no commits to compact")
    latest, oldest = max(commits), min(commits)
    first = default_start(paths) if start is None else start
    last = latest if end is None else end
    if start is None and end is None and last - first + 1 < MIN_COMMITS:
        count = _commits(last - first + 1)
        held = f"{count} after the newest checkpoint or compaction file" if first > oldest else f"the log holds {count}"
        raise InvalidArgumentError(
            f"nothing to compact in {where}: {held}, and a log compaction file covers at least {MIN_COMMITS}"
        )
    if first < 0 or last < first or last - first + 1 < MIN_COMMITS:
        raise InvalidArgumentError(
            f"cannot compact versions {first}..{last} of {where}: a log compaction file covers at least "
            f"{MIN_COMMITS} commits (start < end)"
        )
    if last > latest:
        raise VersionNotFoundError(
            f"cannot compact versions {first}..{last} of {where}: the latest version is {latest}",
            earliest=oldest,
            latest=latest,
        )
    if first < oldest:
        raise VersionNotFoundError(
            f"cannot compact versions {first}..{last} of {where}: commits before {oldest:020d}.json were "
            "deleted by log cleanup",
            earliest=oldest,
            latest=latest,
        )
    for v in range(first, last + 1):
        if v not in commits:
            raise CorruptLogError(
                f"cannot compact versions {first}..{last}: commit {v:020d}.json is missing from {where}",
                path=f"{where}/{v:020d}.json",
            )
    return CompactionRange(first, last, tuple(commits[v] for v in range(first, last + 1)))


def _commits(n: int) -> str:
    return "no commit" if n <= 0 else "1 commit" if n == 1 else f"{n} commits"


def due(version: int, interval: int) -> bool:
    """Whether the commit of ``version`` completes a run of ``interval`` commits to compact (versions
    ``version - interval + 1 .. version``), as Delta Kernel counts: ``(version + 1) % interval == 0``."""
    return interval >= MIN_COMMITS and version + 1 >= interval and (version + 1) % interval == 0


__all__ = ["MIN_COMMITS", "CompactionRange", "default_start", "due", "plan_range"]
