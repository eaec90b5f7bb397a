"""Turning a log segment into a snapshot: read the files, replay, vet, fall back past bad checkpoints.

:func:`load` loads a version with its file list; :func:`load_state` defers the file list (a blind append
needs protocol, metadata and txns only). Either way the file list is owned by its loader, which also knows
how to load it again from the log when a checkpoint it is read from was deleted (:func:`reload_files`).
Keeping a cached snapshot current is :mod:`deltalog.table.refresh`.
"""

from __future__ import annotations

import dataclasses
import functools
import logging

from deltalog.checkpoint.columns import missing_required
from deltalog.checkpoint.reader import CheckpointReader
from deltalog.core import engine_safety
from deltalog.core.features import check_readable
from deltalog.core.jsonlines import objects
from deltalog.core.paths import LOG_DIR, SIDECAR_DIR, LogPath, commit_name, parse
from deltalog.core.reachability import Tip
from deltalog.core.schema import SchemaError, parse_schema
from deltalog.core.segment import CheckpointRef, LogSegment, build_segment
from deltalog.core.state import BaseState, CommitData, ReplayResult
from deltalog.core.state.compact_check import unusable_reason
from deltalog.core.state.files import FileState
from deltalog.core.state.replay import replay, state_only
from deltalog.core.version_state import VersionState, of_replay
from deltalog.errors import CorruptLogError, DeltaLogError, NotFoundError, VersionNotFoundError
from deltalog.storage import bulk
from deltalog.storage.base import LogStore
from deltalog.table import listing
from deltalog.table.context import TableContext
from deltalog.table.file_list import FileList, Pending, Reload
from deltalog.table.snapshot import Snapshot

log = logging.getLogger(__name__)

#: the commits after a checkpoint that a deferred load still parses (checkpoint intervals keep it small)
LAZY_TAIL_BYTES = 4 << 20


# ---------------------------------------------------------------------------------------------- reading
def read_commits(
    ctx: TableContext, segment: LogSegment, cache: dict[int, CommitData] | None = None
) -> list[CommitData]:
    """The segment's commit files, all requested at once (:func:`deltalog.storage.bulk.read_many`: on an object
    store latency, not bandwidth, dominates, so a thousand commits cost a few round trips, not a thousand).

    ``cache`` holds commits already read by an earlier attempt at the same version (a fallback past a bad
    checkpoint): they are not read again, so every commit costs one request however many attempts it takes.
    """
    return _read_files(ctx, segment.commits, cache)


def read_replay(
    ctx: TableContext, segment: LogSegment, cache: dict[int, CommitData] | None = None
) -> tuple[LogSegment, list[CommitData]]:
    """What a replay of the segment after its checkpoint reads, and the segment it reads it for.

    :func:`read_commits`, with each log compaction file the segment chose read instead of the commits it
    covers (one request for a run of them). A compaction's :class:`CommitData` carries its last version and
    its own path, so an error names it. Each compaction file is checked on its own first
    (:func:`deltalog.core.state.compact_check.unusable_reason`): one that does not hold reconciled actions
    is dropped from the segment returned, with a warning once per file, and its commits are read instead.
    """
    files = segment.replay_files()
    datas = _read_files(ctx, files, cache)
    refused: list[LogPath] = []
    for p, d in zip(files, datas, strict=True):
        if p.end_version is None:
            continue
        why = unusable_reason(d.data, d.path, ctx.store.root)
        if why is not None:
            ctx.warn_compaction_refused(p.name, why)
            refused.append(p)
    if not refused:
        return segment, datas
    return _without(ctx, segment, refused, cache)


def _without(
    ctx: TableContext, segment: LogSegment, refused: list[LogPath], cache: dict[int, CommitData] | None
) -> tuple[LogSegment, list[CommitData]]:
    """The segment without the ``refused`` compaction files, and what its replay reads (their commits)."""
    kept = dataclasses.replace(segment, compactions=tuple(c for c in segment.compactions if c not in refused))
    return kept, _read_files(ctx, kept.replay_files(), cache)


def _read_files(ctx: TableContext, files: tuple[LogPath, ...], cache: dict[int, CommitData] | None) -> list[CommitData]:
    def key(p: LogPath) -> int:
        # a compaction is cached apart from the commit of its last version: -1 - end never meets a version
        return p.version if p.end_version is None else -1 - p.end_version

    wanted = [p for p in files if cache is None or key(p) not in cache]
    paths = [f"{LOG_DIR}/{p.name}" for p in wanted]
    datas = read_listed(ctx.store, paths)
    if engine_safety.relevant(ctx.location):
        versions = [p.version for p in wanted]
        ctx.warn_engine_risk(engine_safety.first_unsafe(ctx.location, zip(versions, datas, strict=True)))
    fresh = {
        key(p): CommitData(p.version if p.end_version is None else p.end_version, path, d, p.mtime)
        for p, path, d in zip(wanted, paths, datas, strict=True)
    }
    if cache is None:
        return list(fresh.values())
    cache.update(fresh)
    return [cache[key(p)] for p in files]


