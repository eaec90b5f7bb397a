"""Change rows out of the files a range of versions names: what :mod:`deltalog.core.features.change_feed` says to read,
read by the scan's reader, with the three columns every change reader adds.

Each :class:`~deltalog.core.features.change_feed.ChangeFile` is read by :func:`deltalog.data.read.read_batches`, so
deletion vectors, column mapping, typed partition values and old files' schemas are handled exactly as a table
scan handles them. A change file (``_change_data/``) is read with its own ``_change_type`` column; an added or
removed file gets the type its action gives; a file whose deletion vector changed is read for the rows whose
mark changed (the two vectors' difference, computed where the file is read, so a Spark executor does it too).
Then ``_commit_version`` and ``_commit_timestamp`` are appended.

A filter works as it does in a scan (one place for it: :class:`ChangeFilter`): files are pruned by partition
values and statistics through the scan's :class:`~deltalog.data.skipping.FilterPlan`, and rows that survive are
filtered. It may name the three change columns too, which prune nothing but filter rows.

Files are read in groups (consecutive files, of one version or several, their batches handed over in runs of up
to a full batch's rows) ``workers`` groups at a time, and the batches handed out in order
(:func:`deltalog.data.parallel.ordered`): versions in order, a version's files in its actions' order, with memory
bounded by the queue. A table of many small commits would otherwise pay a thread hand-over per file.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from deltalog.arrow.schema import arrow_type
from deltalog.core.features.change_feed import (
    CHANGE_COLUMN_TYPES,
    CHANGE_COLUMNS,
    CHANGE_TYPE,
    COMMIT_TIMESTAMP,
    COMMIT_VERSION,
    ChangeFile,
    VersionChanges,
)
from deltalog.core.schema import top_level_fields
from deltalog.data.constants import Constants
from deltalog.data.dv import read_deletion_vector
from deltalog.data.parallel import ordered
from deltalog.data.predicate import row_filter
from deltalog.data.read import BATCH_ROWS, DataFile, ReadSchema, read_batches, read_schema
from deltalog.data.skipping import Candidate, FilterPlan
from deltalog.errors import InvalidArgumentError
from deltalog.storage.base import LogStore

#: batches each in-flight group of files may have waiting for the consumer
QUEUE_DEPTH = 2
#: a version's files are read in groups of consecutive files, one group per task: at most this many files ...
GROUP_FILES = 16
#: ... or bytes (one larger file makes a group of its own)
GROUP_BYTES = 16 << 20

_CHANGE_TYPE_FIELD = {"name": CHANGE_TYPE, "type": "string", "nullable": True, "metadata": {}}


def with_change_columns(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A Delta schema (JSON) with the three change columns appended, as Delta Spark's ``cdcReadSchema``."""
    fields = [*top_level_fields(schema)]
    fields += [{"name": n, "type": CHANGE_COLUMN_TYPES[n], "nullable": True, "metadata": {}} for n in CHANGE_COLUMNS]
    return {"type": "struct", "fields": fields}


@dataclass(frozen=True)
class ChangeSchema:
    """What every file read of one range shares.

    ``rows`` reads the table's columns a file contributes (the output's and those a filter needs),
    ``change_rows`` the same plus a change file's ``_change_type``; ``schema`` is the output: the chosen table
    columns, then ``_change_type``, ``_commit_version`` and ``_commit_timestamp``.
    """

    rows: ReadSchema
    change_rows: ReadSchema
    schema: pa.Schema
    table_schema: Mapping[str, Any]
    partition_columns: tuple[str, ...]
    mode: str


