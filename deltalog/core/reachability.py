"""Whether a commit just written is part of the table readers see, judged from one listing.

Put-if-absent cannot tell a version nobody wrote from one that log cleanup deleted: a writer that read
version ``r`` long ago can create ``r+1`` again after cleanup removed it, below the newest checkpoint, where no
reader of the latest snapshot will ever look. Nor can it tell a gap: a writer whose table was deleted and
recreated shorter can create ``r+1`` after a run of missing versions. So every version ``v`` a writer
commits is chosen from a :class:`Tip`: the file(s) of version ``v - 1`` as a listing showed them (name,
size, modification time), and the listing made just after the write decides (:func:`judge`):

* **The tip still holds** (same files, same sizes and times): the commit is reachable. Log cleanup deletes
  in ascending version order (``v - 1`` before ``v``, see :func:`deltalog.core.cleanup_plan.plan_cleanup`), so
  if ``v - 1`` was there before and after the write, ``v`` had never been deleted when the write landed: the
  name was free because nobody had taken it, the commit directly follows ``v - 1``, and every later version
  (and checkpoint) is built on it. A file deleted and written again gets a new modification time, which is
  why the time is part of the tip.
* **A version file at or after ``v`` is older than ours** (the store's own clock, compared strictly):
  it existed before our write, so version ``v`` had been committed before and was deleted: ours is a
  copy nobody will read (:attr:`Verdict.ORPHAN`).
* **Nothing is left at ``v - 1`` and no checkpoint at or after ``v`` exists**: cleanup never deletes without
  such a checkpoint, so the log was truncated or replaced under the writer and ours follows a gap
  (:attr:`Verdict.ORPHAN`).
* **The commit at ``v - 1`` is another file now** (same name, another size or time): commits are written once
  and never rewritten, so the table was deleted and created again under the writer, and ours is a commit into a
  table the transaction never read (:attr:`Verdict.ORPHAN`: readers of the new table would see it, which is
  why it must go).
* Anything else (cleanup removed ``v - 1`` within the moment between the write and the listing, or a
  checkpoint that stood for ``v - 1`` was rewritten) cannot be decided from the log: :attr:`Verdict.UNKNOWN`.

A tip may rest on another tip it was read on without a listing (:attr:`Tip.under`: the young path reads the
winner of a lost race and tries the next version at once). Until a listing shows the tip below, nothing says
the table under the winner is still the one the transaction read, so every listing judging such a tip starts
at the lower one (:attr:`Tip.floor`), and the lower one must not have been replaced (it may be gone: cleanup
forced below the retention deletes it, and then the winner's own file is what holds).

An orphan can be deleted by its writer: no writer ever builds on it, because every writer checks its own
tip before it moves past a version another writer took (the same rules, in the commit loop).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from deltalog.core.paths import Kind, LogPath
from deltalog.core.segment import LogSegment, complete_checkpoints


@dataclass(frozen=True)
class Tip:
    """The log files of ``version`` as a listing showed them: ``(name, size, mtime ms)`` each.

    A commit when the listing had one (commits are written once and never rewritten), else the complete
    checkpoint that stood for the version.
    """

    version: int
    files: tuple[tuple[str, int, int], ...]
    #: the tip this one was read on top of without a listing (None: this one was listed, or is the first)
    under: Tip | None = None

    def describe(self) -> str:
        return ", ".join(name for name, _, _ in self.files)

    @property
    def floor(self) -> int:
        """The lowest version a listing that judges this tip must start at (the tip read on, if unlisted)."""
        return self.under.floor if self.under is not None else self.version


def _identity(paths: Sequence[LogPath]) -> tuple[tuple[str, int, int], ...]:
    return tuple((p.name, p.size, p.mtime) for p in paths)


def tip_in(paths: Sequence[LogPath], version: int) -> Tip | None:
    """The tip of ``version`` in a listing, or None when the listing has no file that stands for it."""
    commits = [p for p in paths if p.version == version and p.kind is Kind.COMMIT]
    if commits:
        return Tip(version, _identity(commits[:1]))
    checkpoints = [c for c in complete_checkpoints(paths) if c.version == version]
    if checkpoints:
        return Tip(version, _identity(checkpoints[-1].files))
    return None


def segment_tip(segment: LogSegment) -> Tip:
    """The tip of a segment's version: its last commit, or its checkpoint when no commit follows it."""
    if segment.commits and segment.commits[-1].version == segment.version:
        return Tip(segment.version, _identity(segment.commits[-1:]))
    assert segment.checkpoint is not None and segment.checkpoint.version == segment.version
    return Tip(segment.version, _identity(segment.checkpoint.files))


