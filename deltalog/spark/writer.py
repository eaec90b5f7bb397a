"""Writing a Spark DataFrame to a Delta table: executors write parquet, the driver commits through deltalog.

Flow of :func:`write`:

1. The driver opens the table (creating it from the DataFrame's schema if there is none), checks the
   DataFrame's schema, ``partition_by`` and ``replace_where`` against it, and starts one transaction, all
   *before* any file is written. An exactly-once batch (``app_id``/``app_version``) the table already holds
   stops here: nothing is written.
2. Spark SQL evaluates the table's row rules on the executors, as Delta Spark does: a column the DataFrame
   lacks that is generated (``delta.generationExpression``) or has a default (``CURRENT_DEFAULT``) is computed
   from its expression, and every CHECK constraint, invariant and generation expression becomes one boolean
   column (:func:`row_rules`); the full Spark SQL language is available, not a subset.
3. Executors write the files inside ``mapInArrow`` with the one data-file writer (:mod:`deltalog.data.files`
   through :mod:`deltalog.spark._files`: hive-style partition directories, ``part-<uuid>.snappy.parquet``,
   physical names and field ids on column-mapped tables, Delta statistics keyed physically, NOT NULL
   columns). A batch with a rule column false **or null** fails its task before any of it is written, and the
   job with a :class:`~deltalog.errors.ConstraintViolationError` naming the rule; nothing is committed. Each
   task sends back one small row per file: path, partition values, size, stats. The data never passes
   through the driver.
4. The driver commits the adds (and, for an overwrite, the removes from ``txn.remove_where``, which records
   the read predicate) as one version, stating that the rows were checked (``data_validated="checked"``,
   recorded in commitInfo). Files of a commit that is definitely refused (a conflict, an invalid
   commit, an exactly-once batch committed meanwhile) are deleted; after ``CommitStateUnknownError`` nothing
   is deleted, since the commit may have landed.

An overwrite (whole table or ``replace_where``) declares an intent (:mod:`deltalog.table.declared_intents`) and runs
``txn.check_early()`` on the driver before the write stage, after it and just before the commit: a conflict
found early raises the same typed error the commit would, after deleting the files already written.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from deltalog.core import actions as A
from deltalog.core.constraints import CHECKED, GENERATION, row_rules
from deltalog.core.feature_gate import APPEND, OVERWRITE, check_operation
from deltalog.core.partitions import conditions_from_where, parse_value, typed_conditions
from deltalog.core.schema import check_partition_columns, top_level_fields
from deltalog.data.constraints import DEFAULT
from deltalog.data.files import WriteTarget
from deltalog.data.locate import resolve
from deltalog.data.output import delete_files
from deltalog.errors import (
    ConcurrentModificationError,
    InvalidArgumentError,
    InvalidCommitError,
    SchemaMismatchError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedExpressionError,
)
from deltalog.log import DeltaLog
from deltalog.spark._files import RESULT_DDL, PathList, RowCheck, checked_batches, raise_carried, write_partitioned

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from deltalog.table.snapshot import Snapshot

MODES = ("append", "overwrite")
_STRUCTURAL = ("nullable", "containsNull", "valueContainsNull", "metadata")


@dataclass(frozen=True)
class WriteResult:
    """What :func:`write` did; ``version`` is None when nothing was committed (``skipped``)."""

    version: int | None
    skipped: bool
    num_files: int
    num_rows: int
    num_removed: int
    paths: tuple[str, ...]  # as in the log (URI-encoded, relative)


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


def computed_columns(table_schema: dict[str, Any]) -> dict[str, str]:
    """Top-level columns the writer computes when the data lacks them: name -> generation or default SQL."""
    out = {}
    for f in top_level_fields(table_schema):
        meta = f.get("metadata") or {}
        for key in (GENERATION, DEFAULT):
            if key in meta:
                out[f["name"]] = str(meta[key])
                break
    return out


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


def _check_partitions(partition_by: Sequence[str], schema: dict[str, Any]) -> None:
    """The Delta rules for partition columns (:func:`~deltalog.core.schema.check_partition_columns`), and
    this writer's own: it has no string form for binary partition values."""
    fields = {f["name"]: f for f in top_level_fields(schema)}
    unknown = [c for c in partition_by if c not in fields]
    if unknown:
        raise SchemaMismatchError(f"partition columns {unknown} are not columns of the data ({sorted(fields)})")
    check_partition_columns(schema, partition_by)
    binary = [c for c in partition_by if fields[c]["type"] == "binary"]
    if binary:
        raise InvalidArgumentError(
            f"columns {binary} cannot be partition columns: the Spark writer has no binary partition values"
        )


