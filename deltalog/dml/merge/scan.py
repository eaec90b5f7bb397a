"""The first pass of a MERGE or UPDATE: which target rows change, by which clause, paired with which source row.

Candidate files are read in bounded groups, only the columns the condition and the clause conditions need,
with each live row's physical position (what a deletion vector names). Each group is joined with the source
(:mod:`deltalog.dml.merge.join`) chunk by chunk; the residual condition and the ``WHEN MATCHED`` conditions are
evaluated on the pairs (the first clause whose condition holds applies), target rows no source row matched
are given to the ``WHEN NOT MATCHED BY SOURCE`` clauses, and source rows that matched anything are marked
(they are not inserted). What a group keeps is per changed row: its file, position, clause and source row,
never the rows themselves.

Duplicate matches are judged exactly as Delta Spark judges them (``MergeIntoCommandBase``,
``ClassicMergeExecutor``): a target row that more than one source row matches fails the whole merge, before
anything is written, with a :class:`~deltalog.errors.DuplicateMatchError` naming the row's key; except when the
only matched clause is an unconditional delete (every pair deletes the same row); and in a merge with only
``WHEN MATCHED`` clauses only pairs for which some matched clause's condition holds count. An insert-only merge
pairs nothing with the target and checks nothing (Delta Spark's insert-only path).

This is the per-group work an executor can run: :func:`scan_group` takes one group of files and the source,
and returns its :class:`GroupScan`; the driver checks nothing more than what the groups return. Pairs found by
another engine's join (Spark's, :mod:`deltalog.spark.distributed_merge`) enter at :class:`Pairing`, which
chooses the clauses, applies the duplicate rule and the ``NOT MATCHED BY SOURCE`` clauses as here.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.actions import Add
from deltalog.compute import Evaluation, evaluate
from deltalog.core.schema import top_level_fields
from deltalog.data.parallel import ordered
from deltalog.data.read import DataFile, ReadSchema, read_batches, with_positions
from deltalog.data.scan import TableDescription
from deltalog.dml.merge.join import key_arrays, pairs
from deltalog.dml.merge.plan import BoundClause, MergePlan
from deltalog.dml.merge.source import MergeSource
from deltalog.errors import DuplicateMatchError
from deltalog.expr import tree as X
from deltalog.storage.base import LogStore

#: the columns a narrow read adds: the file (its index in the group) and the row's physical position
FILE = "__deltalog_file"
POSITION = "__deltalog_position"
NO_CLAUSE = -1


@dataclass
class FileActions:
    """What changes in one file: the positions of the rows acted on (ascending), the clause acting on each
    (an index into :attr:`MergePlan.target_clauses`) and its source row (-1: none)."""

    add: Add
    positions: np.ndarray
    clauses: np.ndarray
    sources: np.ndarray


@dataclass
class GroupScan:
    """One group's result: its changed files and how many rows were read."""

    files: list[FileActions] = field(default_factory=list)
    rows_read: int = 0


def narrow_columns(plan: MergePlan, schema_fields: Sequence[str]) -> list[str]:
    """The columns the first pass reads: those the conditions need, or one cheap column to count rows by."""
    if plan.target_columns:
        return list(plan.target_columns)
    names = list(schema_fields)
    return [next((n for n in names if n in plan.partition_columns), names[0])]


#: rows per batch of a narrow read (a few columns: large batches, few Python steps per file)
NARROW_BATCH_ROWS = 1 << 20


def narrow_spec(description: TableDescription, plan: MergePlan) -> ReadSchema:
    """How the first pass reads a candidate file: the columns it needs and each live row's position."""
    names = [f["name"] for f in top_level_fields(description.schema)]
    return with_positions(description.read_schema(narrow_columns(plan, names)), POSITION)


def file_rows(store: LogStore, spec: ReadSchema, add: Add, index: int) -> Iterator[pa.RecordBatch]:
    """The live rows of one candidate file as :func:`narrow_spec` reads them, with its ``index`` as the file."""
    for batch in read_batches(store, spec, DataFile.of(add), NARROW_BATCH_ROWS):
        yield batch.append_column(FILE, pa.array(np.full(batch.num_rows, index, dtype=np.int32)))


def read_narrow(
    description: TableDescription, plan: MergePlan, files: Sequence[Add], workers: int | None = None
) -> pa.RecordBatch:
    """The live rows of ``files`` with the columns the first pass needs, their file index and position."""
    spec = narrow_spec(description, plan)
    producers = [functools.partial(file_rows, description.store, spec, a, i) for i, a in enumerate(files)]
    batches = list(ordered(producers, workers))
    schema = pa.schema([*spec.schema, pa.field(FILE, pa.int32())])
    if not batches:
        return pa.RecordBatch.from_pylist([], schema=schema)
    table = pa.Table.from_batches(batches, schema=schema).combine_chunks()
    return table.to_batches()[0] if table.num_rows else pa.RecordBatch.from_pylist([], schema=schema)


def _relation_columns(trees: Sequence[X.Expr | None]) -> list[str]:
    out: dict[str, None] = {}
    for tree in trees:
        if tree is not None:
            for f in X.references(tree):
                if f.relation == 1:
                    out[f.path[0]] = None
    return list(out)


