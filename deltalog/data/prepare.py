"""The rule side of writing: an input batch matched to the table's columns, checked against every row rule,
and split by partition, before any of it is buffered.

Per batch:

1. the columns are matched to the table's by name and safely cast (:mod:`deltalog.data.types`);
2. identity columns get their next values (:mod:`deltalog.data.identity_values`), generated and default
   columns are computed or checked, NOT NULL fields (nested too) enforced, CHECK
   constraints and invariants evaluated (:mod:`deltalog.data.constraints`): a violation raises a
   :class:`~deltalog.errors.ConstraintViolationError` and nothing of the batch is written;
3. rows are grouped by partition values (:func:`~deltalog.data.batches.group_rows`).

A :class:`BatchPreparer` touches no state but its name-matching cache, so the file writer runs it on a worker
thread, one batch ahead of the encoding.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from deltalog.arrow.stats import indexed_column_limit, select_leaves, stats_column_names
from deltalog.core.files.partitions import serialize_partition_value
from deltalog.data.batches import group_rows
from deltalog.data.constraints import check_rows, fill_columns, table_rules
from deltalog.data.identity_values import IdentityValues
from deltalog.data.target import WriteTarget, physical_path
from deltalog.data.types import check_not_null, check_void, conform_array, match_names, plan_schema
from deltalog.errors import InvalidArgumentError, SchemaMismatchError, UnsupportedFeatureError

PartitionValues = tuple[str | None, ...]


@dataclass(frozen=True)
class Prepared:
    """One input batch, checked and split: its row count and (serialized partition values, rows) per
    partition, ready to be buffered."""

    num_rows: int
    parts: tuple[tuple[PartitionValues, pa.RecordBatch], ...]


class BatchPreparer:
    """The table's columns as a file stores them, its row rules, and the checks and split of each batch.

    ``rules_checked``: the caller evaluated the CHECK constraints, invariants, generated and default columns
    on every row in full Spark SQL (the Spark writer does, on its executors); NOT NULL is still enforced here.
    ``change_data``: change data files hold rows already checked when they were written.
    """

    def __init__(self, target: WriteTarget, *, rules_checked: bool = False, change_data: bool = False) -> None:
        conf = target.configuration
        self.plans = plan_schema(target.schema, target.column_mapped)
        self.rules = (
            ()
            if rules_checked or change_data
            else table_rules(target.schema, conf, self.plans, target.session_time_zone)
        )
        by_name = {p.name: p for p in self.plans}
        unknown = [c for c in target.partition_columns if c not in by_name]
        if unknown:
            raise SchemaMismatchError(f"partition columns {unknown} are not columns of the table", column=unknown[0])
        self.partition_plans = [by_name[c] for c in target.partition_columns]
        for p in self.partition_plans:
            if p.kind != "leaf" or p.delta_type == "binary":
                raise UnsupportedFeatureError(
                    f"column {p.name} ({p.kind if p.kind != 'leaf' else p.delta_type}) cannot be a partition column",
                    feature="partitionColumns",
                )
        self.stored = [p for p in self.plans if p.kind != "void"]
        #: materialized row-tracking columns a rewrite carries over (not table columns: no rules, no stats)
        self.tracked = [pa.field(name, pa.int64()) for name in target.row_tracking or ()]
        self.file_schema = pa.schema([*(p.file_field for p in self.stored), *self.tracked])
        self.partition_names = [p.physical for p in self.partition_plans]
        partition_physical = set(self.partition_names)
        #: what a data file holds: the stored columns but the partition columns, under physical names
        self.data_schema = pa.schema([f for f in self.file_schema if f.name not in partition_physical])
        named = stats_column_names(conf)
        physical_named = None if named is None else [q for n in named if (q := physical_path(self.plans, n))]
        table_columns = pa.schema([f for f in self.data_schema if f not in self.tracked])
        self.stats_leaves = select_leaves(
            table_columns, indexed_column_limit(conf), physical_named, target.clustering_columns
        )
        self._matches: dict[pa.Schema, list[int | None]] = {}
        #: identity values this writer generates (none for change files, or rows whose rules a caller checked)
        self.identity = IdentityValues({} if rules_checked or change_data else target.schema)

    def prepare(self, batch: pa.RecordBatch, *, kept: bool = False) -> Prepared:
        """``batch`` checked against the table's rules and split by partition. ``kept``: rows whose identity
        values stay as they are (rows the table held, copied or updated; new rows already given values by
        :meth:`~deltalog.data.identity_values.IdentityValues.complete`), neither generated nor taken as explicit."""
        if not isinstance(batch, pa.RecordBatch):
            raise InvalidArgumentError(f"write() takes a pyarrow RecordBatch, not {type(batch).__name__}")
        physical, missing = self._conform(batch)
        if self.identity and not kept:
            physical = self.identity.fill(physical, missing)
        physical = fill_columns(self.rules, physical, self.plans, missing)
        for plan, column in zip(self.stored, physical.columns[: len(self.stored)], strict=True):
            check_not_null(column, plan, plan.name, None)
        check_rows(self.rules, physical, self.plans)
        if physical.num_rows == 0:
            return Prepared(0, ())
        return Prepared(physical.num_rows, tuple(self._split(physical)))

    def _conform(self, batch: pa.RecordBatch) -> tuple[pa.RecordBatch, set[str]]:
        tracked: list[pa.Array] = []
        if self.tracked:
            names = batch.schema.names
            tracked = [
                batch.column(names.index(f.name)).cast(f.type) if f.name in names else pa.nulls(batch.num_rows, f.type)
                for f in self.tracked
            ]
            kept = {f.name for f in self.tracked}
            batch = batch.select([i for i, n in enumerate(names) if n not in kept])
        found = self._matches.get(batch.schema)
        if found is None:
            found = match_names(batch.schema.names, self.plans)
            self._matches[batch.schema] = found
        arrays, missing = [], set()
        for plan, index in zip(self.plans, found, strict=True):
            if index is None:
                missing.add(plan.name)
            given = pa.nulls(batch.num_rows) if index is None else batch.column(index)
            if plan.kind == "void":
                check_void(given, plan.name)
            else:
                arrays.append(conform_array(given, plan, plan.name))
        arrays.extend(tracked)
        return pa.RecordBatch.from_arrays(arrays, schema=self.file_schema), missing

    def _split(self, batch: pa.RecordBatch) -> Iterator[tuple[PartitionValues, pa.RecordBatch]]:
        """(serialised partition values, data rows) per partition of ``batch``."""
        data = batch.select([f.name for f in self.data_schema])
        if not self.partition_plans:
            yield (), data
            return
        keys = batch.select(self.partition_names)
        for values, rows in group_rows(keys, data):
            yield tuple(serialize_partition_value(v) for v in values), rows


__all__ = ["BatchPreparer", "PartitionValues", "Prepared"]
