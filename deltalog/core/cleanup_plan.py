"""Planning log cleanup: which files of ``_delta_log`` may go, and which versions stay reachable.

Pure: it sees a listing (parsed names with sizes and modification times), a clock reading and a retention,
and answers with a :class:`CleanupPlan`. The IO around it (:mod:`deltalog.maintenance.cleanup`) lists,
validates the boundary checkpoint, reads sidecar references and deletes.

The rule is checkpoint-aligned, as the protocol's "Metadata Cleanup" and Delta Spark's
``BufferingLogDeletionIterator`` are (delta-io/delta issue #255): the cleanup boundary is a complete
checkpoint at or before the cutoff, that checkpoint and its commit stay, and only files *below* it go.
Every version from the boundary on keeps a checkpoint at or below it and all commits after that, so it
stays reconstructable. Without such a checkpoint nothing is deleted (the delta-rs bug that deleted the
newest checkpoint, delta-io/delta-rs #2174, and the ones that left unreachable versions, #1013/#3057).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from deltalog.core import properties
from deltalog.core.actions import Protocol
from deltalog.core.feature_gate import CLEANUP, check_operation
from deltalog.core.file_age import age_clock
from deltalog.core.paths import SIDECAR_DIR, Kind, LogPath
from deltalog.core.segment import CheckpointRef, complete_checkpoints, earliest_version
from deltalog.core.timetravel import monotonize
from deltalog.errors import InvalidArgumentError

DAY_MS = 86_400_000
#: age after which an unreferenced sidecar or an orphan temp file counts as abandoned (Spark and the notes)
ORPHAN_AGE_MS = DAY_MS

Retention = int | str | dt.timedelta


def resolve_retention(value: Retention | None, configuration: Mapping[str, str], key: str, default: str) -> int:
    """Milliseconds of retention: ``value`` when given (ms, a timedelta, or an interval such as ``"30d"``
    or ``"interval 30 days"``), else the table property ``key``, else ``default``.

    A negative or unparsable retention is an :class:`InvalidArgumentError`: deleting "newer than now"
    is never what anyone meant.
    """
    if value is None:
        try:
            ms = properties.get_interval_ms(configuration, key, default)
        except properties.PropertyError as exc:
            raise InvalidArgumentError(str(exc)) from None
        assert ms is not None
    elif isinstance(value, bool):
        raise InvalidArgumentError(f"retention must be milliseconds or an interval, not {value!r}")
    elif isinstance(value, dt.timedelta):
        ms = value // dt.timedelta(milliseconds=1)
    elif isinstance(value, (int, float)):
        ms = int(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            ms = int(text) if text.isdigit() else properties.parse_interval_ms(text)
        except properties.PropertyError as exc:
            raise InvalidArgumentError(f"retention {value!r}: {exc}") from None
    else:
        raise InvalidArgumentError(f"retention must be milliseconds or an interval, not {value!r}")
    if ms < 0:
        raise InvalidArgumentError(f"retention must not be negative, got {value!r}")
    return ms


_NO_COLUMNS = {"type": "struct", "fields": []}


def check_maintainable(
    protocol: Protocol,
    source: str,
    operation: str = CLEANUP,
    configuration: Mapping[str, str] | None = None,
    schema: Any = None,
) -> None:
    """The writer protocol check for an operation that deletes files but commits nothing (cleanup, VACUUM).

    PROTOCOL "VACUUM Protocol Check": VACUUM (and log cleanup, which deletes what readers replay) checks
    the *write* protocol, always. It is gated per operation (:func:`~deltalog.core.feature_gate.check_operation`),
    not as a commit: deleting expired log files or unreferenced data files creates none of the commit-time
    duties of deletion vectors, change data, generated values or clustering, so those tables are maintained
    even where deltalog refuses to commit to them. What must hold is that deltalog knows every writer
    feature (an unknown one may decide which files are referenced) and that none refuses the operation
    (UniForm refuses VACUUM: Iceberg's files live in the table directory).
    """
    check_operation(operation, protocol, configuration or {}, _NO_COLUMNS if schema is None else schema, source)


def truncate_to_day(ms: int) -> int:
    """Midnight UTC at or before ``ms`` (floor division keeps pre-1970 instants correct too)."""
    return ms - ms % DAY_MS


@dataclass(frozen=True)
class LogFile:
    """A file in ``_delta_log`` that is not a version file: ``name`` relative to ``_delta_log``."""

    name: str
    size: int
    mtime: int


@dataclass(frozen=True)
class Deletion:
    """One file the plan deletes: ``path`` relative to ``_delta_log``; ``time`` is the age it was judged by."""

    path: str
    kind: str  # commit | checkpoint | crc | compaction | sidecar | temp | hadoop-crc
    version: int | None
    size: int
    time: int


@dataclass(frozen=True)
class Horizon:
    """The earliest version still reconstructable, and its commit time as time travel will see it.

    ``timestamp`` is None when that version's commit file is gone (only its checkpoint remains).
    """

    version: int
    timestamp: int | None


@dataclass(frozen=True)
class CleanupPlan:
    """What a cleanup deletes and why; deleting ``deletions`` in order leaves every version from
    ``horizon.version`` on reconstructable."""

    now_ms: int
    retention_ms: int
    cutoff_ms: int
    boundary: int | None  # version of the retained checkpoint below which files go; None: nothing qualifies
    horizon: Horizon | None  # None only for an empty listing
    deletions: tuple[Deletion, ...]
    reason: str
    remaining_checkpoints: tuple[str, ...] = ()  # checkpoint file names that stay (their sidecars must too)
    #: the newest modification time in the listing: the store's clock has reached at least this
    newest_ms: int | None = None

    @property
    def total_bytes(self) -> int:
        return sum(d.size for d in self.deletions)

    def count(self, kind: str) -> int:
        return sum(1 for d in self.deletions if d.kind == kind)


_ORDER = {Kind.COMMIT: 0, Kind.CHECKPOINT: 1, Kind.MULTIPART: 1, Kind.UUID_CHECKPOINT: 1, Kind.CRC: 2}


def _kind_name(p: LogPath) -> str:
    return "checkpoint" if p.is_checkpoint else p.kind.value


def _choose_boundary(
    checkpoints: Sequence[CheckpointRef], cutoff_commit: int, cutoff_ms: int
) -> tuple[CheckpointRef | None, str]:
    """The newest complete checkpoint at or before ``cutoff_commit``, lowered below any newer-than-cutoff one.

    A complete checkpoint below the boundary whose files are younger than the cutoff may not be deleted;
    keeping it while its following commits go would leave a checkpoint whose next versions are missing. So
    the boundary drops to the oldest such checkpoint: everything below it is then old enough.
    """
    usable = [c for c in checkpoints if c.version <= cutoff_commit]
    if not usable:
        return None, (
            f"no complete checkpoint at or before version {cutoff_commit}, the newest commit older than the "
            "cutoff: nothing can be deleted without making versions unreachable"
        )
    boundary = usable[-1]
    fresh = [c for c in usable if c.version < boundary.version and max(f.mtime for f in c.files) > cutoff_ms]
    if fresh:
        low = min(c.version for c in fresh)
        boundary = [c for c in usable if c.version == low][-1]
        return boundary, (
            f"checkpoint {boundary.files[0].name} is newer than the cutoff, so it is the boundary: "
            f"files below version {boundary.version} are deleted"
        )
    return boundary, (
        f"checkpoint {boundary.files[0].name} is the newest complete checkpoint at or before the cutoff: "
        f"files below version {boundary.version} are deleted"
    )


def is_temp_file(name: str) -> bool:
    """A writer's leftover temp file directly in ``_delta_log`` (Spark/deltalog ``.<name>.<uuid>.tmp``,
    delta-rs ``_commit_<uuid>.json.tmp``); never a version file, never ``_last_checkpoint``."""
    if "/" in name:
        return False
    return (name.startswith(".") and name.endswith(".tmp")) or (
        name.startswith("_commit_") and name.endswith(".json.tmp")
    )


def orphan_cutoff(now_ms: int, newest_ms: int | None) -> int:
    """Files a writer leaves only while it works (temp files, sidecars before their manifest) older than this
    are abandoned: a day before ``now_ms``, or before ``newest_ms`` (the newest file listed) if that is earlier.

    Why the newest file: its time is the store's own clock, and the cleaner's may run ahead of it. Log
    cleanup judges retention by the cleaner's clock (as Delta Spark does), which at worst deletes expired
    history early; judging a temp file that way would delete another writer's commit or checkpoint while
    it is being written. The price: in a table where nothing was written for a day, an abandoned file as
    new as the newest one waits for the next write.
    """
    return age_clock(now_ms, newest_ms) - ORPHAN_AGE_MS


def plan_cleanup(
    paths: Sequence[LogPath],
    now_ms: int,
    retention_ms: int,
    *,
    other_files: Sequence[LogFile] = (),
    unusable_checkpoints: Collection[str] = (),
) -> CleanupPlan:
    """Plan the deletion of expired log files.

    * cutoff = midnight UTC at or before ``now_ms - retention_ms`` (Delta Spark truncates to the day; the
      earlier cutoff only ever keeps more).
    * Commit times are modification times made strictly increasing in version order, as time travel
      sees them; the cutoff commit is the newest commit whose time is at or before the cutoff.
    * The boundary is the newest complete checkpoint at or before the cutoff commit (see
      :func:`_choose_boundary`); ``unusable_checkpoints`` (first file names) are never chosen, so the
      caller can exclude one it found unreadable and plan again.
    * Deleted: commits, checkpoints of every kind (also incomplete and 0-byte ones), ``.crc`` files with a
      version below the boundary and compactions starting at or below it, each only when its own time is at or
      before the cutoff; the Hadoop ``.<name>.crc`` twin of each deleted file; and orphan temp files
      (:func:`orphan_cutoff`). ``_last_checkpoint`` and anything unrecognised stay.
    * The deletions are in ascending version order, each version's commit before its checkpoints, and the
      caller deletes them one at a time in that order: a writer proves its new commit reachable by finding
      the version before it unchanged (:mod:`deltalog.core.reachability`), which is sound only if no
      version is deleted while an older one is still there.
    """
    cutoff = truncate_to_day(now_ms - retention_ms)
    commits = sorted((p for p in paths if p.kind is Kind.COMMIT), key=lambda p: p.version)
    times = dict(monotonize([(p.version, p.mtime) for p in commits]))
    bad = set(unusable_checkpoints)
    checkpoints = [c for c in complete_checkpoints(paths) if c.files[0].name not in bad]
    older = [v for v, t in times.items() if t <= cutoff]
    boundary: CheckpointRef | None = None
    if not older:
        reason = "no commit is older than the cutoff: nothing is expired"
    else:
        boundary, reason = _choose_boundary(checkpoints, max(older), cutoff)

    newest = max([p.mtime for p in paths] + [f.mtime for f in other_files], default=None)
    orphans = orphan_cutoff(now_ms, newest)
    deletions: list[Deletion] = []
    if boundary is not None:
        b = boundary.version
        for p in sorted(paths, key=lambda p: (p.version, _ORDER.get(p.kind, 3), p.name)):
            # A compaction file starting at the boundary goes too (PROTOCOL "Metadata Cleanup": start <= the
            # checkpoint's version): every load from the boundary on replays from after it, so none reads it.
            if p.version > b or (p.version == b and p.kind is not Kind.COMPACTION):
                continue
            t = times.get(p.version, p.mtime) if p.kind is Kind.COMMIT else p.mtime
            if t <= cutoff:
                deletions.append(Deletion(p.name, _kind_name(p), p.version, p.size, t))
    deleted = {d.path for d in deletions}
    others = sorted(other_files, key=lambda f: f.name)
    for f in others:
        if f.name.startswith(".") and f.name.endswith(".crc") and f.name[1:-4] in deleted:
            deletions.append(Deletion(f.name, "hadoop-crc", None, f.size, f.mtime))
    for f in others:
        if is_temp_file(f.name) and f.mtime < orphans:
            deletions.append(Deletion(f.name, "temp", None, f.size, f.mtime))

    deleted = {d.path for d in deletions}
    remaining = tuple(p.name for p in paths if p.is_checkpoint and p.name not in deleted)
    horizon = _horizon(paths, deleted, boundary, times)
    return CleanupPlan(
        now_ms,
        retention_ms,
        cutoff,
        boundary.version if boundary else None,
        horizon,
        tuple(deletions),
        reason,
        remaining,
        newest,
    )


def _horizon(
    paths: Sequence[LogPath], deleted: set[str], boundary: CheckpointRef | None, times: Mapping[int, int]
) -> Horizon | None:
    """The earliest version reconstructable once ``deleted`` is gone, with its commit time then.

    After a cleanup the boundary's commit is the oldest one left, so monotonizing cannot move its time:
    its own modification time is what time travel will report.
    """
    remaining = [p for p in paths if p.name not in deleted]
    version = boundary.version if boundary is not None else earliest_version(remaining)
    if version is None:
        return None
    commit = next((p for p in remaining if p.kind is Kind.COMMIT and p.version == version), None)
    if commit is None:
        return Horizon(version, None)
    return Horizon(version, commit.mtime if boundary is not None else times.get(version, commit.mtime))


PROTECTION_KEY = "delta.requireCheckpointProtectionBeforeVersion"


def protected_before(configuration: Mapping[str, str], features: Collection[str]) -> int | None:
    """The version below which checkpoints are protected (``protocol_rfcs/checkpoint-protection.md``), or None.

    Only tables whose protocol supports ``checkpointProtection`` have one. A value that is not a version
    protects every checkpoint: keeping files is the side a misread property may err on.
    """
    if "checkpointProtection" not in features or PROTECTION_KEY not in configuration:
        return None
    raw = str(configuration[PROTECTION_KEY]).strip()
    return int(raw) if raw.isdigit() else 2**63 - 1


def protect_checkpoints(plan: CleanupPlan, before: int | None) -> CleanupPlan:
    """``plan`` under checkpoint protection: it stands when it truncates up to ``before`` in one go (its
    boundary at or above it); otherwise it deletes only commits (and files of no version), keeping every
    checkpoint below ``before``. That is the RFC's exception (a): the cleanup creates no checkpoint and erases
    none that DROP FEATURE may have placed as a barrier, which is what lets an engine that only knows the
    latest protocol clean up at all. Versions below the boundary stay unreconstructable either way.
    """
    if before is None or plan.boundary is None or plan.boundary >= before:
        return plan
    kept = {d.path for d in plan.deletions if d.kind == "checkpoint" and d.version is not None and d.version < before}
    if not kept:
        return plan
    deletions = tuple(
        d for d in plan.deletions if d.path not in kept and not (d.kind == "hadoop-crc" and d.path[1:-4] in kept)
    )
    reason = (
        f"{plan.reason}; checkpoint protection ({PROTECTION_KEY}={before}) keeps the {len(kept)} checkpoint "
        f"file(s) below version {before}: this cleanup does not reach it"
    )
    remaining = tuple(sorted({*plan.remaining_checkpoints, *kept}))
    return replace(plan, deletions=deletions, reason=reason, remaining_checkpoints=remaining)


def add_sidecars(plan: CleanupPlan, sidecars: Sequence[LogFile], referenced: Collection[str] | None) -> CleanupPlan:
    """``plan`` plus the V2 sidecars no remaining checkpoint references and older than a day.

    ``sidecars`` are the files of ``_delta_log/_sidecars`` (bare names); ``referenced`` the bare names the
    remaining checkpoints point at, or None when that could not be established (then none are deleted).
    The one-day floor (:func:`orphan_cutoff`) protects a checkpoint being written right now: its sidecars
    exist before its manifest does. Hidden names are not sidecars; a Hadoop ``.<name>.crc`` goes with its sidecar.
    """
    if referenced is None:
        return plan
    keep = set(referenced)
    times = [f.mtime for f in sidecars] + ([] if plan.newest_ms is None else [plan.newest_ms])
    cutoff = orphan_cutoff(plan.now_ms, max(times, default=None))
    files = sorted(sidecars, key=lambda f: f.name)
    gone = {f.name for f in files if not f.name.startswith(".") and f.name not in keep and f.mtime < cutoff}
    extra = tuple(
        Deletion(f"{SIDECAR_DIR}/{f.name}", "sidecar" if f.name in gone else "hadoop-crc", None, f.size, f.mtime)
        for f in files
        if f.name in gone or (f.name.startswith(".") and f.name.endswith(".crc") and f.name[1:-4] in gone)
    )
    if not extra:
        return plan
    logs = tuple(d for d in plan.deletions if d.kind != "temp")
    temps = tuple(d for d in plan.deletions if d.kind == "temp")
    return replace(plan, deletions=logs + extra + temps)


__all__ = [
    "DAY_MS",
    "ORPHAN_AGE_MS",
    "CleanupPlan",
    "Deletion",
    "Horizon",
    "LogFile",
    "Retention",
    "PROTECTION_KEY",
    "add_sidecars",
    "check_maintainable",
    "is_temp_file",
    "orphan_cutoff",
    "plan_cleanup",
    "protect_checkpoints",
    "protected_before",
    "resolve_retention",
    "truncate_to_day",
]
