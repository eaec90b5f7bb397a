"""The driver's half of ``spark.read.format("deltalog")``: which version, which columns, which files, in which tasks.

Spark asks the source three things on the driver, in Python workers beside the driver's JVM: the schema
(:func:`open_read`, which also pins the version so that the files planned later belong to the schema shown),
which pushed filters it handles, and the input partitions (:func:`plan_groups`). The log is replayed there,
once; the executors get only small rows describing files (:data:`~deltalog.spark._scan_io.FileRow`) and read
them with the data plane's reader (:mod:`deltalog.spark._scan_io`).

Files are kept when their partition values and statistics allow a row matching the pushed filters
(:func:`deltalog.data.scan.plan`, the skipping ``Snapshot.scan`` uses), then grouped into tasks by size as Spark
groups the files of its own scans: about :data:`MAX_SPLIT_BYTES` per task, each file counting at least
:data:`OPEN_COST_BYTES`, and never fewer than :data:`MIN_TASKS` tasks while there are files to spread.

With ``readChangeFeed`` the source reads the change data feed of a range of versions instead
(:class:`ChangeRead`: the range checked as :meth:`deltalog.DeltaLog.changes` checks it, the rows in the table's
latest schema plus ``_change_type``, ``_commit_version`` and ``_commit_timestamp``).

Columns: a Python data source cannot ask Spark which columns a query uses, so the source reads the schema it is
given: the table's (``schema()``), or one the caller names with ``spark.read.schema(...)``, a subset of the
table's columns by name, read alone (:func:`requested_columns`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deltalog.core.change_feed import CHANGE_COLUMNS
from deltalog.core.schema import top_level_fields
from deltalog.data.changes import with_change_columns
from deltalog.data.scan import LiveFile, TableDescription, live_files, plan
from deltalog.dml.changes import Bounds, plan_changes
from deltalog.errors import InvalidArgumentError, SchemaMismatchError
from deltalog.log import DeltaLog
from deltalog.spark import options as O
from deltalog.spark._changes_io import ChangeRow, change_row
from deltalog.spark._scan_io import FileRow, TableTask, file_row
from deltalog.spark.options import Parsed, non_negative
from deltalog.spark.predicates import pushed_expression

#: bytes of files one read task aims for (Spark's ``spark.sql.files.maxPartitionBytes``)
MAX_SPLIT_BYTES = 128 * 1024 * 1024
#: what opening one file costs, in bytes (Spark's ``spark.sql.files.openCostInBytes``)
OPEN_COST_BYTES = 4 * 1024 * 1024
#: tasks a read is spread over at least, when it has that many files (the planner cannot ask Spark its cores)
MIN_TASKS = 8


@dataclass(frozen=True)
class TableRead:
    """One version of one table as every task reads it (pickled to the executors): where it is, how to open it,
    its Delta schema, partitioning and column-mapping mode, and the columns read (logical names)."""

    uri: str
    storage_options: Mapping[str, Any] | None
    root: str
    version: int
    schema: Mapping[str, Any]
    partition_columns: tuple[str, ...]
    column_mapping: str
    columns: tuple[str, ...]
    table_id: str = ""

    def description(self, log: DeltaLog) -> TableDescription:
        return TableDescription(log.store, self.schema, self.partition_columns, self.column_mapping)

    def task(self) -> TableTask:
        """What an executor reading this version's files needs."""
        return TableTask(
            self.root, self.storage_options, self.schema, self.partition_columns, self.column_mapping, self.columns
        )


def _version_of(parsed: Parsed) -> tuple[int | None, str | None]:
    version_text, timestamp = parsed.get("versionAsOf"), parsed.get("timestampAsOf")
    if version_text is not None and timestamp is not None:
        raise InvalidArgumentError("options versionAsOf and timestampAsOf go alone: pass one of them")
    version = non_negative("versionAsOf", version_text) if version_text is not None else None
    return version, timestamp


