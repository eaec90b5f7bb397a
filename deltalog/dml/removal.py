"""Matched rows out of the table, as actions: deletion vectors where the table enables them, else rewritten
files. What a delete and a ``replace_where`` on data columns both stage.

With deletion vectors (PROTOCOL "Deletion Vectors"; Delta Spark's ``AddFile.removeRows``), each touched file
keeps its data: its new vector, the union of the current one and the matched rows (never smaller), goes into
one DV file written for the whole operation, and the file is committed as ``remove(path, old vector)`` +
``add(path, new vector)`` with everything else of its add kept (partition values, size, modification time,
tags, row-tracking fields) and statistics marked ``tightBounds: false`` (the bounds may now describe deleted
rows). A file left without live rows is removed outright. No change files are needed: a change reader diffs
the vectors.

Without them, a touched file is removed and its surviving rows are copied into new files by the data-file
writer (the table's rules apply to them again; identity values stay as they are; where row tracking is enabled
they keep their row ids and commit versions in the materialized columns); on a change-data-feed table
the removed rows go into change files (``_change_type = 'delete'``) under ``_change_data/``, every one of them,
since a version with change files is read from those only.

Nothing here commits. Every file written is listed in :attr:`Removal.written`, and a failure part way deletes
what was written so far before it propagates.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.core import actions as A
from deltalog.core.features.obligations import DELETE, DV_DELETE, REWRITE
from deltalog.data.dv import dv_location, write_deletion_vectors
from deltalog.data.files import DataFileWriter, WriteTarget
from deltalog.data.locate import resolve
from deltalog.data.parallel import ordered
from deltalog.data.predicate import RowFilter
from deltalog.data.read import DataFile, read_batches, with_row_tracking
from deltalog.data.scan import TableDescription
from deltalog.dml.matching import FileMatch
from deltalog.storage.base import LogStore

CHANGE_TYPE = "_change_type"


@dataclass
class Removal:
    """The actions that take matched rows out, the files written for them, and what Delta Spark counts."""

    actions: list[A.Action] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    touched: list[A.Add] = field(default_factory=list)
    operations: set[str] = field(default_factory=set)
    copies_rows: bool = False
    #: the copied rows carry their row ids and commit versions in the materialized columns (:class:`Rewriter`)
    row_ids_preserved: bool = False
    deleted_rows: int = 0
    copied_rows: int = 0
    removed_files: int = 0
    added_files: int = 0
    change_files: int = 0
    dvs_added: int = 0
    dvs_updated: int = 0
    dvs_removed: int = 0
    removed_bytes: int = 0
    added_bytes: int = 0

    def extend(self, other: Removal) -> None:
        """Take in ``other``'s actions, files and counts: the removals of disjoint files, made apart (one per
        Spark task), as one."""
        self.actions.extend(other.actions)
        self.written.extend(other.written)
        self.touched.extend(other.touched)
        self.operations |= other.operations
        self.copies_rows = self.copies_rows or other.copies_rows
        self.row_ids_preserved = self.row_ids_preserved or other.row_ids_preserved
        for name in _COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def metrics(self) -> dict[str, str]:
        """Delta Spark's names for the counts (``DeltaOperationMetrics.DELETE``)."""
        values = {
            "numDeletedRows": self.deleted_rows,
            "numCopiedRows": self.copied_rows,
            "numRemovedFiles": self.removed_files,
            "numAddedFiles": self.added_files,
            "numAddedChangeFiles": self.change_files,
            "numDeletionVectorsAdded": self.dvs_added,
            "numDeletionVectorsUpdated": self.dvs_updated,
            "numDeletionVectorsRemoved": self.dvs_removed,
            "numRemovedBytes": self.removed_bytes,
            "numAddedBytes": self.added_bytes,
        }
        return {k: str(v) for k, v in values.items()}


#: the counters of a :class:`Removal`
_COUNTS = tuple(f.name for f in dataclasses.fields(Removal) if f.type in ("int", int))


def _remove(removal: Removal, add: A.Add, now_ms: int, rows: int) -> None:
    removal.actions.append(add.remove(now_ms, True))
    removal.touched.append(add)
    removal.operations.add(DELETE)
    removal.deleted_rows += rows
    removal.removed_files += 1
    removal.removed_bytes += add.size
    removal.dvs_removed += add.deletion_vector is not None