#: the modification time of a commit read, not listed, on the young path (:func:`young`): not yet seen
UNLISTED = -1


def _same(listed: tuple[int, int], size: int, mtime: int) -> bool:
    """Whether a listed (size, mtime) is the file a tip recorded (by size alone when it was never listed)."""
    return listed == (size, mtime) or (mtime == UNLISTED and listed[0] == size)


def holds(tip: Tip, paths: Sequence[LogPath]) -> bool:
    """Whether every file of ``tip`` is in the listing with the same size and modification time, and the tip
    it was read on (if any) was not replaced.

    A file whose time is :data:`UNLISTED` (a winner read on the :func:`young` path, not yet listed) holds by
    name and size: within the window nothing it builds on can have been cleaned up.
    """
    listed = {p.name: (p.size, p.mtime) for p in paths}
    return all(name in listed and _same(listed[name], size, mtime) for name, size, mtime in tip.files) and (
        tip.under is None or replaced(tip.under, paths) is None
    )


def replaced(tip: Tip, paths: Sequence[LogPath], commits_only: bool = False) -> str | None:
    """The name of a file of ``tip`` (or of a tip under it) that the listing shows as another file (same name,
    another size or time), or None. A file that is gone is not replaced.

    With ``commits_only``, only commit files count: a commit is never rewritten, so another one under its
    name is another table's; a checkpoint may be written again at its version by another engine.
    """
    listed = {p.name: p for p in paths}
    for name, size, mtime in tip.files:
        p = listed.get(name)
        if p is not None and not _same((p.size, p.mtime), size, mtime) and (not commits_only or p.kind is Kind.COMMIT):
            return name
    return replaced(tip.under, paths, commits_only) if tip.under is not None else None


#: how far the clock of a process cleaning the log may run ahead of the store's while a writer still takes
#: the one-request path (:func:`young`); a log retention at or below it disables that path
YOUNG_MARGIN_MS = 86_400_000


def young(anchor_ms: int | None, now_ms: int, retention_ms: int, margin_ms: int = YOUNG_MARGIN_MS) -> bool:
    """Whether a writer may skip the listing before a commit attempted above the version it committed at
    ``anchor_ms`` (its own clock, taken before that write was sent); the listing after it always stays.

    Log cleanup deletes a commit only once it is older than ``delta.logRetentionDuration`` and only below a
    checkpoint at or before the newest expired version, in ascending order
    (:func:`deltalog.core.cleanup_plan.plan_cleanup`). While the anchor version is younger than the retention
    minus ``margin_ms`` (measured on one clock: the writer's, so its own skew does not matter), it is not
    expired for a cleaner whose clock runs at most ``margin_ms`` ahead of the store's, so neither it nor any
    later version was deleted: the name ``v`` a put-if-absent takes above it was free because nobody had
    taken it, and the commit directly follows ``v - 1``. What a skipped listing cannot show, a table deleted
    and recreated under a live writer, the listing after the write shows (docs/commits.md).
    """
    if anchor_ms is None:
        return False
    return now_ms - anchor_ms < retention_ms - margin_ms


def listed_anchor_ms(mtime_ms: int) -> int | None:
    """A :func:`young` anchor for a version the writer did not commit but listed, from the listing's
    modification time (the store's clock; 0: unknown).

    The store stamped the commit at ``mtime_ms``; a writer whose clock runs at most ``YOUNG_MARGIN_MS`` behind
    the store's saw it no earlier than ``mtime_ms - YOUNG_MARGIN_MS`` on its own clock, so that is the anchor.
    :func:`young` then holds while the commit is younger than the retention minus twice the margin, which
    covers a cleaner ahead of the store and a writer behind it: a freshly loaded table appends with one
    request, as a writer's own commit does.
    """
    return mtime_ms - YOUNG_MARGIN_MS if mtime_ms > 0 else None