def open_read(parsed: Parsed, version: int | None = None) -> TableRead:
    """The version a batch read reads (``versionAsOf``, ``timestampAsOf``, else the latest; ``version`` when the
    source pinned one already) with every column of the table. A location without a table is a
    :class:`~deltalog.errors.TableNotFoundError`, a version the log no longer has a
    :class:`~deltalog.errors.VersionNotFoundError`."""
    asked, timestamp = _version_of(parsed)
    log = DeltaLog.for_table(parsed.path, parsed.storage_options)
    pinned = version is not None
    snap = log.snapshot(version=version) if pinned else log.snapshot(version=asked, timestamp=timestamp)
    names = tuple(f["name"] for f in top_level_fields(snap.schema_json))
    return TableRead(
        parsed.path,
        parsed.storage_options,
        log.store.root,
        snap.version,
        snap.schema_json,
        tuple(snap.partition_columns),
        snap.column_mapping_mode,
        names,
        snap.metadata.id,
    )


def requested_columns(read: TableRead, requested: Mapping[str, Any]) -> TableRead:
    """``read`` narrowed to the columns of ``requested`` (a Spark schema as JSON, from ``spark.read.schema``):
    each must be a column of the table (names as Spark resolves them, case-insensitively) with the table's type."""
    table = {f["name"].lower(): f for f in top_level_fields(read.schema)}
    chosen = []
    for field in top_level_fields(requested):
        found = table.get(str(field["name"]).lower())
        if found is None:
            raise SchemaMismatchError(
                f"the schema asked for names column {field['name']!r}, which the table does not have "
                f"({[f['name'] for f in top_level_fields(read.schema)]})",
                column=str(field["name"]),
            )
        if _bare(found["type"]) != _bare(field["type"]):
            raise SchemaMismatchError(
                f"the schema asked for gives column {field['name']!r} the type {field['type']!r}; the table's is "
                f"{found['type']!r}",
                column=str(field["name"]),
            )
        chosen.append(found["name"])
    return TableRead(
        read.uri,
        read.storage_options,
        read.root,
        read.version,
        read.schema,
        read.partition_columns,
        read.column_mapping,
        tuple(chosen),
        read.table_id,
    )


def _bare(t: Any) -> Any:
    """A type without nullability and field metadata, for comparing a requested type with the table's."""
    if isinstance(t, dict):
        out = {
            k: _bare(v) for k, v in t.items() if k not in ("nullable", "containsNull", "valueContainsNull", "metadata")
        }
        if "fields" in t:
            out["fields"] = [{"name": f["name"], "type": _bare(f["type"])} for f in t["fields"]]
        return out
    return t


def chosen_files(read: TableRead, filters: Iterable[Any] = ()) -> tuple[list[LiveFile], int]:
    """The live files of ``read``'s version that may hold a row passing the pushed ``filters``, and how many
    live files there are in all."""
    log = DeltaLog.for_table(read.uri, dict(read.storage_options) if read.storage_options else None)
    snap = log.snapshot(version=read.version)
    description = read.description(log)
    raw = snap.raw_files(stats=True)
    expression = pushed_expression(filters, description.read_schema().schema)
    every = live_files(raw, description)
    kept = every if expression is None else plan(raw, description, expression)
    return kept, len(every)


def groups(files: Sequence[LiveFile]) -> list[list[FileRow]]:
    """``files`` in tasks of about :data:`MAX_SPLIT_BYTES` (each file weighing its size plus
    :data:`OPEN_COST_BYTES`), at least ``min(len(files), MIN_TASKS)`` of them, in the log's order."""
    return grouped([(file_row(f.data), f.size or 0) for f in files])


def plan_groups(read: TableRead, filters: Iterable[Any] = ()) -> list[list[FileRow]]:
    """The read tasks of ``read``: the files the pushed ``filters`` leave, grouped by size."""
    kept, _ = chosen_files(read, filters)
    return groups(kept)


# ---------------------------------------------------------------------------------------------- change data
def change_read(parsed: Parsed) -> bool:
    """Whether the options ask for the change data feed (``readChangeFeed``, or its old name)."""
    return parsed.flag("readChangeFeed") or parsed.flag("readChangeData")