def change_schema(
    schema: Mapping[str, Any],
    partition_columns: Sequence[str] = (),
    mode: str = "none",
    columns: Sequence[str] | None = None,
    also: Sequence[str] = (),
    change_type: bool = True,
) -> ChangeSchema:
    """The :class:`ChangeSchema` for a table schema (JSON), its partition columns and column-mapping mode;
    ``columns`` chooses the table columns (logical names; all by default, the change columns always follow)
    and ``also`` adds table columns read but not output (what a filter reads); without ``change_type`` the
    output has no ``_change_type`` (a reader of appended rows only). An unknown column, or a table
    column with a change column's name, is an :class:`InvalidArgumentError` naming it."""
    if isinstance(columns, str):
        raise InvalidArgumentError(f"columns must be a list of names, not the string {columns!r}")
    names = [f["name"] for f in top_level_fields(schema)]
    clash = [n for n in names if n in CHANGE_COLUMNS]
    if clash:
        raise InvalidArgumentError(f"the table has a column named {clash[0]!r}, which change rows add themselves")
    wanted = [c for c in (list(columns) if columns is not None else names) if c not in CHANGE_COLUMNS]
    output = read_schema(schema, partition_columns, mode, wanted)
    read = [*wanted, *(n for n in also if n not in wanted and n not in CHANGE_COLUMNS)]
    rows = read_schema(schema, partition_columns, mode, read)
    extended = {"type": "struct", "fields": [*top_level_fields(schema), _CHANGE_TYPE_FIELD]}
    change_rows = read_schema(extended, partition_columns, mode, [*read, CHANGE_TYPE])
    extra = [f for f in with_change_columns({"fields": []})["fields"] if change_type or f["name"] != CHANGE_TYPE]
    out = pa.schema([*output.schema, *(pa.field(f["name"], arrow_type(f["type"])) for f in extra)])
    return ChangeSchema(rows, change_rows, out, schema, tuple(partition_columns), mode)


