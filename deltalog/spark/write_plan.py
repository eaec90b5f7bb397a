"""The driver's half of ``df.write.format("deltalog")``: plan the write before any file exists, commit it once.

Spark runs a Python sink in three places: ``writer()`` on the driver (a Python worker beside the driver's JVM)
plans the job, ``write()`` on each executor writes the task's files, ``commit()`` (or ``abort()``) on the driver
finishes it; the writer object is pickled between them. So the plan (:class:`WritePlan`) carries everything the
executors and the commit need, and the commit re-opens the table and starts its transaction at the version the
plan read (:meth:`deltalog.DeltaLog.start_transaction` with ``version``), so every commit since is checked
against the write as if one process had done it all.

:func:`plan_write`, before any file is written, in the order :func:`deltalog.write` decides:

1. options: ``mergeSchema``, ``overwriteSchema``, ``replaceWhere``, ``partitionOverwriteMode``, ``partitionBy``,
   ``txnAppId``/``txnVersion``, ``userMetadata``, ``maxRecordsPerFile``, ``compression``, ``delta.*`` table
   properties (:mod:`deltalog.spark.options`), and their combinations as Delta Spark allows them;
2. the table is opened, or when missing planned from the DataFrame's schema, ``partitionBy`` and the ``delta.*``
   options, to be created by the write's own commit (version 0 holds the table and its first files, so a job
   that fails leaves no table; :mod:`deltalog.writing.tables`, as :func:`deltalog.write` decides it);
3. an exactly-once batch the table holds is planned as a skip: tasks write nothing, the commit commits nothing;
4. the DataFrame's schema is checked against the table's (``mergeSchema`` adds new columns in the write's
   commit; ``overwriteSchema`` replaces schema and partitioning), the table's features are asked whether the
   write is allowed, and ``replaceWhere`` is checked as an expression over the table.

:func:`commit_write` stages what an overwrite removes (every file; the files of the partitions the data holds
under ``partitionOverwriteMode=dynamic``; or what ``replaceWhere`` matches: whole files for partition
predicates, matching rows by deletion vectors or rewritten files otherwise, :func:`deltalog.writing.write.replaced`)
and commits everything as one version through :func:`deltalog.dml.commit.commit_files`: files of a refused
commit are deleted, a batch that landed meanwhile is a skip. :func:`abort_write` deletes what tasks wrote,
unless the table references it (a commit whose outcome was unknown may have landed).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from deltalog.arrow.schema import to_arrow_schema
from deltalog.core import actions as A
from deltalog.core.features import column_mapping, identity
from deltalog.core.features.obligations import APPEND, METADATA, OVERWRITE
from deltalog.core.schema import top_level_fields
from deltalog.data.files import WriteTarget
from deltalog.data.locate import resolve
from deltalog.data.target import CODEC
from deltalog.dml.commit import commit_files, discard
from deltalog.dml.delete import target_of
from deltalog.dml.evolution import merged_metadata
from deltalog.dml.overwrite import check_inside, replaced, whole_files
from deltalog.dml.removal import Removal, Rewriter, finish
from deltalog.dml.rules import Declared, check_up_front
from deltalog.errors import (
    ConcurrentModificationError,
    InvalidArgumentError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)
from deltalog.log import DeltaLog
from deltalog.spark._files import RowCheck, TaskFiles
from deltalog.spark.options import (
    PARTITION_OVERWRITE_MODES,
    STREAM_WRITE,
    Parsed,
    column_list,
    non_negative,
)
from deltalog.spark.predicates import table_predicate
from deltalog.spark.row_rules import computed_columns
from deltalog.table.commit import CommitResult, NewTable
from deltalog.table.snapshot import Snapshot
from deltalog.writing.tables import begin_write, check_partition_by, check_partitions, landed, open_table

logger = logging.getLogger(__name__)

OPERATION = "WRITE"
STREAMING_OPERATION = "STREAMING UPDATE"
_STRUCTURAL = ("nullable", "containsNull", "valueContainsNull", "metadata")


@dataclass(frozen=True)
class Control:
    """What :func:`deltalog.spark.write` tells its sink beyond Delta's options (one internal option, pickled):
    the rule columns it had Spark SQL evaluate, ``replace_where`` in a form other than text (a mapping, an
    Expression, DNF tuples), a hook run just before the commit, where to leave the result, and the session's
    time zone (a Python data source is not told it)."""

    checks: tuple[RowCheck, ...] = ()
    replace_where: Any = None
    before_commit: Callable[[], None] | None = None
    result_path: str | None = None
    session_time_zone: str | None = None


@dataclass(frozen=True)
class WritePlan:
    """One planned write, pickled to the executors and to the commit: the table (location, options, version
    read, what files it takes) and what the options asked for."""

    uri: str
    storage_options: Mapping[str, Any] | None
    root: str
    read_version: int  # -1: the write creates the table (``new_table``)
    target: WriteTarget
    mode: str  # append or overwrite
    operation: str
    new_table: NewTable | None = None
    skip: bool = False
    app_id: str | None = None
    app_version: int | None = None
    replace_where: Any = None  # SQL text or a where mapping, checked
    dynamic: bool = False
    metadata: A.Metadata | None = None  # merged or replaced metadata the commit stages
    overwrite_schema: bool = False
    user_metadata: str | None = None
    max_rows_per_file: int | None = None
    checks: tuple[RowCheck, ...] = ()
    parameters: Mapping[str, Any] = field(default_factory=dict)
    before_commit: Callable[[], None] | None = None
    result_path: str | None = None

    def inside(self) -> Callable[[Any, int], None] | None:
        """The executors' check that every written row satisfies ``replaceWhere`` (None without one)."""
        if self.replace_where is None:
            return None
        schema = self.target.schema
        tz = self.target.session_time_zone
        where = table_predicate(self.replace_where, schema, self.target.partition_columns, tz)

        def check(batch: Any, seen: int) -> None:
            check_inside(batch, where, schema, seen)

        return check


