"""A MERGE or UPDATE as one transaction: plan, first pass, second pass, one commit through the one commit path.

The transaction starts first and everything is decided on its snapshot. In order, every refusal before any
file is written:

1. the source is materialized (:mod:`deltalog.dml.merge.source`; a MERGE only) and the statement bound
   (:mod:`deltalog.dml.merge.plan`): names, aliases, types, clause order, identity columns (never updated,
   inserted only where explicit values are allowed);
2. the table's features are asked (append-only refuses a merge that can remove or change rows, row tracking
   enabled is met by carrying row ids, identity columns by keeping copied rows' values and generating inserted
   rows' above the mark, ...);
3. the read is recorded as Delta Spark records it (the condition's target-only conjuncts, the whole table with
   a ``NOT MATCHED BY SOURCE`` clause) and the candidate files chosen by it (partitions, statistics), then
   narrowed by the source's key values (:mod:`deltalog.dml.merge.prune`);
4. the first pass runs over bounded groups of candidate files (:mod:`deltalog.dml.merge.scan`): duplicate
   matches fail here, with nothing written;
5. the second pass writes (:mod:`deltalog.dml.merge.changes`), the inserts last; the commit carries the
   removes or deletion vectors, the new files and change files, Delta Spark's parameters and metrics.

Memory is bounded by ``max_memory`` (:class:`Budget`): a quarter for the source held in memory (beyond, it
is spilled to disk), an eighth for a group's narrow read, a sixteenth each for a source chunk joined at once
and for what each file writer holds (twice: buffered and encoding); the rest is the evaluator's working set
and Arrow's allocator. A spilled source's updates wait on disk, bucketed by source partition
(:mod:`deltalog.dml.merge.deferred`).

The seam for running the passes elsewhere (Spark executors): :func:`~deltalog.dml.merge.scan.scan_group` takes
a plan (a picklable value), one group of files and the source, and returns the group's changes;
:class:`~deltalog.dml.merge.changes.Applier` applies a list of them with one writer and returns the actions;
the driver checks nothing between them but what they return, and commits once.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
import pyarrow as pa

from deltalog.actions import Add
from deltalog.core import actions as A
from deltalog.core.features import deletion_vectors, identity
from deltalog.core.features.cdf import enabled as change_data_feed
from deltalog.core.features.kinds import APPEND, DELETE, DV_DELETE, METADATA, REWRITE
from deltalog.data.predicate import RowFilter, tree_filter
from deltalog.data.read import DataFile
from deltalog.data.row_ids import Materialized, materialized
from deltalog.data.scan import TableDescription
from deltalog.data.target import WriteTarget
from deltalog.dml import rules
from deltalog.dml.commit import commit_files, discard, skipped
from deltalog.dml.delete import check_removable, describe, target_of
from deltalog.dml.evolution import merged_metadata
from deltalog.dml.matching import candidates
from deltalog.dml.merge.changes import Applier, ChangeWriter, Counts
from deltalog.dml.merge.clauses import Clause
from deltalog.dml.merge.metrics import Times, merge_metrics, merge_parameters, update_metrics, update_parameters
from deltalog.dml.merge.plan import MergePlan, plan_merge, plan_update
from deltalog.dml.merge.prune import by_source_keys
from deltalog.dml.merge.scan import FileActions, scan_group
from deltalog.dml.merge.source import MergeSource, materialize, normalised_schema
from deltalog.dml.removal import Removal
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.storage.base import LogStore
from deltalog.table.commit import CommitResult

if TYPE_CHECKING:
    from deltalog.table.commit import Transaction
    from deltalog.table.snapshot import Snapshot

log = logging.getLogger(__name__)

MERGE = "MERGE"
UPDATE = "UPDATE"
#: the default memory budget of a merge (bytes)
MAX_MEMORY = 1 << 30
#: target rows in one group of the first pass, at most (a join per group and source chunk; more saves little)
GROUP_ROWS = 1 << 19
_MIB = 1 << 20


@dataclass(frozen=True)
class Budget:
    """How ``max_memory`` is shared out (bytes)."""

    max_memory: int = MAX_MEMORY

    @property
    def source(self) -> int:
        """The source held in memory; beyond, it is spilled."""
        return self.max_memory // 4

    @property
    def chunk(self) -> int:
        """One chunk of the source joined or inserted at once."""
        return max(_MIB, self.max_memory // 16)

    @property
    def group(self) -> int:
        """One group of candidate files' narrow read."""
        return max(_MIB, self.max_memory // 8)

    @property
    def writer(self) -> int:
        """Rows each file writer may hold (buffered, and again being encoded)."""
        return max(4 * _MIB, self.max_memory // 16)


def budget_of(max_memory: int | None) -> Budget:
    if max_memory is None:
        return Budget()
    if isinstance(max_memory, bool) or not isinstance(max_memory, int) or max_memory < 16 * _MIB:
        raise InvalidArgumentError(f"max_memory is a number of bytes, at least 16 MiB, not {max_memory!r}")
    return Budget(max_memory)


def _ms(since: float) -> int:
    return int((time.monotonic() - since) * 1000)


def _groups(files: Sequence[Add], columns: int, budget: int) -> Iterator[list[Add]]:
    """Candidate files in groups whose first pass stays within ``budget``: per row, the narrow columns, its
    position and file, and the copies the keys and the join make (estimated), at most :data:`GROUP_ROWS`."""
    per_row = 24 * (columns + 2)
    limit = min(GROUP_ROWS, max(1, budget // per_row))
    group: list[Add] = []
    rows = 0
    for add in files:
        n = DataFile.of(add).num_records or 0
        if group and rows + n > limit:
            yield group
            group, rows = [], 0
        group.append(add)
        rows += n
    if group:
        yield group


def _operations(plan: MergePlan, dvs: bool, evolves: bool) -> list[str]:
    """The kinds the commit may turn out to be, whose obligations are asked before anything is written."""
    ops = {METADATA} if evolves else set()
    if plan.not_matched:
        ops.add(APPEND)
    if any(c.action == "update" for c in plan.target_clauses):
        ops.add(REWRITE)
    if any(c.action == "delete" for c in plan.target_clauses):
        ops.update({DELETE, DV_DELETE if dvs else REWRITE})
    if dvs and plan.target_clauses:
        ops.add(DV_DELETE)
    return sorted(ops)


@dataclass
class _Run:
    """One statement's state between its steps."""

    txn: Transaction
    snap: Snapshot
    plan: MergePlan
    source: MergeSource | None
    budget: Budget
    operation: str
    started: float
    materialize_ms: int = 0
    metadata: A.Metadata | None = None
    workers: int | None = None
    target_file_size: int | None = None
    #: the statement's instant (``current_timestamp()`` is one value per statement, as in Spark)
    now: int = 0
    #: where both passes run (None: here, :meth:`scan` and an :class:`Applier`)
    passes: Passes | None = None
    #: the source's rows, when the passes read it themselves
    source_rows: int = 0

    @property
    def description(self) -> TableDescription:
        return dataclasses.replace(describe(self.snap), schema=self.plan.schema)

    def read(self) -> list[Add]:
        """Record the read and return the candidate files, narrowed by the source's keys."""
        plan, snap = self.plan, self.snap
        chosen: RowFilter | None = None
        if plan.read_predicate is not None:
            chosen = tree_filter(plan.read_predicate, plan.schema, plan.partition_columns, plan.session_time_zone)
        self.txn.read(chosen)
        files = candidates(list(snap.add_actions()), describe(snap), chosen)
        if self.source is not None and plan.keys and not plan.not_matched_by_source:
            files = by_source_keys(
                plan, self.description, files, self.source, chunk_bytes=self.budget.chunk, now_micros=self.now
            )
        return files

    def scan(self, files: Sequence[Add], matched: np.ndarray | None) -> list[FileActions]:
        out: list[FileActions] = []
        for group in _groups(files, len(self.plan.target_columns) or 1, self.budget.group):
            found = scan_group(
                self.plan,
                self.description,
                group,
                self.source,
                matched,
                chunk_bytes=self.budget.chunk,
                now_micros=self.now,
                workers=self.workers,
            )
            out.extend(found.files)
        return out


@dataclass(frozen=True)
class Work:
    """What the passes of one statement need besides its candidate files and its source, decided on the driver:
    a picklable value, so that the passes can run elsewhere (Spark's executors, :mod:`deltalog.spark`). The
    store is not part of it: each place that runs a pass opens the table's own."""

    plan: MergePlan
    partition_columns: tuple[str, ...]
    column_mapping: str
    target: WriteTarget
    deletion_vectors: bool
    changes: bool
    tracking: Materialized | None
    budget: Budget
    now_micros: int
    now_ms: int
    target_file_size: int | None = None

    def description(self, store: LogStore) -> TableDescription:
        """How the statement reads the table's files through ``store``."""
        return TableDescription(store, self.plan.schema, self.partition_columns, self.column_mapping)

    def writer(self, store: LogStore) -> ChangeWriter:
        """A writer of the statement's new data and change files through ``store``."""
        return ChangeWriter(
            store,
            self.target,
            self.plan,
            changes=self.changes,
            tracking=self.tracking,
            target_file_size=self.target_file_size,
            max_buffered_bytes=self.budget.writer,
        )


@dataclass
class Applied:
    """What the passes did: the actions taking the changed rows out and adding the new ones (with the files
    written for them), the rows counted by what happened to them, and when the first pass ended; passes that
    read the source themselves (:func:`merge_elsewhere`) also say how many rows it had and how long making it
    re-readable took."""

    removal: Removal
    counts: Counts
    scanned: float
    source_rows: int | None = None
    materialize_ms: int = 0
    #: the identity values generated for inserted rows, and the high-water marks they (and explicit ones) reach
    identity_runs: tuple[identity.Run, ...] = ()
    identity_marks: Mapping[str, int] = dataclasses.field(default_factory=dict)


#: runs both passes of a statement elsewhere: (work, candidate files, the source) -> what was done; the
#: driver then commits exactly as a local run does. The source is None for an UPDATE, and for a MERGE whose
#: passes hold the source themselves (:func:`merge_elsewhere`)
Passes = Callable[[Work, Sequence[Add], MergeSource | None], Applied]


def _execute(run: _Run) -> CommitResult:
    plan, snap, txn = run.plan, run.snap, run.txn
    ctx = txn.context
    tracking = materialized(snap.protocol, snap.configuration)
    dvs = deletion_vectors.new_dvs_allowed(snap.protocol, snap.configuration)
    if plan.removes_rows:
        check_removable(snap, run.operation)
    ops = _operations(plan, dvs, run.metadata is not None)
    rules.check_up_front(snap, ctx.location, ops, row_ids_preserved=tracking is not None, identity_preserved=True)
    if run.passes is not None and plan.not_matched and identity.columns(plan.schema):
        raise UnsupportedFeatureError(
            f"{ctx.location}: a MERGE whose passes run elsewhere (Spark's executors) cannot insert into a table "
            f"with identity column {identity.columns(plan.schema)[0].name!r}: each place would generate values "
            "from the same high-water mark; run it with deltalog's own merge (DeltaLog.merge)",
            feature=identity.FEATURE,
        )
    files = run.read()
    if run.passes is not None:
        target = dataclasses.replace(target_of(snap), schema=plan.schema, session_time_zone=plan.session_time_zone)
        work = Work(
            plan,
            tuple(snap.partition_columns),
            snap.column_mapping_mode,
            target,
            dvs,
            change_data_feed(snap.protocol, snap.configuration),
            tracking,
            run.budget,
            run.now,
            ctx.now_ms(),
            run.target_file_size,
        )
        applied = run.passes(work, files if plan.target_clauses or plan.not_matched else [], run.source)
        run.materialize_ms += applied.materialize_ms
        if applied.source_rows is not None:
            run.source_rows = applied.source_rows
        if not applied.removal.actions and run.metadata is None:
            return _skip(run, applied.counts)
        return _commit(run, applied, tracking)
    matched = np.zeros(run.source.num_rows, dtype=bool) if run.source is not None else None
    changed = run.scan(files, matched) if (plan.target_clauses or plan.not_matched) and files else []
    scanned = time.monotonic()
    inserts = plan.not_matched and run.source is not None and matched is not None and not bool(matched.all())
    counts = Counts()
    if not changed and not inserts and run.metadata is None:
        return _skip(run, counts)
    target = dataclasses.replace(target_of(snap), schema=plan.schema, session_time_zone=plan.session_time_zone)
    writer = ChangeWriter(
        ctx.store,
        target,
        plan,
        changes=change_data_feed(snap.protocol, snap.configuration),
        tracking=tracking,
        target_file_size=run.target_file_size,
        max_buffered_bytes=run.budget.writer,
    )
    applier = Applier(plan, run.description, writer, run.source, run.now, counts, run.workers)
    removal = Removal()
    try:
        if changed:
            removal = (
                applier.with_deletion_vectors(ctx.store, changed, ctx.now_ms())
                if dvs
                else applier.by_rewriting(changed, ctx.now_ms())
            )
        if inserts:
            assert matched is not None
            applier.insert(matched, run.budget.chunk)
        writer.finish(removal)
    except BaseException:
        writer.abort()
        discard(ctx, removal.written)
        txn.abort()
        raise
    values = writer.rewriter.data.preparer.identity
    return _commit(
        run, Applied(removal, counts, scanned, identity_runs=values.generated, identity_marks=values.marks()), tracking
    )


def _skip(run: _Run, counts: Counts) -> CommitResult:
    """Nothing to change: no commit, the metrics still filled."""
    run.txn.abort()
    result = skipped(run.txn, run.operation)
    times = Times(_ms(run.started), run.materialize_ms, _ms(run.started), 0)
    return dataclasses.replace(result, metrics=_metrics(run, counts, Removal(), times))


def _commit(run: _Run, applied: Applied, tracking: Materialized | None) -> CommitResult:
    """The statement's one commit, through the one commit path; its files are deleted if it is refused."""
    txn, removal, counts = run.txn, applied.removal, applied.counts
    try:
        txn.read_files(a.path for a in removal.touched)
    except BaseException:
        discard(txn.context, removal.written)
        txn.abort()
        raise
    cdc = any(isinstance(a, A.Cdc) for a in removal.actions)
    metadata = run.metadata  # the evolved schema, if any, with the marks the inserted rows' values reached
    if applied.identity_marks:
        metadata = identity.metadata_with_marks(run.metadata or run.snap.metadata, applied.identity_marks)
    actions = [*([metadata] if metadata is not None else []), *removal.actions]
    declared = rules.Declared(
        copies_rows=removal.copies_rows or counts.updated > 0,
        cdc_covers_all=cdc,
        row_ids_preserved=tracking is not None,
        identity_runs=applied.identity_runs,
        identity_preserved=True,
    )
    scanned = applied.scanned
    times = Times(_ms(run.started), run.materialize_ms, int((scanned - run.started) * 1000), _ms(scanned))
    params = merge_parameters(run.plan) if run.operation == MERGE else update_parameters(run.plan)
    metrics = _metrics(run, counts, removal, times)
    result = commit_files(txn, actions, removal.written, run.operation, params, metrics, declared)
    return result if result.metrics else dataclasses.replace(result, metrics=metrics)


def _metrics(run: _Run, counts: Counts, removal: Removal, times: Times) -> dict[str, str]:
    if run.operation == MERGE:
        return merge_metrics(run.source.num_rows if run.source is not None else run.source_rows, counts, removal, times)
    return update_metrics(counts, removal, times)


def merge(
    start_transaction: Callable[[], Transaction],
    source: Any,
    predicate: Any,
    clauses: Sequence[Clause],
    *,
    source_alias: str | None = "s",
    target_alias: str | None = "t",
    schema_mode: str | None = None,
    max_memory: int | None = None,
    session_time_zone: str | None = None,
    workers: int | None = None,
    target_file_size: int | None = None,
    passes: Passes | None = None,
) -> CommitResult:
    """Merge ``source`` (anything :func:`deltalog.write` takes) into the table as one commit; see
    :meth:`deltalog.DeltaLog.merge`. ``passes`` runs the two passes elsewhere (:data:`Passes`)."""
    _check_mode(schema_mode)
    budget = budget_of(max_memory)
    started = time.monotonic()
    src = materialize(source, budget.source, budget.chunk)
    try:
        return _merge(
            start_transaction,
            src,
            src.schema,
            predicate,
            clauses,
            _Options(source_alias, target_alias, schema_mode, session_time_zone, workers, target_file_size),
            budget,
            started,
            passes,
        )
    finally:
        src.close()


def merge_elsewhere(
    start_transaction: Callable[[], Transaction],
    source_schema: pa.Schema,
    predicate: Any,
    clauses: Sequence[Clause],
    passes: Passes,
    *,
    source_alias: str | None = "s",
    target_alias: str | None = "t",
    schema_mode: str | None = None,
    session_time_zone: str | None = None,
    target_file_size: int | None = None,
) -> CommitResult:
    """A MERGE whose source the ``passes`` hold and read themselves (a Spark DataFrame joined by Spark): the
    statement is bound against ``source_schema`` (the source's Arrow schema), and everything else is a local
    run's: the read recorded, the candidate files chosen (without the source's key values: they are never
    gathered here), one commit with the same parameters, metrics and rules. The passes are given no source and
    report its row count (:class:`Applied`)."""
    _check_mode(schema_mode)
    return _merge(
        start_transaction,
        None,
        normalised_schema(source_schema),
        predicate,
        clauses,
        _Options(source_alias, target_alias, schema_mode, session_time_zone, None, target_file_size),
        Budget(),
        time.monotonic(),
        passes,
    )


def _check_mode(schema_mode: str | None) -> None:
    if schema_mode not in (None, "merge"):
        raise InvalidArgumentError(f"schema_mode must be None or 'merge', not {schema_mode!r}")


@dataclass(frozen=True)
class _Options:
    source_alias: str | None
    target_alias: str | None
    schema_mode: str | None
    session_time_zone: str | None
    workers: int | None
    target_file_size: int | None


def _merge(
    start_transaction: Callable[[], Transaction],
    src: MergeSource | None,
    schema: pa.Schema,
    predicate: Any,
    clauses: Sequence[Clause],
    options: _Options,
    budget: Budget,
    started: float,
    passes: Passes | None,
) -> CommitResult:
    now_us = time.time_ns() // 1000
    materialized_ms = _ms(started)
    txn = start_transaction()
    try:
        snap = txn.snapshot
        evolving = options.schema_mode == "merge"
        metadata = merged_metadata(snap, schema) if evolving and any(c.star for c in clauses) else None
        table_schema = (
            orjson.loads(metadata.schema_string)
            if metadata is not None and metadata.schema_string
            else snap.schema_json
        )
        plan = plan_merge(
            table_schema,
            snap.partition_columns,
            schema,
            predicate,
            clauses,
            target_alias=options.target_alias,
            source_alias=options.source_alias,
            evolving=evolving,
            session_time_zone=options.session_time_zone,
        )
    except BaseException:
        txn.abort()
        raise
    run = _Run(
        txn,
        snap,
        plan,
        src,
        budget,
        MERGE,
        started,
        materialized_ms,
        metadata,
        options.workers,
        options.target_file_size,
        now_us,
        passes,
    )
    try:
        return _execute(run)
    except BaseException:
        txn.abort()
        raise


def update(
    start_transaction: Callable[[], Transaction],
    updates: Any,
    predicate: Any = None,
    *,
    session_time_zone: str | None = None,
    max_memory: int | None = None,
    workers: int | None = None,
    target_file_size: int | None = None,
    passes: Passes | None = None,
) -> CommitResult:
    """Set ``updates`` (column -> Spark SQL value) on the rows matching ``predicate`` as one commit; see
    :meth:`deltalog.DeltaLog.update`. ``passes`` runs the two passes elsewhere (:data:`Passes`)."""
    budget = budget_of(max_memory)
    started = time.monotonic()
    now_us = time.time_ns() // 1000
    txn = start_transaction()
    try:
        snap = txn.snapshot
        plan = plan_update(
            snap.schema_json, snap.partition_columns, updates, predicate, session_time_zone=session_time_zone
        )
        run = _Run(txn, snap, plan, None, budget, UPDATE, started, 0, None, workers, target_file_size, now_us, passes)
        return _execute(run)
    except BaseException:
        txn.abort()
        raise


__all__ = [
    "MAX_MEMORY",
    "MERGE",
    "UPDATE",
    "Applied",
    "Budget",
    "Passes",
    "Work",
    "budget_of",
    "merge",
    "merge_elsewhere",
    "update",
]