def loose_stats(stats: str | None, num_rows: int) -> str:
    """A re-added file's statistics: the same, with its physical row count, and bounds no longer tight."""
    try:
        doc = orjson.loads(stats) if stats else {}
    except orjson.JSONDecodeError:
        doc = {}
    if not isinstance(doc, dict):
        doc = {}
    doc["numRecords"] = num_rows
    doc["tightBounds"] = False
    return orjson.dumps(doc).decode()


# ---------------------------------------------------------------------------------------------- DVs
def with_deletion_vectors(store: LogStore, matches: Sequence[FileMatch], now_ms: int) -> Removal:
    """Each touched file's matched rows added to its deletion vector (files left empty removed)."""
    removal = Removal()
    partial = []
    for m in matches:
        if m.all_gone:
            _remove(removal, m.add, now_ms, len(m.matched))
        else:
            partial.append(m)
    if not partial:
        return removal
    rows = [np.union1d(m.deleted, m.matched) for m in partial]
    vectors = write_deletion_vectors(store, rows, [m.num_rows for m in partial])
    removal.written.append(_dv_key(store, vectors[0]))
    for m, vector in zip(partial, vectors, strict=True):
        readd = dataclasses.replace(
            m.add, deletion_vector=vector, data_change=True, stats=loose_stats(m.add.stats, m.num_rows)
        )
        removal.actions.extend([m.add.remove(now_ms, True), readd])
        removal.touched.append(m.add)
        removal.deleted_rows += len(m.matched)
        if m.add.deletion_vector is None:
            removal.dvs_added += 1
        else:
            removal.dvs_updated += 1
    removal.operations.add(DV_DELETE)
    return removal


def _dv_key(store: LogStore, vector: A.DeletionVector) -> str:
    where = dv_location(store, vector)
    assert where is not None
    return where


# ---------------------------------------------------------------------------------------------- rewrites
def _change_target(target: WriteTarget) -> WriteTarget:
    fields = [
        *target.schema.get("fields", []),
        {"name": CHANGE_TYPE, "type": "string", "nullable": True, "metadata": {}},
    ]
    return dataclasses.replace(target, schema={"type": "struct", "fields": fields}, row_tracking=None)


def _file_batches(
    store: LogStore, description: TableDescription, add: A.Add, tracking: tuple[str, str] | None
) -> Iterator[pa.RecordBatch]:
    """The file's live rows; with ``tracking``, each also carrying its stable row id and commit version under
    the materialized columns' names (what the copies keep)."""
    spec = description.read_schema()
    if tracking is not None:
        spec = with_row_tracking(spec, *tracking)
    yield from read_batches(store, spec, DataFile.of(add))


def with_change_type(batch: pa.RecordBatch, kind: str) -> pa.RecordBatch:
    """``batch`` with the ``_change_type`` column change files carry."""
    return batch.append_column(CHANGE_TYPE, pa.array([kind] * batch.num_rows, pa.string()))