def source_columns(plan: MergePlan) -> list[str]:
    """The source columns the matched clauses' conditions read (relation 1 of the pair scope)."""
    return _relation_columns([c.condition for c in plan.matched])


def _residual_columns(plan: MergePlan) -> list[str]:
    return _relation_columns([plan.residual])


def _true(value: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(value, False).to_numpy(zero_copy_only=False), dtype=bool)


def first_clause(clauses: Sequence[BoundClause], ev: Evaluation, n: int) -> np.ndarray:
    """For each row, the index of the first clause whose condition holds (-1: none); a clause is evaluated only
    on the rows no earlier clause took, as Spark's CASE over the clauses does."""
    chosen = np.full(n, NO_CLAUSE, dtype=np.int32)
    open_rows = np.arange(n, dtype=np.int64)
    for i, c in enumerate(clauses):
        if len(open_rows) == 0:
            break
        if c.condition is None:
            chosen[open_rows] = i
            break
        sub = ev if len(open_rows) == n else ev.take(open_rows)
        hit = _true(evaluate(c.condition, sub, c.text))
        chosen[open_rows[hit]] = i
        open_rows = open_rows[~hit]
    return chosen


def _concat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


@dataclass
class Pairing:
    """What the first pass keeps of one group's pairs while they come (chunk by chunk of the source): per pair the
    condition holds for, its target row (for the duplicate rule); per pair a matched clause took, the target row,
    the clause and the source row; and, when ``NOT MATCHED BY SOURCE`` clauses must know the target rows nothing
    matched, one flag per target row."""

    paired: list[np.ndarray] = field(default_factory=list)
    taken: list[np.ndarray] = field(default_factory=list)
    clauses: list[np.ndarray] = field(default_factory=list)
    sources: list[np.ndarray] = field(default_factory=list)
    seen: np.ndarray | None = None

    @classmethod
    def of(cls, plan: MergePlan, rows: int) -> Pairing:
        return cls(seen=np.zeros(rows, dtype=bool) if plan.not_matched_by_source else None)

    def add(
        self,
        plan: MergePlan,
        narrow: pa.RecordBatch,
        t_idx: np.ndarray,
        source_rows: pa.RecordBatch,
        s_idx: np.ndarray,
        offset: int,
        now_micros: int,
        ev: Evaluation | None = None,
    ) -> None:
        """Pairs (rows of ``narrow``, rows of ``source_rows`` whose first row is source row ``offset``) the whole
        merge condition holds for: the first ``WHEN MATCHED`` clause whose condition holds is chosen for each
        (``ev``: the pairs' rows already taken, when the caller has them)."""
        if len(t_idx) == 0:
            return
        if self.seen is not None:
            self.seen[t_idx] = True
        self.paired.append(t_idx)
        matched = plan.matched
        if not matched:
            return
        if ev is None:
            ev = Evaluation.of(
                narrow.take(pa.array(t_idx)),
                source_rows.select(source_columns(plan)).take(pa.array(s_idx)),
                session_time_zone=plan.session_time_zone,
                now_micros=now_micros,
            )
        which = first_clause(matched, ev, len(t_idx))
        hit = which != NO_CLAUSE
        self.taken.append(t_idx[hit])
        self.clauses.append(which[hit])
        self.sources.append(offset + s_idx[hit])

    def finish(self, plan: MergePlan, narrow: pa.RecordBatch, files: Sequence[Add], now_micros: int) -> GroupScan:
        """The group's changes once every pair is in: Delta Spark's duplicate rule checked, the target rows no
        source row matched given to the ``NOT MATCHED BY SOURCE`` clauses, the acted rows by file."""
        n = narrow.num_rows
        result = GroupScan(rows_read=n)
        acted_rows = _concat(self.taken, np.int64)
        acted_clauses = _concat(self.clauses, np.int32)
        acted_sources = _concat(self.sources, np.int64)
        _check_duplicates(plan, narrow, files, _concat(self.paired, np.int64), acted_rows, now_micros)
        if len(acted_rows) and plan.only_unconditional_delete:  # duplicates allowed: one delete per target row
            acted_rows, first = np.unique(acted_rows, return_index=True)
            acted_clauses, acted_sources = acted_clauses[first], acted_sources[first]
        nmbs = plan.not_matched_by_source
        if nmbs and self.seen is not None and n:
            unmatched = np.flatnonzero(~self.seen)
            if len(unmatched):
                target_ev = Evaluation.of(narrow, session_time_zone=plan.session_time_zone, now_micros=now_micros)
                sub = target_ev if len(unmatched) == n else target_ev.take(unmatched)
                which = first_clause(nmbs, sub, len(unmatched))
                hit = which != NO_CLAUSE
                acted_rows = np.concatenate([acted_rows, unmatched[hit]])
                acted_clauses = np.concatenate([acted_clauses, which[hit] + len(plan.matched)])
                acted_sources = np.concatenate([acted_sources, np.full(int(hit.sum()), -1, dtype=np.int64)])
        if len(acted_rows):
            result.files = _by_file(narrow, files, acted_rows, acted_clauses, acted_sources)
        return result


