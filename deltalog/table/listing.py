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
end, a cleaned-up start) is redone from 0 (:func:`segment_and_listing`), so every error reads as it always did.
"""

from __future__ import annotations

import logging

from deltalog.checkpoint.hint import read_hint
from deltalog.core.paths import LOG_DIR, Kind, LogPath, log_files, version_prefix
from deltalog.core.segment import LogSegment, build_segment, complete_checkpoints
from deltalog.core.segment import earliest_version as earliest_in
from deltalog.core.segment import latest_version as latest_in
from deltalog.errors import CorruptLogError, TableNotFoundError, VersionNotFoundError
from deltalog.storage.base import LogStore, list_between
from deltalog.table.context import TableContext

log = logging.getLogger(__name__)

#: versions listed below the target at first; Delta's default checkpoint interval is 10, common ones 100
FIRST_WINDOW = 128


def list_log(store: LogStore, from_version: int = 0, to_version: int | None = None) -> list[LogPath]:
    """Parsed log files with ``from_version <= version <= to_version`` (no upper bound when None), sorted.

    Names that are not log files are skipped.
    """
    stop = None if to_version is None else version_prefix(to_version + 1)
    return log_files(list_between(store, f"{LOG_DIR}/{version_prefix(from_version)}", stop))


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


def listing_and_scope(ctx: TableContext, version: int | None) -> tuple[list[LogPath], bool]:
    """The listing to rebuild ``version`` (the latest when None), and whether it is the whole log.

    A version behind the ``_last_checkpoint`` hint is listed from near itself (:func:`listing_near`): its
    checkpoint is older than the hint's, and the log between it and the hint is no use to it. Without a
    hint there is likely no checkpoint at all, so the whole log is listed.
    """
    store = ctx.store
    hint = read_hint(store, ctx.location)
    if hint is not None and version is not None and 0 <= version < hint.version:
        return listing_near(store, version), False
    if hint is None or hint.version == 0 or (version is not None and version < hint.version):
        return list_log(store, 0), True
    paths = list_log(store, hint.version)
    if not any(c.version == hint.version for c in complete_checkpoints(paths)):
        log.warning(
            "%s/_delta_log/_last_checkpoint names version %d but no complete checkpoint exists there; "
            "listing the whole log",
            ctx.location,
            hint.version,
        )
        return list_log(store, 0), True
    return paths, bool(paths) and paths[0].version == 0


def segment_and_listing(ctx: TableContext, version: int | None) -> tuple[LogSegment, list[LogPath]]:
    """The segment that rebuilds ``version`` (the latest when None), and the listing it was chosen from."""
    paths, whole = listing_and_scope(ctx, version)
    where = f"{ctx.location}/{LOG_DIR}"
    try:
        return build_segment(paths, version, where=where), paths
    except (VersionNotFoundError, TableNotFoundError, CorruptLogError):
        if not whole:
            # A listing that started at the hint or near the version cannot tell about the rest of the
            # log: ask the full log, whose answer (a segment, or the error as it always read) stands.
            paths = list_log(ctx.store, 0)
            return build_segment(paths, version, where=where), paths
        raise


def segment(ctx: TableContext, version: int | None = None) -> LogSegment:
    """The checkpoint and commit files that rebuild ``version`` (default: the latest), without replaying them."""
    return segment_and_listing(ctx, version)[0]


def latest_version(ctx: TableContext) -> int:
    """The newest version in the log (one listing, no replay); :class:`TableNotFoundError` if none."""
    v = latest_in(listing_and_scope(ctx, None)[0])
    if v is None:
        raise TableNotFoundError(f"no Delta table at {ctx.location}: {LOG_DIR} has no commits")
    return v


def earliest_version(ctx: TableContext) -> int:
    """The oldest reconstructable version: 0 when ``0.json`` is there (one short listing), else a full one."""
    if any(p.version == 0 and p.kind is Kind.COMMIT for p in list_log(ctx.store, 0, 0)):
        return 0
    v = earliest_in(list_log(ctx.store, 0))
    if v is None:
        raise TableNotFoundError(f"no Delta table at {ctx.location}: {LOG_DIR} has no commits")
    return v


__all__ = [
    "FIRST_WINDOW",
    "earliest_version",
    "latest_version",
    "list_log",
    "listing_and_scope",
    "listing_near",
    "segment",
    "segment_and_listing",
]