@dataclass(frozen=True)
class SinkResult:
    """What one write committed (``version`` None when it was skipped)."""

    version: int | None
    skipped: bool
    num_files: int
    num_rows: int
    num_removed: int
    paths: tuple[str, ...]

    def to_json(self) -> bytes:
        return orjson.dumps(dataclasses.asdict(self))


# ---------------------------------------------------------------------------------------------- schemas
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


def check_schema(table_schema: Mapping[str, Any], data_schema: Mapping[str, Any], merge: bool = False) -> None:
    """Refuse a DataFrame whose columns or types differ from the table's, naming every offending column.
    Generated and default columns may be left out: they are computed; with ``merge`` new columns are allowed
    (``mergeSchema`` adds them). Names match as Spark matches them, regardless of case."""
    table = {f["name"].lower(): f for f in top_level_fields(table_schema)}
    data = {f["name"].lower(): f for f in top_level_fields(data_schema)}
    computed = {n.lower() for n in computed_columns(dict(table_schema))}
    problems = []
    missing = [table[n]["name"] for n in table if n not in data and n not in computed]
    extra = [data[n]["name"] for n in data if n not in table]
    if missing:
        problems.append(f"missing columns {missing}")
    if extra and not merge:
        problems.append(f"columns not in the table {extra} (option mergeSchema adds them)")
    wrong = [
        f"{table[n]['name']}: table {_type_text(table[n]['type'])}, data {_type_text(data[n]['type'])}"
        for n in table
        if n in data and _bare_type(table[n]["type"]) != _bare_type(data[n]["type"])
    ]
    if wrong:
        problems.append("incompatible types: " + "; ".join(wrong))
    if problems:
        raise SchemaMismatchError(
            "the DataFrame does not match the table schema: " + ", ".join(problems),
            column=(missing or extra or [None])[0],
        )


