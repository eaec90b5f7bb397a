"""Turning a log segment into a snapshot: read the files, replay, vet, fall back past bad checkpoints."""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

from deltalog.checkpoint.columns import missing_required
from deltalog.checkpoint.reader import CheckpointReader
from deltalog.core import engine_safety
from deltalog.core.features import check_readable
from deltalog.core.jsonlines import objects
from deltalog.core.paths import LOG_DIR, SIDECAR_DIR, LogPath, commit_name
from deltalog.core.schema import SchemaError, parse_schema
from deltalog.core.segment import CheckpointRef, LogSegment, build_segment
from deltalog.core.state import BaseState, CommitData, ReplayResult
from deltalog.core.state.files import FileState
from deltalog.core.state.replay import replay, state_only
from deltalog.errors import CorruptLogError, DeltaLogError
from deltalog.snapshot import Snapshot

if TYPE_CHECKING:
    from deltalog.log import DeltaLog

log = logging.getLogger(__name__)


def read_commits(dlog: DeltaLog, segment: LogSegment, cache: dict[int, CommitData] | None = None) -> list[CommitData]:
    """The segment's commit files; object stores are read in parallel (latency, not bandwidth, dominates).

    ``cache`` holds commits already read by an earlier attempt at the same version (a fallback past a bad
    checkpoint): they are not read again, so every commit costs one request however many attempts it takes.
    """
    store = dlog.store
    wanted = [p for p in segment.commits if cache is None or p.version not in cache]
    paths = [f"{LOG_DIR}/{p.name}" for p in wanted]

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
        versions = [p.version for p in wanted]
        dlog._warn_unsafe_engine(engine_safety.first_unsafe(dlog.location, zip(versions, datas, strict=True)))
    fresh = {
        p.version: CommitData(p.version, path, d, p.mtime) for p, path, d in zip(wanted, paths, datas, strict=True)
    }
    if cache is None:
        return list(fresh.values())
    cache.update(fresh)
    return [cache[p.version] for p in segment.commits]


def load(dlog: DeltaLog, segment: LogSegment) -> Snapshot:
    """Replay ``segment``; an unreadable checkpoint falls back to an older one or to the commits.

    A torn or truncated checkpoint (a crashed writer, a bad copy) must not make a table unreadable when
    the log still holds what is needed without it. The fallback is logged with the file it skipped; only
    when nothing older can rebuild the version does the checkpoint's error reach the caller.

    It is a loop over one listing, never a recursion: every round drops the checkpoint that failed (all
    its files), so it ends after at most one round per checkpoint in the log, with one listing and each
    commit read once, however many checkpoints are damaged. The skipped checkpoints are recorded in the
    file state (:attr:`FileState.distrusted`): ``vacuum`` refuses to trust such a file list.
    """
    cache: dict[int, CommitData] = {}
    skipped: set[str] = set()
    distrusted: list[str] = []
    listing: list[LogPath] | None = None
    current = segment
    while True:
        try:
            return _load_once(dlog, current, cache, tuple(distrusted))
        except CorruptLogError as exc:
            cp = current.checkpoint
            if cp is None or not _in_checkpoint(exc, cp):
                raise
            skipped.update(p.name for p in cp.files)
            distrusted.append(cp.files[0].name)
            if listing is None:
                listing = dlog.list_log(0)
            try:
                current = build_segment(
                    [p for p in listing if p.name not in skipped], segment.version, where=f"{dlog.location}/{LOG_DIR}"
                )
            except DeltaLogError:
                raise _no_fallback(exc, distrusted) from None
            log.warning(
                "skipping unreadable checkpoint %s (%s); rebuilding version %d from %s",
                cp.files[0].name,
                exc,
                segment.version,
                current.describe(),
            )