def scan_group(
    plan: MergePlan,
    description: TableDescription,
    files: Sequence[Add],
    source: MergeSource | None,
    matched_sources: np.ndarray | None,
    *,
    chunk_bytes: int,
    now_micros: int,
    workers: int | None = None,
) -> GroupScan:
    """The changes one group of candidate files gets; marks in ``matched_sources`` the source rows that matched
    a row of the group. Raises :class:`DuplicateMatchError` when Delta Spark's rule forbids the merge.

    What is kept grows with the pairs the join finds, not with the group (:class:`Pairing`)."""
    narrow = read_narrow(description, plan, files, workers)
    n = narrow.num_rows
    if n == 0:
        return GroupScan()
    tz = plan.session_time_zone
    found = Pairing.of(plan, n)
    if source is not None and plan.condition is not None:
        target_ev = Evaluation.of(narrow, session_time_zone=tz, now_micros=now_micros)
        target_keys = key_arrays(plan.keys, "target", target_ev)
        wanted = list(dict.fromkeys([*_residual_columns(plan), *source_columns(plan)]))
        for start, chunk in source.chunks(chunk_bytes):
            src_ev = Evaluation.of(chunk, session_time_zone=tz, now_micros=now_micros)
            source_keys = key_arrays(plan.keys, "source", src_ev)
            for t_idx, s_idx in pairs(target_keys, source_keys, n, chunk.num_rows):
                ev = None
                if len(t_idx) and plan.residual is not None:
                    ev = Evaluation.of(
                        narrow.take(pa.array(t_idx)),
                        chunk.select(wanted).take(pa.array(s_idx)),
                        session_time_zone=tz,
                        now_micros=now_micros,
                    )
                    keep = _true(evaluate(plan.residual, ev, plan.condition_text))
                    t_idx, s_idx = t_idx[keep], s_idx[keep]
                    ev = ev.take(np.flatnonzero(keep))
                if len(t_idx) == 0:
                    continue
                if matched_sources is not None:
                    matched_sources[start + s_idx] = True
                found.add(plan, narrow, t_idx, chunk, s_idx, start, now_micros, ev)
    return found.finish(plan, narrow, files, now_micros)


def _by_file(
    narrow: pa.RecordBatch, files: Sequence[Add], rows: np.ndarray, clauses: np.ndarray, sources: np.ndarray
) -> list[FileActions]:
    """The acted rows (indexes into ``narrow``) as one :class:`FileActions` per file, positions ascending."""
    file_of = np.asarray(narrow.column(FILE).to_numpy(), dtype=np.int32)[rows]
    position = np.asarray(narrow.column(POSITION).to_numpy(), dtype=np.int64)[rows]
    order = np.lexsort((position, file_of))
    file_of, position, clauses, sources = file_of[order], position[order], clauses[order], sources[order]
    out = []
    bounds = [0, *(np.flatnonzero(np.diff(file_of)) + 1).tolist(), len(file_of)]
    for lo, hi in itertools.pairwise(bounds):
        if hi > lo:
            out.append(FileActions(files[int(file_of[lo])], position[lo:hi], clauses[lo:hi], sources[lo:hi]))
    return out


def _check_duplicates(
    plan: MergePlan,
    narrow: pa.RecordBatch,
    files: Sequence[Add],
    paired: np.ndarray,
    taken: np.ndarray,
    now_micros: int,
) -> None:
    """Delta Spark's duplicate-match rule over one group's pairs (every target row is in one group only)."""
    if not plan.matched and not plan.not_matched_by_source:
        return  # insert-only: Delta Spark's insert-only path pairs nothing with the target
    if plan.only_unconditional_delete:
        return
    counted = taken if plan.matched_only else paired
    if len(counted) < 2:
        return
    rows, counts = np.unique(counted, return_counts=True)
    bad = np.flatnonzero(counts > 1)
    if len(bad) == 0:
        return
    row, times = int(rows[bad[0]]), int(counts[bad[0]])
    key: dict[str, object] = {}
    one = Evaluation.of(narrow.slice(row, 1), now_micros=now_micros)
    for k in plan.keys:
        key[X.to_sql(k.target)] = evaluate(k.target, one)[0].as_py()
    if not key:
        for name in plan.target_columns:
            key[name] = narrow.column(name)[row].as_py()
    path = files[int(narrow.column(FILE)[row].as_py())].path
    raise DuplicateMatchError(
        f"cannot MERGE: {times} source rows matched the target row with {key} (in {path}) and would "
        f"{'update or delete' if plan.matched else 'change'} it; Delta Spark refuses such a merge as ambiguous "
        f"({len(bad)} target row(s) matched more than once). Deduplicate the source on the merge key; nothing "
        "was written",
        key=key,
        path=path,
        matches=times,
    )


__all__ = [
    "FILE",
    "NO_CLAUSE",
    "POSITION",
    "FileActions",
    "GroupScan",
    "Pairing",
    "file_rows",
    "first_clause",
    "narrow_columns",
    "narrow_spec",
    "read_narrow",
    "scan_group",
    "source_columns",
]
