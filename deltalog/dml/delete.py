"""``DELETE FROM table WHERE predicate`` as one commit: deletion vectors where the table enables them, else
rewritten files (:mod:`deltalog.dml.removal`).

The caller starts the transaction (the facade, on the latest snapshot) and everything is decided on its snapshot.
It reads as a delete reads: the predicate's partition conditions (when it was given in the ``where`` form; the
whole table otherwise) and every file it touches, so a concurrent commit that removes or rewrites one of them, or
adds rows where the delete looked, is a conflict (:mod:`deltalog.core.commit.conflicts`). The table's features are
asked before any file is written (an append-only table refuses; row tracking refuses rewrites; ...), and the rule
modules those features name run on the staged actions (:mod:`deltalog.dml.rules`).

``commitInfo`` is Delta Spark's: operation ``DELETE``, ``operationParameters.predicate`` a JSON list of the
predicate's text, and its metrics (``numDeletedRows``, ``numCopiedRows``, ``numRemovedFiles``,
``numAddedFiles``, ``numAddedChangeFiles``, the deletion-vector counts, bytes and times in ms).

A predicate matching no row commits nothing: the result has ``version`` None and ``skipped`` True.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from deltalog.core import actions as A
from deltalog.core.features import clustering, deletion_vectors
from deltalog.core.features.cdf import enabled as change_data_feed
from deltalog.core.features.obligations import DELETE, DV_DELETE, REWRITE
from deltalog.data.files import WriteTarget
from deltalog.data.output import delete_files
from deltalog.data.predicate import RowFilter, every_row, row_filter
from deltalog.data.read import DataFile
from deltalog.data.scan import TableDescription
from deltalog.dml import rules
from deltalog.dml.commit import commit_files, skipped
from deltalog.dml.matching import FileMatch, Matches, find_matches
from deltalog.dml.removal import Removal, Rewriter, by_rewriting, finish, with_deletion_vectors
from deltalog.errors import InvalidCommitError
from deltalog.table.commit import CommitResult

if TYPE_CHECKING:
    from deltalog.table.commit import NewTable, Transaction
    from deltalog.table.snapshot import Snapshot

OPERATION = "DELETE"
#: no predicate: every row matches
_EVERY_ROW = every_row()


def describe(snap: Snapshot) -> TableDescription:
    """What reading ``snap``'s files needs, from its public fields."""
    return TableDescription(
        snap.context.store, snap.schema_json, tuple(snap.partition_columns), snap.column_mapping_mode
    )


def target_of(snap: Snapshot | NewTable) -> WriteTarget:
    """What writing ``snap``'s files needs: schema, partitioning, properties, clustering, column mapping."""
    columns = clustering.columns_of(snap.domain_metadata.values()) if clustering.clustered(snap.protocol) else ()
    return WriteTarget.of(snap, columns)


def check_removable(snap: Snapshot, verb: str) -> None:
    """An append-only table keeps every row (PROTOCOL "Append-only Tables"): refused before anything is read."""
    if snap.table_configuration.properties.append_only:
        raise InvalidCommitError(
            f"table {snap.context.location} is append-only (delta.appendOnly=true): {verb} cannot remove rows",
            rule="append-only",
        )


def _whole_table(snap: Snapshot) -> Matches:
    """Every live file, every row: a delete without a predicate removes the files without reading them."""
    empty = np.empty(0, dtype=np.int64)
    files = []
    for add in snap.add_actions():
        count = _live_count(add)
        files.append(FileMatch(add, count, empty, np.arange(count, dtype=np.int64)))
    return Matches(tuple(files), len(files), len(files))


def _live_count(add: A.Add) -> int:
    total = DataFile.of(add).num_records or 0
    gone = add.deletion_vector.cardinality if add.deletion_vector is not None else 0
    return max(total - gone, 0)


def remove_matches(
    snap: Snapshot, matches: Matches, predicate: RowFilter | None, now_ms: int, workers: int | None = None
) -> Removal:
    """The actions removing ``matches`` from ``snap``'s table (DVs or rewrites, as the table says); the files
    written for them are deleted again when this fails."""
    store = snap.context.store
    if deletion_vectors.new_dvs_allowed(snap.protocol, snap.configuration):
        return with_deletion_vectors(store, matches.files, now_ms)
    rewriter = Rewriter(store, target_of(snap), change_data_feed(snap.protocol, snap.configuration))
    try:
        removal = by_rewriting(rewriter, describe(snap), matches.files, predicate or _EVERY_ROW, now_ms, workers)
        finish(removal, rewriter)
    except BaseException:
        rewriter.abort()
        raise
    return removal


def delete(
    txn: Transaction,
    predicate: Any = None,
    *,
    workers: int | None = None,
    session_time_zone: str | None = None,
) -> CommitResult:
    """Delete the rows matching ``predicate`` (any filter form on logical names: Spark SQL text, a pyarrow
    compute Expression, DNF tuples or a mapping; None: every row) as one commit. SQL's timestamps are read in
    ``session_time_zone`` (UTC by default). ``txn`` is a transaction on the latest snapshot that nothing else has
    used (the facade starts it): the delete reads through it and commits it.

    Bad input fails before anything is written, typed and named: an unknown column or a predicate that cannot
    apply (:class:`~deltalog.errors.InvalidArgumentError`), an append-only table
    (:class:`~deltalog.errors.InvalidCommitError`), a feature that forbids the delete
    (:class:`~deltalog.errors.UnsupportedFeatureError`), a missing or corrupt data or DV file
    (:class:`~deltalog.errors.CorruptDataError`).
    """
    started = time.monotonic()
    ctx = txn.context
    snap = txn.snapshot
    check_removable(snap, OPERATION)
    chosen = (
        None
        if predicate is None
        else row_filter(predicate, snap.schema_json, snap.partition_columns, session_time_zone)
    )
    dvs = deletion_vectors.new_dvs_allowed(snap.protocol, snap.configuration)
    rules.check_up_front(snap, ctx.location, (DV_DELETE, DELETE) if dvs else (REWRITE, DELETE), identity_preserved=True)
    txn.read(chosen)
    if chosen is None:
        matches = _whole_table(snap)
    else:
        matches = find_matches(ctx.store, list(snap.add_actions()), describe(snap), chosen, workers)
    scanned = time.monotonic()
    if not matches.files:
        txn.abort()
        return skipped(txn, OPERATION)
    removal = remove_matches(snap, matches, chosen, ctx.now_ms(), workers)
    try:
        actions = removal.actions
        # copies keep their identity values (Rewriter.keep)
        declared = rules.Declared(copies_rows=removal.copies_rows, identity_preserved=True)
        txn.read_files(a.path for a in removal.touched)
    except BaseException:
        delete_files(ctx.store, removal.written)
        txn.abort()
        raise
    metrics = removal.metrics()
    done = time.monotonic()
    metrics.update(
        executionTimeMs=str(int((done - started) * 1000)),
        scanTimeMs=str(int((scanned - started) * 1000)),
        rewriteTimeMs=str(int((done - scanned) * 1000)),
    )
    text = chosen.text if chosen is not None else "true"
    params = {"predicate": orjson.dumps([text]).decode()}
    return commit_files(txn, actions, removal.written, OPERATION, params, metrics, declared)


__all__ = ["OPERATION", "check_removable", "delete", "describe", "remove_matches", "target_of"]