def _in_checkpoint(exc: CorruptLogError, cp: CheckpointRef) -> bool:
    """Whether ``exc`` is about one of ``cp``'s files (a part, the manifest, or one of its sidecars)."""
    if exc.path is None:
        return False
    return any(exc.path.endswith(f"{LOG_DIR}/{p.name}") for p in cp.files) or f"{LOG_DIR}/{SIDECAR_DIR}/" in exc.path


def _no_fallback(exc: CorruptLogError, distrusted: list[str]) -> CorruptLogError:
    """The error of the last checkpoint tried, naming the others skipped before it."""
    if len(distrusted) < 2:
        return exc
    earlier = ", ".join(distrusted[:-1])
    return CorruptLogError(f"{exc} (checkpoints skipped before it: {earlier})", path=exc.path, line=exc.line)


def _load_once(
    dlog: DeltaLog, segment: LogSegment, cache: dict[int, CommitData], distrusted: tuple[str, ...]
) -> Snapshot:
    if segment.checkpoint is not None:
        base = CheckpointReader(dlog.store).read_base(segment.checkpoint)
    else:
        base = BaseState(version=-1, source=f"{LOG_DIR}/{commit_name(0)}")
    commits = read_commits(dlog, segment, cache)
    result = _vet(dlog, segment, replay(base, commits, dlog.store.root))
    if result.files is not None:
        _check_file_actions(result.files, commits)
        if distrusted:
            result = dataclasses.replace(result, files=dataclasses.replace(result.files, distrusted=distrusted))
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
        result = _vet(dlog, segment, state_only(base, read_commits(dlog, segment)))
    except CorruptLogError:
        return load(dlog, segment)
    return Snapshot(dlog, segment, result, now_ms=dlog.now_ms(), files=lambda: load(dlog, segment)._files)


#: the commits after a checkpoint that a deferred load still parses (checkpoint intervals keep it small)
LAZY_TAIL_BYTES = 4 << 20


def _vet(dlog: DeltaLog, segment: LogSegment, result: ReplayResult) -> ReplayResult:
    where = f"{dlog.location}/{LOG_DIR} ({segment.describe()})"
    if result.protocol is not None:
        check_readable(result.protocol, f"{dlog.location}/{result.protocol_source}")
    if result.protocol is None:
        raise CorruptLogError(f"no protocol action found in {where}: version {segment.version} is unreadable")
    if result.metadata is None:
        raise CorruptLogError(f"no metaData action found in {where}: version {segment.version} is unreadable")
    try:
        parse_schema(result.metadata.schema_string)
    except SchemaError as exc:
        # Checked here, not on first use, so that a damaged schema in a checkpoint is a checkpoint to skip.
        source = result.metadata_source
        raise CorruptLogError(f"{source or where}: {exc}", path=source) from None
    if result.version == segment.version:
        return result
    return dataclasses.replace(result, state=dataclasses.replace(result.state, version=segment.version))


def _check_file_actions(files: FileState, commits: list[CommitData]) -> None:
    """Refuse live adds or tombstones from the commits that lack a field every such action must carry.

    A JSON add without ``size`` or ``partitionValues`` replays into a row of nulls that other engines
    refuse and that maintenance would misjudge; the error names the commit and line of the action.
    """
    for kind, table in (("add", files.tail), ("remove", files.tail_removes)):
        name = missing_required(table, kind)
        if name is not None:
            raise _locate_missing(commits, kind, name)


def _locate_missing(commits: list[CommitData], kind: str, name: str) -> CorruptLogError:
    for commit in reversed(commits):
        for line_no, obj in objects(commit.data, commit.path):
            body = obj.get(kind)
            if isinstance(body, dict) and body.get(name) is None:
                return CorruptLogError(
                    f"{commit.path} line {line_no}: {kind} action without {name!r}, which is required",
                    path=commit.path,
                    line=line_no,
                )
    span = f"{commits[0].path} .. {commits[-1].path}" if commits else "the log"
    return CorruptLogError(f"a {kind} action in {span} has no {name!r}, which is required")


__all__ = ["load", "load_state", "read_commits"]
