"""The second pass of a MERGE or UPDATE: the changed rows written, the old ones taken out.

For each changed file, its full rows are read once, in batches, and only the rows acted on are kept: each
update's new row is computed (:mod:`deltalog.dml.merge.output`) and written to new files, each deleted row is
counted (and recorded in change files). Then the old rows go:

* with deletion vectors (the table enables them): every changed file keeps its data and gets the positions
  of its updated and deleted rows added to its vector, merged with the one it has, exactly as a delete does
  (:func:`deltalog.dml.removal.with_deletion_vectors`); a file left without live rows is removed;
* without: the file is removed and its unchanged rows are copied into new files with the updated ones.

On a change-data-feed table, change files record every change of the commit: ``update_preimage`` and
``update_postimage`` for every row an update clause applied to (even when its values did not change, as Spark
does), ``delete`` for deleted rows, ``insert`` for inserted ones. On a table with row tracking enabled, updated
rows keep their row ids and take the commit's version, copied rows keep both, inserted rows get fresh ones
(:mod:`deltalog.data.row_ids`). Identity columns keep their values in copied and updated rows; inserted rows get
values generated above the high-water mark, or the explicit ones a clause gives where the column allows them.

Nothing here commits; the files written are the writer's (:class:`ChangeWriter`), deleted again by the caller
if the commit does not happen.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from deltalog.core import actions as A
from deltalog.data.dv import read_deletion_vector
from deltalog.data.files import WriteTarget
from deltalog.data.parallel import ordered
from deltalog.data.read import DataFile, physical_rows, read_batches, with_positions, with_row_tracking
from deltalog.data.row_ids import Materialized, carrying, stable_ids
from deltalog.data.scan import TableDescription
from deltalog.dml.matching import FileMatch
from deltalog.dml.merge.clauses import DELETE, MATCHED, UPDATE
from deltalog.dml.merge.deferred import Deferred
from deltalog.dml.merge.output import evaluation, output_rows
from deltalog.dml.merge.plan import PAIR, BoundClause, MergePlan
from deltalog.dml.merge.scan import POSITION, FileActions, first_clause
from deltalog.dml.merge.source import MergeSource
from deltalog.dml.removal import Removal, Rewriter, finish, with_deletion_vectors
from deltalog.expr import tree as X
from deltalog.storage.base import LogStore

#: updates that read the source, held across files until this many rows wait (then written together)
FLUSH_ROWS = 1 << 16


@dataclass
class Counts:
    """Rows by what happened to them, as Delta Spark counts a MERGE's (and an UPDATE's) rows."""

    inserted: int = 0
    matched_updated: int = 0
    nmbs_updated: int = 0
    matched_deleted: int = 0
    nmbs_deleted: int = 0
    copied: int = 0

    @property
    def updated(self) -> int:
        return self.matched_updated + self.nmbs_updated

    def add(self, other: Counts) -> None:
        """Count ``other``'s rows too (the counts of one Spark task)."""
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    @property
    def deleted(self) -> int:
        return self.matched_deleted + self.nmbs_deleted


