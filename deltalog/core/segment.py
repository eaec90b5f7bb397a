"""Choosing the files that rebuild one version: the newest complete checkpoint plus contiguous commits.

Pure: it sees a listing (parsed names with sizes and times) and answers with a :class:`LogSegment` or a
typed error. The ``_last_checkpoint`` hint never decides which checkpoint is used here; it only tells the
caller where to start listing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from deltalog.core.paths import Kind, LogPath
from deltalog.errors import CorruptLogError, TableNotFoundError, VersionNotFoundError

# Spark's ordering of checkpoint formats at one version: the greatest wins.
_FORMAT_RANK = {Kind.CHECKPOINT: 0, Kind.MULTIPART: 1, Kind.UUID_CHECKPOINT: 2}


@dataclass(frozen=True)
class CheckpointRef:
    """One complete checkpoint: a single file, a full set of parts, or a UUID-named V2 manifest."""

    version: int
    kind: Kind
    files: tuple[LogPath, ...]

    @property
    def sort_key(self) -> tuple[int, int, int, str]:
        return (self.version, _FORMAT_RANK[self.kind], len(self.files), self.files[0].name)


@dataclass(frozen=True)
class LogSegment:
    """A checkpoint (or none) and every commit after it up to ``version``.

    ``compactions`` are log compaction files that a replay may read instead of the commits they cover
    (:meth:`replay_files`); ``commits`` still names every commit, for everything that needs one per version
    (the tip a writer checks, history, the pending count).
    """

    version: int
    checkpoint: CheckpointRef | None
    commits: tuple[LogPath, ...]
    compactions: tuple[LogPath, ...] = ()

    @property
    def files(self) -> tuple[LogPath, ...]:
        return (self.checkpoint.files if self.checkpoint else ()) + self.commits

    def replay_files(self) -> tuple[LogPath, ...]:
        """The files a replay after the checkpoint reads, in version order: each compaction in place of the
        commits it covers, the other commits as they are."""
        by_start = {c.version: c for c in self.compactions}
        out: list[LogPath] = []
        covered_to = -1
        for p in self.commits:
            if p.version <= covered_to:
                continue
            found = by_start.get(p.version)
            if found is not None and found.end_version is not None:
                out.append(found)
                covered_to = found.end_version
            else:
                out.append(p)
        return tuple(out)

    def describe(self) -> str:
        """A short human account of what the segment replays, for error messages."""
        parts = []
        if self.checkpoint:
            parts.append(self.checkpoint.files[0].name + (" (+ parts)" if len(self.checkpoint.files) > 1 else ""))
        if self.commits:
            first, last = self.commits[0].name, self.commits[-1].name
            parts.append(first if first == last else f"{first} .. {last}")
        return " + ".join(parts) or "nothing"


def usable_compactions(paths: Iterable[LogPath], first: int, last: int) -> tuple[LogPath, ...]:
    """The compaction files a replay of commits ``first..last`` reads instead of commits, oldest first.

    Only files whose whole range lies inside ``first..last`` count (never one reaching past the version a
    load rebuilds: time travel into a compaction's range reads commits), only those whose every commit is
    still listed (a compaction file is an accelerator, never the only record of a version: log cleanup may
    have deleted commits it covers, and a reader that finds it wanting reads the commits instead, see
    :mod:`deltalog.core.state.compact_check`), and 0-byte ones do not (an interrupted writer's leftovers).
    ``x < y`` holds for every file the listing calls a compaction (:func:`deltalog.core.paths.parse`). From
    each version on, the file reaching furthest is taken, the next one starting right after it: the fewest
    files for the run, never two covering one commit.
    """
    listed = paths if isinstance(paths, Sequence) else list(paths)
    commits = {p.version for p in listed if p.kind is Kind.COMMIT}
    best: dict[int, LogPath] = {}
    for p in listed:
        end = p.end_version
        if p.kind is not Kind.COMPACTION or end is None or p.size == 0 or p.version < first or end > last:
            continue
        if any(v not in commits for v in range(p.version, end + 1)):
            continue
        if p.version not in best or (best[p.version].end_version or 0) < end:
            best[p.version] = p
    out: list[LogPath] = []
    v = first
    while v <= last:
        found = best.get(v)
        if found is not None and found.end_version is not None:
            out.append(found)
            v = found.end_version + 1
        else:
            v += 1
    return tuple(out)


def complete_checkpoints(paths: Iterable[LogPath]) -> list[CheckpointRef]:
    """Every complete checkpoint in ``paths``, oldest first, best format last within a version.

    0-byte files are skipped (an interrupted writer's leftovers would read as an empty table), and a
    multi-part set counts only when all its parts, of one part count, are present.
    """
    out: list[CheckpointRef] = []
    parts: dict[tuple[int, int], dict[int, LogPath]] = defaultdict(dict)
    for p in paths:
        if not p.is_checkpoint or p.size == 0:
            continue
        if p.kind is Kind.MULTIPART:
            assert p.parts is not None and p.part is not None
            parts[(p.version, p.parts)][p.part] = p
        else:
            out.append(CheckpointRef(p.version, p.kind, (p,)))
    for (version, n), found in parts.items():
        if len(found) == n:
            out.append(CheckpointRef(version, Kind.MULTIPART, tuple(found[i] for i in range(1, n + 1))))
    out.sort(key=lambda c: c.sort_key)
    return out


def commits_by_version(paths: Iterable[LogPath]) -> dict[int, LogPath]:
    return {p.version: p for p in paths if p.kind is Kind.COMMIT}


def latest_version(paths: Sequence[LogPath]) -> int | None:
    versions = [p.version for p in paths if p.kind is Kind.COMMIT] + [c.version for c in complete_checkpoints(paths)]
    return max(versions) if versions else None


def earliest_version(paths: Sequence[LogPath]) -> int | None:
    """The oldest version the listing can rebuild: 0 with ``0.json``, else the oldest complete checkpoint."""
    commits = commits_by_version(paths)
    if 0 in commits:
        return 0
    cps = complete_checkpoints(paths)
    return cps[0].version if cps else None


def build_segment(paths: Sequence[LogPath], version: int | None = None, where: str = "_delta_log") -> LogSegment:
    """The segment that rebuilds ``version`` (the latest when ``None``) from a listing.

    Raises :class:`TableNotFoundError` for an empty listing, :class:`VersionNotFoundError` for a version
    outside what the listing can rebuild, and :class:`CorruptLogError` naming the missing commit when the
    commits after the chosen checkpoint have a gap.
    """
    commits = commits_by_version(paths)
    checkpoints = complete_checkpoints(paths)
    latest = latest_version(paths)
    if latest is None:
        raise TableNotFoundError(f"no Delta table at {where}: no commit or checkpoint files found")
    earliest = earliest_version(paths)
    if earliest is None:
        first = min(commits) if commits else latest
        raise CorruptLogError(
            f"the log at {where} has been truncated: {0:020d}.json is missing and no complete checkpoint "
            f"remains, so no version can be rebuilt (the oldest commit left is {first:020d}.json)",
            path=f"{where}/{0:020d}.json",
        )
    target = latest if version is None else version
    if target < 0 or target > latest:
        raise VersionNotFoundError(
            f"version {target} does not exist: the latest version is {latest}",
            earliest=earliest,
            latest=latest,
        )
    usable = [c for c in checkpoints if c.version <= target]
    checkpoint = usable[-1] if usable else None
    start = checkpoint.version + 1 if checkpoint else 0
    needed: list[LogPath] = []
    for v in range(start, target + 1):
        p = commits.get(v)
        if p is None:
            if checkpoint is None and not any(c <= v for c in commits):
                raise VersionNotFoundError(
                    f"version {target} cannot be reconstructed: the log starts later "
                    f"(earliest reconstructable version is {earliest}); older commits were cleaned up",
                    earliest=earliest,
                    latest=latest,
                )
            before = max((c for c in commits if c < v), default=None)
            after = min((c for c in commits if c > v), default=None)
            around = ", ".join(
                f"{label} {c:020d}.json" for label, c in (("after", before), ("before", after)) if c is not None
            )
            raise CorruptLogError(
                f"commit {v:020d}.json is missing from {where}"
                + (f" ({around})" if around else "")
                + f": version {target} cannot be rebuilt",
                path=f"{where}/{v:020d}.json",
            )
        needed.append(p)
    # The target's own commit is always read: it holds the version's commitInfo (its in-commit timestamp,
    # history), which no compaction file keeps.
    return LogSegment(target, checkpoint, tuple(needed), usable_compactions(paths, start, target - 1))


__all__ = [
    "CheckpointRef",
    "LogSegment",
    "build_segment",
    "commits_by_version",
    "complete_checkpoints",
    "earliest_version",
    "latest_version",
    "usable_compactions",
]
