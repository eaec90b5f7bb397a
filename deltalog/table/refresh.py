"""Keeping a cached snapshot current, and a chain of pending commits bounded.

:func:`refresh` compares a cached snapshot with the log and names what it found: :class:`Unchanged` (nothing
since), :class:`Combined` (the cache advanced past the commits since), :class:`Rebuild` (loaded anew: from
the log when the cache no longer holds, or from a newer checkpoint). :func:`advance` moves a snapshot past
new commits, after a refresh or a commit, without letting what its file list would replay grow past
:data:`MAX_PENDING`: past it, a newer checkpoint takes the chain's place, or the chain is resolved.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from deltalog.core.log.paths import Kind, LogPath
from deltalog.core.log.reachability import holds, tip_in
from deltalog.core.log.segment import LogSegment
from deltalog.core.state import CommitData
from deltalog.errors import DeltaLogError
from deltalog.table import listing
from deltalog.table import snapshot as snapshots
from deltalog.table.context import TableContext
from deltalog.table.file_list import Pending
from deltalog.table.load import load, load_state, pending_of_segment, read_commits
from deltalog.table.snapshot import Snapshot

log = logging.getLogger(__name__)

#: how much a snapshot's file list may leave to replay (commits advanced past, or after its checkpoint)
#: before :func:`advance` resolves it or rebuilds it from a newer checkpoint
MAX_PENDING = Pending(commits=100, bytes=16 << 20)


@dataclass(frozen=True)
class Unchanged:
    """The log has nothing after the cached snapshot, which still holds: keep it."""

    snapshot: Snapshot


@dataclass(frozen=True)
class Combined:
    """The cached snapshot advanced past the commits since it (its file list replayed onto, lazily)."""

    snapshot: Snapshot


@dataclass(frozen=True)
class Rebuild:
    """A snapshot loaded anew: from the log (a cache it no longer holds, a gap: it replaces the cache
    whatever its version) or, ``from_checkpoint``, the same version from a newer checkpoint."""

    snapshot: Snapshot
    from_checkpoint: bool = False


Refresh = Unchanged | Combined | Rebuild


def refresh(ctx: TableContext, cached: Snapshot | None, lazy: bool = False) -> Refresh:
    """The latest snapshot, and how it relates to ``cached``; ``lazy`` defers a fresh load's file list.

    The cached snapshot is trusted only while the log still lists its version's files as it did when
    they were read (:func:`deltalog.table.snapshot.tip`): log cleanup may have removed them, or the table may have been
    deleted and recreated, and then the log, not the cache, says what the table is. The one listing
    from the cached version serves both that check and finding the commits since.
    """
    if cached is not None:
        listed = listing.list_log(ctx.store, cached.version)
        if not holds(snapshots.tip(cached), listed):
            log.info(
                "%s: the log no longer lists version %d as the cached snapshot read it (%s): loading it again",
                ctx.location,
                cached.version,
                snapshots.tip(cached).describe(),
            )
        else:
            newer = [p for p in listed if p.kind is Kind.COMMIT and p.version > cached.version]
            contiguous = _contiguous(newer, cached.version)
            if not newer:
                return Unchanged(cached)
            if len(contiguous) == len(newer):
                segment = LogSegment(newer[-1].version, None, tuple(contiguous))
                return advance(ctx, cached, read_commits(ctx, segment), lazy=lazy)
    found = listing.latest_segment(ctx)
    segment, listed = found.segment, found.paths
    tip = tip_in(listed, segment.version)
    loader = load_state if lazy else load
    snap = loader(ctx, segment, tip, found.checkpoint_store)
    if cached is not None and cached.metadata.id != snap.metadata.id:
        log.warning(
            "the table at %s was replaced: table id %s, cached at version %d, is now %s at version %d",
            ctx.location,
            cached.metadata.id,
            cached.version,
            snap.metadata.id,
            snap.version,
        )
    return Rebuild(snap)


def _contiguous(newer: list[LogPath], after: int) -> list[LogPath]:
    expected = after + 1
    out = []
    for p in newer:
        if p.version != expected:
            break
        out.append(p)
        expected += 1
    return out


def advance(ctx: TableContext, snap: Snapshot, commits: list[CommitData], lazy: bool = True) -> Combined | Rebuild:
    """``snap`` moved past ``commits`` (the next versions, in order), its pending replay kept within
    :data:`MAX_PENDING`.

    Within the bound the file list is left to replay the commits when first asked for (:class:`Combined`).
    Past it, a checkpoint newer than the one the chain starts from (one the compaction job or another
    writer wrote) takes its place: the version is loaded from it (``lazy``: its file list deferred, as for a
    transaction) and the chain is dropped (:class:`Rebuild`). With no such checkpoint, the chain is resolved
    now: the files are replayed, and the next chain starts from them. Either way a writer that never reads
    files holds a bounded chain, however many commits it makes.
    """
    nxt = snapshots.advance(snap, commits)
    pending = snapshots.pending(nxt)
    if pending.commits <= MAX_PENDING.commits and pending.bytes <= MAX_PENDING.bytes:
        return Combined(nxt)
    rebuilt = _from_newer_checkpoint(ctx, nxt, lazy)
    if rebuilt is not None:
        return Rebuild(rebuilt, from_checkpoint=True)
    try:
        snapshots.file_state(nxt)
    except DeltaLogError as exc:  # left for the next reader of the files, who gets this error
        log.info("%s: could not resolve the file list of version %d now: %s", ctx.location, nxt.version, exc)
    return Combined(nxt)


def _from_newer_checkpoint(ctx: TableContext, snap: Snapshot, lazy: bool) -> Snapshot | None:
    """``snap``'s version loaded from a checkpoint newer than the one its segment starts from, if the log
    has one that leaves less to replay; ``None`` otherwise."""
    start = snap.segment.checkpoint.version if snap.segment.checkpoint is not None else -1
    try:
        segment, listed = listing.segment_and_listing(ctx, snap.version)
        if segment.checkpoint is None or segment.checkpoint.version <= start:
            return None
        if pending_of_segment(segment).commits >= snapshots.pending(snap).commits:
            return None
        tip = tip_in(listed, snap.version) or snapshots.tip(snap)
        rebuilt = load_state(ctx, segment, tip) if lazy else load(ctx, segment, tip)
    except DeltaLogError as exc:
        log.info("%s: version %d not rebuilt from a newer checkpoint: %s", ctx.location, snap.version, exc)
        return None
    if rebuilt.metadata.id != snap.metadata.id:
        return None  # another table now: the next refresh will see it
    log.debug("%s: version %d rebuilt from %s", ctx.location, snap.version, segment.describe())
    return rebuilt


__all__ = ["MAX_PENDING", "Combined", "Rebuild", "Refresh", "Unchanged", "advance", "refresh"]