def _replaced_metadata(snap: Any, data_schema: Mapping[str, Any], partition_by: Sequence[str] | None) -> A.Metadata:
    """``overwriteSchema``: the table's metadata with the DataFrame's schema and partitioning (``partitionBy``,
    none without it), columns mapped anew on a column-mapped table."""
    parts = list(partition_by or ())
    check_partitions(parts, data_schema)
    after = dataclasses.replace(
        snap.metadata, schema_string=orjson.dumps(dict(data_schema)).decode(), partition_columns=tuple(parts)
    )
    return column_mapping.mapped_metadata(snap.metadata, after, snap.protocol)


# ---------------------------------------------------------------------------------------------- planning
@dataclass(frozen=True)
class _Asked:
    """The write options, typed and checked against each other."""

    merge_schema: bool
    overwrite_schema: bool
    replace_where: Any
    dynamic: bool
    partition_by: tuple[str, ...] | None
    app_id: str | None
    app_version: int | None
    user_metadata: str | None
    max_rows_per_file: int | None
    compression: str | None


def _asked(parsed: Parsed, overwrite: bool, control: Control | None) -> _Asked:
    merge = parsed.flag("mergeSchema")
    overwrite_schema = parsed.flag("overwriteSchema")
    replace_where: Any = parsed.get("replaceWhere")
    if control is not None and control.replace_where is not None:
        replace_where = dict(control.replace_where)
    if isinstance(replace_where, str) and not replace_where.strip():
        raise InvalidArgumentError("option replaceWhere is empty: give a predicate, or leave the option out")
    mode_text = parsed.get("partitionOverwriteMode")
    dynamic = False
    if mode_text is not None:
        if mode_text.strip().lower() not in PARTITION_OVERWRITE_MODES:
            raise InvalidArgumentError(
                f"option partitionOverwriteMode={mode_text!r}: must be 'STATIC' or 'DYNAMIC' (any case)"
            )
        dynamic = mode_text.strip().lower() == "dynamic"
    parts_text = parsed.get("partitionBy")
    partition_by = column_list("partitionBy", parts_text) if parts_text is not None else None
    app_id, version_text = parsed.get("txnAppId"), parsed.get("txnVersion")
    streaming = parsed.context == STREAM_WRITE
    if not streaming and (app_id is None) != (version_text is None):
        raise InvalidArgumentError("options txnAppId and txnVersion go together: both make a write idempotent")
    app_version = non_negative("txnVersion", version_text) if version_text is not None else None
    if app_id is not None and not app_id.strip():
        raise InvalidArgumentError("option txnAppId is empty")
    rows_text = parsed.get("maxRecordsPerFile")
    max_rows = non_negative("maxRecordsPerFile", rows_text) if rows_text is not None else None
    if replace_where is not None and not overwrite:
        raise InvalidArgumentError("option replaceWhere needs mode('overwrite')")
    if dynamic and not overwrite:
        raise InvalidArgumentError("option partitionOverwriteMode=dynamic needs mode('overwrite')")
    if dynamic and replace_where is not None:
        raise InvalidArgumentError("options replaceWhere and partitionOverwriteMode=dynamic cannot be used together")
    if overwrite_schema and not overwrite:
        raise InvalidArgumentError("option overwriteSchema needs mode('overwrite')")
    if overwrite_schema and (replace_where is not None or dynamic):
        raise InvalidArgumentError(
            "option overwriteSchema replaces the whole table: it cannot be used with replaceWhere or "
            "partitionOverwriteMode=dynamic"
        )
    return _Asked(
        merge,
        overwrite_schema,
        replace_where,
        dynamic,
        partition_by,
        app_id,
        app_version,
        parsed.get("userMetadata"),
        max_rows or None,  # 0 is Spark's "no limit"
        parsed.get("compression"),
    )


