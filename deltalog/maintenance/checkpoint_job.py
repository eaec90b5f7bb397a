"""The compaction job: checkpoint every table that has gone too many commits without one.

A reader pays for each JSON commit after the newest checkpoint it can use, so the job measures exactly that:
the commits the latest snapshot replays (after falling back past an unreadable checkpoint, if it had to). A
table at or above ``min_commits`` gets a checkpoint of its latest version; the others are left alone.

One table's failure (a corrupt log, a protocol deltalog cannot write, a storage error) is recorded in its
result and the job moves on: a fleet job that stops at the first bad table leaves every later table
uncheckpointed. The caller decides what a failure means (the CLI exits 1 after printing every result).

:func:`checkpoint_snapshot` is the one way a checkpoint of a snapshot is written (the job's, and
``DeltaLog.checkpoint``'s): the writer protocol check, the checkpoint properties, and a committed version.
The job opens each table as a :class:`~deltalog.table.context.TableContext`, not a ``DeltaLog``: it holds no
cache and runs no hooks, so a checkpoint here never triggers anything else.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from deltalog.checkpoint.writer import CheckpointResult, Progress, write_checkpoint
from deltalog.core.features import properties
from deltalog.core.features.obligations import CHECKPOINT, check_operation
from deltalog.core.log.paths import LOG_DIR, commit_name
from deltalog.errors import CheckpointError, DeltaLogError, InvalidArgumentError, PropertyError, VersionNotFoundError
from deltalog.storage.uri import store_for
from deltalog.table import load
from deltalog.table import snapshot as snapshots
from deltalog.table.context import TableContext
from deltalog.table.snapshot import Snapshot

log = logging.getLogger(__name__)

#: ``progress(table, stage, done, total)``: the checkpoint writer's progress, tagged with the table
TableProgress = Callable[[str, str, int, int], None]

CHECKPOINTED = "checkpointed"
SKIPPED = "skipped"
FAILED = "failed"


@dataclass(frozen=True)
class TableCompaction:
    """What the job did to one table.

    ``status`` is ``checkpointed``, ``skipped`` (fewer than ``min_commits`` commits since the checkpoint) or
    ``failed`` (``error`` says why; ``error_type`` is the exception's class name). ``version`` is the table's
    latest version, ``last_checkpoint`` the version of the checkpoint the latest snapshot was read from
    (``None``: none), ``commits_since`` the commit files a reader replays on top of it.
    """

    location: str
    status: str
    version: int | None = None
    last_checkpoint: int | None = None
    commits_since: int | None = None
    checkpoint: CheckpointResult | None = None
    error: str | None = None
    error_type: str | None = None
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.status == FAILED


def _is_local(location: str) -> bool:
    if "://" not in location and not location.startswith("file:"):
        return True
    scheme = urlsplit(location).scheme
    return scheme == "file" or (len(scheme) == 1 and os.name == "nt")


def _local_path(location: str) -> str:
    return unquote(urlsplit(location).path) if location.startswith("file:") else location


def discover_tables(prefix: str, storage_options: dict[str, Any] | None = None) -> list[str]:
    """Every Delta table under ``prefix``: folders holding a ``_delta_log`` folder, sorted.

    ``prefix`` itself counts when it is a table. The search does not descend into a table it found (nor into
    any ``_delta_log``), so a table's partition folders are never walked. Paths come back as given (a local
    path, or a URL with the prefix's scheme). A prefix that does not exist is an
    :class:`~deltalog.errors.InvalidArgumentError`.
    """
    if _is_local(prefix):
        return _discover_local(_local_path(prefix))
    return _discover_fsspec(prefix, storage_options)


def _discover_local(root: str) -> list[str]:
    if not os.path.isdir(root):
        raise InvalidArgumentError(f"--prefix {root}: no such directory")
    found: list[str] = []
    for dirpath, dirnames, _ in os.walk(root, onerror=None):
        if LOG_DIR in dirnames and os.path.isdir(os.path.join(dirpath, LOG_DIR)):
            found.append(dirpath)
            dirnames.clear()  # a table's own folders hold data, not more tables
            continue
        dirnames.sort()
    return sorted(found)


def _discover_fsspec(prefix: str, storage_options: dict[str, Any] | None) -> list[str]:
    import fsspec

    fs, root = fsspec.core.url_to_fs(prefix, **(storage_options or {}))
    if not fs.isdir(root):
        raise InvalidArgumentError(f"--prefix {prefix}: no such directory")
    root = root.rstrip("/")
    found: list[str] = []
    pending = [root]
    while pending:
        current = pending.pop()
        subdirs = [e["name"].rstrip("/") for e in fs.ls(current, detail=True) if e.get("type") == "directory"]
        if any(d.rsplit("/", 1)[-1] == LOG_DIR for d in subdirs):
            found.append(current)
            continue
        pending.extend(subdirs)
    # spelled like the prefix the caller gave (fsspec may normalise "memory://x" to "/x")
    base = prefix.rstrip("/")
    return sorted(base + p[len(root) :] if p.startswith(root) else fs.unstrip_protocol(p) for p in found)


def checkpoint_snapshot(
    ctx: TableContext, snap: Snapshot, parts: int | None = None, progress: Progress | None = None
) -> CheckpointResult:
    """Write a checkpoint of ``snap`` and move ``_last_checkpoint`` forward.

    Writing a checkpoint is a write: the writer protocol check for checkpoints runs first
    (:func:`~deltalog.core.features.obligations.check_operation`, on the protocol of the version checkpointed, which is
    what checkpoint protection asks of a checkpoint below ``delta.requireCheckpointProtectionBeforeVersion``:
    deletion vectors, change data feed, column mapping or constraints oblige a checkpoint to nothing, so tables
    deltalog cannot commit to are still checkpointed; unknown features refuse it by name), then the checkpoint
    properties (a value deltalog cannot honour is a :class:`~deltalog.errors.PropertyError` naming it); only a
    committed version is checkpointed. A checkpoint file the snapshot's files are still read from that log
    cleanup deleted meanwhile is read again from the log (:func:`deltalog.table.snapshot.reading`).
    """
    check_operation(CHECKPOINT, snap.protocol, snap.configuration, snap.schema_json, f"{ctx.location}/{LOG_DIR}")
    properties.check_checkpoint_properties(snap.configuration)
    if not ctx.store.exists(f"{LOG_DIR}/{commit_name(snap.version)}") and snap.segment.commits:
        raise CheckpointError(f"version {snap.version} has no commit file: only committed versions are checkpointed")
    return snapshots.reading(
        snap,
        lambda: write_checkpoint(
            ctx.store,
            snapshots.state(snap),
            snapshots.file_state(snap),
            ctx.now_ms(),
            parts=parts,
            progress=progress,
        ),
    )


def checkpoint_when_due(
    ctx: TableContext, version: int, snapshot: Callable[..., Snapshot], cached: Snapshot | None = None
) -> None:
    """After the commit of ``version``: checkpoint it when it is a multiple of ``delta.checkpointInterval``
    (as Delta Spark does), then clean up expired log files unless ``delta.enableExpiredLogCleanup`` is off.

    ``snapshot(version=...)`` gives a version's snapshot, checked against the log (``snapshot()`` the
    latest); ``cached``, the snapshot of ``version`` the commit advanced a cache to, answers whether one is
    due without a listing. Never raises: the commit has landed. A failure is logged; a table property that
    stops either step is a WARNING naming the property, its value and the fix, every time.
    """
    from deltalog.maintenance.cleanup import cleanup

    try:
        conf = (cached if cached is not None and cached.version == version else snapshot(version=version)).configuration
        if version % properties.checkpoint_interval(conf) != 0:
            return
        checkpoint_snapshot(ctx, snapshot(version=version))
    except PropertyError as exc:
        log.warning("automatic checkpoint of version %s not written (the commit succeeded): %s", version, exc)
        return
    except VersionNotFoundError as exc:
        # Another writer checkpointed a later version and cleanup removed this one first: nothing to do.
        log.info("no automatic checkpoint of version %s: %s", version, exc)
        return
    except Exception:
        log.exception("automatic checkpoint of version %s failed; the commit itself succeeded", version)
        return
    try:
        if properties.get_strict_bool(conf, "delta.enableExpiredLogCleanup", True):
            properties.log_retention_ms(conf)
            cleanup(ctx, snapshot(), dry_run=False)
    except PropertyError as exc:
        log.warning("automatic log cleanup after version %s skipped (the commit succeeded): %s", version, exc)
    except Exception:
        log.exception("automatic log cleanup after version %s failed; the commit itself succeeded", version)


def compact_table(
    location: str,
    min_commits: int = 10,
    parts: int | None = None,
    progress: TableProgress | None = None,
    storage_options: dict[str, Any] | None = None,
) -> TableCompaction:
    """Checkpoint ``location``'s latest version if a reader replays ``min_commits`` or more commits; never raises
    for the table's own problems (they come back as a ``failed`` result)."""
    started = time.monotonic()
    version: int | None = None
    last: int | None = None
    since: int | None = None
    try:
        store = store_for(location, storage_options)
        ctx = TableContext(store, store.root)
        snap = load.snapshot_at(ctx)
        version = snap.version
        last = snap.segment.checkpoint.version if snap.segment.checkpoint is not None else None
        since = version - (last if last is not None else -1)
        if since < min_commits:
            return TableCompaction(location, SKIPPED, version, last, since, seconds=time.monotonic() - started)
        tick = None if progress is None else (lambda stage, done, total: progress(location, stage, done, total))
        result = checkpoint_snapshot(ctx, snap, parts=parts, progress=tick)
        return TableCompaction(location, CHECKPOINTED, version, last, since, result, seconds=time.monotonic() - started)
    except Exception as exc:
        if not isinstance(exc, (DeltaLogError, OSError)):
            # not the table's fault but ours: keep the traceback for the bug report, and still go on
            log.exception("compaction of %s failed", location)
        message = " ".join((str(exc) or type(exc).__name__).split())
        return TableCompaction(
            location,
            FAILED,
            version,
            last,
            since,
            error=message,
            error_type=type(exc).__name__,
            seconds=time.monotonic() - started,
        )


