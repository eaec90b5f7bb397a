"""OPTIMIZE and REORG TABLE ... APPLY (PURGE): fewer, larger files with the same rows, beside running writers.

One run: start a transaction; decide and check the job on its snapshot (:mod:`deltalog.dml.optimize_job`: mode,
sizes, columns, features); select the files of the partitions ``where`` names (:mod:`deltalog.dml.partition_where`,
the one place a partition predicate becomes files); plan the bins from the log alone
(:mod:`deltalog.core.optimize_plan`); rewrite the bins on ``max_concurrent_tasks`` threads, each bin streaming its
files through the one data writer (:mod:`deltalog.data.rearrange`); commit them with ``dataChange: false`` in
batches (:mod:`deltalog.dml.optimize_commit`: a batch whenever ``min_commit_interval`` has passed since the
last, else one commit at the end, so a failure part way loses at most a batch of work).

Memory: at most ``max_concurrent_tasks`` bins are rewritten at once; a compaction bin streams (a few files read
ahead, one row group buffered per writer), a Z-order or clustering bin holds its rows to sort them.

A dry run plans and reports, writing nothing. A run that finds nothing to rewrite commits nothing (``version``
None). Any failure deletes the files of bins not committed and leaves committed batches in place.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from deltalog.core import optimize_plan
from deltalog.data.read import DataFile
from deltalog.data.rearrange import READERS, rewrite
from deltalog.data.target import positive
from deltalog.dml.optimize_commit import BatchCommitter, Rewritten
from deltalog.dml.optimize_job import OPTIMIZE, REORG, Job, Request, job_for
from deltalog.dml.partition_where import select

if TYPE_CHECKING:
    from deltalog.storage.base import LogStore
    from deltalog.table.transaction import Transaction

log = logging.getLogger(__name__)

#: bins rewritten at once by default: one per core (each bin's writer encodes on threads of its own, and every
#: bin in flight holds a row group), at most 4
MAX_DEFAULT_TASKS = 4


@dataclass(frozen=True)
class OptimizeResult:
    """What one OPTIMIZE or REORG run did (Delta Spark's ``OptimizeMetrics`` names, in Python's spelling).

    ``version`` is the last version committed, None for a dry run or when nothing needed rewriting (then nothing
    was committed); ``versions`` every version committed (one per batch). In a dry run the counts of removed files
    and bytes are what the run would rewrite, and nothing is added.
    """

    operation: str = OPTIMIZE
    num_files_added: int = 0
    num_files_removed: int = 0
    bytes_added: int = 0
    bytes_removed: int = 0
    partitions_optimized: int = 0
    num_batches: int = 0
    files_considered: int = 0
    files_skipped: int = 0
    deletion_vectors_purged: int = 0
    dry_run: bool = False
    version: int | None = None
    versions: tuple[int, ...] = ()


def default_tasks() -> int:
    return max(1, min(MAX_DEFAULT_TASKS, os.cpu_count() or 1))


def _rewrite_bin(store: LogStore, job: Job, b: optimize_plan.Bin, encoders: int, readers: int) -> Rewritten:
    files = [DataFile.of(a) for a in b.files]
    adds = rewrite(
        store,
        job.spec,
        job.target,
        files,
        layout=job.layout,
        target_file_size=job.settings.target_size,
        encoders=encoders,
        readers=readers,
        input_bytes=b.size,
    )
    return Rewritten(b, tuple(adds))


def _run_bins(
    store: LogStore, job: Job, bins: tuple[optimize_plan.Bin, ...], tasks: int, orphan: Callable[[Rewritten], None]
) -> Iterator[Rewritten]:
    """Rewrite ``bins`` on ``tasks`` threads, at most ``tasks`` at once, yielding each as it finishes.

    On the first failure no new bin starts, the running ones finish and are yielded (so the caller holds their
    files), and the failure propagates. When the caller stops early (its commit failed), bins still running are
    waited for and handed to ``orphan``, which deletes their files.
    """
    encoders = 1  # a bin is one partition: one lane, whose row groups encode one after another anyway
    # bins in parallel keep the cores busy; a lone bin reads its files in parallel instead
    readers = 1 if len(bins) >= tasks > 1 else READERS
    todo = iter(bins)
    pool = cf.ThreadPoolExecutor(max_workers=tasks, thread_name_prefix="deltalog-optimize")
    running: set[cf.Future[Rewritten]] = set()

    def start() -> None:
        for b in todo:
            running.add(pool.submit(_rewrite_bin, store, job, b, encoders, readers))
            if len(running) >= tasks:
                return

    failure: BaseException | None = None
    try:
        start()
        while running:
            done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            running.difference_update(done)
            for future in done:
                error = future.exception()
                if error is not None:
                    failure = failure or error
                else:
                    yield future.result()
            if failure is None:
                start()
        if failure is not None:
            raise failure
    finally:
        for future in running:
            future.cancel()
        for future in cf.as_completed(running):
            if not future.cancelled() and future.exception() is None:
                orphan(future.result())
        pool.shutdown(wait=True)


def result_of(
    job: Job, plan: optimize_plan.Plan, dry_run: bool, committed: BatchCommitter | None = None
) -> OptimizeResult:
    """The result of a run that planned ``plan``: a dry run's (what it would rewrite), one that found nothing,
    or what ``committed`` committed."""
    files = plan.files
    if committed is None:
        return OptimizeResult(
            operation=job.operation,
            num_files_removed=len(files) if dry_run else 0,
            bytes_removed=sum(a.size for a in files) if dry_run else 0,
            partitions_optimized=plan.partitions if dry_run else 0,
            files_considered=plan.files_considered,
            files_skipped=plan.files_skipped if dry_run else plan.files_considered,
            deletion_vectors_purged=sum(1 for a in files if a.deletion_vector is not None) if dry_run else 0,
            dry_run=dry_run,
        )
    t = committed.totals
    return OptimizeResult(
        operation=job.operation,
        num_files_added=t.files_added,
        num_files_removed=t.files_removed,
        bytes_added=t.bytes_added,
        bytes_removed=t.bytes_removed,
        partitions_optimized=len(t.partitions),
        num_batches=t.batches,
        files_considered=plan.files_considered,
        files_skipped=plan.files_considered - t.files_removed,
        deletion_vectors_purged=t.dvs_removed,
        version=t.versions[-1] if t.versions else None,
        versions=tuple(t.versions),
    )


def optimize(start_transaction: Callable[[], Transaction], request: Request) -> OptimizeResult:
    """Run OPTIMIZE (or, with ``request.purge``, REORG ... APPLY (PURGE)) on the latest version; see the module."""
    tasks = (
        default_tasks()
        if request.max_concurrent_tasks is None
        else positive(request.max_concurrent_tasks, "max_concurrent_tasks")
    )
    interval = request.min_commit_interval
    txn = start_transaction()
    committer: BatchCommitter | None = None
    try:
        job, plan = plan_run(txn, request)
        if request.dry_run or not plan.bins:
            txn.abort()
            return result_of(job, plan, request.dry_run)
        committer = BatchCommitter(job, txn, start_transaction)
        last = time.monotonic()
        store = txn.context.store
        for done in _run_bins(store, job, plan.bins, tasks, committer.drop):
            committer.add(done)
            if interval is not None and time.monotonic() - last >= interval:
                committer.commit()
                last = time.monotonic()
        committer.commit()
    except BaseException:
        if committer is not None:
            committer.discard()
        else:
            txn.abort()
        raise
    return result_of(job, plan, False, committer)


def plan_run(txn: Transaction, request: Request) -> tuple[Job, optimize_plan.Plan]:
    """The job and its bins on ``txn``'s snapshot: checked, the partitions selected, planned from the log. The
    one planning step of local and Spark runs."""
    snap = txn.snapshot
    job = job_for(snap, request)
    selection = select(snap, request.where)
    job = replace(job, predicate=selection.text)
    files = selection.files
    if request.partitions is not None:
        files = tuple(a for a in files if optimize_plan.partition_key(a) in request.partitions)
    return job, optimize_plan.plan(files, job.settings)


__all__ = [
    "OPTIMIZE",
    "REORG",
    "OptimizeResult",
    "Request",
    "default_tasks",
    "optimize",
    "plan_run",
    "result_of",
]