def _open(log: DeltaLog) -> Snapshot | None:
    try:
        return log.snapshot()
    except TableNotFoundError:
        return None


def _prepare_table(
    log: DeltaLog,
    data_schema: dict[str, Any],
    partition_by: Sequence[str] | None,
    configuration: Mapping[str, str] | None,
) -> Snapshot:
    snap = _open(log)
    if snap is None:
        parts = list(partition_by or ())
        _check_partitions(parts, data_schema)
        # another job may create it first: its schema is then checked below like any existing table's
        with contextlib.suppress(TableAlreadyExistsError):
            log.create(orjson.dumps(data_schema).decode(), partition_columns=parts, configuration=configuration)
        snap = log.snapshot()
    if partition_by is not None and list(partition_by) != snap.partition_columns:
        raise SchemaMismatchError(
            f"partition_by {list(partition_by)} differs from the table's partition columns {snap.partition_columns}"
        )
    check_schema(snap.schema_json, data_schema)
    return snap


def _check_writable(snap: Snapshot, mode: str, location: str) -> None:
    """The feature gate for this write, before any task runs: the rule modules the commit path applies (row
    rules are attested by Spark SQL on the executors, physical names checked again at commit)."""
    operation = APPEND if mode == "append" else OVERWRITE
    source = f"{location}/_delta_log"
    check_operation(operation, snap.protocol, snap.configuration, snap.schema_json, source)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _analysed(df: DataFrame, column: Column, label: str, expression: str, feature: str) -> Column:
    """``column`` after Spark has analysed it against ``df``; an expression Spark cannot evaluate there (a
    parse error, an unknown column or function, a type error) refuses the write by rule name."""
    try:
        df.select(column).schema  # noqa: B018 - analysis happens here, on the driver, before any task runs
    except Exception as exc:  # pyspark's AnalysisException / ParseException; their classes vary by version
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UnsupportedExpressionError(
            f"cannot write: {label} ({expression}) is not an expression Spark can evaluate on this table: {first}",
            constraint=label,
            expression=expression,
            feature=feature,
        ) from None
    return column


