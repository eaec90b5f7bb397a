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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from deltalog.checkpoint.hint import read_hint
from deltalog.core.last_checkpoint import LastCheckpoint
from deltalog.core.paths import LOG_DIR, Kind, LogPath, checkpoint_name, log_files, multipart_name, version_prefix
from deltalog.core.segment import LogSegment, build_segment, complete_checkpoints
from deltalog.core.segment import earliest_version as earliest_in
from deltalog.core.segment import latest_version as latest_in
from deltalog.errors import CorruptLogError, DeltaLogError, TableNotFoundError, VersionNotFoundError
from deltalog.storage import bulk
from deltalog.storage.base import LogStore
from deltalog.storage.prefetched import PrefetchedStore
from deltalog.table.context import TableContext

log = logging.getLogger(__name__)

#: versions listed below the target at first; Delta's default checkpoint interval is 10, common ones 100
FIRST_WINDOW = 128
#: the same on an object store, where a LIST request returns up to 1,000 keys whatever the window: a window
#: of 400 versions (a commit and a checksum file each, a checkpoint now and then) still fits one page
OBJECT_STORE_WINDOW = 400
#: the largest checkpoint (by the hint's ``sizeInBytes``) fetched whole, together with the listing
PREFETCH_MAX_BYTES = 64 << 20
#: without ``sizeInBytes``, the most actions (the hint's ``size``) a checkpoint fetched that way may hold
PREFETCH_MAX_ACTIONS = 200_000
#: the most parts of a multi-part checkpoint fetched that way
PREFETCH_MAX_PARTS = 16


def list_log(store: LogStore, from_version: int = 0, to_version: int | None = None) -> list[LogPath]:
    """Parsed log files with ``from_version <= version <= to_version`` (no upper bound when None), sorted.

    Names that are not log files are skipped.
    """
    stop = None if to_version is None else version_prefix(to_version + 1)
    return log_files(store.list_range(f"{LOG_DIR}/{version_prefix(from_version)}", stop))


def listing_near(store: LogStore, version: int, first_window: int | None = None) -> list[LogPath]:
    """The log files of versions ``lo .. version``, with ``lo`` just low enough to hold a complete checkpoint.

    ``lo`` is 0 when no checkpoint at or below ``version`` exists (or the window grew past half the way).
    """
    if first_window is None:
        first_window = FIRST_WINDOW if store.capabilities.local else OBJECT_STORE_WINDOW
    width = max(1, first_window)
    while True:
        lo = version - width
        if lo <= width:  # the next doubling would list most of what is left anyway
            lo = 0
        paths = list_log(store, lo, version)
        if lo == 0 or any(c.version <= version for c in complete_checkpoints(paths)):
            log.debug("listed versions %d..%d of %s to rebuild version %d", lo, version, store.root, version)
            return paths
        width *= 2


@dataclass(frozen=True)
class Listed:
    """A listing of the log for one version: the files, whether they are the whole log, and the checkpoint
    files named by the hint that were fetched while the listing was made (store-relative path -> bytes)."""

    paths: list[LogPath]
    whole: bool
    prefetched: dict[str, bytes] = field(default_factory=dict)


def listing_and_scope(ctx: TableContext, version: int | None) -> tuple[list[LogPath], bool]:
    """The listing to rebuild ``version`` (the latest when None), and whether it is the whole log.

    A version behind the ``_last_checkpoint`` hint is listed from near itself (:func:`listing_near`): its
    checkpoint is older than the hint's, and the log between it and the hint is no use to it. Without a
    hint there is likely no checkpoint at all, so the whole log is listed.
    """
    listed = _listing(ctx, version, prefetch=False)
    return listed.paths, listed.whole


def hinted_checkpoint(hint: LastCheckpoint) -> list[str] | None:
    """The store-relative files of the checkpoint ``hint`` names, when its names follow from the hint alone
    and it is small enough to hold in memory whole; ``None`` otherwise (a V2 checkpoint's name has a UUID
    that only the listing tells, and a large one is better streamed than fetched)."""
    if hint.raw is not None and "v2Checkpoint" in hint.raw:
        return None
    if hint.size_in_bytes is not None:
        if hint.size_in_bytes > PREFETCH_MAX_BYTES:
            return None
    elif hint.size is None or hint.size > PREFETCH_MAX_ACTIONS:
        return None
    parts = hint.parts or 1
    if parts == 1:
        return [f"{LOG_DIR}/{checkpoint_name(hint.version)}"]
    if parts > PREFETCH_MAX_PARTS:
        return None
    return [f"{LOG_DIR}/{multipart_name(hint.version, i, parts)}" for i in range(1, parts + 1)]


def _prefetch(store: LogStore, paths: list[str]) -> dict[str, bytes]:
    """The files' bytes, or nothing: a stale or wrong hint, or any failure, leaves the reading to the loader,
    which reads what the listing shows through the store and reports its errors as usual."""
    try:
        return dict(zip(paths, bulk.read_many(store, paths), strict=True))
    except (DeltaLogError, OSError) as exc:
        log.debug("%s: the checkpoint named by the hint was not prefetched: %s", store.root, exc)
        return {}


