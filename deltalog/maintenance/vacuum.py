"""VACUUM with IO: collect what the log references, find the candidates, plan, delete in bulk.

The rules live in :mod:`deltalog.core.vacuum_plan`; this module gathers its inputs from the latest
snapshot (live adds and tombstones, with their deletion vectors) and the candidates either from
:meth:`LogStore.walk` (full mode: every file under the root; hidden trees such as ``_delta_log`` are pruned
unlisted, and the root's subdirectories, partitions as a rule, are walked in parallel on object stores) or,
in lite mode, from the expired ``remove`` actions the log still holds, as Delta Spark's ``VACUUM ... LITE``
does: no listing of the table at all, which is what vacuum costs on an object store.

What lite mode cannot see (delta-write-rules.md section 15; PROTOCOL "Add File and Remove File"): files no
commit ever named (a writer that died before committing), and files whose ``remove`` left the log, because
log cleanup deleted its commit and checkpoints dropped the expired tombstone. A full vacuum now and then
finds those. Either mode protects the same files (live adds, unexpired tombstones, their deletion vectors),
so neither deletes a live file. Deletes go through the store's bulk delete
(:func:`~deltalog.maintenance.deletion.delete_in_order`: one request per 1,000 keys on S3, per 256 on Azure).
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.core import properties
from deltalog.core.cleanup_plan import Retention, resolve_retention
from deltalog.core.feature_gate import VACUUM
from deltalog.core.file_age import age_clock
from deltalog.core.jsonlines import objects
from deltalog.core.paths import LOG_DIR, Kind, log_files
from deltalog.core.result_repr import result_repr
from deltalog.core.vacuum_plan import (
    FileRef,
    ListedFile,
    VacuumPlan,
    inside_files,
    is_hidden_path,
    plan_vacuum,
    protected_keys,
)
from deltalog.errors import CorruptLogError, DeltaLogError, InvalidArgumentError, NotFoundError
from deltalog.maintenance.deletion import delete_in_order, gate
from deltalog.storage.base import FileInfo, LogStore
from deltalog.storage.bulk import read_many
from deltalog.table.context import TableContext
from deltalog.table.snapshot import Snapshot
from deltalog.table.store_clock import store_now_ms

log = logging.getLogger(__name__)

#: ``progress(stage, done, total)``: stage "list" (total 0: unknown while listing) then "delete"
VacuumProgress = Callable[[str, int, int], None]
DELETED_FILE_RETENTION_KEY = "delta.deletedFileRetentionDuration"
_LIST_TICK = 1000
_NOTABLE_SKEW_MS = 60_000  # a clock this far ahead of the store's is worth a line in the log


@dataclass(frozen=True)
class VacuumResult:
    """A VACUUM's plan and the store-relative paths actually deleted (nothing on a dry run)."""

    plan: VacuumPlan
    dry_run: bool
    deleted: tuple[str, ...]
    version: int  # the snapshot whose references protected files
    lite: bool = False  # candidates came from the log's expired removes, not from listing the table
    refusal: str | None = None  # on a dry run of a table whose writer features refuse a real vacuum: why

    @property
    def paths(self) -> tuple[str, ...]:
        """Every file the plan deletes (or, on a dry run, would), store-relative."""
        return tuple(f.path for f in self.plan.deletions)

    @property
    def num_files(self) -> int:
        """How many files the plan deletes."""
        return len(self.plan.deletions)

    @property
    def bytes(self) -> int:
        """The size of the files the plan deletes, as listed."""
        return self.plan.total_bytes

    def __repr__(self) -> str:
        """What was (or would be) deleted, counted; the files are on :attr:`paths` and :attr:`plan`."""
        return result_repr(
            "VacuumResult",
            "dry_run" if self.dry_run else "",
            "lite" if self.lite else "",
            version=self.version,
            files=self.num_files,
            bytes=self.bytes,
            deleted=None if self.dry_run else len(self.deleted),
            refusal=self.refusal,
        )


