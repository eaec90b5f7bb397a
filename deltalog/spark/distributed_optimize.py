"""OPTIMIZE with Spark: the driver plans the bins, executors rewrite them, the driver commits once.

1. The driver opens the table, starts the transaction and plans exactly as a local run does
   (:func:`deltalog.dml.optimize.plan_run`: the request checked, the partitions ``where`` selects, the bins from
   the log alone). A dry run, or a table with nothing to rewrite, stops here.
2. Spark spreads the bins over its executors, one task per bin; each rewrites its files through the one data
   writer (:mod:`deltalog.spark._optimize_io`) and sends back the adds of its new files.
3. The driver commits every bin as one ``OPTIMIZE`` (or ``REORG``) version with ``dataChange: false``
   (:class:`deltalog.dml.optimize_commit.BatchCommitter`: the same conflict rules and re-checks as a local run).
   A failed job, or a refused commit, deletes every file the run wrote.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from deltalog.data.locate import resolve
from deltalog.dml.commit import discard
from deltalog.dml.optimize import OptimizeResult, Request, plan_run, result_of
from deltalog.dml.optimize_commit import BatchCommitter, Rewritten
from deltalog.errors import DeltaLogError
from deltalog.log import DeltaLog
from deltalog.spark._files import raise_carried
from deltalog.spark._optimize_io import BinFailed, PathList, rewrite_bins

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def optimize(
    spark: SparkSession,
    table_uri: str,
    where: Any = None,
    target_size: int | None = None,
    z_order_by: Sequence[str] | None = None,
    min_file_size: int | None = None,
    storage_options: dict[str, Any] | None = None,
    *,
    dry_run: bool = False,
    purge: bool = False,
) -> OptimizeResult:
    """OPTIMIZE ``table_uri`` with Spark's executors (see :meth:`deltalog.DeltaLog.optimize` for the arguments;
    ``purge`` runs REORG ... APPLY (PURGE) instead). One commit, made on the driver. A deltalog error raised on
    an executor (a corrupt data file, a feature the rewrite cannot honour) is raised here typed."""
    log = DeltaLog.for_table(table_uri, storage_options)
    request = Request(
        where=where,
        target_size=target_size,
        z_order_by=(z_order_by,) if isinstance(z_order_by, str) else tuple(z_order_by or ()),
        min_file_size=min_file_size,
        dry_run=dry_run,
        purge=purge,
    )
    txn = log.start_transaction()
    try:
        job, plan = plan_run(txn, request)
    except BaseException:
        txn.abort()
        raise
    if dry_run or not plan.bins:
        txn.abort()
        return result_of(job, plan, dry_run)
    committer = BatchCommitter(job, txn, log.start_transaction)
    sc = spark.sparkContext
    reported: Any = sc.accumulator([], PathList())  # type: ignore[arg-type]  # PathList is duck-typed
    task = functools.partial(
        rewrite_bins, root=log.store.root, storage_options=storage_options, job=job, written=reported
    )
    try:
        results: list[Rewritten | BinFailed] = (
            sc.parallelize(list(plan.bins), len(plan.bins)).mapPartitions(task).collect()
        )
    except BaseException as exc:
        committer.discard()
        discard(log.context, [resolve(log.store, p) for p in reported.value])
        if not isinstance(exc, DeltaLogError):
            raise_carried(exc)
        raise
    failed = [r for r in results if isinstance(r, BinFailed)]
    done = [r for r in results if isinstance(r, Rewritten)]
    if failed:
        committer.discard()
        discard(log.context, [resolve(log.store, a.path) for r in done for a in r.adds])
        raise failed[0].error()
    for rewritten in done:
        committer.add(rewritten)
    try:
        committer.commit()
    except BaseException:
        committer.discard()
        raise
    return result_of(job, plan, False, committer)


__all__ = ["optimize"]
