"""RESTORE: make an older version the table's current state, as one new commit, as Delta Spark does.

History is never rewritten. The commit removes the files live now but not at the target and re-adds
(``dataChange=true``, copied from the target's add actions with stats and deletion vectors) the files
live then but not now, and brings back the target's metadata and clustering, merged with what must not
go back in time (see :mod:`deltalog.core.restore_plan`): readers interpret old files through the
schema, partitioning and properties they were written under.

Refused before anything is written: a target that is not older than the latest version; one older than
``delta.deletedFileRetentionDuration`` (its files may be vacuumed, unless ``force``); one whose files are
gone from storage (unless ``ignore_missing_files``, which leaves those files out so peers can still read
the table); and a table deltalog cannot write. The transaction reads the whole table, so any concurrent
commit that adds or removes files conflicts instead of being silently undone or resurrected.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from deltalog.core import actions as A
from deltalog.core import properties
from deltalog.core import restore_plan as plan
from deltalog.core.cleanup_plan import resolve_retention
from deltalog.core.feature_gate import RESTORE, check_operation
from deltalog.core.paths import LOG_DIR
from deltalog.core.result_repr import result_repr
from deltalog.core.timetravel import format_ms, to_epoch_ms
from deltalog.core.vacuum_plan import FileRef, inside_files
from deltalog.errors import InvalidArgumentError, RestoreFilesMissingError
from deltalog.storage.base import LogStore
from deltalog.table import history, listing
from deltalog.table.context import TableContext
from deltalog.table.snapshot import Snapshot
from deltalog.table.transaction import CommitResult, Transaction

OPERATION = "RESTORE"


@dataclass(frozen=True)
class RestoreResult:
    """The RESTORE commit and what it changed; on a dry run, what it would commit (nothing was written)."""

    version: int | None  # the version the RESTORE committed (None on a dry run)
    restored_version: int  # the version whose files are now live again
    read_version: int  # the latest version when the restore started
    num_removed: int
    num_restored: int
    removed_bytes: int
    restored_bytes: int
    commit: CommitResult | None  # None on a dry run
    metrics: Mapping[str, str] = field(default_factory=dict)  # commitInfo.operationMetrics, Spark's names
    metadata_restored: bool = False  # the commit carries a metaData action (the target's differs from today's)
    protocol_upgraded: bool = False  # the commit carries a protocol action (the target needed more)
    skipped_missing: tuple[str, ...] = ()  # files left out under ignore_missing_files: gone from storage
    dry_run: bool = False  # planned only: the commit was not made
    actions: tuple[A.Action, ...] = ()  # what the commit holds (or, on a dry run, would hold)

    @property
    def paths(self) -> tuple[str, ...]:
        """The data files the RESTORE commit added back, then those it removed, as the log names them."""
        added = [a.path for a in self.actions if isinstance(a, A.Add)]
        removed = [a.path for a in self.actions if isinstance(a, A.Remove)]
        return (*added, *removed)

    @property
    def num_files(self) -> int:
        """Files restored plus files removed."""
        return self.num_restored + self.num_removed

    @property
    def bytes(self) -> int:
        """Bytes restored plus bytes removed."""
        return self.restored_bytes + self.removed_bytes

    def __repr__(self) -> str:
        """Versions and counts; the actions are on :attr:`actions`."""
        return result_repr(
            "RestoreResult",
            "dry_run" if self.dry_run else "",
            version=self.version,
            restored_version=self.restored_version,
            restored=self.num_restored,
            removed=self.num_removed,
            bytes=self.bytes,
            skipped_missing=len(self.skipped_missing) or None,
        )


def missing_files(store: LogStore, adds: Iterable[A.Add]) -> list[str]:
    """Store-relative data and DV files of ``adds`` that the store no longer has (vacuumed, lost).

    Files outside the table root cannot be checked through the table's store and are not reported; a path
    that climbs out of the root through ``..`` is refused (:class:`~deltalog.errors.PathOutsideRootError`)
    rather than probed.
    """
    root = store.root
    missing: list[str] = []
    for a in adds:
        dv = a.deletion_vector
        ref = FileRef(a.path, dv.storage_type if dv else None, dv.path_or_inline_dv if dv else None)
        for key in inside_files(ref, root, strict=True):
            if key not in missing and not store.exists(key):
                missing.append(key)
    return missing


def _commit_time(ctx: TableContext, latest: history.Latest, version: int) -> int:
    """The version's commit time as time travel sees it; a version whose commit file is gone (only its
    checkpoint is left) is as old as that checkpoint, which is what Delta Spark's snapshot timestamp says."""
    for v, ts in history.commit_timeline(ctx, latest):
        if v == version:
            return ts
    checkpoint = listing.segment(ctx, version).checkpoint
    assert checkpoint is not None  # a reconstructable version without its commit has a checkpoint
    return checkpoint.files[0].mtime


