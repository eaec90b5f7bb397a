"""Executor side of MERGE on Spark (:mod:`deltalog.spark.distributed_merge`): pyarrow only, no pyspark.

Two bodies of Spark's ``mapInArrow``:

* :func:`read_targets`, the target side of the join: the candidate files named by their index (the rows of a
  ``spark.range``), each read by the data plane's reader exactly as the local first pass reads it (the columns
  the merge condition and the clause conditions need, each live row's physical position, its file's index).
* :func:`merge_partition`, the rest of the statement on the joined rows of one partition of Spark's shuffle,
  which holds every row of each of its files: the pairs enter the MERGE core's first pass
  (:class:`~deltalog.dml.merge.scan.Pairing`: the clauses chosen, Delta Spark's duplicate rule, the ``NOT
  MATCHED BY SOURCE`` clauses), then its second pass writes (an
  :class:`~deltalog.dml.merge.changes.Applier`: deletion vectors or rewritten files, updated rows, change
  files), and the source rows no target row matched go through the ``WHEN NOT MATCHED`` clauses. The source
  rows a task sees are those of its pairs and its unmatched rows, which the Applier reads as its source. The
  task returns one row: its :class:`~deltalog.spark._dml_io.TaskDone`, pickled.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.actions import Add
from deltalog.dml.merge.changes import Applier
from deltalog.dml.merge.execute import Work
from deltalog.dml.merge.scan import FILE, POSITION, Pairing, file_rows, narrow_spec
from deltalog.dml.merge.source import materialize
from deltalog.dml.removal import Removal
from deltalog.errors import DeltaLogError
from deltalog.spark._dml_io import TaskDone, applied, changed, guarded, reported, store_of
from deltalog.spark._files import carry_error
from deltalog.spark._scan_io import conformed
from deltalog.storage.base import LogStore

#: the column that is TRUE on every source row (NULL where an outer join found none)
PRESENT = "__deltalog_source_present"
#: the one column of a merge task's result
DONE = "done"


def target_name(i: int) -> str:
    """The joined rows' name of the target's ``i``-th column (apart from the source's names)."""
    return f"__deltalog_t{i}"


def source_name(i: int) -> str:
    """The joined rows' name of the source's ``i``-th column."""
    return f"__deltalog_s{i}"


@dataclass(frozen=True)
class Layout:
    """What the joined rows hold: the target's columns (the first pass's read of a candidate file, logical
    names), its position and file columns, the source's columns and :data:`PRESENT`."""

    target_columns: tuple[str, ...]
    source_schema: pa.Schema
    #: the Arrow schema Spark expects of the target side (its own mapping of the target columns' types)
    target_arrow: pa.Schema


def read_targets(
    ids: Iterator[pa.RecordBatch],
    *,
    root: str,
    storage_options: Any,
    work: Work,
    files: Any,
    layout: Layout,
) -> Iterator[pa.RecordBatch]:
    """The candidate files whose indexes ``ids`` holds (``files``: a Spark broadcast of them all), read as the
    first pass reads them; a deltalog error (a missing or corrupt file) travels typed."""
    try:
        store = store_of(root, storage_options)
        spec = narrow_spec(work.description(store), work.plan)
        adds: Sequence[Add] = files.value
        for batch in ids:
            for i in batch.column(0).to_pylist():
                for rows in file_rows(store, spec, adds[int(i)], int(i)):
                    yield conformed(rows, layout.target_arrow)
    except DeltaLogError as exc:
        raise carry_error(exc) from exc


def _source_rows(table: pa.Table, layout: Layout) -> pa.Table:
    arrays = [table.column(source_name(i)) for i in range(len(layout.source_schema))]
    return pa.Table.from_arrays(arrays, names=layout.source_schema.names)


def _targets(table: pa.Table, layout: Layout, adds: Sequence[Add]) -> tuple[pa.RecordBatch, list[Add], np.ndarray]:
    """The distinct target rows of ``table`` as the first pass's narrow batch (files numbered in this task's
    order), the task's files, and each joined row's target row."""
    files = np.asarray(table.column(FILE).to_numpy(zero_copy_only=False), dtype=np.int64)
    positions = np.asarray(table.column(POSITION).to_numpy(zero_copy_only=False), dtype=np.int64)
    mine, local = np.unique(files, return_inverse=True)
    keys = np.stack([local.astype(np.int64), positions], axis=1)
    distinct, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    rows = table.take(pa.array(first))
    arrays = [rows.column(target_name(i)) for i in range(len(layout.target_columns))]
    arrays += [pa.array(distinct[:, 1], pa.int64()), pa.array(distinct[:, 0].astype(np.int32), pa.int32())]
    narrow = pa.Table.from_arrays(arrays, names=[*layout.target_columns, POSITION, FILE]).combine_chunks()
    batches = narrow.to_batches()
    batch = batches[0] if batches else pa.RecordBatch.from_pylist([], schema=narrow.schema)
    return batch, [adds[int(g)] for g in mine], np.asarray(inverse, dtype=np.int64).reshape(-1)


def _statement(store: LogStore, work: Work, layout: Layout, adds: Sequence[Add], table: pa.Table) -> TaskDone:
    plan = work.plan
    is_target = table.column(FILE).is_valid()
    present = pc.fill_null(table.column(PRESENT), False)
    joined = table.filter(is_target)
    inserts = table.filter(pc.and_(pc.invert(is_target), present))
    scan_files: list[Any] = []
    paired_source = _source_rows(joined.slice(0, 0), layout)
    if joined.num_rows:
        narrow, files, target_of = _targets(joined, layout, adds)
        paired = np.asarray(pc.fill_null(joined.column(PRESENT), False).to_numpy(zero_copy_only=False), dtype=bool)
        paired_source = _source_rows(joined.filter(pa.array(paired)), layout)
        found = Pairing.of(plan, narrow.num_rows)
        source_batch = _batch(paired_source)
        found.add(
            plan,
            narrow,
            target_of[paired],
            source_batch,
            np.arange(paired_source.num_rows, dtype=np.int64),
            0,
            work.now_micros,
        )
        scan_files = found.finish(plan, narrow, files, work.now_micros).files
    inserted = _source_rows(inserts, layout) if inserts.num_rows and plan.not_matched else None
    if not scan_files and inserted is None:
        return TaskDone()
    parts = [paired_source] if scan_files else []
    if inserted is not None:
        parts.append(inserted)
    rows = pa.concat_tables(parts) if parts else paired_source
    source = materialize(rows, work.budget.source, work.budget.chunk)
    try:
        matched = np.zeros(source.num_rows, dtype=bool)
        matched[: paired_source.num_rows if scan_files else 0] = True
        body = functools.partial(_apply, store=store, work=work, files=scan_files, matched=matched)
        return applied(store, work, source, body)
    finally:
        source.close()


def _batch(table: pa.Table) -> pa.RecordBatch:
    combined = table.combine_chunks()
    batches = combined.to_batches()
    return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=combined.schema)


def _apply(applier: Applier, *, store: LogStore, work: Work, files: Sequence[Any], matched: np.ndarray) -> Removal:
    removal = changed(applier, store=store, work=work, files=files) if files else Removal()
    if not bool(matched.all()):
        applier.insert(matched, work.budget.chunk)
    return removal


def merge_partition(
    batches: Iterator[pa.RecordBatch],
    *,
    root: str,
    storage_options: Any,
    work: Work,
    files: Any,
    layout: Layout,
    written: Any = None,
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` body over one partition of the joined rows (``files``: a Spark broadcast of the
    candidate files the rows' file indexes name): one row, the task's pickled :class:`TaskDone`."""
    received = [b for b in batches if b.num_rows]
    if not received:
        return
    table = pa.Table.from_batches(received)
    store = store_of(root, storage_options)
    done = guarded(functools.partial(_statement, store, work, layout, files.value, table))
    reported(done, written)
    yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(done)], pa.binary())], names=[DONE])


__all__ = ["DONE", "PRESENT", "Layout", "merge_partition", "read_targets", "source_name", "target_name"]
