"""Writing a Spark DataFrame to a Delta table: ``df.write.format("deltalog")`` behind a function.

:func:`write` is the sink (:mod:`deltalog.spark.source`, planned and committed by
:mod:`deltalog.spark.write_plan`) with its options spelled as Python arguments, plus what only a caller on the
driver can do:

1. Spark SQL evaluates the table's row rules, as Delta Spark does: a column the DataFrame lacks that is
   generated (``delta.generationExpression``) or has a default (``CURRENT_DEFAULT``) is computed from its
   expression, and every CHECK constraint, invariant and generation expression becomes one boolean column
   (:mod:`deltalog.spark.row_rules`); the full Spark SQL language is available, not a subset. A first pass looks
   for a violating row before any file is written; a rule that cannot be evaluated on a row (an arithmetic
   error under ANSI mode) fails the write with a :class:`~deltalog.errors.ConstraintViolationError` naming it.
   (``df.write.format("deltalog")`` alone has the data-file writer evaluate the rules on the executors.)
2. An overwrite declares an intent (:mod:`deltalog.table.commit.declared_intents`) for the whole job and checks for
   conflicts before the job starts, so a doomed overwrite stops before it writes anything.
3. The sink plans the write (table opened or created, schema and ``replace_where`` checked, an exactly-once
   batch the table holds skipped), executors write files with the one data-file writer, and the driver commits
   them as one version; files of a refused commit are deleted. The sink's result comes back as a
   :class:`WriteResult`.

Errors raised inside Spark's calls (a task's NOT NULL or CHECK violation, a conflict at commit) are raised here
typed, as deltalog raised them (:func:`deltalog.spark.carried_error`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from deltalog.core.schema import top_level_fields
from deltalog.errors import DeltaLogError, InvalidArgumentError, SchemaMismatchError
from deltalog.log import DeltaLog
from deltalog.spark._files import raise_carried
from deltalog.spark.options import CONTROL, NAME
from deltalog.spark.registration import register
from deltalog.spark.row_rules import check_first, raise_rule_failure, row_rules_applied
from deltalog.spark.write_plan import Control, check_schema, refuse_identity
from deltalog.table import snapshot as snapshots
from deltalog.writing.tables import open_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, DataFrameWriter

    from deltalog.spark._files import RowCheck
    from deltalog.spark.row_rules import Probe
    from deltalog.table.commit import Transaction

MODES = ("append", "overwrite")
OPERATION = "WRITE"


@dataclass(frozen=True)
class WriteResult:
    """What :func:`write` did; ``version`` is None when nothing was committed (``skipped``)."""

    version: int | None
    skipped: bool
    num_files: int
    num_rows: int
    num_removed: int
    paths: tuple[str, ...] = field(repr=False)  # as in the log (URI-encoded, relative); not in the repr


def _options(
    writer: DataFrameWriter,
    partition_by: Sequence[str] | None,
    replace_where: Any,
    app_id: str | None,
    app_version: int | None,
    storage_options: Mapping[str, Any] | None,
    configuration: Mapping[str, str] | None,
    target_rows_per_file: int | None,
) -> DataFrameWriter:
    options: dict[str, str] = {}
    if partition_by is not None:
        options["partitionBy"] = orjson.dumps(list(partition_by)).decode()
    if isinstance(replace_where, str):
        options["replaceWhere"] = replace_where
    if app_id is not None and app_version is not None:
        options["txnAppId"], options["txnVersion"] = app_id, str(app_version)
    if target_rows_per_file is not None:
        options["maxRecordsPerFile"] = str(target_rows_per_file)
    for key, value in (configuration or {}).items():
        if not key.lower().startswith("delta."):
            raise InvalidArgumentError(f"configuration key {key!r} is not a table property (delta.*)")
        options[key] = str(value)
    for key, value in (storage_options or {}).items():
        options[key] = str(value)
    for key, value in options.items():
        writer = writer.option(key, value)
    return writer


def _early_check(log: DeltaLog, where: Any, session_time_zone: str | None) -> Transaction:
    """An overwrite's intent, declared for the whole job, after checking that nothing already dooms it."""
    txn = log.start_transaction()
    try:
        txn.declare_intent(
            where=None if where is None else snapshots.row_filter(txn.snapshot, where, session_time_zone)
        )
        txn.check_early()  # before any file is written
    except BaseException:
        txn.abort()
        raise
    return txn


