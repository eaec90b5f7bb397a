"""Committing files a data operation wrote: the files belong to the commit, so a commit that certainly did not
land takes them away, and one that may have landed leaves them.

A refused commit (a conflict, a broken rule, a feature the table needs, a read version gone, every attempt lost
to other writers) wrote nothing that references the files, so they are deleted. After
:class:`~deltalog.errors.CommitStateUnknownError`, or any failure whose outcome the commit path could not tell
(a storage error while it checked), the commit may be in the table, and deleting its files would break it:
they stay, for VACUUM to judge later. An exactly-once batch refused because another run of it landed first is
done: the refusal becomes a skip.

A write that creates its table and loses version 0 to another creator is refused as Delta Spark refuses it
(``ProtocolChangedException``, "multiple writers are writing to an empty directory"): a
:class:`~deltalog.errors.ProtocolChangedError` naming version 0, its files deleted. It is not retried as an
append: the winner's table may differ from the one this write planned (schema, partitioning, properties), and
its files were written for that plan.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deltalog.core import actions as A
from deltalog.data.output import delete_files
from deltalog.dml.rules import Declared
from deltalog.errors import ProtocolChangedError, TableAlreadyExistsError
from deltalog.table.commit import NOT_LANDED, CommitResult
from deltalog.table.commit import skipped as skipped_result

if TYPE_CHECKING:
    from deltalog.table.commit import Transaction
    from deltalog.table.context import TableContext

logger = logging.getLogger(__name__)

#: a commit that declares nothing beyond the data writer's checks
NOTHING_DECLARED = Declared()

#: failures after which the commit certainly is not in the table
REFUSED = NOT_LANDED


def skipped(txn: Transaction, operation: str) -> CommitResult:
    """The result of ``txn``'s commit that was not needed (an exactly-once batch the table already holds, a
    delete that matched no row): nothing written."""
    return skipped_result(txn.txn_id, operation, txn.read_version, txn.isolation)


def discard(ctx: TableContext, written: Sequence[str]) -> None:
    """Delete files no commit references; what cannot be deleted is left for VACUUM, with a warning."""
    left = delete_files(ctx.store, written)
    if left:
        logger.warning(
            "%s: %d file(s) of a refused commit could not be deleted (VACUUM will): %s",
            ctx.location,
            len(left),
            left[:5],
        )


def commit_files(
    txn: Transaction,
    actions: Sequence[A.Action],
    written: Sequence[str],
    operation: str,
    parameters: Mapping[str, Any],
    metrics: Mapping[str, str] | None = None,
    declared: Declared = NOTHING_DECLARED,
    landed: Callable[[], bool] | None = None,
    user_metadata: str | None = None,
) -> CommitResult:
    """Commit ``actions`` in ``txn``; ``written`` are the store keys of the files they add (data, change and
    deletion-vector files), deleted when the commit is refused. An exactly-once transaction refused because
    its batch landed meanwhile returns a skipped result. ``user_metadata`` goes into ``commitInfo``."""
    try:
        return txn.commit(
            actions,
            operation=operation,
            operation_parameters=parameters,
            operation_metrics=metrics,
            user_metadata=user_metadata,
            **declared.as_kwargs(),
        )
    except (*REFUSED, TableAlreadyExistsError) as exc:
        discard(txn.context, written)
        if landed is not None and landed():
            return skipped(txn, operation)
        if isinstance(exc, TableAlreadyExistsError):
            raise ProtocolChangedError(
                f"{txn.context.location}: another writer created the table (version 0) while this write created "
                "it; several writers wrote to a location with no table at once. Nothing was committed and this "
                "write's files were deleted: write again (it appends to that table), or create the table first",
                winning_version=0,
            ) from None
        raise


__all__ = ["REFUSED", "commit_files", "discard", "skipped"]
