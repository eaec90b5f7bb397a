"""Writing a Spark DataFrame to a Delta table: executors write parquet, the driver commits through deltalog.

Flow of :func:`write`:

1. The driver opens the table (or plans it from the DataFrame's schema if there is none: the commit then
   creates it, version 0 holding the table and its first files), starts one transaction and checks the
   DataFrame's schema, ``partition_by`` and ``replace_where`` against the table, all *before* any file is
   written. An exactly-once batch (``app_id``/``app_version``) the table already holds
   stops here: nothing is written. Opening, creating and the exactly-once start are :func:`deltalog.write`'s
   own (:mod:`deltalog.writing.tables`), so both writers decide them alike.
2. Spark SQL evaluates the table's row rules on the executors, as Delta Spark does: a column the DataFrame
   lacks that is generated (``delta.generationExpression``) or has a default (``CURRENT_DEFAULT``) is computed
   from its expression, and every CHECK constraint, invariant and generation expression becomes one boolean
   column (:mod:`deltalog.spark.row_rules`); the full Spark SQL language is available, not a subset. A rule
   that cannot be evaluated on a row (an arithmetic error under ANSI mode) fails the write with a
   :class:`~deltalog.errors.ConstraintViolationError` naming it.
3. Executors write the files inside ``mapInArrow`` with the one data-file writer (:mod:`deltalog.data.files`
   through :mod:`deltalog.spark._files`: hive-style partition directories, ``part-<uuid>.snappy.parquet``,
   physical names and field ids on column-mapped tables, Delta statistics keyed physically, NOT NULL
   columns). A batch with a rule column false **or null** fails its task before any of it is written, and the
   job with a :class:`~deltalog.errors.ConstraintViolationError` naming the rule; nothing is committed. Each
   task sends back one small row per file: path, partition values, size, stats. The data never passes
   through the driver.
4. The driver commits the adds (and, for an overwrite, the removes from ``txn.remove_where``, which records
   the read predicate) as one version, stating that the rows were checked (``data_validated="checked"``,
   recorded in commitInfo) through :func:`deltalog.dml.commit.commit_files`. Files of a commit that is
   definitely refused (a conflict, an invalid commit, an exactly-once batch committed meanwhile) are deleted;
   after ``CommitStateUnknownError`` nothing is deleted, since the commit may have landed.

An overwrite (whole table or ``replace_where``) declares an intent
(:mod:`deltalog.table.commit.declared_intents`) and runs ``txn.check_early()`` on the driver before the write
stage, after it and just before the commit: a conflict found early raises the same typed error the commit
would, after deleting the files already written.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import orjson

from deltalog.core import actions as A
from deltalog.core.features.obligations import APPEND, OVERWRITE
from deltalog.core.files.partitions import conditions_from_where, parse_value, typed_conditions
from deltalog.core.schema import top_level_fields
from deltalog.data.files import WriteTarget
from deltalog.data.locate import resolve
from deltalog.dml.commit import commit_files, discard
from deltalog.dml.rules import Declared, check_up_front
from deltalog.errors import (
    ConcurrentModificationError,
    InvalidArgumentError,
    SchemaMismatchError,
)
from deltalog.log import DeltaLog
from deltalog.spark._files import RESULT_DDL, PathList, raise_carried, write_partitioned
from deltalog.spark.row_rules import check_first, computed_columns, raise_rule_failure, row_rules_applied
from deltalog.writing.tables import begin_write, check_partition_by, landed, open_table, where_text

if TYPE_CHECKING:
    from pyspark.accumulators import AccumulatorParam
    from pyspark.sql import DataFrame

    from deltalog.table.commit import NewTable
    from deltalog.table.snapshot import Snapshot

MODES = ("append", "overwrite")
OPERATION = "WRITE"
_STRUCTURAL = ("nullable", "containsNull", "valueContainsNull", "metadata")


@dataclass(frozen=True)
class WriteResult:
    """What :func:`write` did; ``version`` is None when nothing was committed (``skipped``)."""

    version: int | None
    skipped: bool
    num_files: int
    num_rows: int
    num_removed: int
    paths: tuple[str, ...] = field(repr=False)  # as in the log (URI-encoded, relative); not in the repr


def _bare_type(t: Any) -> Any:
    """A Delta/Spark type JSON without nullability and metadata, for comparing types."""
    if isinstance(t, dict):
        out = {k: _bare_type(v) for k, v in t.items() if k not in _STRUCTURAL}
        if "fields" in out:
            out["fields"] = [{"name": f["name"], "type": _bare_type(f["type"])} for f in t["fields"]]
        return out
    return t


def _type_text(t: Any) -> str:
    return t if isinstance(t, str) else orjson.dumps(_bare_type(t)).decode()


def check_schema(table_schema: dict[str, Any], data_schema: dict[str, Any]) -> None:
    """Refuse a DataFrame whose columns or types differ from the table's, naming every offending column.
    Generated and default columns may be left out: they are computed."""
    table = {f["name"]: f for f in top_level_fields(table_schema)}
    data = {f["name"]: f for f in top_level_fields(data_schema)}
    computed = computed_columns(table_schema)
    problems = []
    missing = [n for n in table if n not in data and n not in computed]
    extra = [n for n in data if n not in table]
    if missing:
        problems.append(f"missing columns {missing}")
    if extra:
        problems.append(f"columns not in the table {extra} (schema evolution is not supported)")
    wrong = [
        f"{n}: table {_type_text(table[n]['type'])}, data {_type_text(data[n]['type'])}"
        for n in table
        if n in data and _bare_type(table[n]["type"]) != _bare_type(data[n]["type"])
    ]
    if wrong:
        problems.append("incompatible types: " + "; ".join(wrong))
    if problems:
        raise SchemaMismatchError("the DataFrame does not match the table schema: " + ", ".join(problems))


def _check_where(where: Mapping[str, Any] | None, partition_columns: Sequence[str]) -> None:
    if not where:
        return
    data_columns = sorted(k for k in where if k not in partition_columns)
    if data_columns:
        raise InvalidArgumentError(
            f"replace_where may only name partition columns {list(partition_columns)}, not {data_columns}: "
            "an overwrite replaces whole files, and the log cannot tell which rows of a file match a data column"
        )


def _check_rows_match(where: Mapping[str, Any], snap: Snapshot | NewTable, adds: Sequence[A.Add]) -> None:
    """replaceWhere's data check: every written file must fall inside the predicate it replaces."""
    types = {f["name"]: f["type"] for f in top_level_fields(snap.schema_json)}
    conds = typed_conditions(conditions_from_where(where), types)
    for add in adds:
        for c in conds:
            physical = snap.physical_names.get(c.column, c.column)  # adds key partition values physically
            if not c.matches(parse_value(types[c.column], add.partition_values.get(physical))):
                raise InvalidArgumentError(
                    f"written data does not match replace_where {dict(where)}: a file has partition values "
                    f"{dict(add.partition_values)}; nothing was committed"
                )