def _result(path: str) -> WriteResult:
    try:
        with open(path, "rb") as found:
            doc = orjson.loads(found.read() or b"null")
    finally:
        with contextlib.suppress(OSError):
            os.remove(path)
    if not isinstance(doc, dict):
        raise DeltaLogError("the write finished without its sink reporting a result (its commit step did not run)")
    return WriteResult(
        doc["version"], doc["skipped"], doc["num_files"], doc["num_rows"], doc["num_removed"], tuple(doc["paths"])
    )


def write(
    df: DataFrame,
    table_uri: str,
    mode: str = "append",
    partition_by: Sequence[str] | None = None,
    replace_where: Any = None,
    app_id: str | None = None,
    app_version: int | None = None,
    storage_options: dict[str, Any] | None = None,
    *,
    configuration: Mapping[str, str] | None = None,
    target_rows_per_file: int | None = 1_000_000,
    before_commit: Callable[[], None] | None = None,
    early_conflicts: bool = True,
) -> WriteResult:
    """Write ``df`` to the Delta table at ``table_uri`` as one commit: ``df.write.format("deltalog")`` with these
    arguments as its options.

    ``mode="overwrite"`` replaces the whole table, or with ``replace_where`` (any filter form: Spark SQL text as
    the ``replaceWhere`` option takes it, a mapping, DNF tuples, a pyarrow Expression) only the rows it matches;
    the written rows must fall inside it. ``app_id``/``app_version`` make the write exactly once.
    ``configuration`` sets table properties when the table is created. ``before_commit`` runs after the files
    are written, just before the commit, in the process where Spark commits (a Python worker beside the driver:
    it is pickled there, so it must be picklable and coordinate across processes). An overwrite declares an
    intent and checks for conflicts before the job unless ``early_conflicts`` is False (purely optimistic).
    """
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be one of {MODES}, not {mode!r}")
    if replace_where is not None and mode != "overwrite":
        raise InvalidArgumentError("replace_where needs mode='overwrite'")
    if (app_id is None) != (app_version is None):
        raise InvalidArgumentError("app_id and app_version go together")
    from deltalog.spark.source import encode_control, result_file  # pyspark's classes: imported on first use

    register(df.sparkSession)
    log = DeltaLog.for_table(table_uri, storage_options)
    snap = open_table(log)
    frame: DataFrame = df
    checks: tuple[RowCheck, ...] = ()
    probes: tuple[Probe, ...] = ()
    if snap is not None:
        refuse_identity(snap.schema_json, log.location)
        check_schema(snap.schema_json, orjson.loads(df.schema.json()))
        applied = row_rules_applied(df, snap)
        frame, checks, probes = applied.frame, applied.checks, applied.probes
        try:
            check_first(frame, checks, [f["name"] for f in top_level_fields(snap.schema_json)])
        except Exception as exc:
            raise_rule_failure(exc, probes)  # a rule that cannot be evaluated on a row (ANSI arithmetic)
            raise
    tz = df.sparkSession.conf.get("spark.sql.session.timeZone", None)
    early = early_conflicts and mode == "overwrite" and snap is not None
    intent = _early_check(log, replace_where, tz) if early else None
    path = result_file()
    control = Control(
        checks=tuple(checks),
        replace_where=None if isinstance(replace_where, str) else replace_where,
        before_commit=before_commit,
        result_path=path,
        session_time_zone=tz,
    )
    writer = frame.write.format(NAME).mode(mode).option(CONTROL, encode_control(control))
    writer = _options(
        writer, partition_by, replace_where, app_id, app_version, storage_options, configuration, target_rows_per_file
    )
    try:
        writer.save(table_uri)
    except Exception as exc:
        with contextlib.suppress(OSError):
            os.remove(path)
        raise_carried(exc)  # a task's NOT NULL / CHECK violation, a conflict: typed again (the files are gone)
        raise_rule_failure(exc, probes)  # a rule that cannot be evaluated on a row (ANSI arithmetic)
        raise
    finally:
        if intent is not None:
            intent.abort()  # releases the intent
    return _result(path)


__all__ = ["SchemaMismatchError", "WriteResult", "check_schema", "write"]
