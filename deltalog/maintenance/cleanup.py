"""Log cleanup (metadata cleanup) with IO: list ``_delta_log``, plan, verify the boundary, delete.

The plan comes from :func:`deltalog.core.cleanup_plan.plan_cleanup`. Two checks here need storage: the
boundary checkpoint must actually be readable before anything below it is deleted (a torn checkpoint
would otherwise become the only way into the table; an unreadable one is passed over for an older one),
and sidecars may only go when no remaining checkpoint names them, which takes reading those checkpoints.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.checkpoint.reader import CheckpointReader
from deltalog.checkpoint.writer import CheckpointWriter
from deltalog.core import properties
from deltalog.core.cleanup_plan import (
    CleanupPlan,
    Horizon,
    LogFile,
    Retention,
    add_sidecars,
    plan_cleanup,
    protect_checkpoints,
    protected_before,
    resolve_retention,
)
from deltalog.core.feature_gate import CHECKPOINT, CLEANUP, check_operation
from deltalog.core.ict import ict_enablement
from deltalog.core.jsonlines import objects
from deltalog.core.paths import LAST_CHECKPOINT, LOG_DIR, SIDECAR_DIR, Kind, LogPath, checkpoint_name, parse
from deltalog.core.result_repr import result_repr
from deltalog.core.segment import complete_checkpoints
from deltalog.errors import CorruptLogError
from deltalog.maintenance.deletion import delete_in_order, gate
from deltalog.storage.base import LogStore
from deltalog.table import load
from deltalog.table.context import TableContext
from deltalog.table.declared_intents import expired_intents
from deltalog.table.history import commit_info
from deltalog.table.snapshot import Snapshot

log = logging.getLogger(__name__)

LOG_RETENTION_KEY = "delta.logRetentionDuration"


@dataclass(frozen=True)
class CleanupResult:
    """A cleanup's plan and what was actually deleted (nothing on a dry run).

    ``deleted`` holds store-relative paths (``_delta_log/...``) in the order they were deleted.
    """

    plan: CleanupPlan
    dry_run: bool
    deleted: tuple[str, ...]
    #: expired intent files (``_delta_log/_intents/*.json``, :mod:`deltalog.table.declared_intents`) deleted,
    #: or to delete
    intents: tuple[str, ...] = ()
    #: the classic-named compatibility checkpoint written before deleting (V2 tables), or to write on a dry
    #: run; None when none was needed or one was there already
    compat_checkpoint: str | None = None
    #: on a dry run of a table whose writer features refuse a real cleanup: why (the plan is a read)
    refusal: str | None = None

    @property
    def horizon(self) -> Horizon | None:
        """The earliest version still reconstructable after the cleanup, and its commit time."""
        return self.plan.horizon

    @property
    def paths(self) -> tuple[str, ...]:
        """Every file the plan deletes, store-relative."""
        return tuple(f"{LOG_DIR}/{d.path}" for d in self.plan.deletions)

    @property
    def num_files(self) -> int:
        """How many log files the plan deletes (intent files not counted: see ``intents``)."""
        return len(self.plan.deletions)

    @property
    def bytes(self) -> int:
        """The size of the log files the plan deletes, as listed."""
        return sum(d.size for d in self.plan.deletions)

    def __repr__(self) -> str:
        """What was (or would be) deleted, counted, and the horizon; the files are on :attr:`paths`."""
        horizon = self.horizon
        return result_repr(
            "CleanupResult",
            "dry_run" if self.dry_run else "",
            files=self.num_files,
            bytes=self.bytes,
            deleted=None if self.dry_run else len(self.deleted),
            intents=len(self.intents) or None,
            horizon=None if horizon is None else horizon.version,
            refusal=self.refusal,
        )


def cleanup(
    ctx: TableContext, snap: Snapshot, retention: Retention | None = None, dry_run: bool = True
) -> CleanupResult:
    """Plan (and unless ``dry_run``, carry out) the deletion of expired log files of the table, whose latest
    snapshot is ``snap``.

    ``retention`` overrides ``delta.logRetentionDuration`` (default 30 days): milliseconds, a timedelta or
    an interval string (``"30d"``, ``"interval 30 days"``). Cleanup deletes, so the writer protocol check
    for cleanup runs first on the latest protocol (:func:`~deltalog.maintenance.deletion.gate`): a real run
    it refuses raises, a dry run plans anyway and says why in ``refusal``.
    """
    source = f"{ctx.location}/{LOG_DIR}"
    refusal = gate(CLEANUP, snap.protocol, snap.configuration, snap.schema_json, source, dry_run)
    retention_ms = resolve_retention(retention, snap.configuration, LOG_RETENTION_KEY, properties.DEFAULT_LOG_RETENTION)
    now = ctx.now_ms()
    store = ctx.store
    paths, others = _list_log(store)
    plan = _verified_plan(ctx, paths, others, now, retention_ms)
    plan = protect_checkpoints(plan, protected_before(snap.configuration, snap.features))
    sidecars = [LogFile(f.name, f.size, f.mtime) for f in store.list_from(f"{LOG_DIR}/{SIDECAR_DIR}/")]
    if sidecars:
        plan = add_sidecars(plan, sidecars, _sidecar_references(store, paths, plan.remaining_checkpoints))
    plan = _with_ict_horizon(ctx, snap, plan)
    expired = tuple(o.path for o in expired_intents(store, now))
    compat = _compat_version(snap, plan)
    if dry_run:
        would = None if compat is None else f"{LOG_DIR}/{checkpoint_name(compat)}"
        return CleanupResult(plan, True, (), expired, would, refusal)
    written = None if compat is None else _write_compat(ctx, compat, now)
    # log files first, then the intents of writers that died (older than their timeout plus a margin for skew)
    deleted = delete_in_order(store, [f"{LOG_DIR}/{d.path}" for d in plan.deletions] + list(expired), "cleanup")
    if deleted:
        log.info("cleanup of %s deleted %d files; earliest version now %s", ctx.location, len(deleted), plan.horizon)
    return CleanupResult(plan, False, tuple(deleted), expired, written)


def _compat_version(snap: Snapshot, plan: CleanupPlan) -> int | None:
    """The version of the classic compatibility checkpoint this cleanup writes first, or None.

    On a table with ``v2Checkpoint`` whose latest snapshot reads a UUID-named checkpoint, and only when the
    plan deletes version files: an engine that knows only classic checkpoint names still finds one at that
    version (and then refuses the table by its protocol) once the older classic checkpoints are gone, as
    Delta Spark's metadata cleanup ensures. Never below a checkpoint-protected version: there the cleanup
    writes no checkpoint (:func:`~deltalog.core.cleanup_plan.protect_checkpoints` keeps the old ones).
    """
    ref = snap.segment.checkpoint
    if "v2Checkpoint" not in snap.features or ref is None or ref.kind is not Kind.UUID_CHECKPOINT:
        return None
    if not any(d.version is not None for d in plan.deletions):
        return None
    guard = protected_before(snap.configuration, snap.features)
    if guard is not None and ref.version < guard:
        return None
    return ref.version


def _write_compat(ctx: TableContext, version: int, now: int) -> str | None:
    """Write the compatibility checkpoint of ``version`` (with the checkpoint gate on that version's
    protocol); its path, or None when a classic one was there already."""
    at = load.snapshot_at(ctx, version)
    check_operation(CHECKPOINT, at.protocol, at.configuration, at.schema_json, f"{ctx.location}/{LOG_DIR}")
    written = CheckpointWriter(ctx.store, at.state, at.file_state(), now).write_compat()
    if written is None:
        return None
    log.info("cleanup of %s wrote the compatibility checkpoint %s", ctx.location, written.files[0])
    return written.files[0]


def _list_log(store: LogStore) -> tuple[list[LogPath], list[LogFile]]:
    """Version files (parsed) and every other file directly in ``_delta_log`` (never ``_last_checkpoint``)."""
    paths: list[LogPath] = []
    others: list[LogFile] = []
    for info in store.list_from(f"{LOG_DIR}/"):
        parsed = parse(info.name, info.size, info.mtime)
        if parsed is not None:
            paths.append(parsed)
        elif info.name != LAST_CHECKPOINT:
            others.append(LogFile(info.name, info.size, info.mtime))
    return paths, others


def _verified_plan(
    ctx: TableContext, paths: Sequence[LogPath], others: Sequence[LogFile], now: int, retention_ms: int
) -> CleanupPlan:
    """A plan whose boundary checkpoint reads back with protocol and metadata.

    An unreadable boundary is excluded and the plan made again, so the boundary falls to an older sound
    checkpoint (or to none, which deletes nothing). The check reads the checkpoint, so it is made only
    when the plan deletes version files: a log cleaned before (the common case for the cleanup that
    follows automatic checkpoints) costs a listing and nothing more.
    """
    unusable: set[str] = set()
    reader = CheckpointReader(ctx.store)
    while True:
        plan = plan_cleanup(paths, now, retention_ms, other_files=others, unusable_checkpoints=unusable)
        if plan.boundary is None or not any(d.version is not None for d in plan.deletions):
            return plan
        ref = [
            c for c in complete_checkpoints(paths) if c.version == plan.boundary and c.files[0].name not in unusable
        ][-1]
        try:
            base = reader.read_base(ref)
            if base.protocol is None or base.metadata is None:
                raise CorruptLogError(f"{ref.files[0].name} has no protocol or metaData row", path=ref.files[0].name)
        except CorruptLogError as exc:
            log.warning("cleanup of %s will not rely on checkpoint %s: %s", ctx.location, ref.files[0].name, exc)
            unusable.add(ref.files[0].name)
            continue
        return plan


def _sidecar_references(store: LogStore, paths: Sequence[LogPath], remaining: Sequence[str]) -> frozenset[str] | None:
    """Bare names of the sidecars the remaining checkpoints reference; None when one cannot be read.

    Multi-part checkpoints are V1 only and have no sidecars; 0-byte files hold nothing. Any other
    checkpoint may carry ``sidecar`` rows (a classic name can hold V2 content), so its footer is read.
    """
    by_name = {p.name: p for p in paths}
    names: set[str] = set()
    for name in remaining:
        p = by_name[name]
        if p.kind is Kind.MULTIPART or p.size == 0:
            continue
        path = f"{LOG_DIR}/{name}"
        try:
            found = _sidecars_in_json(store, path) if name.endswith(".json") else _sidecars_in_parquet(store, path)
        except (OSError, ValueError, pa.ArrowException, orjson.JSONDecodeError) as exc:
            log.warning("cleanup keeps every sidecar: cannot read the sidecar list of %s (%s)", path, exc)
            return None
        names.update(found)
    return frozenset(names)


def _sidecar_name(raw: object) -> str | None:
    if not isinstance(raw, str) or not raw:
        return None
    return unquote(raw).rstrip("/").rsplit("/", 1)[-1]


def _sidecars_in_json(store: LogStore, path: str) -> list[str]:
    out = []
    for _, obj in objects(store.read(path), path):
        body = obj.get("sidecar")
        name = _sidecar_name(body.get("path") if isinstance(body, dict) else None)
        if name:
            out.append(name)
    return out


def _sidecars_in_parquet(store: LogStore, path: str) -> list[str]:
    with store.open(path) as handle:
        pf = pq.ParquetFile(handle)
        if "sidecar" not in pf.schema_arrow.names:
            return []
        column = pf.read(columns=["sidecar.path"]).column("sidecar")
    flat = pa.Table.from_struct_array(column).column("path").to_pylist()
    return [n for n in (_sidecar_name(v) for v in flat) if n]


def _with_ict_horizon(ctx: TableContext, snap: Snapshot, plan: CleanupPlan) -> CleanupPlan:
    """The horizon's time as time travel will see it: its in-commit timestamp when the table has them."""
    h = plan.horizon
    enablement = ict_enablement(snap.configuration, snap.protocol)
    if h is None or h.timestamp is None or enablement is None or h.version < enablement.version:
        return plan
    ict = commit_info(ctx, h.version).get("inCommitTimestamp")
    if not isinstance(ict, int) or isinstance(ict, bool):
        return plan
    return dataclasses.replace(plan, horizon=Horizon(h.version, ict))


__all__ = ["CleanupResult", "cleanup"]
