"""Turning a log segment into a snapshot: read the files, replay, vet, fall back past bad checkpoints."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from deltalog.checkpoint.reader import CheckpointReader
from deltalog.core import engine_safety
from deltalog.core.features import check_readable
from deltalog.core.paths import LOG_DIR, SIDECAR_DIR, commit_name
from deltalog.core.replay import BaseState, CommitData, ReplayResult, replay, state_only
from deltalog.core.segment import LogSegment, build_segment
from deltalog.errors import CorruptLogError, DeltaLogError
from deltalog.snapshot import Snapshot

if TYPE_CHECKING:
    from deltalog.log import DeltaLog

log = logging.getLogger(__name__)


def read_commits(dlog: DeltaLog, segment: LogSegment) -> list[CommitData]:
    """The segment's commit files; object stores are read in parallel (latency, not bandwidth, dominates)."""
    store = dlog.store
    paths = [f"{LOG_DIR}/{p.name}" for p in segment.commits]

    def read(path: str) -> bytes:
        try:
            return store.read(path)
        except FileNotFoundError:
            raise CorruptLogError(f"{path} disappeared while the log was read", path=path) from None

    if len(paths) > 4 and not store.capabilities.local:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=16) as pool:
            datas = list(pool.map(read, paths))
    else:
        datas = [read(p) for p in paths]
    if engine_safety.relevant(dlog.location):
        versions = [p.version for p in segment.commits]
        dlog._warn_unsafe_engine(engine_safety.first_unsafe(dlog.location, zip(versions, datas, strict=True)))
    return [CommitData(p.version, path, d, p.mtime) for p, path, d in zip(segment.commits, paths, datas, strict=True)]


def load(dlog: DeltaLog, segment: LogSegment) -> Snapshot:
    """Replay ``segment``; an unreadable checkpoint falls back to an older one or to the commits.

    A torn or truncated checkpoint (a crashed writer, a bad copy) must not make a table unreadable when
    the log still holds what is needed without it. The fallback is logged with the file it skipped; only
    when nothing older can rebuild the version does the checkpoint's error reach the caller.
    """
    try:
        return _load_once(dlog, segment)
    except CorruptLogError as exc:
        cp = segment.checkpoint
        bad = {f"{LOG_DIR}/{p.name}" for p in cp.files} if cp is not None else set()
        in_checkpoint = exc.path is not None and (
            any(exc.path.endswith(b) for b in bad) or f"{LOG_DIR}/{SIDECAR_DIR}/" in exc.path
        )
        if cp is None or not in_checkpoint:
            raise
        skipped = {p.name for p in cp.files}
        paths = [p for p in dlog.list_log(0) if p.name not in skipped]
        try:
            fallback = build_segment(paths, segment.version, where=f"{dlog.location}/{LOG_DIR}")
        except DeltaLogError:
            raise exc from None
        log.warning(
            "skipping unreadable checkpoint %s (%s); rebuilding version %d from %s",
            cp.files[0].name,
            exc,
            segment.version,
            fallback.describe(),
        )
        return load(dlog, fallback)


def _load_once(dlog: DeltaLog, segment: LogSegment) -> Snapshot:
    if segment.checkpoint is not None:
        base = CheckpointReader(dlog.store).read_base(segment.checkpoint)
    else:
        base = BaseState(version=-1, source=f"{LOG_DIR}/{commit_name(0)}")
    result = replay(base, read_commits(dlog, segment), dlog.store.root)
    _vet(dlog, segment, result)
    return Snapshot(dlog, segment, result, now_ms=dlog.now_ms())


def load_state(dlog: DeltaLog, segment: LogSegment) -> Snapshot:
    """A snapshot holding protocol, metadata, txns and domains now and its file list on first use.

    For a blind append on a large table: the checkpoint's few non-file rows and the small commits after
    it are all it reads. A log without a checkpoint, or with a long tail of commits, is loaded in full
    (parsing its commits is most of the work either way), as is one whose checkpoint cannot be read (the
    full load knows how to fall back past it).
    """
    commits_bytes = sum(p.size for p in segment.commits)
    if segment.checkpoint is None or commits_bytes > LAZY_TAIL_BYTES:
        return load(dlog, segment)
    try:
        base = CheckpointReader(dlog.store).read_non_file(segment.checkpoint)
        result = state_only(base, read_commits(dlog, segment))
        _vet(dlog, segment, result)
    except CorruptLogError:
        return load(dlog, segment)
    return Snapshot(dlog, segment, result, now_ms=dlog.now_ms(), files=lambda: load(dlog, segment)._files)


#: the commits after a checkpoint that a deferred load still parses (checkpoint intervals keep it small)
LAZY_TAIL_BYTES = 4 << 20


def _vet(dlog: DeltaLog, segment: LogSegment, result: ReplayResult) -> None:
    where = f"{dlog.location}/{LOG_DIR} ({segment.describe()})"
    if result.protocol is not None:
        check_readable(result.protocol, f"{dlog.location}/{result.protocol_source}")
    if result.protocol is None:
        raise CorruptLogError(f"no protocol action found in {where}: version {segment.version} is unreadable")
    if result.metadata is None:
        raise CorruptLogError(f"no metaData action found in {where}: version {segment.version} is unreadable")
    result.version = segment.version


__all__ = ["load", "load_state", "read_commits"]