def compact_tables(
    locations: Iterable[str],
    min_commits: int = 10,
    parts: int | None = None,
    progress: TableProgress | None = None,
    storage_options: dict[str, Any] | None = None,
) -> list[TableCompaction]:
    """Run :func:`compact_table` on each location in order (duplicates once); one result per table."""
    if min_commits < 1:
        raise InvalidArgumentError(f"min_commits must be at least 1, not {min_commits}")
    if parts is not None and parts < 1:
        raise InvalidArgumentError(f"parts must be at least 1, not {parts}")
    seen: set[str] = set()
    results: list[TableCompaction] = []
    for location in locations:
        if location in seen:
            continue
        seen.add(location)
        result = compact_table(location, min_commits, parts, progress, storage_options)
        if result.failed:
            log.warning("compaction of %s failed: %s", location, result.error)
        results.append(result)
    return results


def summarize(results: Sequence[TableCompaction]) -> dict[str, int]:
    """How many tables were checkpointed, skipped and failed."""
    return {status: sum(1 for r in results if r.status == status) for status in (CHECKPOINTED, SKIPPED, FAILED)}


__all__ = [
    "CHECKPOINTED",
    "FAILED",
    "SKIPPED",
    "TableCompaction",
    "TableProgress",
    "checkpoint_snapshot",
    "checkpoint_when_due",
    "compact_table",
    "compact_tables",
    "discover_tables",
    "summarize",
]