def _check_retention(
    ctx: TableContext, latest: history.Latest, configuration: Mapping[str, str], target_version: int
) -> None:
    """Refuse a target older than the deleted-file retention: VACUUM may have deleted its files, and
    Delta Spark's time travel refuses it for the same reason."""
    key = "delta.deletedFileRetentionDuration"
    retention_ms = resolve_retention(None, configuration, key, properties.DEFAULT_DELETED_FILE_RETENTION)
    committed = _commit_time(ctx, latest, target_version)
    now = ctx.now_ms()
    if committed < now - retention_ms:
        raise InvalidArgumentError(
            f"cannot restore {ctx.location} to version {target_version}: it was committed at {format_ms(committed)}, "
            f"more than {key} ({retention_ms} ms) before now ({format_ms(now)}), so VACUUM may have deleted its "
            "files; pass force=True (--force) to restore it anyway"
        )


def _present(ctx: TableContext, adds: Iterable[A.Add], target_version: int, ignore_missing: bool) -> list[A.Add]:
    """``adds`` whose data and DV files the store still has; a gone file is refused unless ``ignore_missing``,
    which leaves it out: committing it would make the table unreadable for every engine."""
    adds = list(adds)
    gone = missing_files(ctx.store, adds)
    if not gone:
        return adds
    if not ignore_missing:
        shown = ", ".join(gone[:5]) + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
        raise RestoreFilesMissingError(
            f"cannot restore {ctx.location} to version {target_version}: {len(gone)} file(s) it needs are "
            f"gone from storage (vacuumed?): {shown}; pass ignore_missing_files=True (--ignore-missing-files) "
            "to restore without them",
            version=target_version,
            paths=tuple(gone),
        )
    return [a for a in adds if not missing_files(ctx.store, [a])]


def resolve_target(ctx: TableContext, txn: Transaction, version: int | None, timestamp: Any) -> int:
    """The version a restore by ``txn`` (a transaction on the latest snapshot that nothing else has used)
    goes back to: ``version``, or the version as of ``timestamp`` (exactly one of them).

    The first half of a restore, before its target is loaded: the table must pass the writer-feature gate for
    a restore (:data:`~deltalog.core.feature_gate.RESTORE`; its commit is held to the same duties), the transaction
    reads the whole table (so any concurrent file change conflicts with the restore), and the target must be
    older than the latest version (:class:`InvalidArgumentError`).
    """
    check_arguments(version, timestamp)
    current = txn.snapshot
    source = f"{ctx.location}/{LOG_DIR} (version {current.version})"
    check_operation(RESTORE, current.protocol, current.configuration, current.schema_json, source)
    txn.read()  # the whole table: any concurrent file change conflicts
    if version is not None:
        target = version
    else:
        target = history.version_at(ctx, lambda: current, timestamp, allow_after_latest=True)
    if target >= current.version:
        raise InvalidArgumentError(
            f"cannot restore to version {target}: a restore target must be older than the latest "
            f"version, {current.version}"
        )
    return target


