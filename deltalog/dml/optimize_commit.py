"""Committing OPTIMIZE's rewritten bins: removes and adds with ``dataChange: false``, beside running writers.

A batch of bins is one commit: a ``remove`` (``dataChange: false``, carrying the file's live deletion vector and
row-tracking fields) of every file the bins rewrote and an ``add`` (``dataChange: false``) of every new file. It
goes through the one commit path (:meth:`~deltalog.table.commit.transaction.Transaction.commit`), gated as a
rearrangement (its data writer kept the row ids where row tracking is enabled), so every feature obligation applies.

Concurrency, as Delta Spark's ``OptimizeTableCommand`` (facts only): the commit changes no data, so it runs at
SnapshotIsolation and concurrent appends never conflict with it; the transaction records as read only the
files it rewrote, not the partitions, so a concurrent delete of *other* files does not conflict either. A
winner that removed a rewritten file (a delete, or a new deletion vector on it) does: the commit loop raises
``ConcurrentDeleteReadError``/``ConcurrentDeleteDeleteError``. Then, as ``commitAndRetry`` does, a new
transaction re-checks that every rewritten ``(path, DV id)`` is still live at the winner's version and the
table's shape (schema, partitioning, column mapping, row tracking, clustering) is unchanged, and commits again;
only otherwise does the run fail, deleting the files of the batch. Batches after the first start from the
latest version and make the same check first. Files of a refused commit are deleted; after an unknown outcome
they stay (the commit may have landed), for VACUUM to judge.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from deltalog.core import actions as A
from deltalog.core import optimize_plan
from deltalog.core.files.pathkeys import file_key
from deltalog.data.locate import resolve
from deltalog.dml.commit import discard
from deltalog.dml.optimize_job import Job, Shape
from deltalog.errors import (
    CommitStateUnknownError,
    ConcurrentDeleteReadError,
    ConcurrentModificationError,
    MaxCommitAttemptsError,
    MetadataChangedError,
)
from deltalog.table.commit import CommitResult

if TYPE_CHECKING:
    from deltalog.table.commit import Transaction
    from deltalog.table.snapshot import Snapshot

log = logging.getLogger(__name__)

#: re-checked retries after conflicts, per batch (each conflict means another writer committed)
MAX_CONFLICT_RETRIES = 10


@dataclass(frozen=True)
class Rewritten:
    """One bin done: the files it rewrote and the adds of the files it wrote."""

    bin: optimize_plan.Bin
    adds: tuple[A.Add, ...]


@dataclass
class BatchTotals:
    """What the committed batches did, summed."""

    files_added: int = 0
    files_removed: int = 0
    bytes_added: int = 0
    bytes_removed: int = 0
    dvs_removed: int = 0
    batches: int = 0
    versions: list[int] = field(default_factory=list)
    partitions: set[tuple[tuple[str, str | None], ...]] = field(default_factory=set)


def _key(add: A.Add, root: str) -> str:
    return file_key(add.path, add.deletion_vector.unique_id if add.deletion_vector else None, root)


def stale_files(snap: Snapshot, files: Sequence[A.Add]) -> list[str]:
    """The rewritten files not live, with the same deletion vector, in ``snap``."""
    root = snap.context.store.root
    live = {_key(a, root) for a in snap.add_actions()}
    return [f.path for f in files if _key(f, root) not in live]


def _new_add(add: A.Add, job: Job, cube: str) -> A.Add:
    if not job.clustered_by:
        return replace(add, data_change=False)
    tags = {
        **dict(add.tags or {}),
        optimize_plan.ZCUBE_ID: cube,
        optimize_plan.ZCUBE_ZORDER_BY: optimize_plan.cube_columns(job.clustered_by),
        optimize_plan.ZCUBE_ZORDER_CURVE: job.layout.curve,
    }
    return replace(add, data_change=False, clustering_provider=optimize_plan.CLUSTERING_PROVIDER, tags=tags)


class BatchCommitter:
    """Commits finished bins in batches; holds the files of bins not committed yet (deleted by :meth:`discard`)."""

    def __init__(self, job: Job, first: Transaction, start_transaction: Callable[[], Transaction]) -> None:
        self.job = job
        self.context = first.context
        self._first: Transaction | None = first
        self._start = start_transaction
        self._pending: list[Rewritten] = []
        self.totals = BatchTotals()

    @property
    def pending(self) -> int:
        return len(self._pending)

    def add(self, done: Rewritten) -> None:
        self._pending.append(done)

    def _keys(self, batch: Sequence[Rewritten]) -> list[str]:
        store = self.context.store
        return [resolve(store, a.path) for done in batch for a in done.adds]

    def drop(self, done: Rewritten) -> None:
        """Delete the files of a bin that will not be committed."""
        keys = self._keys([done])
        if keys:
            discard(self.context, keys)

    def discard(self) -> None:
        """Give the run up: abort the unused transaction and delete the files of bins not committed."""
        if self._first is not None:
            self._first.abort()
            self._first = None
        keys = self._keys(self._pending)
        self._pending.clear()
        if keys:
            discard(self.context, keys)

    # ------------------------------------------------------------------------------------------ committing
    def commit(self) -> CommitResult | None:
        """Commit every pending bin as one version (None when none is pending)."""
        batch, self._pending = self._pending, []
        if not batch:
            return None
        rewritten = [f for done in batch for f in done.bin.files]
        now = self.context.now_ms()
        removes = [f.remove(now, data_change=False) for f in rewritten]
        adds = self._cubes(batch)
        written = self._keys(batch)
        metrics = _metrics(rewritten, adds)
        txn, self._first = self._first, None
        try:
            if txn is None:
                txn = self._fresh(rewritten)
            result = self._commit_with_retries(txn, [*removes, *adds], rewritten, metrics)
        except CommitStateUnknownError:
            raise  # it may have landed: its files stay
        except BaseException:
            discard(self.context, written)
            raise
        t = self.totals
        t.files_added += len(adds)
        t.files_removed += len(rewritten)
        t.bytes_added += sum(a.size for a in adds)
        t.bytes_removed += sum(f.size for f in rewritten)
        t.dvs_removed += sum(1 for f in rewritten if f.deletion_vector is not None)
        t.batches += 1
        t.partitions.update(optimize_plan.partition_key(done.bin.files[0]) for done in batch)
        if result.version is not None:
            t.versions.append(result.version)
        return result

    def _cubes(self, batch: Sequence[Rewritten]) -> list[A.Add]:
        """The new adds, ``dataChange: false``; when clustering, each bin one cube (its own ``ZCUBE_ID``)."""
        out = []
        for done in batch:
            cube = str(uuid.uuid4())
            out += [_new_add(a, self.job, cube) for a in done.adds]
        return out

    def _fresh(self, rewritten: Sequence[A.Add]) -> Transaction:
        """A transaction on the latest version, refused unless the rewritten files are still live there."""
        txn = self._start()
        problem = self._recheck(txn.snapshot, rewritten)
        if problem is not None:
            txn.abort()
            raise problem
        return txn

    def _recheck(self, snap: Snapshot, rewritten: Sequence[A.Add]) -> ConcurrentModificationError | None:
        gone = stale_files(snap, rewritten)
        if gone:
            return ConcurrentDeleteReadError(
                f"{self.context.location}: {len(gone)} file(s) OPTIMIZE rewrote were removed or given a new deletion "
                f"vector by version {snap.version} or before (first: {gone[0]}); its files were deleted",
                winning_version=snap.version,
                conflicting_file=gone[0],
            )
        if Shape.of(snap) != self.job.shape:
            return MetadataChangedError(
                f"{self.context.location}: the table's schema, partitioning, column mapping, row tracking or "
                f"clustering changed by version {snap.version}; the rewritten files no longer fit it",
                winning_version=snap.version,
            )
        return None

    def _commit_with_retries(
        self, txn: Transaction, actions: list[A.Action], rewritten: Sequence[A.Add], metrics: dict[str, str]
    ) -> CommitResult:
        paths = [f.path for f in rewritten]
        for _ in range(MAX_CONFLICT_RETRIES + 1):
            txn.read_files(paths)
            try:
                return txn.commit(
                    actions,
                    operation=self.job.operation,
                    operation_parameters=self.job.parameters,
                    operation_metrics=metrics,
                    kind=self.job.kind,
                    copies_rows=True,
                )
            except ConcurrentModificationError as exc:
                retry = self._start()
                if self._recheck(retry.snapshot, rewritten) is not None:
                    retry.abort()
                    raise
                log.info(
                    "%s: %s conflicted with version %s, but every file it rewrote is still live: committing again",
                    self.context.location,
                    self.job.operation,
                    exc.winning_version,
                )
                txn = retry
        raise MaxCommitAttemptsError(
            f"{self.context.location}: {self.job.operation} conflicted {MAX_CONFLICT_RETRIES + 1} times in a row"
        )


def _metrics(rewritten: Sequence[A.Add], adds: Sequence[A.Add]) -> dict[str, str]:
    """Delta Spark's ``DeltaOperationMetrics.OPTIMIZE`` for one commit."""
    values = {
        "numAddedFiles": len(adds),
        "numRemovedFiles": len(rewritten),
        "numAddedBytes": sum(a.size for a in adds),
        "numRemovedBytes": sum(f.size for f in rewritten),
        **optimize_plan.size_metrics(a.size for a in adds),
        "numDeletionVectorsRemoved": sum(1 for f in rewritten if f.deletion_vector is not None),
    }
    return {k: str(v) for k, v in values.items()}


__all__ = ["MAX_CONFLICT_RETRIES", "BatchCommitter", "BatchTotals", "Rewritten", "stale_files"]