@dataclass
class Rewriter:
    """The writers of one rewrite: surviving rows into new data files, removed rows into change files (on a
    change-data-feed table). Also what a ``replace_where`` on data columns writes its new rows through.

    A ``target`` whose ``row_tracking`` names the materialized columns (a table with row tracking enabled)
    makes the data files hold them: rows handed in with those columns keep their row ids and commit versions,
    rows without them (new rows) get fresh ones from their file. Change files never hold them (as MERGE's)."""

    store: LogStore
    target: WriteTarget
    changes: bool
    target_file_size: int | None = None
    #: what each writer may hold in rows (:class:`~deltalog.data.files.DataFileWriter`); None: its defaults
    max_buffered_bytes: int | None = None

    def __post_init__(self) -> None:
        size: dict[str, Any] = {} if self.target_file_size is None else {"target_file_size": self.target_file_size}
        held = self.max_buffered_bytes
        self.data = DataFileWriter(self.store, self.target, max_buffered_bytes=held, **size)
        self.change = (
            DataFileWriter(self.store, _change_target(self.target), change_data=True, max_buffered_bytes=held)
            if self.changes
            else None
        )

    def keep(self, batch: pa.RecordBatch) -> None:
        """Rows the table held (copied, or updated): into data files, their identity values as they are."""
        self.data.write(batch, kept=True)

    def numbered(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """New rows with their identity values (generated above the mark where the rows lack them), which the
        data and the change files then both hold as they are."""
        values = self.data.preparer.identity
        return values.complete(batch) if values else batch

    def insert(self, batch: pa.RecordBatch) -> None:
        """New rows (:meth:`numbered`): into data files and, as inserts, into change files where a change writer
        is on."""
        batch = self.numbered(batch)
        self.keep(batch)
        self.changed(batch, "insert")

    def insert_all(self, batches: Iterable[pa.RecordBatch]) -> None:
        """New rows (:meth:`insert`). Without a change writer, batches are prepared on a worker thread while
        earlier ones are written (two cores)."""
        if self.change is None:
            self.data.write_all(batches)
            return
        for batch in batches:
            self.insert(batch)

    @property
    def tracking(self) -> tuple[str, str] | None:
        """The materialized row-tracking columns the data files carry, or None."""
        return self.target.row_tracking

    def changed(self, batch: pa.RecordBatch, kind: str) -> None:
        """Rows into change files as ``kind`` (the materialized row-tracking columns left out)."""
        if self.change is None or not batch.num_rows:
            return
        if self.tracking is not None:
            batch = batch.drop_columns([n for n in self.tracking if n in batch.schema.names])
        self.change.write(with_change_type(batch, kind))

    def close(self) -> tuple[list[A.Add], list[A.Cdc]]:
        adds = self.data.close()
        cdc = [
            A.Cdc(a.path, dict(a.partition_values), a.size, False) for a in (self.change.close() if self.change else [])
        ]
        return adds, cdc

    def abort(self) -> None:
        self.data.abort()
        if self.change is not None:
            self.change.abort()


def by_rewriting(
    rewriter: Rewriter,
    description: TableDescription,
    matches: Sequence[FileMatch],
    row_filter: RowFilter,
    now_ms: int,
    workers: int | None = None,
    *,
    log_every_removed: bool = False,
) -> Removal:
    """Each touched file removed and its other live rows copied into new files (files left empty only
    removed); on a change-data-feed table, the removed rows recorded in change files (when some file is partly
    rewritten, or ``log_every_removed``). Where ``rewriter`` carries the materialized row-tracking columns, the
    copies keep their row ids and commit versions (read with them: PROTOCOL "Row Tracking"). The caller closes
    (or aborts) ``rewriter`` and adds what it wrote (:func:`finish`)."""
    removal = Removal()
    store = rewriter.store
    partial = [m for m in matches if not m.all_gone]
    whole = [m for m in matches if m.all_gone]
    removal.copies_rows = bool(partial)
    removal.row_ids_preserved = rewriter.tracking is not None
    for m in whole:
        _remove(removal, m.add, now_ms, len(m.matched))
    # a version with change files is read from them only: once any rows are copied, every removed row goes in
    logged = list(matches) if (rewriter.changes and (partial or log_every_removed)) else []
    tracking = rewriter.tracking
    readers = {
        id(m): functools.partial(_file_batches, store, description, m.add, tracking) for m in [*partial, *logged]
    }
    order = list(dict.fromkeys(id(m) for m in [*partial, *logged]))
    by_id = {id(m): m for m in matches}
    batches = ordered([_tagged(readers[i], i) for i in order], workers)
    for i, batch in batches:
        m = by_id[i]
        hits = np.zeros(batch.num_rows, dtype=bool)
        hits[row_filter.positions(batch)] = True
        mask = pa.array(hits)
        if not m.all_gone:
            kept = batch.filter(pc.invert(mask))
            rewriter.keep(kept)
            removal.copied_rows += kept.num_rows
        rewriter.changed(batch.filter(mask), "delete")
    for m in partial:
        removal.actions.append(m.add.remove(now_ms, True))
        removal.touched.append(m.add)
        removal.deleted_rows += len(m.matched)
        removal.removed_files += 1
        removal.removed_bytes += m.add.size
        removal.dvs_removed += m.add.deletion_vector is not None
    if partial:
        removal.operations.add(REWRITE)
    return removal


def _tagged(produce: Any, tag: int) -> Any:
    def tagged() -> Iterator[tuple[int, pa.RecordBatch]]:
        for batch in produce():
            yield tag, batch

    return tagged


def finish(removal: Removal, rewriter: Rewriter) -> None:
    """Close ``rewriter``: its data files become adds and its change files ``cdc`` actions of ``removal``."""
    adds, cdc = rewriter.close()
    removal.actions.extend(adds)
    removal.actions.extend(cdc)
    removal.written.extend(resolve(rewriter.store, path) for path in [*(a.path for a in adds), *(c.path for c in cdc)])
    removal.added_files += len(adds)
    removal.added_bytes += sum(a.size for a in adds)
    removal.change_files += len(cdc)


__all__ = [
    "CHANGE_TYPE",
    "Removal",
    "Rewriter",
    "by_rewriting",
    "finish",
    "loose_stats",
    "with_change_type",
    "with_deletion_vectors",
]
