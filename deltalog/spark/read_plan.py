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

Columns: a Python data source cannot ask Spark which columns a query uses, so the source reads the schema it is
given: the table's (``schema()``), or one the caller names with ``spark.read.schema(...)``, a subset of the
table's columns by name, read alone (:func:`requested_columns`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deltalog.core.schema import top_level_fields
from deltalog.data.scan import LiveFile, TableDescription, live_files, plan
from deltalog.errors import InvalidArgumentError, SchemaMismatchError
from deltalog.log import DeltaLog
from deltalog.spark._scan_io import FileRow, file_row
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

    def description(self, log: DeltaLog) -> TableDescription:
        return TableDescription(log.store, self.schema, self.partition_columns, self.column_mapping)


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
    if not files:
        return []
    weights = [(f.size or 0) + OPEN_COST_BYTES for f in files]
    total = sum(weights)
    tasks = max(min(len(files), MIN_TASKS), math.ceil(total / MAX_SPLIT_BYTES))
    split = max(OPEN_COST_BYTES, math.ceil(total / tasks))
    out: list[list[FileRow]] = [[]]
    filled = 0
    for file, weight in zip(files, weights, strict=True):
        if out[-1] and filled + weight > split:
            out.append([])
            filled = 0
        out[-1].append(file_row(file.data))
        filled += weight
    return out


def plan_groups(read: TableRead, filters: Iterable[Any] = ()) -> list[list[FileRow]]:
    """The read tasks of ``read``: the files the pushed ``filters`` leave, grouped by size."""
    kept, _ = chosen_files(read, filters)
    return groups(kept)


__all__ = [
    "MAX_SPLIT_BYTES",
    "MIN_TASKS",
    "OPEN_COST_BYTES",
    "TableRead",
    "chosen_files",
    "groups",
    "open_read",
    "plan_groups",
    "requested_columns",
]
