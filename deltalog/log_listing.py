"""Listing ``_delta_log`` for one version: from the hint for the latest, from near the target for time travel.

Why: a log of 10,000 commits with a checkpoint every 100 rebuilds version 5,050 from checkpoint 4,999 and
51 commits, yet listing it from version 0 costs every file of the log (a ``stat`` each on local disk, a
page per 1,000 keys on S3). ``_last_checkpoint`` only says where the *newest* checkpoint is, so for an
older version we look backwards from the target: list the versions ``v - W .. v``, and if no complete
checkpoint at or below ``v`` is among them, double ``W`` until one is, or until the window reaches 0.

The window is only a way to find the files cheaply; which checkpoint and which commits make the segment is
still decided by :func:`~deltalog.core.segment.build_segment`, on a listing that holds every file with a
version in ``[W's start, v]``, so the newest complete checkpoint ``<= v`` and the commits after it are
exactly those a full listing would give. A listing that cannot make a segment (a gap, a version past the
end, a cleaned-up start) is redone from 0 by the caller, so every error reads as it always did.
"""

from __future__ import annotations

import logging

from deltalog.core import last_checkpoint as hints
from deltalog.core.paths import LAST_CHECKPOINT, LOG_DIR, LogPath, parse, version_prefix
from deltalog.core.segment import complete_checkpoints
from deltalog.errors import StorageError
from deltalog.storage.base import LogStore, list_between

log = logging.getLogger(__name__)

#: versions listed below the target at first; Delta's default checkpoint interval is 10, common ones 100
FIRST_WINDOW = 128


def list_log(store: LogStore, from_version: int = 0, to_version: int | None = None) -> list[LogPath]:
    """Parsed log files with ``from_version <= version <= to_version`` (no upper bound when None), sorted.

    Names that are not log files are skipped.
    """
    stop = None if to_version is None else version_prefix(to_version + 1)
    out = []
    for info in list_between(store, f"{LOG_DIR}/{version_prefix(from_version)}", stop):
        p = parse(info.name, info.size, info.mtime)
        if p is not None:
            out.append(p)
    return out


def listing_near(store: LogStore, version: int, first_window: int | None = None) -> list[LogPath]:
    """The log files of versions ``lo .. version``, with ``lo`` just low enough to hold a complete checkpoint.

    ``lo`` is 0 when no checkpoint at or below ``version`` exists (or the window grew past half the way).
    """
    width = max(1, FIRST_WINDOW if first_window is None else first_window)
    while True:
        lo = version - width
        if lo <= width:  # the next doubling would list most of what is left anyway
            lo = 0
        paths = list_log(store, lo, version)
        if lo == 0 or any(c.version <= version for c in complete_checkpoints(paths)):
            log.debug("listed versions %d..%d of %s to rebuild version %d", lo, version, store.root, version)
            return paths
        width *= 2


def read_hint(store: LogStore, location: str) -> hints.LastCheckpoint | None:
    """``_last_checkpoint`` if present and sound; a warning and ``None`` otherwise."""
    path = f"{LOG_DIR}/{LAST_CHECKPOINT}"
    try:
        data = store.read(path)
    except FileNotFoundError:
        return None
    except StorageError as exc:
        if exc.retryable:
            raise
        # Only a hint: something that is not a readable file in its place (a directory, a FIFO) means list.
        log.warning("ignoring %s/%s: %s; listing the log instead", location, path, exc)
        return None
    try:
        return hints.parse(data)
    except hints.HintError as exc:
        log.warning("ignoring %s/%s: %s; listing the log instead", location, path, exc)
        return None


def listing_and_scope(store: LogStore, location: str, version: int | None) -> tuple[list[LogPath], bool]:
    """The listing to rebuild ``version`` (the latest when None), and whether it is the whole log.

    A version behind the ``_last_checkpoint`` hint is listed from near itself (:func:`listing_near`): its
    checkpoint is older than the hint's, and the log between it and the hint is no use to it. Without a
    hint there is likely no checkpoint at all, so the whole log is listed.
    """
    hint = read_hint(store, location)
    if hint is not None and version is not None and 0 <= version < hint.version:
        return listing_near(store, version), False
    if hint is None or hint.version == 0 or (version is not None and version < hint.version):
        return list_log(store, 0), True
    paths = list_log(store, hint.version)
    if not any(c.version == hint.version for c in complete_checkpoints(paths)):
        log.warning(
            "%s/_delta_log/_last_checkpoint names version %d but no complete checkpoint exists there; "
            "listing the whole log",
            location,
            hint.version,
        )
        return list_log(store, 0), True
    return paths, bool(paths) and paths[0].version == 0


__all__ = ["listing_and_scope", "read_hint", "FIRST_WINDOW", "list_log", "listing_near"]