def _check_properties(snap: Snapshot | NewTable, properties: Mapping[str, str], creates: bool) -> None:
    """``delta.*`` options shape the table a write creates; on an existing table they must say what it says."""
    if creates or not properties:
        return
    differing = {k: v for k, v in properties.items() if snap.configuration.get(k) != v}
    if differing:
        held = {k: snap.configuration.get(k) for k in differing}
        raise InvalidArgumentError(
            f"table properties {sorted(differing)} are options of a write that creates the table; the table "
            f"exists with {held}: change them with DeltaLog.set_properties"
        )


def refuse_identity(schema: Mapping[str, Any], location: str) -> None:
    """Spark's tasks write their files apart, so none can take the next identity values: deltalog.write can."""
    named = identity.columns(schema)
    if named:
        raise UnsupportedFeatureError(
            f"{location}: column {named[0].name!r} is an identity column; Spark's writer path does not generate "
            "identity values (its tasks write apart): append with deltalog.write, which does",
            feature=identity.FEATURE,
        )


def plan_write(
    parsed: Parsed,
    data_schema: Mapping[str, Any],
    overwrite: bool,
    control: Control | None = None,
    app_id: str | None = None,
) -> WritePlan:
    """Plan the write of a DataFrame of ``data_schema`` (Spark's schema JSON, which is Delta's) with the options
    ``parsed``; every refusal here comes before any file is written. ``app_id`` is the streaming sink's."""
    asked = _asked(parsed, overwrite, control)
    checks = control.checks if control is not None else ()
    rule_columns = {c.column for c in checks}
    data = dict(data_schema)
    data["fields"] = [f for f in top_level_fields(data_schema) if f["name"] not in rule_columns]
    log = DeltaLog.for_table(parsed.path, parsed.storage_options)
    existing = open_table(log)
    app = app_id if app_id is not None else asked.app_id
    version = asked.app_version if app is not None else None
    configuration = parsed.properties or None
    txn, table, done = begin_write(
        log,
        existing,
        data,
        asked.partition_by,
        configuration,
        app_id=app if version is not None else None,
        app_version=version,
        operation=OPERATION,
    )
    txn.abort()  # the commit starts its own, in the process Spark commits from, at the version read here
    skip = done is not None
    if skip:
        logger.info("the table holds batch %s of application %s: nothing is written", version, app)
    new_table = table if isinstance(table, NewTable) else None
    snap = table
    refuse_identity(snap.schema_json, log.location)
    _check_properties(snap, parsed.properties, new_table is not None)
    metadata: A.Metadata | None = None
    if asked.overwrite_schema and isinstance(snap, Snapshot):
        metadata = _replaced_metadata(snap, data, asked.partition_by)
    else:
        check_partition_by(asked.partition_by, snap)
        check_schema(snap.schema_json, data, merge=asked.merge_schema)
        if asked.merge_schema and isinstance(snap, Snapshot):
            metadata = merged_metadata(snap, to_arrow_schema(data))
    operations = {OVERWRITE if overwrite else APPEND} | ({METADATA} if metadata is not None else set())
    check_up_front(snap, log.location, sorted(operations))
    tz = control.session_time_zone if control is not None else None
    target = dataclasses.replace(target_of(snap), session_time_zone=tz)
    if metadata is not None:
        assert metadata.schema_string is not None, "a planned metadata carries its schema"
        target = dataclasses.replace(
            target, schema=orjson.loads(metadata.schema_string), partition_columns=tuple(metadata.partition_columns)
        )
    if asked.compression is not None:
        target = dataclasses.replace(target, configuration={**target.configuration, CODEC: asked.compression})
    if asked.replace_where is not None:  # refused here if it is not a predicate over the table
        table_predicate(asked.replace_where, target.schema, target.partition_columns, tz)
    streaming = parsed.context == STREAM_WRITE
    mode = "overwrite" if overwrite else "append"
    parameters: dict[str, Any]
    if streaming:
        parameters = {"outputMode": "Complete" if overwrite else "Append", "queryId": app}
    else:
        parameters = {"mode": mode.capitalize(), "partitionBy": list(target.partition_columns)}
        if asked.replace_where is not None:
            where = table_predicate(asked.replace_where, target.schema, target.partition_columns, tz)
            parameters["predicate"] = where.text
    return WritePlan(
        parsed.path,
        parsed.storage_options,
        log.store.root,
        -1 if new_table is not None else snap.version,
        target,
        mode,
        STREAMING_OPERATION if streaming else OPERATION,
        new_table=new_table,
        skip=skip,
        app_id=app,
        app_version=asked.app_version,
        replace_where=asked.replace_where,
        dynamic=asked.dynamic,
        metadata=metadata,
        overwrite_schema=asked.overwrite_schema,
        user_metadata=asked.user_metadata,
        max_rows_per_file=asked.max_rows_per_file,
        checks=tuple(checks),
        parameters=parameters,
        before_commit=control.before_commit if control is not None else None,
        result_path=control.result_path if control is not None else None,
    )