def restore(
    ctx: TableContext,
    txn: Transaction,
    target: Snapshot,
    *,
    version: int | None = None,
    timestamp: Any = None,
    force: bool = False,
    ignore_missing_files: bool = False,
    dry_run: bool = False,
) -> RestoreResult:
    """Make ``target`` current again as the commit of ``txn``, whose target version :func:`resolve_target`
    chose (``version`` and ``timestamp`` are what the caller asked for, recorded in the commit). A
    ``dry_run`` checks and plans the same, then aborts ``txn``: the result says what the commit would hold.

    Refusals, all before anything is written: :class:`InvalidArgumentError` for a bad target (outside
    ``delta.deletedFileRetentionDuration`` unless ``force``, or across a column mapping mode change);
    :class:`~deltalog.errors.RestoreFilesMissingError` when a file to re-add is gone, unless
    ``ignore_missing_files`` (then those files are left out). :func:`resolve_target` refuses the rest (a
    target not older than the latest version, a table deltalog cannot write), and loading the target a
    version the log cannot reconstruct (:class:`~deltalog.errors.VersionNotFoundError`).
    """
    current = txn.snapshot
    target_version = target.version

    def latest() -> Snapshot:
        return current

    if not force:
        _check_retention(ctx, latest, current.configuration, target_version)
    metadata = plan.restored_metadata(target.metadata, current.metadata, target_version)
    protocol = plan.merged_protocol(target.protocol, current.protocol)
    root = ctx.store.root
    changes = plan.file_changes(current.add_actions(), target.add_actions(), root)
    present = _present(ctx, changes.to_add, target_version, ignore_missing_files)
    skipped = [a for a in changes.to_add if a not in present]
    changes = plan.FileChanges(changes.to_remove, tuple(present))
    after = list(target.add_actions())
    metrics = plan.operation_metrics(
        changes, len(after) - len(skipped), sum(a.size for a in after) - sum(a.size for a in skipped)
    )
    actions: list[A.Action] = []
    if not plan.same_protocol(protocol, current.protocol):
        actions.append(protocol)
    if not plan.same_metadata(metadata, current.metadata):
        actions.append(metadata)
    actions += plan.restored_domains(target.domain_metadata, target.protocol, current.domain_metadata)
    actions += plan.restore_actions(changes, ctx.now_ms())
    params: dict[str, Any] = {
        "version": version,
        "timestamp": None if timestamp is None else format_ms(to_epoch_ms(timestamp)),
    }
    if dry_run:
        txn.abort()
        result = None
    else:
        result = txn.commit(
            actions, operation=OPERATION, operation_parameters=params, operation_metrics=metrics, gate=RESTORE
        )
        assert result.version is not None
    committed = result.actions if result is not None else tuple(actions)
    return RestoreResult(
        version=result.version if result is not None else None,
        restored_version=target_version,
        read_version=current.version,
        num_removed=len(changes.to_remove),
        num_restored=len(changes.to_add),
        removed_bytes=sum(a.size for a in changes.to_remove),
        restored_bytes=sum(a.size for a in changes.to_add),
        commit=result,
        metrics=metrics,
        metadata_restored=any(isinstance(a, A.Metadata) for a in actions),
        protocol_upgraded=any(isinstance(a, A.Protocol) for a in actions),
        skipped_missing=tuple(a.path for a in skipped),
        dry_run=dry_run,
        actions=tuple(committed),
    )


def check_arguments(version: int | None, timestamp: Any) -> None:
    """Exactly one of ``version`` (a non-negative integer) and ``timestamp``; refused before any work."""
    if (version is None) == (timestamp is None):
        raise InvalidArgumentError("restore needs exactly one of version or timestamp")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 0):
        raise InvalidArgumentError(f"version must be a non-negative integer, not {version!r}")


__all__ = ["OPERATION", "RestoreResult", "check_arguments", "missing_files", "resolve_target", "restore"]