class ChangeWriter:
    """The files a merge writes: new data files (carrying row ids where the table keeps them) and, on a
    change-data-feed table, change files."""

    def __init__(
        self,
        store: LogStore,
        target: WriteTarget,
        plan: MergePlan,
        *,
        changes: bool,
        tracking: Materialized | None,
        target_file_size: int | None = None,
        max_buffered_bytes: int | None = None,
    ) -> None:
        columns = tracking.names if tracking is not None else None
        target = dataclasses.replace(target, row_tracking=columns)
        self.rewriter = Rewriter(store, target, changes, target_file_size, max_buffered_bytes)
        self.tracking = tracking
        self.names = [c.name for c in plan.columns]

    def _rows(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return batch.select(self.names)

    def names_only(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` with the table's columns only (what an output row is computed from)."""
        return self._rows(batch)

    def _data(self, batch: pa.RecordBatch, ids: pa.Array | None = None, versions: pa.Array | None = None) -> None:
        rows = self._rows(batch)
        if self.tracking is not None:
            rows = carrying(rows, self.tracking, ids, versions)
        self.rewriter.keep(rows)

    @property
    def changes(self) -> bool:
        """Whether change files are written (a change-data-feed table): they need every column of the rows."""
        return self.rewriter.change is not None

    def updated(self, before: pa.RecordBatch, after: pa.RecordBatch, ids: pa.Array | None) -> None:
        """New values of existing rows: their ids kept, the commit's version taken (NULL commit version)."""
        self._data(after, ids, None)
        if self.changes:
            self.rewriter.changed(self._rows(before), "update_preimage")
            self.rewriter.changed(self._rows(after), "update_postimage")

    def copied(self, rows: pa.RecordBatch, ids: pa.Array | None, versions: pa.Array | None) -> None:
        self._data(rows, ids, versions)

    def deleted(self, rows: pa.RecordBatch) -> None:
        if self.changes:
            self.rewriter.changed(self._rows(rows), "delete")

    def inserted(self, rows: pa.RecordBatch) -> None:
        """New rows: identity columns the clause left out get values generated above the mark (in the data and
        the change files alike)."""
        rows = self.rewriter.numbered(rows)
        self._data(rows)
        self.rewriter.changed(self._rows(rows), "insert")

    def finish(self, removal: Removal) -> None:
        """Close the writers: their files become ``removal``'s adds and cdc actions."""
        finish(removal, self.rewriter)

    def abort(self) -> None:
        self.rewriter.abort()


@dataclass
class Applier:
    """Applies the first pass's :class:`FileActions` with one writer: each changed file is read once, in order.

    An update that reads the source gets its source rows at once while the source is in memory; when it was
    spilled, its target rows wait in buckets by source partition (:mod:`deltalog.dml.merge.deferred`) and are
    written after the target pass, each partition of the source read once.
    """

    plan: MergePlan
    description: TableDescription
    writer: ChangeWriter
    source: MergeSource | None
    now_micros: int
    counts: Counts
    #: files read at once (None: the data plane's default)
    workers: int | None = None
    _deferred: Deferred | None = field(default=None, init=False)
    _pending: list[tuple[int, pa.RecordBatch, pa.Array | None, np.ndarray]] = field(default_factory=list, init=False)
    _pending_rows: int = field(default=0, init=False)

    @property
    def _clauses(self) -> tuple[BoundClause, ...]:
        return self.plan.target_clauses

    def _source_columns(self) -> list[str]:
        """The source columns update assignments read."""
        out: dict[str, None] = {}
        for c in self._clauses:
            if c.scope == PAIR and c.action == UPDATE:
                for _, e in c.assignments:
                    for f in X.references(e):
                        if f.relation == 1:
                            out[f.path[0]] = None
        return list(out)

    def _needed(self, rewrite: bool) -> list[str] | None:
        """The table columns the second pass reads of a changed file (None: every one). A rewrite copies whole
        rows and change files hold whole rows; otherwise an update needs the columns its assignments read and
        those it leaves as they are (not generated ones: those are computed again), a delete none at all."""
        if rewrite or self.writer.changes:
            return None
        names: set[str] = set()
        for c in self._clauses:
            if c.action != UPDATE:
                continue
            assigned = {name for name, _ in c.assignments}
            names |= {col.name for col in self.plan.columns if col.name not in assigned and col.generated is None}
            for _, e in c.assignments:
                names |= {f.path[0] for f in X.references(e) if f.relation == 0}
        return [col.name for col in self.plan.columns if col.name in names]

    def _read(self, f: FileActions, rewrite: bool) -> Iterator[pa.RecordBatch]:
        """``f``'s rows as the second pass needs them: every row of a file it rewrites; otherwise the row groups
        holding acted rows, with the columns the clauses need (none at all: the positions alone, unread)."""
        tracking = self.writer.tracking
        columns = self._needed(rewrite)
        if columns is not None and not columns and tracking is None:
            yield pa.RecordBatch.from_arrays([pa.array(f.positions, pa.int64())], names=[POSITION])
            return
        if columns is not None and not columns:
            columns = [self.plan.columns[0].name]  # something to count rows by, beside the row-id columns
        spec = with_positions(self.description.read_schema(columns), POSITION)
        if tracking is not None:
            spec = with_row_tracking(spec, *tracking.names)
        wanted = None if rewrite else f.positions
        yield from read_batches(self.description.store, spec, DataFile.of(f.add), rows=wanted)

    def _batches_of(
        self, files: Sequence[FileActions], rewrite: bool
    ) -> Iterator[tuple[FileActions, pa.RecordBatch | None]]:
        """(file, batch) for every batch of every file, then (file, None) when the file is done; files are read
        :attr:`workers` at a time (pyarrow decodes without the GIL), in order."""

        def tagged(f: FileActions) -> Iterator[tuple[FileActions, pa.RecordBatch | None]]:
            for batch in self._read(f, rewrite):
                yield f, batch
            yield f, None

        yield from ordered([functools.partial(tagged, f) for f in files], self.workers)

    def with_deletion_vectors(self, store: LogStore, files: Sequence[FileActions], now_ms: int) -> Removal:
        """Each file's acted rows applied, then taken out of it by its deletion vector."""
        matches = []
        try:
            for f, batch in self._batches_of(files, rewrite=False):
                if batch is not None:
                    self._act(f, batch)
                    continue
                n = physical_rows(store, DataFile.of(f.add))
                deleted = (
                    read_deletion_vector(store, f.add.deletion_vector, n)
                    if f.add.deletion_vector is not None
                    else np.empty(0, np.int64)
                )
                matches.append(FileMatch(f.add, n, deleted, f.positions))
            self._replay()
        finally:
            self._close()
        return with_deletion_vectors(store, matches, now_ms)

    def by_rewriting(self, files: Sequence[FileActions], now_ms: int) -> Removal:
        """Each file's acted rows applied and its other rows copied; the file removed."""
        removal = Removal()
        try:
            for f, batch in self._batches_of(files, rewrite=True):
                if batch is not None:
                    kept = self._act(f, batch, unchanged=True)
                    if kept is not None and kept.num_rows:
                        self._copy(f.add, kept)
                        removal.copies_rows = True
                    continue
                removal.actions.append(f.add.remove(now_ms, True))
                removal.touched.append(f.add)
                removal.removed_files += 1
                removal.removed_bytes += f.add.size
                removal.dvs_removed += f.add.deletion_vector is not None
            self._replay()
        finally:
            self._close()
        return removal

    def _copy(self, add: A.Add, rows: pa.RecordBatch) -> None:
        ids = versions = None
        if self.writer.tracking is not None:
            ids, versions = stable_ids(rows, self.writer.tracking)
        self.writer.copied(rows, ids, versions)
        self.counts.copied += rows.num_rows

    def _act(self, f: FileActions, batch: pa.RecordBatch, unchanged: bool = False) -> pa.RecordBatch | None:
        """Apply ``f``'s actions to the rows of ``batch`` they name; with ``unchanged``, return the rows left
        unchanged (a rewrite copies them; a deletion vector leaves them where they are)."""
        at = np.asarray(batch.column(POSITION).to_numpy(), dtype=np.int64)
        index = np.searchsorted(f.positions, at)
        inside = index < len(f.positions)
        hit = np.zeros(len(at), dtype=bool)
        hit[inside] = f.positions[index[inside]] == at[inside]
        if not hit.any():
            return batch if unchanged else None
        acted = batch.filter(pa.array(hit))
        which = f.clauses[index[hit]]
        sources = f.sources[index[hit]]
        for c in np.unique(which):
            clause = self._clauses[int(c)]
            chosen = np.flatnonzero(which == c)
            target = acted.take(pa.array(chosen))
            if clause.action == DELETE:
                self.writer.deleted(target)
                if clause.kind == MATCHED:
                    self.counts.matched_deleted += target.num_rows
                else:
                    self.counts.nmbs_deleted += target.num_rows
                continue
            ids = None
            if self.writer.tracking is not None:
                ids, _ = stable_ids(target, self.writer.tracking)
            if clause.scope != PAIR:
                self._update(clause, target, None, ids)
            elif self.source is not None and self.source.spilled:
                self._wait(int(c), target, ids, sources[chosen])
            else:
                self._queue(int(c), target, ids, sources[chosen])
        return batch.filter(pa.array(~hit)) if unchanged else None

    def _queue(self, clause: int, target: pa.RecordBatch, ids: pa.Array | None, sources: np.ndarray) -> None:
        """Hold updates that read the source until :data:`FLUSH_ROWS` of them (across files) are waiting: one
        fetch of their source rows, one evaluation and one write for them all."""
        self._pending.append((clause, target, ids, sources))
        self._pending_rows += target.num_rows
        if self._pending_rows >= FLUSH_ROWS:
            self._flush()

    def _flush(self) -> None:
        pending, self._pending, self._pending_rows = self._pending, [], 0
        assert self.source is not None or not pending
        for c in sorted({p[0] for p in pending}):
            mine = [p for p in pending if p[0] == c]
            target = pa.Table.from_batches([p[1] for p in mine]).combine_chunks().to_batches()[0]
            sources = np.concatenate([p[3] for p in mine])
            ids = None
            if self.writer.tracking is not None:
                ids = pa.concat_arrays([p[2] for p in mine if p[2] is not None])
            assert self.source is not None
            rows, inverse = np.unique(sources, return_inverse=True)
            fetched = self.source.take(rows, self._source_columns())
            self._update(self._clauses[c], target, fetched.take(pa.array(inverse.astype(np.int64))), ids)

    def _update(
        self, clause: BoundClause, target: pa.RecordBatch, source: pa.RecordBatch | None, ids: pa.Array | None
    ) -> None:
        after = output_rows(self.plan, clause, target, source, self.now_micros)
        self.writer.updated(target, after, ids)
        if clause.kind == MATCHED:
            self.counts.matched_updated += target.num_rows
        else:
            self.counts.nmbs_updated += target.num_rows

    def _wait(self, clause: int, target: pa.RecordBatch, ids: pa.Array | None, sources: np.ndarray) -> None:
        if self._deferred is None:
            assert self.source is not None and self.source.directory is not None
            self._deferred = Deferred(self.source, self.source.directory)
        self._deferred.add(clause, self.writer.names_only(target), ids, sources)

    def _replay(self) -> None:
        self._flush()
        if self._deferred is None:
            return
        for c, target, ids, source in self._deferred.replay(self._source_columns()):
            self._update(self._clauses[c], target, source, ids if self.writer.tracking is not None else None)

    def _close(self) -> None:
        if self._deferred is not None:
            self._deferred.close()
            self._deferred = None

    def insert(self, matched_sources: np.ndarray, chunk_bytes: int) -> None:
        """The source rows no target row matched, through the ``WHEN NOT MATCHED`` clauses."""
        clauses = self.plan.not_matched
        if self.source is None or not clauses:
            return
        for start, chunk in self.source.chunks(chunk_bytes):
            unmatched = ~matched_sources[start : start + chunk.num_rows]
            if not unmatched.any():
                continue
            rows = chunk.filter(pa.array(unmatched))
            ev = evaluation(clauses[0], None, rows, self.plan, self.now_micros)
            which = first_clause(clauses, ev, rows.num_rows)
            for c in np.unique(which[which >= 0]):
                chosen = rows.take(pa.array(np.flatnonzero(which == c)))
                self.writer.inserted(output_rows(self.plan, clauses[int(c)], None, chosen, self.now_micros))
                self.counts.inserted += chosen.num_rows


__all__ = ["Applier", "ChangeWriter", "Counts"]