def read_listed(store: LogStore, paths: list[str]) -> list[bytes]:
    """The bytes of log files a listing showed, all requested at once; one that is gone since is a
    :class:`CorruptLogError` naming it (a listed commit does not disappear from a sound log)."""
    try:
        return bulk.read_many(store, paths)
    except NotFoundError as exc:
        path = exc.path if exc.path in paths else (paths[0] if paths else LOG_DIR)
        raise CorruptLogError(f"{path} disappeared while the log was read", path=path) from None


# ---------------------------------------------------------------------------------------------- loading
def load(
    ctx: TableContext, segment: LogSegment, tip: Tip | None = None, checkpoint_store: LogStore | None = None
) -> Snapshot:
    """Replay ``segment`` with its file list; an unreadable checkpoint falls back to an older one or to the commits.

    ``tip`` is how the listing showed the version's files when that is more than the segment says;
    ``checkpoint_store`` what the checkpoint is read through when not the table's store (one holding the
    checkpoint already fetched with the listing: :func:`deltalog.table.listing.latest_segment`).
    """
    used, state, files = _load_files(ctx, segment, checkpoint_store)
    return Snapshot(ctx, used, state, FileList.loaded(files, _reloader(ctx)), tip)


def _load_files(
    ctx: TableContext, segment: LogSegment, checkpoint_store: LogStore | None = None
) -> tuple[LogSegment, VersionState, FileState]:
    """The segment actually used, the version state and the files of ``segment``'s version.

    A torn or truncated checkpoint (a crashed writer, a bad copy) must not make a table unreadable when
    the log still holds what is needed without it. The fallback is logged with the file it skipped; only
    when nothing older can rebuild the version does the checkpoint's error reach the caller.

    A log compaction file deleted since the listing (log cleanup), or one holding an action replay cannot
    read, is dropped from the segment and its commits are read instead (one that does not hold reconciled
    actions never gets that far: :func:`read_replay`).

    It is a loop over one listing, never a recursion: every round drops the checkpoint that failed (all
    its files) or a compaction file that failed, so it ends after at most one round per checkpoint and
    compaction file in the log, with one listing and each
    commit read once, however many checkpoints are damaged. The skipped checkpoints are recorded in the
    file state (:attr:`FileState.distrusted`): ``vacuum`` refuses to trust such a file list.
    """
    cache: dict[int, CommitData] = {}
    skipped: set[str] = set()
    distrusted: list[str] = []
    paths: list[LogPath] | None = None
    current = segment
    while True:
        try:
            used, state, files = _load_once(ctx, current, cache, checkpoint_store or ctx.store)
            if distrusted:
                files = dataclasses.replace(files, distrusted=tuple(distrusted))
            return used, state, files
        except CorruptLogError as exc:
            failed = _failed_compaction(current, exc)
            if failed is not None:
                # A compaction file only stands in for commits that are still there: read those instead.
                if _vanished(ctx, failed):
                    log.info("%s: %s is gone (log cleanup); reading its commits", ctx.location, failed.name)
                else:
                    ctx.warn_compaction_refused(failed.name, str(exc))
                current = dataclasses.replace(current, compactions=tuple(c for c in current.compactions if c != failed))
                continue
            cp = current.checkpoint
            if cp is None or not _in_checkpoint(exc, cp):
                raise
            skipped.update(p.name for p in cp.files)
            distrusted.append(cp.files[0].name)
            if paths is None:
                paths = listing.list_log(ctx.store, 0)
            try:
                current = build_segment(
                    [p for p in paths if p.name not in skipped], segment.version, where=f"{ctx.location}/{LOG_DIR}"
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


def _failed_compaction(segment: LogSegment, exc: CorruptLogError) -> LogPath | None:
    """The segment's compaction file that ``exc`` is about: deleted since the listing, or holding an action
    replay cannot read. Either way its commits, all listed, say what it was meant to."""
    return next((c for c in segment.compactions if exc.path == f"{LOG_DIR}/{c.name}"), None)


def _vanished(ctx: TableContext, compaction: LogPath) -> bool:
    """Whether ``compaction`` no longer exists (log cleanup deleted it since the listing)."""
    try:
        return not ctx.store.exists(f"{LOG_DIR}/{compaction.name}")
    except (DeltaLogError, OSError):
        return False


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
    ctx: TableContext, segment: LogSegment, cache: dict[int, CommitData], checkpoint_store: LogStore
) -> tuple[LogSegment, VersionState, FileState]:
    """One attempt at ``segment``: the segment as read (without the compaction files refused), its state
    and its files."""
    if segment.checkpoint is not None:
        base = CheckpointReader(checkpoint_store).read_base(segment.checkpoint)
    else:
        base = BaseState(version=-1, source=f"{LOG_DIR}/{commit_name(0)}")
    segment, commits = read_replay(ctx, segment, cache)
    result = replay(base, commits, ctx.store.root)
    state = _vet(ctx, segment, result)
    assert result.files is not None
    _check_file_actions(result.files, commits)
    return segment, state, result.files


