"""The compaction job: checkpoint every table that has gone too many commits without one.

A reader pays for each JSON commit after the newest checkpoint it can use, so the job measures exactly that:
the commits the latest snapshot replays (after falling back past an unreadable checkpoint, if it had to). A
table at or above ``min_commits`` gets a checkpoint of its latest version; the others are left alone.

One table's failure (a corrupt log, a protocol deltalog cannot write, a storage error) is recorded in its
result and the job moves on: a fleet job that stops at the first bad table leaves every later table
uncheckpointed. The caller decides what a failure means (the CLI exits 1 after printing every result).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from deltalog.checkpoint.writer import CheckpointResult
from deltalog.core.paths import LOG_DIR
from deltalog.errors import DeltaLogError, InvalidArgumentError
from deltalog.log import DeltaLog

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
        dlog = DeltaLog.for_table(location, storage_options, auto_checkpoint=False)
        snap = dlog.snapshot()
        version = snap.version
        last = snap.segment.checkpoint.version if snap.segment.checkpoint is not None else None
        since = version - (last if last is not None else -1)
        if since < min_commits:
            return TableCompaction(location, SKIPPED, version, last, since, seconds=time.monotonic() - started)
        tick = None if progress is None else (lambda stage, done, total: progress(location, stage, done, total))
        result = dlog.checkpoint(version=version, parts=parts, progress=tick)
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
    "compact_table",
    "compact_tables",
    "discover_tables",
    "summarize",
]
