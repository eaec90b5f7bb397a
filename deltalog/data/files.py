"""The data-file writer: Arrow batches in, parquet files in the table's store out, one ``add`` per file.

Plain Python writes and Spark executors (inside ``mapInArrow``) both use :class:`DataFileWriter`, so one
implementation decides what a data file holds. Per batch, before any of it is written:

1. the columns are matched to the table's by name and safely cast (:mod:`deltalog.data.types`);
2. generated and default columns are computed or checked, NOT NULL fields (nested too) enforced, CHECK
   constraints and invariants evaluated (:mod:`deltalog.data.constraints`): a violation raises a
   :class:`~deltalog.errors.ConstraintViolationError` and nothing further is written;
3. rows are grouped by partition values and appended to that partition's buffer.

Memory stays bounded whatever the input size: a partition's buffer becomes a parquet row group at
:data:`ROW_GROUP_BYTES` (or when all buffers together pass :data:`MAX_BUFFERED_BYTES`, the largest goes
first), at most ``max_open_files`` files are open at once (the least recently used is finished first), and a
file is finished once it reaches ``target_file_size`` bytes (``delta.targetFileSize``, else 100 MiB as in
``deltalake``). Files stream into the store (:mod:`deltalog.data.output`) and carry Delta statistics
(:mod:`deltalog.arrow.stats`) keyed by physical names.

The writer never commits. :func:`write_files` deletes every file it wrote when it fails; a caller whose commit
is refused deletes them with :func:`~deltalog.data.output.delete_files` (after ``CommitStateUnknownError`` they
must stay: the commit may have landed).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.arrow.stats import StatsCollector, dumps, indexed_column_limit, select_leaves, stats_column_names
from deltalog.core.actions import Add
from deltalog.core.cdf import CHANGE_DATA_DIR
from deltalog.data.batches import batches, group_rows
from deltalog.data.constraints import check_rows, fill_columns, table_rules
from deltalog.data.output import Output, delete_files, write_failures
from deltalog.data.paths import (
    change_file_name,
    data_file_key,
    data_file_name,
    log_path,
    random_prefix_length,
    serialize_partition_value,
)
from deltalog.data.types import FieldPlan, check_not_null, check_void, conform_array, match_names, plan_schema
from deltalog.errors import InvalidArgumentError, SchemaMismatchError, UnsupportedFeatureError
from deltalog.storage.base import LogStore

DEFAULT_TARGET_FILE_SIZE = 100 * 1024 * 1024
ROW_GROUP_BYTES = 32 * 1024 * 1024
MAX_BUFFERED_BYTES = 64 * 1024 * 1024
MAX_OPEN_FILES = 64
DICTIONARY_PAGE_BYTES = 256 * 1024
TARGET_FILE_SIZE = "delta.targetFileSize"
CODEC = "delta.parquet.compression.codec"
PAGE_VERSION = "delta.parquet.format.version"
_CODECS = {"none": "none", "uncompressed": "none", "snappy": "snappy", "gzip": "gzip", "zstd": "zstd", "lz4_raw": "lz4"}


class TableLike(Protocol):
    """What :meth:`WriteTarget.of` reads from a snapshot (duck-typed: the data plane sits below snapshots)."""

    schema_json: Mapping[str, Any]
    partition_columns: Sequence[str]
    configuration: Mapping[str, str]
    column_mapping_mode: str


@dataclass(frozen=True)
class WriteTarget:
    """The table a writer writes for: its schema (Delta JSON, logical names with column-mapping metadata),
    partition columns (logical), configuration, the clustering columns (physical paths, as the
    ``delta.clustering`` domain lists them), which always get statistics, and the column-mapping mode in
    force (``None``: ``delta.columnMapping.mode``; a snapshot knows better: the property means nothing
    unless the protocol supports the feature)."""

    schema: Mapping[str, Any]
    partition_columns: tuple[str, ...] = ()
    configuration: Mapping[str, str] = field(default_factory=dict)
    clustering_columns: tuple[tuple[str, ...], ...] = ()
    column_mapping_mode: str | None = None

    @classmethod
    def of(cls, table: TableLike, clustering_columns: Sequence[Sequence[str]] = ()) -> WriteTarget:
        return cls(
            table.schema_json,
            tuple(table.partition_columns),
            dict(table.configuration),
            tuple(tuple(c) for c in clustering_columns),
            table.column_mapping_mode,
        )

    @property
    def column_mapped(self) -> bool:
        mode = self.column_mapping_mode or self.configuration.get("delta.columnMapping.mode", "none")
        return str(mode).lower() in ("name", "id")


def _positive(raw: Any, what: str) -> int:
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise InvalidArgumentError(f"{what} must be a positive integer, not {raw!r}")
    return value


def _parquet_options(configuration: Mapping[str, str]) -> dict[str, Any]:
    codec = str(configuration.get(CODEC, "snappy")).strip().lower()
    if codec not in _CODECS:
        raise InvalidArgumentError(f"{CODEC}={codec!r}: deltalog writes {sorted(_CODECS)}")
    version = str(configuration.get(PAGE_VERSION, "1.0.0")).strip()
    if version != "1.0.0" and not (version.startswith("2.") and version.count(".") == 2):
        raise InvalidArgumentError(f"{PAGE_VERSION}={version!r}: expected 1.0.0 or 2.MINOR.PATCH")
    return {
        "compression": _CODECS[codec],
        "data_page_version": "1.0" if version == "1.0.0" else "2.0",
        # a column whose dictionary outgrows this falls back to plain encoding: unique ids, random floats and
        # instants stop paying for a dictionary sooner (a quarter less encoding CPU, files no larger)
        "dictionary_pagesize_limit": DICTIONARY_PAGE_BYTES,
    }


def _physical_path(plans: Sequence[FieldPlan], path: Sequence[str]) -> tuple[str, ...] | None:
    out: list[str] = []
    level = list(plans)
    for name in path:
        found = [p for p in level if p.name.lower() == name.lower()]
        if not found:
            return None
        out.append(found[0].physical)
        level = list(found[0].children)
    return tuple(out)


@dataclass(frozen=True)
class Prepared:
    """One input batch, checked and split: its row count and (serialized partition values, rows) per
    partition, ready to be buffered."""

    num_rows: int
    parts: tuple[tuple[tuple[str | None, ...], pa.RecordBatch], ...]


@dataclass
class _File:
    output: Output
    writer: pq.ParquetWriter
    stats: StatsCollector


@dataclass
class _Partition:
    values: tuple[str | None, ...]
    buffer: list[pa.RecordBatch] = field(default_factory=list)
    buffered_bytes: int = 0
    buffered_rows: int = 0
    file_rows: int = 0
    file: _File | None = None
    used: int = 0


class DataFileWriter:
    """Writes one table's data files from Arrow batches; :meth:`close` returns their adds."""

    def __init__(
        self,
        store: LogStore,
        target: WriteTarget,
        *,
        target_file_size: int | None = None,
        max_rows_per_file: int | None = None,
        max_open_files: int = MAX_OPEN_FILES,
        clock: Callable[[], float] = time.time,
        rules_checked: bool = False,
        change_data: bool = False,
    ) -> None:
        self.store = store
        #: change data files (PROTOCOL "Change Data Files"): rows with ``_change_type``, under ``_change_data/``,
        #: checked against no row rules (they are rows the table held, or rows this commit adds and checks)
        self.change_data = change_data
        self.target = target
        self.clock = clock
        conf = target.configuration
        size = (
            target_file_size if target_file_size is not None else conf.get(TARGET_FILE_SIZE, DEFAULT_TARGET_FILE_SIZE)
        )
        self.target_file_size = _positive(size, "target_file_size")
        self.max_rows_per_file = (
            None if max_rows_per_file is None else _positive(max_rows_per_file, "max_rows_per_file")
        )
        self.max_open_files = _positive(max_open_files, "max_open_files")
        self.row_group_bytes = min(ROW_GROUP_BYTES, self.target_file_size)
        self.parquet_options = _parquet_options(conf)
        self.plans = plan_schema(target.schema, target.column_mapped)
        # rules_checked: the caller evaluated the CHECK constraints, invariants, generated and default columns on
        # every row in full Spark SQL (the Spark writer does, on its executors); NOT NULL is still enforced here.
        # change_data: _change_data files hold rows already checked when they were written.
        self.rules = () if rules_checked or change_data else table_rules(target.schema, conf, self.plans)
        self.prefix_length = 0 if change_data else random_prefix_length(conf, target.column_mapped)
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
        stored = [p for p in self.plans if p.kind != "void"]
        self.file_schema = pa.schema([p.file_field for p in stored])
        partition_physical = {p.physical for p in self.partition_plans}
        self.data_schema = pa.schema([f for f in self.file_schema if f.name not in partition_physical])
        named = stats_column_names(conf)
        physical_named = None if named is None else [q for n in named if (q := _physical_path(self.plans, n))]
        self.stats_leaves = select_leaves(
            self.data_schema, indexed_column_limit(conf), physical_named, target.clustering_columns
        )
        self.num_rows = 0
        self._parts: dict[tuple[str | None, ...], _Partition] = {}
        self._buffered = 0
        self._tick = 0
        self._adds: list[Add] = []
        self._written: list[str] = []
        self._matches: dict[pa.Schema, list[int | None]] = {}

    # ------------------------------------------------------------------------------------------ one batch
    def write(self, batch: pa.RecordBatch) -> None:
        """Check ``batch`` against the table's rules, then buffer or write it; raises before writing any of
        it when a rule fails."""
        self.accept(self.prepare(batch))

    def write_all(self, batches: Iterable[pa.RecordBatch]) -> None:
        """:meth:`write` every batch, preparing the next one (reading it, checking it, splitting it by
        partition) on a worker thread while this one is buffered and encoded: both release the GIL, so a
        write uses two cores. At most one prepared batch waits."""
        source = iter(batches)

        def next_prepared() -> Prepared | None:
            batch = next(source, None)
            return None if batch is None else self.prepare(batch)

        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="deltalog-prepare") as pool:
            pending = pool.submit(next_prepared)
            while (prepared := pending.result()) is not None:
                pending = pool.submit(next_prepared)
                try:
                    self.accept(prepared)
                except BaseException:
                    pending.cancel()
                    raise

    def prepare(self, batch: pa.RecordBatch) -> Prepared:
        """``batch`` checked against the table's rules and split by partition; touches no state but the name
        matching cache, so it may run on another thread than :meth:`accept` (one prepare at a time)."""
        if not isinstance(batch, pa.RecordBatch):
            raise InvalidArgumentError(f"write() takes a pyarrow RecordBatch, not {type(batch).__name__}")
        physical, missing = self._conform(batch)
        physical = fill_columns(self.rules, physical, self.plans, missing)
        stored = [p for p in self.plans if p.kind != "void"]
        for plan, column in zip(stored, physical.columns, strict=True):
            check_not_null(column, plan, plan.name, None)
        check_rows(self.rules, physical, self.plans)
        if physical.num_rows == 0:
            return Prepared(0, ())
        return Prepared(physical.num_rows, tuple(self._split(physical)))

    def accept(self, prepared: Prepared) -> None:
        """Buffer a prepared batch's rows per partition; full buffers become row groups."""
        self.num_rows += prepared.num_rows
        for values, rows in prepared.parts:
            self._append(values, rows)

    def _conform(self, batch: pa.RecordBatch) -> tuple[pa.RecordBatch, set[str]]:
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
        return pa.RecordBatch.from_arrays(arrays, schema=self.file_schema), missing

    def _split(self, batch: pa.RecordBatch) -> Iterator[tuple[tuple[str | None, ...], pa.RecordBatch]]:
        """(serialised partition values, data rows) per partition of ``batch``."""
        data = batch.select([f.name for f in self.data_schema])
        if not self.partition_plans:
            yield (), data
            return
        keys = batch.select([p.physical for p in self.partition_plans])
        for values, rows in group_rows(keys, data):
            yield tuple(serialize_partition_value(v) for v in values), rows

    # ------------------------------------------------------------------------------------------ buffering
    def _append(self, values: tuple[str | None, ...], rows: pa.RecordBatch) -> None:
        part = self._parts.get(values)
        if part is None:
            part = self._parts[values] = _Partition(values)
        while rows.num_rows:
            take = rows.num_rows
            if self.max_rows_per_file is not None:
                take = min(take, self.max_rows_per_file - part.file_rows - part.buffered_rows)
            head, rows = rows.slice(0, take), rows.slice(take)
            part.buffer.append(head)
            part.buffered_rows += head.num_rows
            part.buffered_bytes += head.nbytes
            self._buffered += head.nbytes
            full = self.max_rows_per_file is not None and part.file_rows + part.buffered_rows >= self.max_rows_per_file
            if full or part.buffered_bytes >= self.row_group_bytes:
                self._flush(part, finish=full)
        while self._buffered > MAX_BUFFERED_BYTES:
            self._flush(max(self._parts.values(), key=lambda p: p.buffered_bytes))

    def _take(self, part: _Partition) -> pa.Table | None:
        """``part``'s buffer as one table (a row group), now counted as written."""
        if not part.buffer:
            return None
        table = pa.Table.from_batches(part.buffer, schema=self.data_schema)
        self._buffered -= part.buffered_bytes
        part.buffer, part.buffered_bytes, part.buffered_rows = [], 0, 0
        part.file_rows += table.num_rows
        self._tick += 1
        part.used = self._tick
        return table

    def _write(self, part: _Partition, table: pa.Table) -> None:
        """Append a row group to ``part``'s open file (touches nothing else: may run on a worker thread)."""
        file = part.file
        assert file is not None
        with write_failures(self.store, file.output.key):
            file.writer.write_table(table, row_group_size=max(1, table.num_rows))
        file.stats.update(table)

    def _flush(self, part: _Partition, finish: bool = False) -> None:
        """Write ``part``'s buffer as a row group; finish its file when asked or when it is large enough."""
        table = self._take(part)
        if table is not None:
            if part.file is None:
                self._open(part)
            self._write(part, table)
        if part.file is not None and (finish or part.file.output.tell() >= self.target_file_size):
            self._adds.append(self._finish(part))

    def _open(self, part: _Partition) -> _File:
        open_parts = [p for p in self._parts.values() if p.file is not None]
        if len(open_parts) >= self.max_open_files:
            oldest = min(open_parts, key=lambda p: p.used)
            self._flush(oldest, finish=True)
        names = [p.physical for p in self.partition_plans]
        codec = self.parquet_options["compression"]
        if self.change_data:  # partition directories, except on column-mapped tables (which have none)
            directories = [] if self.target.column_mapped else names
            key = f"{CHANGE_DATA_DIR}/{data_file_key(change_file_name(codec), directories, part.values)}"
        else:
            key = data_file_key(data_file_name(codec), names, part.values, self.prefix_length)
        output = Output(self.store, key)
        self._written.append(key)
        with write_failures(self.store, key):
            writer = pq.ParquetWriter(output.stream, self.data_schema, **self.parquet_options)
        self._tick += 1
        part.used = self._tick
        part.file = _File(output, writer, StatsCollector(self.data_schema, self.stats_leaves))
        return part.file

    def _finish(self, part: _Partition) -> Add:
        """Close ``part``'s file and describe it (touches nothing else: may run on a worker thread)."""
        file, part.file, part.file_rows = part.file, None, 0
        assert file is not None
        with write_failures(self.store, file.output.key):
            file.writer.close()
        size = file.output.close()
        names = [p.physical for p in self.partition_plans]
        return Add(
            path=log_path(file.output.key),
            partition_values=dict(zip(names, part.values, strict=True)),
            size=size,
            modification_time=int(self.clock() * 1000),
            data_change=True,
            stats=dumps(file.stats.stats()),
        )

    # ------------------------------------------------------------------------------------------ the end
    def close(self) -> list[Add]:
        """Write what is buffered and finish every file; the adds, one per file, in the order finished.

        The last row groups of all partitions are encoded in parallel (pyarrow releases the GIL), up to
        ``max_open_files`` files at a time: partitions with an open file go first, so no file is evicted.
        """
        parts = sorted(self._parts.values(), key=lambda p: p.file is None)
        for part in parts:
            if not part.buffer and part.file is not None:
                self._adds.append(self._finish(part))
        pending = [p for p in parts if p.buffer]
        for start in range(0, len(pending), self.max_open_files):
            jobs = []
            for part in pending[start : start + self.max_open_files]:
                table = self._take(part)
                if part.file is None:
                    self._open(part)
                jobs.append((part, table))
            with ThreadPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1)) as pool:
                self._adds.extend(pool.map(self._last_group, jobs))
        self._parts.clear()
        return list(self._adds)

    def _last_group(self, job: tuple[_Partition, pa.Table]) -> Add:
        part, table = job
        self._write(part, table)
        return self._finish(part)

    def abort(self) -> list[str]:
        """Delete every file this writer created (finished or not); the keys that could not be deleted."""
        for part in self._parts.values():
            if part.file is not None:
                part.file.output.discard()
        self._parts.clear()
        self._buffered = 0
        left = delete_files(self.store, self._written)
        self._written, self._adds = [], []
        return left


def write_files(store: LogStore, data: Any, target: WriteTarget, **options: Any) -> list[Add]:
    """Write ``data`` as the table's data files; the adds to commit. On any failure every file written so far
    is deleted and the error propagates (``options``: see :class:`DataFileWriter`)."""
    writer = DataFileWriter(store, target, **options)
    try:
        writer.write_all(batches(data))
        return writer.close()
    except BaseException:
        writer.abort()
        raise


__all__ = [
    "DEFAULT_TARGET_FILE_SIZE",
    "DataFileWriter",
    "Prepared",
    "WriteTarget",
    "write_files",
]
