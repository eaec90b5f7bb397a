"""A table version's live rows: pruning, skipping, parallel file reads, the row filter; and handing the files
to other engines (absolute decoded URIs, a pyarrow Dataset).

The live files come in as the log gives them (``add`` actions, or the Arrow tables a snapshot lists) with a
:class:`TableDescription`; this module never opens a log. A scan keeps the files whose partition values and
statistics allow a match (:mod:`deltalog.data.skipping`), reads them ``workers`` at a time with
:mod:`deltalog.data.read` (deletion vectors, column mapping, typed partition values, schema evolution and
type widening all happen there), applies the filter to each batch and hands batches out in file order
through a bounded queue (:mod:`deltalog.data.parallel`), so memory does not grow with the table.

Why the filter runs again on rows: skipping only rules files out; a file that survives can still hold
non-matching rows. The scan's result is by construction the full scan filtered, minus files that provably
hold no matching row.
"""

from __future__ import annotations

import functools
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from deltalog.actions import Add, DeletionVector
from deltalog.core.log.codec import decode_dv
from deltalog.core.schema import physical_names, top_level_fields
from deltalog.data.arrowfs import store_filesystem
from deltalog.data.locate import is_absolute, native_path, resolve
from deltalog.data.parallel import ordered
from deltalog.data.predicate import RowFilter, row_filter
from deltalog.data.read import DataFile, FileReads, ReadSchema, read_batches, read_schema
from deltalog.data.skipping import Candidate, FilterPlan, Guarantees
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.storage.base import LogStore

#: batches each in-flight file may have waiting for the consumer
QUEUE_DEPTH = 2


@dataclass(frozen=True)
class TableDescription:
    """What reading a table version needs besides its files: the store under its root, the Delta schema
    (JSON), the partition columns (logical names) and the column-mapping mode."""

    store: LogStore
    schema: Mapping[str, Any]
    partition_columns: tuple[str, ...] = ()
    column_mapping: str = "none"

    def read_schema(self, columns: Sequence[str] | None = None) -> ReadSchema:
        return read_schema(self.schema, self.partition_columns, self.column_mapping, columns)


@dataclass(frozen=True)
class LiveFile:
    """One live file: what the reader needs, its stats (for skipping) and its size (for other engines)."""

    data: DataFile
    stats: str | None = None
    size: int | None = None

    @property
    def candidate(self) -> Candidate:
        return Candidate(self.data.path, self.data.partition_values, self.stats)


# ---------------------------------------------------------------------------------------------- the files
def _presented_dv(raw: Mapping[str, Any] | None) -> DeletionVector | None:
    return None if raw is None else DeletionVector(**raw)


def _from_table(table: pa.Table, description: TableDescription) -> list[LiveFile]:
    """Rows of a raw adds table (the log's field names, physical partition keys) or of ``Snapshot.files()``
    (snake_case names, logical partition keys)."""
    raw = "partitionValues" in table.column_names
    to_physical = {} if raw else physical_names(description.schema, description.column_mapping)
    names = ("partitionValues", "deletionVector") if raw else ("partition_values", "deletion_vector")
    out = []
    has_stats = "stats" in table.column_names
    for row in table.select(["path", *names, "size", *(["stats"] if has_stats else [])]).to_pylist():
        values = {to_physical.get(k, k): v for k, v in row[names[0]] or []}
        dv = decode_dv(row[names[1]]) if raw else _presented_dv(row[names[1]])
        add = Add(row["path"], values, row["size"] or 0, 0, True, row.get("stats"), deletion_vector=dv)
        out.append(LiveFile(DataFile.of(add), add.stats, row["size"]))
    return out


def live_files(files: pa.Table | Iterable[Add], description: TableDescription) -> list[LiveFile]:
    """The files to read, from ``add`` actions or a snapshot's Arrow file listing (raw or presented)."""
    if isinstance(files, pa.Table):
        return _from_table(files, description)
    return [LiveFile(DataFile.of(a), a.stats, a.size) for a in files]


def _location(store: LogStore, path: str) -> str:
    """Where another engine finds a log path: a local path, or the store root's URI joined with the key."""
    where = resolve(store, path)
    local = native_path(store, where)
    if local is not None:
        return local
    if is_absolute(where):
        return where
    root = store.root.rstrip("/")
    if root.startswith("file:"):  # a local table opened through a URI: a path, for the reason file_uris gives
        return f"{urllib.parse.unquote(urllib.parse.urlsplit(root).path)}/{where}"
    return f"{root}/{where}"


def file_uris(files: pa.Table | Iterable[Add], description: TableDescription) -> list[str]:
    """Every live file's absolute location, decoded once, ready for pyarrow, duckdb or polars.

    Local files are plain paths, not ``file://`` URIs: a URI would be percent-decoded a second time by the
    reader, and ``region=us%2Feast`` on disk would become ``us/east``. Remote files are the store's URI with the
    decoded key appended, as duckdb and object-store clients that do not decode take them; a reader that
    percent-decodes URIs (pyarrow's ``FileSystem.from_uri``) needs a key with ``%`` in it escaped again.
    """
    return [_location(description.store, f.data.path) for f in live_files(files, description)]


# ---------------------------------------------------------------------------------------------- scanning
def _as_row_filter(filter: pc.Expression | RowFilter, description: TableDescription) -> RowFilter:
    if isinstance(filter, RowFilter):
        return filter
    return row_filter(filter, description.schema, description.partition_columns)