def _listing(ctx: TableContext, version: int | None, prefetch: bool) -> Listed:
    """:func:`listing_and_scope`; with ``prefetch``, a latest load on an object store reads the checkpoint the
    hint names while it lists, so the two cost one round trip."""
    store = ctx.store
    hint = read_hint(store, ctx.location)
    if hint is not None and version is not None and 0 <= version < hint.version:
        return Listed(listing_near(store, version), False)
    if hint is None or hint.version == 0 or (version is not None and version < hint.version):
        return Listed(list_log(store, 0), True)
    ahead = prefetch and (version is None or version >= hint.version) and not store.capabilities.local
    names = hinted_checkpoint(hint) if ahead else None
    prefetched: dict[str, bytes] = {}
    if names is None:
        paths = list_log(store, hint.version)
    else:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="deltalog-prefetch") as pool:
            fetching = pool.submit(_prefetch, store, names)
            try:
                paths = list_log(store, hint.version)
            finally:
                prefetched = fetching.result()
    if not any(c.version == hint.version for c in complete_checkpoints(paths)):
        log.warning(
            "%s/_delta_log/_last_checkpoint names version %d but no complete checkpoint exists there; "
            "listing the whole log",
            ctx.location,
            hint.version,
        )
        return Listed(list_log(store, 0), True)
    return Listed(paths, bool(paths) and paths[0].version == 0, prefetched)


def segment_and_listing(ctx: TableContext, version: int | None) -> tuple[LogSegment, list[LogPath]]:
    """The segment that rebuilds ``version`` (the latest when None), and the listing it was chosen from."""
    found = _segment(ctx, version, prefetch=False)
    return found.segment, found.paths


@dataclass(frozen=True)
class Found:
    """A segment, the listing it was chosen from, and the store its checkpoint is best read through (the
    table's store, or a view of it holding the checkpoint files already fetched with the listing)."""

    segment: LogSegment
    paths: list[LogPath]
    checkpoint_store: LogStore


def latest_segment(ctx: TableContext) -> Found:
    """The latest version's segment, with the hint, the listing and the checkpoint read in two round trips."""
    return find_segment(ctx, None)


def find_segment(ctx: TableContext, version: int | None) -> Found:
    """The segment of ``version`` (the latest when None), its checkpoint fetched in as few round trips as the
    store allows: on an object store, a checkpoint up to :data:`PREFETCH_MAX_BYTES` is read whole, one GET
    per file (a parquet reader on a remote stream sends a HEAD and ranged GETs one after another).

    For a version at or after the ``_last_checkpoint`` hint, the checkpoint the hint names is fetched while
    the log is listed from it. It is used only when the listing shows that very checkpoint, complete, as
    the segment's (same names, same sizes): a stale or wrong hint costs a wasted GET, never a wrong snapshot.
    """
    return _segment(ctx, version, prefetch=True)


def _segment(ctx: TableContext, version: int | None, prefetch: bool) -> Found:
    listed = _listing(ctx, version, prefetch)
    paths = listed.paths
    where = f"{ctx.location}/{LOG_DIR}"
    try:
        seg = build_segment(paths, version, where=where)
    except (VersionNotFoundError, TableNotFoundError, CorruptLogError):
        if listed.whole:
            raise
        # A listing that started at the hint or near the version cannot tell about the rest of the
        # log: ask the full log, whose answer (a segment, or the error as it always read) stands.
        paths = list_log(ctx.store, 0)
        return Found(build_segment(paths, version, where=where), paths, ctx.store)
    return Found(seg, paths, _checkpoint_store(ctx.store, seg, listed.prefetched, fetch=prefetch))


def _checkpoint_store(store: LogStore, seg: LogSegment, prefetched: dict[str, bytes], fetch: bool) -> LogStore:
    """The store to read ``seg``'s checkpoint through: a view holding its files when they were prefetched (and
    are the very files listed) or, with ``fetch``, are small enough to read whole now; else ``store``."""
    cp = seg.checkpoint
    if cp is None:
        return store
    wanted = {f"{LOG_DIR}/{p.name}": p.size for p in cp.files}
    if set(wanted) == set(prefetched) and all(len(prefetched[k]) == size for k, size in wanted.items()):
        return PrefetchedStore(store, prefetched)
    if not fetch or store.capabilities.local or sum(wanted.values()) > PREFETCH_MAX_BYTES:
        return store
    fetched = _prefetch(store, list(wanted))
    return PrefetchedStore(store, fetched) if fetched else store


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
    "OBJECT_STORE_WINDOW",
    "PREFETCH_MAX_ACTIONS",
    "PREFETCH_MAX_BYTES",
    "PREFETCH_MAX_PARTS",
    "Found",
    "Listed",
    "find_segment",
    "hinted_checkpoint",
    "latest_segment",
    "earliest_version",
    "latest_version",
    "list_log",
    "listing_and_scope",
    "listing_near",
    "segment",
    "segment_and_listing",
]