# ---------------------------------------------------------------------------------------------- the filter
class ChangeFilter:
    """A filter on change rows in any form a scan takes (SQL text, a pyarrow Expression, DNF tuples, a mapping)
    over the table's logical columns and the change columns, checked once: which files it prunes, which table
    columns it reads, which rows it keeps."""

    def __init__(self, schema: Mapping[str, Any], partition_columns: Sequence[str], mode: str, filter: Any) -> None:
        scope = with_change_columns(schema)
        self._rows = row_filter(filter, scope, partition_columns)
        pruning = self._rows.pruning
        self._plan = FilterPlan(scope, partition_columns, mode, pruning) if pruning is not None else None
        #: the table columns (logical names) the filter reads
        self.columns = tuple(c for c in self._rows.columns if c not in CHANGE_COLUMNS)

    def surviving(self, files: Sequence[ChangeFile]) -> list[ChangeFile]:
        """The files whose partition values and statistics allow a matching row."""
        if self._plan is None:
            return list(files)
        kept = self._plan.surviving([Candidate(f.path, f.partition_values, f.stats) for f in files])
        return [files[i] for i in kept]

    def rows(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return self._rows.filter(batch)


# ---------------------------------------------------------------------------------------------- reading
def _data_file(file: ChangeFile) -> DataFile:
    if file.selected_by is not None:  # the rows come from the vectors, so no record count is needed
        return DataFile(file.path, dict(file.partition_values), file.deletion_vector)
    return DataFile.described(file.path, file.partition_values, file.deletion_vector, file.stats)


def read_change_file(
    store: LogStore,
    spec: ChangeSchema,
    file: ChangeFile,
    version: int,
    timestamp: int,
    filter: ChangeFilter | None = None,
    constants: Constants | None = None,
) -> Iterator[pa.RecordBatch]:
    """One file's change rows of ``version`` (committed at ``timestamp`` ms) in ``spec.schema``, batch by batch,
    those ``filter`` keeps; ``constants`` (one per read of many files) makes the columns of one value share
    their buffers across files. Failures are typed and name the file (a missing data, change or DV file:
    vacuumed)."""
    if constants is None:
        constants = Constants()
    rows = None if file.selected_by is None else read_deletion_vector(store, file.selected_by)
    reading = spec.change_rows if file.is_change_file else spec.rows
    version_value = pa.scalar(version, pa.int64())
    time_value = pa.scalar(timestamp * 1000, spec.schema.field(COMMIT_TIMESTAMP).type)
    kind = None if file.change_type is None else pa.scalar(file.change_type, pa.string())
    names = list(spec.schema.names)
    for batch in read_batches(store, reading, _data_file(file), rows=rows, constants=constants):
        n = batch.num_rows
        arrays = dict(zip(batch.schema.names, batch.columns, strict=True))
        if kind is not None:
            arrays[CHANGE_TYPE] = constants.column(kind, n)
        arrays[COMMIT_VERSION] = constants.column(version_value, n)
        arrays[COMMIT_TIMESTAMP] = constants.column(time_value, n)
        if filter is not None:
            kept = filter.rows(pa.RecordBatch.from_arrays(list(arrays.values()), names=list(arrays)))
            if not kept.num_rows:
                continue
            arrays = dict(zip(kept.schema.names, kept.columns, strict=True))
        yield pa.RecordBatch.from_arrays([arrays[n] for n in names], schema=spec.schema)


@dataclass(frozen=True)
class _Read:
    """One file of one version to read."""

    version: int
    timestamp: int
    file: ChangeFile


def _groups(reads: Sequence[_Read]) -> list[list[_Read]]:
    """Consecutive reads in groups of at most :data:`GROUP_FILES` files or :data:`GROUP_BYTES` bytes."""
    out: list[list[_Read]] = []
    group: list[_Read] = []
    size = 0
    for r in reads:
        if group and (len(group) >= GROUP_FILES or size + (r.file.size or 0) > GROUP_BYTES):
            out.append(group)
            group, size = [], 0
        group.append(r)
        size += r.file.size or 0
    if group:
        out.append(group)
    return out


def _read_group(
    store: LogStore,
    spec: ChangeSchema,
    reads: Sequence[_Read],
    filter: ChangeFilter | None,
    constants: Constants,
) -> Iterator[list[pa.RecordBatch]]:
    """The change rows of a group of files, in runs of batches holding up to
    :data:`~deltalog.data.read.BATCH_ROWS` rows: one hand-over to the consumer per run, not per file."""
    pending: list[pa.RecordBatch] = []
    rows = 0
    for r in reads:
        for batch in read_change_file(store, spec, r.file, r.version, r.timestamp, filter, constants):
            if rows and rows + batch.num_rows > BATCH_ROWS:
                yield pending
                pending, rows = [], 0
            pending.append(batch)
            rows += batch.num_rows
    if pending:
        yield pending


def _flat(runs: Iterator[list[pa.RecordBatch]]) -> Iterator[pa.RecordBatch]:
    for run in runs:
        yield from run


def read_changes(
    store: LogStore,
    spec: ChangeSchema,
    versions: Sequence[VersionChanges],
    filter: ChangeFilter | None = None,
    workers: int | None = None,
) -> pa.RecordBatchReader:
    """The change rows of ``versions`` (in order) as one stream in ``spec.schema``: files pruned by ``filter``,
    read in groups ``workers`` at a time, batches handed out in version and file order (a batch never holds
    two versions' rows)."""
    reads = []
    for v in versions:
        files = list(v.files) if filter is None else filter.surviving(list(v.files))
        reads += [_Read(v.version, v.timestamp, f) for f in files]
    constants = Constants()
    producers = [functools.partial(_read_group, store, spec, group, filter, constants) for group in _groups(reads)]
    return pa.RecordBatchReader.from_batches(spec.schema, _flat(ordered(producers, workers, QUEUE_DEPTH)))


__all__ = [
    "GROUP_BYTES",
    "GROUP_FILES",
    "QUEUE_DEPTH",
    "ChangeFilter",
    "ChangeSchema",
    "change_schema",
    "read_change_file",
    "read_changes",
    "with_change_columns",
]