def write(
    df: DataFrame,
    table_uri: str,
    mode: str = "append",
    partition_by: Sequence[str] | None = None,
    replace_where: Mapping[str, Any] | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    storage_options: dict[str, Any] | None = None,
    *,
    configuration: Mapping[str, str] | None = None,
    target_rows_per_file: int = 1_000_000,
    before_commit: Callable[[], None] | None = None,
    early_conflicts: bool = True,
) -> WriteResult:
    """Write ``df`` to the Delta table at ``table_uri`` as one commit.

    ``mode="overwrite"`` replaces the whole table, or with ``replace_where`` (a partition-column predicate in
    :meth:`deltalog.Snapshot.files`' ``where`` form) only the matching partitions; the written rows must fall
    inside it. ``configuration`` sets table properties when the table is created. ``before_commit`` runs after
    the files are written and before the commit (a hook for orchestration and tests). An overwrite declares an
    intent and checks for conflicts between stages unless ``early_conflicts`` is False (purely optimistic).
    """
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be one of {MODES}, not {mode!r}")
    if replace_where and mode != "overwrite":
        raise InvalidArgumentError("replace_where needs mode='overwrite'")
    if (app_id is None) != (app_version is None):
        raise InvalidArgumentError("app_id and app_version go together")
    log = DeltaLog.for_table(table_uri, storage_options)
    data_schema = orjson.loads(df.schema.json())
    txn, snap, done = begin_write(
        log,
        open_table(log),
        data_schema,
        partition_by,
        configuration,
        app_id=app_id,
        app_version=app_version,
        operation=OPERATION,
    )
    if done is not None:
        return _skipped()
    creates = txn.new_table is not None
    try:
        check_partition_by(partition_by, snap)
        check_schema(snap.schema_json, data_schema)
        check_up_front(snap, log.location, [APPEND if mode == "append" else OVERWRITE])
        _check_where(replace_where, snap.partition_columns)
        # a table this commit creates has nothing to remove
        overwrite = mode == "overwrite" and not creates
        removes = txn.remove_where(dict(replace_where) if replace_where else None) if overwrite else []
        # an overwrite declares an intent and checks for conflicts between stages (table.commit.declared_intents)
        early = early_conflicts and overwrite
        if early:
            txn.declare_intent(where=dict(replace_where) if replace_where else None)
    except BaseException:
        txn.abort()
        raise

    def batch_landed() -> bool:
        return landed(log, app_id, app_version)

    partition_columns = snap.partition_columns
    try:
        applied = row_rules_applied(df, snap)
    except BaseException:
        txn.abort()
        raise
    # PathList duck-types pyspark's AccumulatorParam: its module (imported on executors) imports no pyspark
    paths_param = cast("AccumulatorParam[list[str]]", PathList())
    reported = df.sparkSession.sparkContext.accumulator([], paths_param)
    fn = functools.partial(
        write_partitioned,
        root=log.store.root,
        storage_options=storage_options,
        target=WriteTarget.of(snap),
        checks=applied.checks,
        target_rows=target_rows_per_file,
        written=reported,
    )
    try:
        if early:
            txn.check_early()  # before any file is written
        check_first(applied.frame, applied.checks, [f["name"] for f in top_level_fields(snap.schema_json)])
        rows = applied.frame.mapInArrow(fn, RESULT_DDL).collect()
    except BaseException as exc:
        txn.abort()  # removes the intent
        # files of tasks that succeeded before the job failed: written for this job only, never committed
        discard(log.context, [resolve(log.store, p) for p in reported.value])
        if isinstance(exc, ConcurrentModificationError) and batch_landed():
            return _skipped()
        raise_carried(exc)  # a task's NOT NULL / CHECK violation, typed again (its files are gone)
        raise_rule_failure(exc, applied.probes)  # a rule that cannot be evaluated on a row (ANSI arithmetic)
        raise
    adds = [
        A.Add(
            path=r["path"],
            partition_values=orjson.loads(r["partition_values"]),
            size=r["size"],
            modification_time=r["modification_time"],
            data_change=True,
            stats=r["stats"],
        )
        for r in rows
    ]
    written = [resolve(log.store, a.path) for a in adds]
    try:
        if early:
            txn.check_early()  # after the write stage
        if replace_where:
            _check_rows_match(replace_where, snap, adds)
        if before_commit is not None:
            before_commit()
        if early:
            txn.check_early()  # just before the commit
    except BaseException as exc:
        discard(log.context, written)  # nothing was attempted: the files belong to no commit
        txn.abort()
        if isinstance(exc, ConcurrentModificationError) and batch_landed():
            return _skipped()
        raise
    params: dict[str, Any] = {"mode": mode.capitalize(), "partitionBy": list(partition_columns)}
    if replace_where:
        params["predicate"] = where_text(replace_where)
    # Spark SQL evaluated every row rule on the executors; an overwrite replaces whole files: no row of a
    # removed file is copied into the new ones. A refused commit's files are deleted (kept when it may have
    # landed); one refused because this exactly-once batch landed meanwhile is a skip.
    result = commit_files(txn, adds, written, OPERATION, params, declared=Declared(), landed=batch_landed)
    if result.skipped:
        return _skipped()
    num_rows = sum(r["num_records"] for r in rows)
    return WriteResult(result.version, False, len(adds), num_rows, len(removes), tuple(a.path for a in adds))


def _skipped() -> WriteResult:
    return WriteResult(None, True, 0, 0, 0, ())


__all__ = ["SchemaMismatchError", "WriteResult", "check_schema", "write"]
