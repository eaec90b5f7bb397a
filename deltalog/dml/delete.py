"""``DELETE FROM table WHERE predicate`` as one commit: deletion vectors where the table enables them, else
rewritten files (:mod:`deltalog.dml.removal`).

The caller starts the transaction (the facade, on the latest snapshot) and everything is decided on its snapshot.
It reads as a delete reads: the predicate's partition conditions (when it was given in the ``where`` form; the
whole table otherwise) and every file it touches, so a concurrent commit that removes or rewrites one of them, or
adds rows where the delete looked, is a conflict (:mod:`deltalog.core.commit.conflicts`). The table's features are
asked before any file is written (an append-only table refuses; ...), and the rule modules those features name run
on the staged actions (:mod:`deltalog.dml.rules`). Where row tracking is enabled, a rewrite's copies keep their
row ids and commit versions in the materialized columns (:func:`work_of`), which the commit declares.

``commitInfo`` is Delta Spark's: operation ``DELETE``, ``operationParameters.predicate`` a JSON list of the
predicate's text, and its metrics (``numDeletedRows``, ``numCopiedRows``, ``numRemovedFiles``,
``numAddedFiles``, ``numAddedChangeFiles``, the deletion-vector counts, bytes and times in ms).

A predicate matching no row commits nothing: the result has ``version`` None and ``skipped`` True.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from deltalog.core import actions as A
from deltalog.core.features import clustering, deletion_vectors
from deltalog.core.features.cdf import enabled as change_data_feed
from deltalog.core.features.obligations import DELETE, DV_DELETE, REWRITE
from deltalog.data.files import WriteTarget
from deltalog.data.locate import resolve
from deltalog.data.output import delete_files
from deltalog.data.predicate import RowFilter, every_row, row_filter
from deltalog.data.read import DataFile
from deltalog.data.row_ids import kept_columns
from deltalog.data.scan import TableDescription
from deltalog.dml import rules
from deltalog.dml.commit import commit_files, skipped
from deltalog.dml.matching import FileMatch, Matches, candidates, find_matches
from deltalog.dml.removal import Removal, Rewriter, by_rewriting, finish, with_deletion_vectors
from deltalog.errors import InvalidCommitError
from deltalog.storage.base import LogStore
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


@dataclass(frozen=True)
class DeleteWork:
    """What taking matched rows out of candidate files needs besides the files, decided on the driver: a
    picklable value, so that the work can run elsewhere (Spark's executors, :mod:`deltalog.spark`). The store is
    not part of it: each place that runs it opens the table's own."""

    row_filter: RowFilter | None
    schema: Mapping[str, Any]
    partition_columns: tuple[str, ...]
    column_mapping: str
    target: WriteTarget
    deletion_vectors: bool
    changes: bool
    now_ms: int

    def description(self, store: LogStore) -> TableDescription:
        return TableDescription(store, self.schema, self.partition_columns, self.column_mapping)


#: runs a delete's file work elsewhere: (work, candidate files) -> the removal of their matched rows, the files
#: written for it listed; the driver then commits exactly as a local run does
DeletePasses = Callable[[DeleteWork, Sequence[A.Add]], Removal]


def work_of(snap: Snapshot, row_filter: RowFilter | None, now_ms: int) -> DeleteWork:
    """The :class:`DeleteWork` of a delete of ``row_filter``'s rows (None: every row) on ``snap``."""
    return DeleteWork(
        row_filter,
        snap.schema_json,
        tuple(snap.partition_columns),
        snap.column_mapping_mode,
        # a rewrite's copies keep their row ids where the table tracks them (PROTOCOL "Row Tracking")
        dataclasses.replace(target_of(snap), row_tracking=kept_columns(snap.protocol, snap.configuration)),
        deletion_vectors.new_dvs_allowed(snap.protocol, snap.configuration),
        change_data_feed(snap.protocol, snap.configuration),
        now_ms,
    )


def find_in(store: LogStore, work: DeleteWork, adds: Sequence[A.Add], workers: int | None = None) -> Matches:
    """What ``work``'s predicate matches in ``adds``: every row of every file without a predicate (the files are
    removed without being read), else the files read (:func:`~deltalog.dml.matching.find_matches`)."""
    if work.row_filter is None:
        empty = np.empty(0, dtype=np.int64)
        files = []
        for add in adds:
            count = _live_count(add)
            files.append(FileMatch(add, count, empty, np.arange(count, dtype=np.int64)))
        return Matches(tuple(files), len(files), len(files))
    return find_matches(store, adds, work.description(store), work.row_filter, workers)


def _live_count(add: A.Add) -> int:
    total = DataFile.of(add).num_records or 0
    gone = add.deletion_vector.cardinality if add.deletion_vector is not None else 0
    return max(total - gone, 0)


def remove_found(
    store: LogStore,
    work: DeleteWork,
    matches: Sequence[FileMatch],
    workers: int | None = None,
    *,
    log_every_removed: bool = False,
) -> Removal:
    """The actions removing ``matches`` (DVs or rewrites, as the table says); the files written for them are
    deleted again when this fails. ``log_every_removed``: on a change-data-feed table, the removed rows of files
    that go whole are recorded in change files even when no file here is partly rewritten (one of a
    statement's parts, when another part may be: see :func:`without_unneeded_changes`)."""
    if work.deletion_vectors:
        return with_deletion_vectors(store, matches, work.now_ms)
    rewriter = Rewriter(store, work.target, work.changes)
    removal = Removal()
    try:
        removal = by_rewriting(
            rewriter,
            work.description(store),
            matches,
            work.row_filter or _EVERY_ROW,
            work.now_ms,
            workers,
            log_every_removed=log_every_removed,
        )
        finish(removal, rewriter)
    except BaseException:
        rewriter.abort()
        delete_files(store, removal.written)
        raise
    return removal


def without_unneeded_changes(store: LogStore, removal: Removal) -> Removal:
    """``removal`` (the parts of one statement, made apart with ``log_every_removed``) as a local run makes it:
    change files only when some file was partly rewritten (a version with change files is read from those only,
    so then every removed row must be in them; without any, removes alone say what was deleted), the others
    deleted again."""
    if removal.copies_rows:
        return removal
    cdc = [a for a in removal.actions if isinstance(a, A.Cdc)]
    if not cdc:
        return removal
    dropped = {resolve(store, c.path) for c in cdc}
    delete_files(store, sorted(dropped))
    removal.actions = [a for a in removal.actions if not isinstance(a, A.Cdc)]
    removal.written = [w for w in removal.written if w not in dropped]
    removal.change_files = 0
    return removal


def delete(
    txn: Transaction,
    predicate: Any = None,
    *,
    workers: int | None = None,
    session_time_zone: str | None = None,
    passes: DeletePasses | None = None,
) -> CommitResult:
    """Delete the rows matching ``predicate`` (any filter form on logical names: Spark SQL text, a pyarrow
    compute Expression, DNF tuples or a mapping; None: every row) as one commit. SQL's timestamps are read in
    ``session_time_zone`` (UTC by default). ``txn`` is a transaction on the latest snapshot that nothing else has
    used (the facade starts it): the delete reads through it and commits it. ``passes`` finds and removes the
    matched rows of the candidate files elsewhere (:data:`DeletePasses`): everything before (binding, the
    table's features, the read recorded, the candidate files chosen) and the commit are the same.

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
    work = work_of(snap, chosen, ctx.now_ms())
    dvs = work.deletion_vectors
    kept_ids = work.target.row_tracking is not None
    ops = (DV_DELETE, DELETE) if dvs else (REWRITE, DELETE)
    rules.check_up_front(snap, ctx.location, ops, row_ids_preserved=kept_ids, identity_preserved=True)
    txn.read(chosen)
    adds = list(snap.add_actions())
    if passes is not None:
        files = adds if chosen is None else candidates(adds, describe(snap), chosen)
        try:
            removal = passes(work, files) if files else Removal()
        except BaseException:
            txn.abort()
            raise
        scanned = time.monotonic()
        if not removal.actions:
            txn.abort()
            return skipped(txn, OPERATION)
    else:
        matches = find_in(ctx.store, work, adds, workers)
        scanned = time.monotonic()
        if not matches.files:
            txn.abort()
            return skipped(txn, OPERATION)
        removal = remove_found(ctx.store, work, matches.files, workers)
    try:
        actions = removal.actions
        # copies keep their identity values (Rewriter.keep), and their row ids where the table tracks them
        declared = rules.Declared(
            copies_rows=removal.copies_rows, row_ids_preserved=removal.row_ids_preserved, identity_preserved=True
        )
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


__all__ = [
    "OPERATION",
    "DeletePasses",
    "DeleteWork",
    "check_removable",
    "delete",
    "describe",
    "find_in",
    "remove_found",
    "target_of",
    "without_unneeded_changes",
    "work_of",
]
