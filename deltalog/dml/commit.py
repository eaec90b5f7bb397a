"""Committing files a data operation wrote: the files belong to the commit, so a commit that certainly did not
land takes them away, and one that may have landed leaves them.

A refused commit (a conflict, a broken rule, a feature the table needs, a read version gone, every attempt lost
to other writers) wrote nothing that references the files, so they are deleted. After
:class:`~deltalog.errors.CommitStateUnknownError`, or any failure whose outcome the commit path could not tell
(a storage error while it checked), the commit may be in the table, and deleting its files would break it:
they stay, for VACUUM to judge later. An exactly-once batch refused because another run of it landed first is
done: the refusal becomes a skip.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deltalog import CommitResult
from deltalog.core import actions as A
from deltalog.data.output import delete_files
from deltalog.dml.tables import landed
from deltalog.errors import (
    CommitNotReachableError,
    ConcurrentModificationError,
    InvalidCommitError,
    MaxCommitAttemptsError,
    ProtocolError,
)

if TYPE_CHECKING:
    from deltalog import DeltaLog, Transaction

logger = logging.getLogger(__name__)

#: failures after which the commit certainly is not in the table
REFUSED = (
    ConcurrentModificationError,
    InvalidCommitError,
    ProtocolError,
    MaxCommitAttemptsError,
    CommitNotReachableError,
)


def skipped(txn: Transaction, operation: str) -> CommitResult:
    """The result of a commit that was not needed: an exactly-once batch the table already holds."""
    nothing: tuple[int, ...] = ()
    return CommitResult(None, 0, nothing, txn.txn_id, operation, (), txn.read_version, txn.isolation, skipped=True)


def discard(log: DeltaLog, written: Sequence[str]) -> None:
    """Delete files no commit references; what cannot be deleted is left for VACUUM, with a warning."""
    left = delete_files(log.store, written)
    if left:
        logger.warning(
            "%s: %d file(s) of a refused commit could not be deleted (VACUUM will): %s",
            log.location,
            len(left),
            left[:5],
        )


def commit_files(
    log: DeltaLog,
    txn: Transaction,
    actions: Sequence[A.Action],
    written: Sequence[str],
    operation: str,
    parameters: Mapping[str, Any],
    metrics: Mapping[str, str] | None = None,
) -> CommitResult:
    """Commit ``actions`` in ``txn``; ``written`` are the store keys of the files they add (data, change and
    deletion-vector files), deleted when the commit is refused. An exactly-once transaction refused because
    its batch landed meanwhile returns a skipped result."""
    try:
        return txn.commit(actions, operation=operation, operation_parameters=parameters, operation_metrics=metrics)
    except REFUSED:
        discard(log, written)
        if landed(log, txn.app_id, txn.app_target):
            return skipped(txn, operation)
        raise


__all__ = ["REFUSED", "commit_files", "discard", "skipped"]