# ---------------------------------------------------------------------------------------------- committing
def _open(plan: WritePlan) -> DeltaLog:
    return DeltaLog.for_table(plan.uri, dict(plan.storage_options) if plan.storage_options else None)


def _collect(tasks: Sequence[TaskFiles | None]) -> tuple[list[A.Add], int]:
    adds = [a for t in tasks if t is not None for a in t.adds]
    return adds, sum(t.rows for t in tasks if t is not None)


def written_keys(log: DeltaLog, tasks: Sequence[TaskFiles | None]) -> list[str]:
    return [resolve(log.store, a.path) for t in tasks if t is not None for a in t.adds]


def _partition_wheres(adds: Sequence[A.Add], snap: Any) -> list[dict[str, str | None]]:
    """``partitionOverwriteMode=dynamic``: one ``where`` per partition the written files fall in (the values as
    the adds serialize them, which a ``where`` reads with the column's type; None for a null value)."""
    physical = snap.physical_names
    seen: dict[tuple[str | None, ...], dict[str, str | None]] = {}
    for add in adds:
        where = {c: add.partition_values.get(physical.get(c, c)) for c in snap.partition_columns}
        seen.setdefault(tuple(where.values()), where)
    return list(seen.values())


def _removal(log: DeltaLog, txn: Any, plan: WritePlan, adds: Sequence[A.Add], now: int) -> Removal:
    """What an overwrite takes out of the version the write read (nothing for an append)."""
    if plan.mode != "overwrite":
        return Removal()
    snap = txn.snapshot
    if plan.overwrite_schema:
        return whole_files(txn, snap, None, now)
    if plan.dynamic:
        if not snap.partition_columns:
            return whole_files(txn, snap, None, now)
        out = Removal()
        for where in _partition_wheres(adds, snap):
            part = whole_files(txn, snap, where, now)
            out.actions += part.actions
            out.touched += part.touched
            out.removed_files += part.removed_files
            out.removed_bytes += part.removed_bytes
        return out

    def rewriter_for(changes: bool, tracking: tuple[str, str] | None = None) -> Rewriter:
        return Rewriter(log.store, dataclasses.replace(plan.target, row_tracking=tracking), changes, None)

    tz = plan.target.session_time_zone
    removal, _, rewriter = replaced(log.store, txn, snap, plan.replace_where, rewriter_for, now, tz)
    try:
        finish(removal, rewriter)
    except BaseException:
        rewriter.abort()
        raise
    return removal


def _metrics(adds: Sequence[A.Add], rows: int, removal: Removal) -> dict[str, str]:
    added_bytes = sum(a.size for a in adds)
    return {
        "numFiles": str(len(adds)),
        "numOutputRows": str(rows),
        "numOutputBytes": str(added_bytes),
        "numAddedFiles": str(len(adds) + removal.added_files),
        "numAddedBytes": str(added_bytes + removal.added_bytes),
        "numRemovedFiles": str(removal.removed_files),
        "numRemovedBytes": str(removal.removed_bytes),
    }