def row_rules_applied(df: DataFrame, snap: Snapshot) -> tuple[DataFrame, list[RowCheck]]:
    """``df`` as the table's columns (generated and default ones computed when missing) plus one boolean
    column per row rule, true where the row passes; and the rules, for the executors' check.

    A CHECK constraint or invariant passes where it is true (false or null fails, as in Delta Spark's
    ``CheckDeltaInvariant``); a generated column where ``column <=> expression``.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    spark_schema = StructType.fromJson(snap.schema_json)
    computed = computed_columns(snap.schema_json)
    present = set(df.columns)
    columns = []
    for field in spark_schema.fields:
        if field.name in present:
            columns.append(F.col(_quoted(field.name)))
            continue
        text = computed[field.name]  # check_schema let only computed columns be missing
        label = f"generated column {field.name}" if GENERATION in field.metadata else f"default of {field.name}"
        feature = "generatedColumns" if GENERATION in field.metadata else "allowColumnDefaults"
        value = F.expr(text).cast(field.dataType).alias(field.name)
        columns.append(_analysed(df, value, label, text, feature))
    table = df.select(*columns)
    checks: list[RowCheck] = []
    rule_columns = []
    for i, rule in enumerate(row_rules(snap.configuration, snap.schema_json)):
        name = f"__deltalog_rule_{i}"
        if rule.kind == "generated":
            label, feature = rule.name, "generatedColumns"
            passes = F.expr(f"{_quoted(str(rule.column))} <=> ({rule.expression})")
        else:
            label = f"CHECK constraint {rule.name}" if rule.kind == "check" else rule.name
            feature = "checkConstraints" if rule.kind == "check" else "invariants"
            passes = F.coalesce(F.expr(f"({rule.expression})").cast("boolean"), F.lit(False))
        rule_columns.append(_analysed(table, passes.alias(name), label, rule.expression, feature))
        checks.append(RowCheck(name, label, rule.expression))
    return table.select("*", *rule_columns), checks


def check_first(checked: DataFrame, checks: Sequence[RowCheck], data: Sequence[str]) -> None:
    """Raise the :class:`ConstraintViolationError` of the first row that breaks a rule, if any, before any
    file is written: a job whose tasks found it only while writing would leave the files of tasks that had
    already finished (the accumulator that reports them can miss a task cancelled as it completes). One
    extra pass over the input, made only for tables with rules."""
    from pyspark.sql import functions as F

    if not checks:
        return
    passes = functools.reduce(lambda a, b: a & b, [F.col(c.column) for c in checks])
    offending = checked.where(~passes).limit(1).toArrow()
    for _ in checked_batches(iter(offending.to_batches()), checks, data):
        pass


def _check_rows_match(where: Mapping[str, Any], snap: Snapshot, adds: Sequence[A.Add]) -> None:
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


def _where_text(where: Mapping[str, Any] | None) -> str | None:
    if not where:
        return None
    return " AND ".join(
        f"{c.column} {c.op} {list(c.values) if len(c.values) > 1 else c.values[0]!r}"
        for c in conditions_from_where(where)
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
    snap = _prepare_table(log, data_schema, partition_by, configuration)
    _check_writable(snap, mode, log.location)
    _check_where(replace_where, snap.partition_columns)

    txn = log.start_transaction(app_id=app_id, app_version=app_version)
    if txn.already_committed:
        txn.commit(operation="WRITE")
        return WriteResult(None, True, 0, 0, 0, ())
    snap = txn.snapshot
    removes = txn.remove_where(dict(replace_where) if replace_where else None) if mode == "overwrite" else []
    early = (
        early_conflicts and mode == "overwrite"
    )  # declare an intent, check between stages (deltalog.table.declared_intents)
    if early:
        txn.declare_intent(where=dict(replace_where) if replace_where else None)

    partition_columns = snap.partition_columns
    try:
        checked, checks = row_rules_applied(df, snap)
    except BaseException:
        txn.abort()
        raise
    reported = df.sparkSession.sparkContext.accumulator([], PathList())
    fn = functools.partial(
        write_partitioned,
        root=log.store.root,
        storage_options=storage_options,
        target=WriteTarget.of(snap),
        checks=tuple(checks),
        target_rows=target_rows_per_file,
        written=reported,
    )
    try:
        if early:
            txn.check_early()  # before any file is written
        check_first(checked, checks, [f["name"] for f in top_level_fields(snap.schema_json)])
        rows = checked.mapInArrow(fn, RESULT_DDL).collect()
    except BaseException as exc:
        txn.abort()  # removes the intent
        # files of tasks that succeeded before the job failed: written for this job only, never committed
        delete_files(log.store, [resolve(log.store, p) for p in reported.value])
        if isinstance(exc, ConcurrentModificationError) and _landed(log, app_id, app_version):
            return WriteResult(None, True, 0, 0, 0, ())
        raise_carried(exc)  # a task's NOT NULL / CHECK violation, typed again (its files are gone)
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
        delete_files(log.store, written)  # nothing was attempted: the files belong to no commit
        txn.abort()
        if isinstance(exc, ConcurrentModificationError) and _landed(log, app_id, app_version):
            return WriteResult(None, True, 0, 0, 0, ())
        raise
    params: dict[str, Any] = {"mode": mode.capitalize(), "partitionBy": list(partition_columns)}
    if replace_where:
        params["predicate"] = _where_text(replace_where)
    try:
        # An overwrite replaces whole files: no row of a removed file is copied into the new ones.
        result = txn.commit(
            adds, operation="WRITE", operation_parameters=params, data_validated=CHECKED, copies_rows=False
        )
    except (ConcurrentModificationError, InvalidCommitError):
        delete_files(log.store, written)  # definitely refused; CommitStateUnknownError and the rest keep the files
        if _landed(log, app_id, app_version):
            return WriteResult(None, True, 0, 0, 0, ())
        raise
    num_rows = sum(r["num_records"] for r in rows)
    return WriteResult(result.version, result.skipped, len(adds), num_rows, len(removes), tuple(a.path for a in adds))


def _landed(log: DeltaLog, app_id: str | None, app_version: int | None) -> bool:
    """Did another run of this exactly-once batch commit it meanwhile (a refusal is then a skip)?"""
    if app_id is None or app_version is None:
        return False
    current = log.snapshot().app_version(app_id)
    return current is not None and current >= app_version


__all__ = ["SchemaMismatchError", "WriteResult", "check_schema", "write"]