class Verdict(enum.Enum):
    REACHABLE = "reachable"
    ORPHAN = "orphan"  # certainly not part of the table: nobody reads it, nobody builds on it
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    reason: str
    #: our commit as the listing showed it (None when it was not listed)
    ours: LogPath | None = None


def judge(version: int, tip: Tip, paths: Sequence[LogPath]) -> Judgement:
    """Whether commit ``version``, just written by put-if-absent on top of ``tip``, is reachable.

    ``paths`` is a listing made after the write that starts at or below ``tip.version``. Only "reachable" is
    final on a listing that may stop at a gap (a store that lists by name prefix assumes none): a caller
    judges any other verdict again on a listing of the whole log.
    """
    ours = next((p for p in paths if p.version == version and p.kind is Kind.COMMIT), None)
    if holds(tip, paths):
        return Judgement(Verdict.REACHABLE, f"version {tip.version} is unchanged", ours)
    if ours is not None:
        older = [
            p
            for p in paths
            if p.version >= version
            and p.name != ours.name
            and (p.kind is Kind.COMMIT or p.is_checkpoint)
            and p.mtime < ours.mtime
        ]
        if older:
            return Judgement(
                Verdict.ORPHAN,
                f"{older[0].name} was written before it, so version {version} had been committed before and "
                "was removed by log cleanup: the name was free, but readers of the table never look there",
                ours,
            )
    other = replaced(tip, paths, commits_only=True)
    if other is not None:
        return Judgement(
            Verdict.ORPHAN,
            f"{other} is another file than the one this transaction read (commits are never rewritten): the "
            "table was deleted and created again, and the commit would be part of a table it never read",
            ours,
        )
    later_checkpoints = [c for c in complete_checkpoints(paths) if c.version >= version]
    if tip_in(paths, tip.version) is None and not later_checkpoints:
        return Judgement(
            Verdict.ORPHAN,
            f"version {tip.version} ({tip.describe()}) no longer exists and no checkpoint covers it: "
            "the log was deleted or truncated, and the commit would follow a gap",
            ours,
        )
    if later_checkpoints:
        return Judgement(
            Verdict.UNKNOWN,
            f"log cleanup removed version {tip.version} ({tip.describe()}) below checkpoint "
            f"{later_checkpoints[-1].files[0].name} while this commit was being written",
            ours,
        )
    return Judgement(
        Verdict.UNKNOWN,
        f"version {tip.version} ({tip.describe()}) was replaced while this commit was being written "
        "(was the table deleted and recreated?)",
        ours,
    )


def moved_on(tip: Tip, paths: Sequence[LogPath]) -> str:
    """Why ``tip`` no longer holds in a listing from its floor: for the error that refuses to commit."""
    other = replaced(tip, paths)
    if other is not None:
        return f"{other} was replaced by a different file (was the table deleted and recreated?)"
    checkpoints = [c for c in complete_checkpoints(paths) if c.version > tip.version]
    if tip_in(paths, tip.version) is None and checkpoints:
        return (
            f"version {tip.version} ({tip.describe()}) was removed by log cleanup; the log now starts "
            f"at or after checkpoint {checkpoints[0].files[0].name}"
        )
    if tip_in(paths, tip.version) is None:
        return f"version {tip.version} ({tip.describe()}) no longer exists (was the table deleted?)"
    return (
        f"version {tip.version} ({tip.describe()}) was replaced by a different file "
        "(was the table deleted and recreated?)"
    )


__all__ = [
    "listed_anchor_ms",
    "UNLISTED",
    "YOUNG_MARGIN_MS",
    "Tip",
    "Judgement",
    "Verdict",
    "tip_in",
    "holds",
    "judge",
    "moved_on",
    "replaced",
    "segment_tip",
    "young",
]