def skipped_result() -> SinkResult:
    return SinkResult(None, True, 0, 0, 0, ())


def commit_write(plan: WritePlan, tasks: Sequence[TaskFiles | None], app_version: int | None = None) -> SinkResult:
    """Commit the files ``tasks`` wrote (and what an overwrite removes) as one version, exactly once for an
    application's batch (``app_version``: the streaming sink's batch id, else the plan's ``txnVersion``)."""
    log = _open(plan)
    adds, rows = _collect(tasks)
    written = written_keys(log, tasks)
    version = app_version if app_version is not None else plan.app_version
    app_id = plan.app_id if version is not None else None
    if plan.skip:
        discard(log.context, written)
        return skipped_result()
    # what the tasks were planned against (a streaming sink plans again for its commit: the tasks' plan counts)
    done = [t for t in tasks if t is not None]
    new_table = next((t.new_table for t in done if t.new_table is not None), None) if done else plan.new_table
    read_version = max(t.read_version for t in done) if done else plan.read_version
    if new_table is not None:  # the commit creates the table: version 0 holds it and its first files
        txn = log.start_planned_create(new_table, app_id=app_id, app_version=version)
    else:
        txn = log.start_transaction(app_id=app_id, app_version=version, version=read_version)

    def batch_landed() -> bool:
        return landed(log, app_id, version)

    if txn.already_committed:
        txn.abort()
        discard(log.context, written)
        logger.info("the table holds batch %s of application %s: its files are deleted", version, app_id)
        return skipped_result()
    removal = Removal()
    try:
        removal = Removal() if new_table is not None else _removal(log, txn, plan, adds, log.now_ms())
        txn.read_files(a.path for a in removal.touched)
        if plan.before_commit is not None:
            plan.before_commit()
    except BaseException as exc:
        discard(log.context, [*written, *removal.written])
        txn.abort()
        if isinstance(exc, ConcurrentModificationError) and batch_landed():
            return skipped_result()
        raise
    staged: list[A.Action] = [*([plan.metadata] if plan.metadata is not None else []), *removal.actions, *adds]
    result: CommitResult = commit_files(
        txn,
        staged,
        [*written, *removal.written],
        plan.operation,
        {**plan.parameters, **({"epochId": version} if plan.operation != OPERATION else {})},
        _metrics(adds, rows, removal),
        Declared(copies_rows=removal.copies_rows, row_ids_preserved=removal.row_ids_preserved),
        landed=batch_landed,
        user_metadata=plan.user_metadata,
    )
    if result.skipped:
        return skipped_result()
    return SinkResult(result.version, False, len(adds), rows, removal.removed_files, tuple(a.path for a in adds))


def abort_write(plan: WritePlan, tasks: Sequence[TaskFiles | None]) -> None:
    """Delete the files the tasks that finished wrote, unless the table references one of them: Spark aborts a
    write whose commit raised, and a commit whose outcome was unknown may have landed (VACUUM judges those)."""
    log = _open(plan)
    adds, _ = _collect(tasks)
    if not adds:
        return
    try:
        live = set(log.snapshot().files().column("path").to_pylist())
    except Exception:
        logger.warning("%s: cannot tell whether the aborted write's files are committed; they are kept", plan.uri)
        return
    if any(a.path in live for a in adds):
        logger.warning("%s: the aborted write's files are in the table (its commit landed); they are kept", plan.uri)
        return
    discard(log.context, written_keys(log, tasks))


__all__ = [
    "OPERATION",
    "STREAMING_OPERATION",
    "Control",
    "SinkResult",
    "WritePlan",
    "abort_write",
    "check_schema",
    "commit_write",
    "plan_write",
    "refuse_identity",
    "skipped_result",
    "written_keys",
]