def load_state(
    ctx: TableContext, segment: LogSegment, tip: Tip | None = None, checkpoint_store: LogStore | None = None
) -> Snapshot:
    """A snapshot holding protocol, metadata, txns and domains now and its file list on first use.

    For a blind append on a large table: the checkpoint's few non-file rows and the small commits after
    it are all it reads. A log without a checkpoint, or with a long tail of commits, is loaded in full
    (parsing its commits is most of the work either way), as is one whose checkpoint cannot be read (the
    full load knows how to fall back past it).
    """
    commits_bytes = sum(p.size for p in segment.commits)
    if segment.checkpoint is None or commits_bytes > LAZY_TAIL_BYTES:
        return load(ctx, segment, tip, checkpoint_store)
    try:
        base = CheckpointReader(checkpoint_store or ctx.store).read_non_file(segment.checkpoint)
        segment, commits = read_replay(ctx, segment)
        state = _vet(ctx, segment, state_only(base, commits))
    except CorruptLogError:
        return load(ctx, segment, tip, checkpoint_store)
    pending = pending_of_segment(segment)
    files = FileList.deferred(lambda: _load_files(ctx, segment, checkpoint_store)[2], pending, _reloader(ctx))
    return Snapshot(ctx, segment, state, files, tip)


def pending_of_segment(segment: LogSegment) -> Pending:
    """What a deferred load of ``segment`` replays beyond its checkpoint."""
    return Pending(len(segment.commits), sum(p.size for p in segment.commits))


def snapshot_at(ctx: TableContext, version: int | None = None) -> Snapshot:
    """The table at ``version`` (the latest by default), loaded from the log as it is now."""
    found = listing.find_segment(ctx, version)
    return load(ctx, found.segment, checkpoint_store=found.checkpoint_store)


def snapshot_in(ctx: TableContext, version: int, paths: list[LogPath]) -> Snapshot:
    """The table at ``version``, its segment chosen from ``paths``, a listing of the whole log the caller
    already holds (time travel by timestamp lists once, for the times and the segment alike)."""
    return load(ctx, build_segment(paths, version, where=f"{ctx.location}/{LOG_DIR}"))


def _vet(ctx: TableContext, segment: LogSegment, result: ReplayResult) -> VersionState:
    where = f"{ctx.location}/{LOG_DIR} ({segment.describe()})"
    if result.protocol is not None:
        check_readable(result.protocol, f"{ctx.location}/{result.protocol_source}")
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
    return of_replay(result, segment.version)


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


# ---------------------------------------------------------------------------------------------- reloading
def _reloader(ctx: TableContext) -> Reload:
    return functools.partial(reload_files, ctx)


def reload_files(ctx: TableContext, version: int, exc: CorruptLogError) -> FileState | None:
    """The files of ``version`` loaded again from the log, when ``exc`` says a checkpoint (or sidecar) they
    were read from was deleted; ``None`` when ``exc`` is about anything else.

    A deleted checkpoint is what log cleanup leaves behind a long-lived snapshot; the version itself is
    usually still there to be rebuilt from a newer checkpoint, and when it is not, the error says so.
    """
    if not _source_deleted(ctx, exc):
        return None
    log.info(
        "%s: %s, which the file list of version %d is read from, was deleted (log cleanup); "
        "loading version %d again from the log",
        ctx.location,
        exc.path,
        version,
        version,
    )
    try:
        return _load_files(ctx, listing.segment(ctx, version))[2]
    except (VersionNotFoundError, CorruptLogError) as err:
        raise VersionNotFoundError(
            f"version {version} of {ctx.location} can no longer be read: {exc.path}, which its "
            f"file list is read from, was deleted by log cleanup, and the log cannot rebuild it ({err})",
            earliest=getattr(err, "earliest", None),
            latest=getattr(err, "latest", None),
        ) from None


def _source_deleted(ctx: TableContext, exc: CorruptLogError) -> bool:
    path = exc.path or ""
    name = path.rsplit("/", 1)[-1]
    parsed = parse(name)
    is_source = path.startswith(f"{LOG_DIR}/{SIDECAR_DIR}/") or (
        path == f"{LOG_DIR}/{name}" and parsed is not None and parsed.is_checkpoint
    )
    if not is_source:
        return False
    try:
        return not ctx.store.exists(path)
    except (DeltaLogError, OSError):
        return False


__all__ = [
    "LAZY_TAIL_BYTES",
    "load",
    "load_state",
    "pending_of_segment",
    "read_commits",
    "read_listed",
    "read_replay",
    "reload_files",
    "snapshot_at",
    "snapshot_in",
]