def vacuum(
    ctx: TableContext,
    snap: Snapshot,
    retention: Retention | None = None,
    dry_run: bool = True,
    force: bool = False,
    progress: VacuumProgress | None = None,
    lite: bool = False,
    store_clock: Callable[[LogStore], int] = store_now_ms,
) -> VacuumResult:
    """Plan (and unless ``dry_run``, carry out) the deletion of unreferenced files older than the retention,
    judged from ``snap``, the table's latest snapshot.

    Ages (of files and of tombstones) are judged against the earlier of ``ctx``'s clock and the store's, which
    ``store_clock`` reads (:func:`~deltalog.table.store_clock.store_now_ms`: a probe file's modification time),
    so a process clock running ahead never makes a writer's uncommitted file look old.

    ``lite`` takes the candidates from the expired removes in the log instead of listing the table (see the
    module docstring for what it misses).

    ``retention`` defaults to ``delta.deletedFileRetentionDuration`` (1 week); a shorter one is an
    :class:`InvalidArgumentError` unless ``force``, because it can delete files that time travel within
    the table's promise, or a concurrent writer's uncommitted files, still need.

    A snapshot whose file list was rebuilt past an unreadable checkpoint is refused, dry run included
    (:func:`refuse_distrusted`): the plan is what a person or a script acts on, and ``force`` does not
    lift it.
    """
    source = f"{ctx.location}/{LOG_DIR}"
    refusal = gate(VACUUM, snap.protocol, snap.configuration, snap.schema_json, source, dry_run)
    refuse_distrusted(snap, "vacuum")
    table_ms = resolve_retention(
        None, snap.configuration, DELETED_FILE_RETENTION_KEY, properties.DEFAULT_DELETED_FILE_RETENTION
    )
    retention_ms = resolve_retention(
        retention, snap.configuration, DELETED_FILE_RETENTION_KEY, properties.DEFAULT_DELETED_FILE_RETENTION
    )
    if retention_ms < table_ms and not force:
        raise InvalidArgumentError(
            f"retention of {retention_ms} ms is shorter than the table's {DELETED_FILE_RETENTION_KEY} "
            f"({table_ms} ms): files that time travel or running writers still need could be deleted; "
            "pass force=True (--force) if that is intended"
        )
    now = _judged_now(ctx, store_clock, dry_run)
    store = ctx.store
    tick = progress or (lambda stage, done, total: None)
    partition_names = _partition_names(snap)
    keys = protected_keys(_references(snap, now - retention_ms), store.root, _root_aliases(store))
    if lite:
        listed = _lite_candidates(ctx, snap, now - retention_ms, tick)
    else:
        listed = list(_listing(store, partition_names, tick))
    plan = plan_vacuum(listed, keys, now, retention_ms, partition_names)
    if dry_run:
        return VacuumResult(plan, True, (), snap.version, lite, refusal)
    total = len(plan.deletions)
    tick("delete", 0, total)
    deleted = delete_in_order(store, [f.path for f in plan.deletions], "vacuum", lambda n: tick("delete", n, total))
    if deleted:
        log.info("vacuum of %s deleted %d files (%d bytes)", ctx.location, len(deleted), plan.total_bytes)
    return VacuumResult(plan, False, tuple(deleted), snap.version, lite)


def _judged_now(ctx: TableContext, store_clock: Callable[[LogStore], int], dry_run: bool) -> int:
    """The time file ages and tombstones are judged against: the earlier of this process's clock and the store's
    (:mod:`deltalog.core.file_age`), so a clock running ahead never makes a writer's uncommitted file look old.

    A dry run that cannot write the probe (a read-only credential) plans by the process clock alone and says
    so; a real vacuum stops there, before deleting anything.
    """
    now = ctx.now_ms()
    try:
        store_ms = store_clock(ctx.store)
    except (DeltaLogError, OSError) as exc:
        if not dry_run:
            raise
        log.warning(
            "vacuum dry run of %s: the store's clock is unknown (%s), so ages are judged by this process's clock "
            "alone, so the plan may list files a real vacuum keeps",
            ctx.location,
            exc,
        )
        return now
    if store_ms < now - _NOTABLE_SKEW_MS:
        log.info(
            "vacuum of %s: this clock is %d ms ahead of the store's, whose time judges ages",
            ctx.location,
            now - store_ms,
        )
    return age_clock(now, store_ms)


