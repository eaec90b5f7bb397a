"""VACUUM with IO: collect what the log references, walk the table root, plan, delete.

The rules live in :mod:`deltalog.core.vacuum_plan`; this module gathers its inputs from the latest
snapshot (live adds and tombstones, with their deletion vectors) and from :meth:`LogStore.walk`, which
prunes hidden trees so ``_delta_log`` is never even listed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.core import properties
from deltalog.core.cleanup_plan import Retention, check_maintainable, resolve_retention
from deltalog.core.paths import LOG_DIR
from deltalog.core.vacuum_plan import (
    FileRef,
    ListedFile,
    VacuumPlan,
    is_hidden_path,
    plan_vacuum,
    protected_keys,
)
from deltalog.errors import CorruptLogError, InvalidArgumentError
from deltalog.maintenance.deletion import delete_in_order
from deltalog.storage.base import LogStore
from deltalog.table.context import TableContext
from deltalog.table.snapshot import Snapshot

log = logging.getLogger(__name__)

#: ``progress(stage, done, total)``: stage "list" (total 0: unknown while listing) then "delete"
VacuumProgress = Callable[[str, int, int], None]
DELETED_FILE_RETENTION_KEY = "delta.deletedFileRetentionDuration"
_LIST_TICK = 1000


@dataclass(frozen=True)
class VacuumResult:
    """A VACUUM's plan and the store-relative paths actually deleted (nothing on a dry run)."""

    plan: VacuumPlan
    dry_run: bool
    deleted: tuple[str, ...]
    version: int  # the snapshot whose references protected files

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


def vacuum(
    ctx: TableContext,
    snap: Snapshot,
    retention: Retention | None = None,
    dry_run: bool = True,
    force: bool = False,
    progress: VacuumProgress | None = None,
) -> VacuumResult:
    """Plan (and unless ``dry_run``, carry out) the deletion of unreferenced files older than the retention,
    judged from ``snap``, the table's latest snapshot.

    ``retention`` defaults to ``delta.deletedFileRetentionDuration`` (1 week); a shorter one is an
    :class:`InvalidArgumentError` unless ``force``, because it can delete files that time travel within
    the table's promise, or a concurrent writer's uncommitted files, still need.

    A snapshot whose file list was rebuilt past an unreadable checkpoint is refused, dry run included
    (:func:`refuse_distrusted`): the plan is what a person or a script acts on, and ``force`` does not
    lift it.
    """
    check_maintainable(snap.protocol, f"{ctx.location}/{LOG_DIR}")
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
    now = ctx.now_ms()
    store = ctx.store
    tick = progress or (lambda stage, done, total: None)
    partition_names = _partition_names(snap)
    keys = protected_keys(_references(snap, now - retention_ms), store.root, _root_aliases(store))
    listed = list(_listing(store, partition_names, tick))
    plan = plan_vacuum(listed, keys, now, retention_ms, partition_names)
    if dry_run:
        return VacuumResult(plan, True, (), snap.version)
    total = len(plan.deletions)
    tick("delete", 0, total)
    deleted = delete_in_order(store, [f.path for f in plan.deletions], "vacuum", lambda n: tick("delete", n, total))
    if deleted:
        log.info("vacuum of %s deleted %d files (%d bytes)", ctx.location, len(deleted), plan.total_bytes)
    return VacuumResult(plan, False, tuple(deleted), snap.version)


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
    def skip(directory: str) -> bool:
        return is_hidden_path(directory, partition_names)

    n = 0
    for info in store.walk("", skip=skip):
        n += 1
        if n % _LIST_TICK == 0:
            tick("list", n, 0)
        yield ListedFile(info.name, info.size, info.mtime)
    tick("list", n, n)


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
