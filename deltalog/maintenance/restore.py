"""RESTORE: make an older version's set of files the table's current state, as one new commit.

History is never rewritten. The commit removes the files live now but not at the target and re-adds
(``dataChange=true``, copied from the target's add actions with stats and deletion vectors) the files
live then but not now. Files are identified as replay identifies them: path decoded once and resolved
against the root, plus the deletion vector's unique id, so a file whose deletion vector changed since the
target is removed with its new DV and re-added with its old one.

The transaction reads the whole table, so any concurrent commit that adds or removes files conflicts
instead of being silently undone or resurrected.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog.core import actions as A
from deltalog.core.pathkeys import canonical_path
from deltalog.core.timetravel import format_ms, to_epoch_ms
from deltalog.core.vacuum_plan import FileRef, inside_files
from deltalog.errors import InvalidArgumentError

if TYPE_CHECKING:
    from deltalog.log import DeltaLog
    from deltalog.transaction import CommitResult

OPERATION = "RESTORE"


@dataclass(frozen=True)
class RestoreResult:
    """The RESTORE commit and what it changed."""

    version: int  # the version the RESTORE committed
    restored_version: int  # the version whose files are now live again
    read_version: int  # the latest version when the restore started
    num_removed: int
    num_restored: int
    removed_bytes: int
    restored_bytes: int
    commit: CommitResult


def _key(add: A.Add, root: str) -> str:
    dv = add.deletion_vector
    return canonical_path(add.path, root) + ("\x00" + dv.unique_id if dv is not None else "")


def missing_files(log_: DeltaLog, adds: Iterable[A.Add]) -> list[str]:
    """Store-relative data and DV files of ``adds`` that the store no longer has (vacuumed, lost).

    Files outside the table root cannot be checked through the table's store and are not reported; a path
    that climbs out of the root through ``..`` is refused (:class:`~deltalog.errors.PathOutsideRootError`)
    rather than probed.
    """
    root = log_.store.root
    missing: list[str] = []
    for a in adds:
        dv = a.deletion_vector
        ref = FileRef(a.path, dv.storage_type if dv else None, dv.path_or_inline_dv if dv else None)
        for key in inside_files(ref, root, strict=True):
            if key not in missing and not log_.store.exists(key):
                missing.append(key)
    return missing


def restore(
    log_: DeltaLog,
    version: int | None = None,
    timestamp: Any = None,
    check_files: bool = True,
) -> RestoreResult:
    """Restore the table to ``version`` or to the version as of ``timestamp`` (exactly one of them).

    Raises :class:`InvalidArgumentError` for a bad target and, with ``check_files`` (the default), when a
    file to re-add is gone from storage, because committing it would make the table unreadable. The
    target must be reconstructable (:class:`~deltalog.errors.VersionNotFoundError` otherwise).
    """
    if (version is None) == (timestamp is None):
        raise InvalidArgumentError("restore needs exactly one of version or timestamp")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 0):
        raise InvalidArgumentError(f"version must be a non-negative integer, not {version!r}")
    txn = log_.start_transaction()
    current = txn.snapshot
    txn.read()  # the whole table: any concurrent file change conflicts
    target_version = version if version is not None else log_.version_at(timestamp)
    if target_version > current.version:
        raise InvalidArgumentError(
            f"cannot restore to version {target_version}: the latest version is {current.version}"
        )
    target = log_.snapshot(version=target_version)
    root = log_.store.root
    now_adds = {_key(a, root): a for a in current.add_actions()}
    then_adds = {_key(a, root): a for a in target.add_actions()}
    to_remove = [a for k, a in now_adds.items() if k not in then_adds]
    to_add = [a for k, a in then_adds.items() if k not in now_adds]
    if check_files:
        gone = missing_files(log_, to_add)
        if gone:
            shown = ", ".join(gone[:5]) + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
            raise InvalidArgumentError(
                f"cannot restore {log_.location} to version {target_version}: {len(gone)} file(s) it needs are "
                f"gone from storage (vacuumed?): {shown}; pass check_files=False (--no-check-files) to commit anyway"
            )
    now = log_.now_ms()
    actions: list[A.Action] = [a.remove(now, data_change=True) for a in to_remove]
    actions += [dataclasses.replace(a, data_change=True) for a in to_add]
    params: dict[str, Any] = {
        "version": target_version,
        "timestamp": None if timestamp is None else format_ms(to_epoch_ms(timestamp)),
    }
    result = txn.commit(actions, operation=OPERATION, operation_parameters=params)
    assert result.version is not None
    return RestoreResult(
        version=result.version,
        restored_version=target_version,
        read_version=current.version,
        num_removed=len(to_remove),
        num_restored=len(to_add),
        removed_bytes=sum(a.size for a in to_remove),
        restored_bytes=sum(a.size for a in to_add),
        commit=result,
    )


__all__ = ["OPERATION", "RestoreResult", "missing_files", "restore"]