def _root_aliases(store: LogStore) -> tuple[str, ...]:
    """Other spellings of a local root: the same directory without symbolic links.

    A writer that resolved the links wrote absolute paths the listing (made through the links) shows under
    the root; such a file must still count as referenced.
    """
    if not store.capabilities.local:
        return ()
    root = store.root
    real = os.path.realpath(root)
    return (real,) if real != root else ()


def refuse_distrusted(snap: Snapshot, operation: str) -> None:
    """A :class:`CorruptLogError` if ``snap``'s file list came after skipping a damaged checkpoint.

    The older checkpoint or the commits it came from are probably right, but a log with one damaged
    checkpoint is a log nobody has looked at: a file list that is wrong by one live file would make
    ``operation`` delete that file. Deleting or rewriting the damaged checkpoint, or checkpointing the
    latest version once the table reads as expected, lifts the refusal.
    """
    skipped = snap.distrusted_checkpoints
    if not skipped:
        return
    first = f"{LOG_DIR}/{skipped[0]}"
    raise CorruptLogError(
        f"{operation} refused on {snap.context.location}: version {snap.version} was rebuilt without the unreadable "
        f"checkpoint {', '.join(skipped)}, so its file list cannot be trusted to protect live files; delete or "
        "repair that checkpoint, or write a new checkpoint once the table reads as expected",
        path=first,
    )


def _partition_names(snap: Snapshot) -> frozenset[str]:
    """Logical and physical partition column names: either may name a ``col=value`` directory."""
    logical = set(snap.partition_columns)
    return frozenset(logical | {snap.physical_names.get(c, c) for c in logical})


def _listing(store: LogStore, partition_names: frozenset[str], tick: VacuumProgress) -> Iterator[ListedFile]:
    """Every file under the root outside hidden trees: the root's own files, then its subdirectories walked
    ``read_concurrency`` at a time (one after another on a local disk), in order of name."""

    def skip(directory: str) -> bool:
        return is_hidden_path(directory, partition_names)

    top: list[str] = []

    def top_only(directory: str) -> bool:
        if not skip(directory):
            top.append(directory)
        return True  # the root's subdirectories are walked below, each on its own

    def walk(directory: str) -> list[FileInfo]:
        return list(store.walk(directory, skip=skip))

    n = 0
    root_files = list(store.walk("", skip=top_only))
    workers = max(1, min(store.capabilities.read_concurrency, len(top)))
    pool = ThreadPoolExecutor(workers) if workers > 1 else None
    try:
        subtrees = pool.map(walk, sorted(top)) if pool is not None else map(walk, sorted(top))
        for infos in itertools.chain([root_files], subtrees):
            for info in infos:
                n += 1
                if n % _LIST_TICK == 0:
                    tick("list", n, 0)
                yield ListedFile(info.name, info.size, info.mtime)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    tick("list", n, n)