def _chosen(
    live: Sequence[LiveFile], description: TableDescription, filter: RowFilter
) -> tuple[list[LiveFile], tuple[str, ...]]:
    if filter.pruning is None:
        return list(live), filter.columns
    chooser = FilterPlan(description.schema, description.partition_columns, description.column_mapping, filter.pruning)
    return [live[i] for i in chooser.surviving([f.candidate for f in live])], filter.columns


def plan(
    files: pa.Table | Iterable[Add], description: TableDescription, filter: pc.Expression | RowFilter | None = None
) -> list[LiveFile]:
    """The live files a scan with ``filter`` reads: those whose partition values and statistics allow a match."""
    live = live_files(files, description)
    return live if filter is None else _chosen(live, description, _as_row_filter(filter, description))[0]


def _file_batches(
    reads: FileReads, file: DataFile, filter: RowFilter | None, output: Sequence[str]
) -> Iterator[pa.RecordBatch]:
    for batch in read_batches(reads.store, reads.spec, file, reads=reads):
        if filter is not None:
            batch = filter.filter(batch)
            if batch.num_rows == 0:
                continue
        yield batch if len(output) == batch.num_columns else batch.select(list(output))


def scan(
    files: pa.Table | Iterable[Add],
    description: TableDescription,
    columns: Sequence[str] | None = None,
    filter: pc.Expression | RowFilter | None = None,
    workers: int | None = None,
) -> pa.RecordBatchReader:
    """The live rows of ``files`` matching ``filter`` (a pyarrow Expression, or any filter form already made a
    :class:`~deltalog.data.predicate.RowFilter`), with ``columns`` (logical names; all by default).

    Bad arguments fail here, before any file is read: an unknown column or a filter naming one is an
    :class:`InvalidArgumentError` naming it. Failures reading a file (missing or corrupt data or DV files)
    are raised by the reader when the scan reaches that file, typed and naming it.
    """
    if isinstance(columns, str):
        raise InvalidArgumentError(f"columns must be a list of names, not the string {columns!r}")
    output = description.read_schema(columns)
    live = live_files(files, description)
    spec = output
    chosen = None if filter is None else _as_row_filter(filter, description)
    if chosen is not None:
        live, needed = _chosen(live, description, chosen)
        extra = [n for n in needed if n not in output.schema.names]
        if extra:
            spec = description.read_schema([*output.schema.names, *extra])
    reads = FileReads(description.store, spec)  # what the files share, worked out once for all of them
    producers = [functools.partial(_file_batches, reads, f.data, chosen, output.schema.names) for f in live]
    return pa.RecordBatchReader.from_batches(output.schema, ordered(producers, workers, QUEUE_DEPTH))


# ---------------------------------------------------------------------------------------------- other engines
def to_pyarrow_dataset(files: pa.Table | Iterable[Add], description: TableDescription) -> ds.FileSystemDataset:
    """A pyarrow Dataset over the live files, each fragment carrying its partition values and statistics as
    its guarantee, so pyarrow, duckdb and polars prune and skip files for their own filters.

    A Dataset reads parquet files as they are, so tables it would read wrongly are refused, typed: files with
    deletion vectors (it would return deleted rows) and column mapping (it would look for logical names that
    the files do not hold). :func:`scan` reads both.
    """
    if description.column_mapping != "none":
        raise UnsupportedFeatureError(
            f"the table maps columns ({description.column_mapping} mode), which a pyarrow Dataset cannot resolve; "
            "use scan() or to_arrow()",
            feature="columnMapping",
        )
    live = live_files(files, description)
    with_dv = [f.data.path for f in live if f.data.deletion_vector is not None]
    if with_dv:
        raise UnsupportedFeatureError(
            f"{len(with_dv)} live file(s) have deletion vectors (e.g. {with_dv[0]}), which a pyarrow Dataset "
            "cannot apply: it would return deleted rows; use scan() or to_arrow()",
            feature="deletionVectors",
        )
    names = [f["name"] for f in top_level_fields(description.schema)]
    guarantees = Guarantees(description.schema, description.partition_columns, "none", names, nan_variants=False)
    store = description.store
    wheres = [resolve(store, f.data.path) for f in live]
    natives = [native_path(store, w) for w in wheres]
    paths: list[str]
    filesystem: pafs.FileSystem
    if all(n is not None for n in natives):  # every file on this machine: pyarrow's own, GIL-free reads
        paths, filesystem = [n for n in natives if n is not None], pafs.LocalFileSystem()
    else:
        paths = wheres
        filesystem = store_filesystem(store, {p: f.size for p, f in zip(paths, live, strict=True) if f.size})
    fmt = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(coerce_int96_timestamp_unit="us"))
    guarantees_per_file = guarantees.for_files([f.candidate for f in live])
    fragments = [
        fmt.make_fragment(path, filesystem, partition_expression=variants[0], file_size=f.size or None)
        for path, f, variants in zip(paths, live, guarantees_per_file, strict=True)
    ]
    return ds.FileSystemDataset(fragments, description.read_schema().schema, fmt, filesystem)


__all__ = [
    "QUEUE_DEPTH",
    "LiveFile",
    "TableDescription",
    "file_uris",
    "live_files",
    "plan",
    "scan",
    "to_pyarrow_dataset",
]