def change_bounds(parsed: Parsed) -> Bounds:
    """The range a batch change read asks for: a start (``startingVersion`` or ``startingTimestamp``, which
    Delta Spark requires) and an optional end (``endingVersion`` or ``endingTimestamp``)."""
    start_text, start_time = parsed.get("startingVersion"), parsed.get("startingTimestamp")
    end_text, end_time = parsed.get("endingVersion"), parsed.get("endingTimestamp")
    if start_text is None and start_time is None:
        raise InvalidArgumentError(
            "a batch read of the change data feed needs option startingVersion or startingTimestamp"
        )
    if parsed.get("versionAsOf") is not None or parsed.get("timestampAsOf") is not None:
        raise InvalidArgumentError("versionAsOf and timestampAsOf do not apply to a read of the change data feed")
    start = non_negative("startingVersion", start_text) if start_text is not None else None
    end = non_negative("endingVersion", end_text) if end_text is not None else None
    return Bounds(start, end, start_time, end_time)


@dataclass(frozen=True)
class ChangeRead:
    """A batch read of the change data feed: the table at the version read (its latest schema, which the rows
    come out in, and the columns chosen) and the range asked for."""

    table: TableRead
    bounds: Bounds

    def schema(self) -> dict[str, Any]:
        """The rows' schema (Delta JSON): the table's columns, then the three change columns."""
        fields = {f["name"]: f for f in top_level_fields(self.table.schema)}
        return with_change_columns({"fields": [fields[c] for c in self.table.columns]})


def open_changes(parsed: Parsed, version: int | None = None) -> ChangeRead:
    """The change read the options ask for, against the latest version (``version`` when pinned already)."""
    bounds = change_bounds(parsed)
    latest = O.Parsed(parsed.context, {"path": parsed.path}, parsed.storage)
    return ChangeRead(open_read(latest, version), bounds)


def change_columns(read: ChangeRead, requested: Mapping[str, Any]) -> ChangeRead:
    """``read`` narrowed to a requested schema: some of the table's columns, then the three change columns."""
    fields = top_level_fields(requested)
    names = [str(f["name"]) for f in fields]
    if names[-len(CHANGE_COLUMNS) :] != list(CHANGE_COLUMNS):
        raise SchemaMismatchError(
            f"a schema asked of the change data feed ends with {list(CHANGE_COLUMNS)}; this one has {names}"
        )
    table = requested_columns(read.table, {"fields": fields[: -len(CHANGE_COLUMNS)]})
    return ChangeRead(table, read.bounds)


def plan_change_groups(read: ChangeRead) -> list[list[ChangeRow]]:
    """The read tasks of a change read: every file of the range's versions (each range rule checked first,
    :func:`deltalog.dml.changes.plan_changes`), grouped by size in version order."""
    t = read.table
    log = DeltaLog.for_table(t.uri, dict(t.storage_options) if t.storage_options else None)
    latest = log.snapshot(version=t.version)
    plan = plan_changes(log.context, latest, read.bounds, list(t.columns))
    rows = [(change_row(f, v.version, v.timestamp), f.size or 0) for v in plan.versions for f in v.files]
    return grouped(rows)


def grouped(rows: Sequence[tuple[Any, int]]) -> list[list[Any]]:
    """Task rows (each with its file's size) in read tasks by size, in order (see :func:`groups`)."""
    if not rows:
        return []
    weights = [size + OPEN_COST_BYTES for _, size in rows]
    total = sum(weights)
    tasks = max(min(len(rows), MIN_TASKS), math.ceil(total / MAX_SPLIT_BYTES))
    split = max(OPEN_COST_BYTES, math.ceil(total / tasks))
    out: list[list[Any]] = [[]]
    filled = 0
    for (row, _), weight in zip(rows, weights, strict=True):
        if out[-1] and filled + weight > split:
            out.append([])
            filled = 0
        out[-1].append(row)
        filled += weight
    return out


__all__ = [
    "ChangeRead",
    "MAX_SPLIT_BYTES",
    "MIN_TASKS",
    "OPEN_COST_BYTES",
    "TableRead",
    "change_bounds",
    "change_columns",
    "change_read",
    "chosen_files",
    "grouped",
    "groups",
    "open_changes",
    "open_read",
    "plan_change_groups",
    "plan_groups",
    "requested_columns",
]
