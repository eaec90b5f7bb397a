"""Stage 6, committed: what a landed commit hands on.

:class:`CommitResult` is what the caller of :meth:`~deltalog.table.commit.transaction.Transaction.commit` gets.
:class:`Committed` is what whoever started the transaction is handed once (the facade's post-commit policy:
advancing its cached snapshot by the commits, hooks, automatic checkpoints): the version read, the commits after
it in order, and the result. It carries everything as values; nothing calls back into the transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from deltalog.core import actions as A
from deltalog.core.result_repr import result_repr
from deltalog.core.state import CommitData
from deltalog.errors import (
    CommitNotReachableError,
    ConcurrentModificationError,
    InvalidCommitError,
    MaxCommitAttemptsError,
    ProtocolError,
)

if TYPE_CHECKING:
    from deltalog.table.commit.new_table import NewTable
    from deltalog.table.snapshot import Snapshot


@dataclass(frozen=True)
class CommitResult:
    """What a commit did. ``version`` is None only when an exactly-once commit was skipped. ``metrics`` are the
    ``operationMetrics`` its commitInfo records (Delta Spark's names for a MERGE, UPDATE or DELETE)."""

    version: int | None
    attempts: int
    winners: tuple[int, ...]
    txn_id: str
    operation: str
    actions: tuple[A.Action, ...]
    read_version: int
    isolation_level: str
    skipped: bool = False
    elapsed_s: float = 0.0
    recovered_unknown_outcome: bool = False
    metrics: Mapping[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        """Version, operation and counts; the actions are on :attr:`actions`."""
        if self.skipped:
            return result_repr("CommitResult", "skipped", operation=self.operation, read_version=self.read_version)
        adds = sum(1 for a in self.actions if isinstance(a, A.Add))
        removes = sum(1 for a in self.actions if isinstance(a, A.Remove))
        return result_repr(
            "CommitResult",
            version=self.version,
            operation=self.operation,
            adds=adds,
            removes=removes,
            actions=len(self.actions),
            attempts=self.attempts,
            winners=self.winners or None,
        )


@dataclass(frozen=True)
class Committed:
    """What a transaction hands whoever started it (its ``on_committed``) after a commit landed."""

    #: what the transaction read: a snapshot, or the new table for the commit that created it
    read: Snapshot | NewTable
    #: the versions after it, in order: the winners the commit moved past, then ours
    commits: tuple[CommitData, ...]
    result: CommitResult
    #: the writer's clock just before our commit was sent (what the next commit's ``Young`` anchors on)
    sent_ms: int | None = None


#: the failures after which a commit certainly is not in the table (files written for it may go); after any other
#: (:class:`~deltalog.errors.CommitStateUnknownError`) it may have landed
NOT_LANDED = (
    ConcurrentModificationError,
    InvalidCommitError,
    ProtocolError,
    MaxCommitAttemptsError,
    CommitNotReachableError,
)


def skipped(txn_id: str, operation: str, read_version: int, isolation: str) -> CommitResult:
    """The result of a commit that was not needed (an exactly-once batch the table already holds, a delete
    that matched no row): nothing written."""
    return CommitResult(
        version=None,
        attempts=0,
        winners=(),
        txn_id=txn_id,
        operation=operation,
        actions=(),
        read_version=read_version,
        isolation_level=isolation,
        skipped=True,
    )


__all__ = ["NOT_LANDED", "CommitResult", "Committed", "skipped"]