def _lite_candidates(ctx: TableContext, snap: Snapshot, cutoff_ms: int, tick: VacuumProgress) -> list[ListedFile]:
    """The data and deletion-vector files of every remove deleted before ``cutoff_ms`` that the log still
    holds: in the commit files present up to ``snap``'s version (read in bulk) and among the snapshot's
    tombstones (a checkpoint's). Their time is the deletion time: a file removed before the cutoff was
    written before it too. A remove without a deletion time counts as deleted at 0, as in full mode. Change
    data files (``cdc`` actions) are candidates too, timed by their commit file: no add ever names them, so a
    full vacuum deletes them once they are older than the retention, and so does this."""
    store = ctx.store
    listed = log_files(store.list_range(f"{LOG_DIR}/", None))
    commits = {f"{LOG_DIR}/{p.name}": p.mtime for p in listed if p.kind is Kind.COMMIT and p.version <= snap.version}
    removes: list[tuple[FileRef, int, int]] = []
    for path, data in _read_present(store, list(commits)):
        for _, obj in objects(data, path):
            body = obj.get("remove")
            if isinstance(body, dict) and isinstance(body.get("path"), str):
                removes.append(_removed(body))
            cdc = obj.get("cdc")
            if isinstance(cdc, dict) and isinstance(cdc.get("path"), str):
                removes.append(_removed({**cdc, "deletionTimestamp": commits[path]}))
    tombstones = snap.tombstones()
    for row in tombstones.select(["path", "deletionTimestamp", "size", "deletionVector"]).to_pylist():
        removes.append(_removed(row))
    root, aliases = store.root, _root_aliases(store)
    found: dict[str, ListedFile] = {}
    for ref, when, size in removes:
        if when >= cutoff_ms:
            continue
        for i, key in enumerate(inside_files(ref, root, aliases)):
            found.setdefault(key, ListedFile(key, size if i == 0 else 0, when))
    tick("list", len(found), len(found))
    return sorted(found.values(), key=lambda f: f.path)


def _read_present(store: LogStore, paths: list[str]) -> list[tuple[str, bytes]]:
    """(path, bytes) of each commit file, in bulk; one that log cleanup deleted since the listing is left
    out (its removes are then what lite mode misses, as it misses any cleaned-up commit's)."""
    try:
        return list(zip(paths, read_many(store, paths), strict=True))
    except NotFoundError:
        out = []
        for path in paths:
            try:
                out.append((path, store.read(path)))
            except NotFoundError:
                log.info("lite vacuum: %s is gone (log cleanup); its removes are not candidates", path)
        return out


def _removed(body: Mapping[str, Any]) -> tuple[FileRef, int, int]:
    """A remove (a commit's JSON object or a tombstone row) as (reference, deletion time, size)."""
    dv = body.get("deletionVector")
    dv = dv if isinstance(dv, Mapping) else {}
    kind, where = dv.get("storageType"), dv.get("pathOrInlineDv")
    ref = FileRef(str(body["path"]), kind if isinstance(kind, str) else None, where if isinstance(where, str) else None)
    when, size = body.get("deletionTimestamp"), body.get("size")
    when = when if isinstance(when, int) and not isinstance(when, bool) else 0
    return ref, when, size if isinstance(size, int) and not isinstance(size, bool) else 0


def _references(snap: Snapshot, tombstone_cutoff_ms: int) -> Iterator[FileRef]:
    """Live adds, and tombstones deleted at or after the cutoff, with their deletion vectors.

    A tombstone without a deletion timestamp counts as deleted at 0, as in Delta Spark, whose checkpoints
    drop it the same way.
    """
    adds = snap.raw_files()
    yield from _refs(adds)
    tombstones = snap.tombstones()
    if tombstones.num_rows:
        ts = pc.fill_null(tombstones.column("deletionTimestamp"), 0)
        yield from _refs(tombstones.filter(pc.greater_equal(ts, tombstone_cutoff_ms)))


def _refs(table: pa.Table) -> Iterator[FileRef]:
    paths = table.column("path").to_pylist()
    dv = table.column("deletionVector")
    if dv.null_count == len(dv):
        for p in paths:
            yield FileRef(p)
        return
    kinds = pc.struct_field(dv, "storageType").to_pylist()
    where = pc.struct_field(dv, "pathOrInlineDv").to_pylist()
    valid = pc.is_valid(dv).to_pylist()
    for p, k, w, ok in zip(paths, kinds, where, valid, strict=True):
        yield FileRef(p, k if ok else None, w if ok else None)


__all__ = ["VacuumProgress", "VacuumResult", "refuse_distrusted", "vacuum"]
