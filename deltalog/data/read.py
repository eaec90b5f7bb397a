"""One data file to the table's logical rows, in batches: what a table scan does per file.

The log, not the file, says what the rows are: partition values come from the ``add`` (typed per the schema,
PROTOCOL "Partition Value Serialization"), deleted rows from its deletion vector, column names and types
from today's schema (see :mod:`deltalog.data.conform`). The reader streams: it holds one parquet batch at a
time, so a scanner can read many files in parallel with bounded memory. A :class:`ReadSchema` is built once
per snapshot and shared by every file read.

Local files are opened by path, so pyarrow reads them natively (without the GIL); other files through the
table's store.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltalog.actions import Add, DeletionVector
from deltalog.core.files.partitions import PartitionValueError, parse_value
from deltalog.core.files.pathkeys import needs_canonicalizing
from deltalog.core.schema import top_level_fields
from deltalog.core.state.columns import bool_array
from deltalog.data.conform import Column, conform, match, plan_field
from deltalog.data.constants import Constants
from deltalog.data.dv import read_deletion_vector
from deltalog.data.locate import native_path, open_input, resolve, typed_failure
from deltalog.data.memory import DATA_POOL, parquet_file
from deltalog.errors import CorruptDataError, InvalidArgumentError, UnsupportedFeatureError
from deltalog.storage.base import LogStore

#: rows per batch handed out (pyarrow's own default)
BATCH_ROWS = 65_536


@dataclass(frozen=True)
class ReadSchema:
    """What every file read of one table version shares: the output columns and how to find each.

    ``columns`` are the projected top-level columns in output order; ``partition`` maps those that are
    partition columns to their Delta type (their values come from the log, never from the file).
    ``row_tracking`` (see :func:`with_row_tracking`) names the materialized row-id and row-commit-version
    columns: each row then also carries its stable row id and commit version under those names, after the
    columns. ``positions`` (see :func:`with_positions`) names a column that carries each row's physical
    position in its file, last.
    """

    columns: tuple[Column, ...]
    partition: Mapping[str, Any]
    mode: str
    schema: pa.Schema
    row_tracking: tuple[str, str] | None = None
    positions: str | None = None


def read_schema(
    schema: Mapping[str, Any],
    partition_columns: Sequence[str] = (),
    mode: str = "none",
    columns: Sequence[str] | None = None,
) -> ReadSchema:
    """The :class:`ReadSchema` for a Delta schema (JSON), its partition columns, column-mapping mode and an
    optional projection (logical names, output in that order); an unknown column is an
    :class:`InvalidArgumentError` naming it."""
    fields = {f["name"]: f for f in top_level_fields(schema)}
    names = list(fields) if columns is None else list(columns)
    unknown = [n for n in names if n not in fields]
    if unknown:
        raise InvalidArgumentError(f"unknown column {unknown[0]!r}; the table has {sorted(fields) or 'no columns'}")
    planned = tuple(plan_field(fields[n], mode) for n in names)
    partition = {n: fields[n]["type"] for n in names if n in set(partition_columns)}
    return ReadSchema(planned, partition, mode, pa.schema([c.field for c in planned]))


def with_row_tracking(spec: ReadSchema, row_id_column: str, commit_version_column: str) -> ReadSchema:
    """``spec`` whose rows also carry their stable row id and row commit version (PROTOCOL "Row Tracking"):
    the file's materialized value where it has one, else the fresh one (``baseRowId`` + the row's physical
    position, ``defaultRowCommitVersion``), as int64 columns named as the table materializes them. What a
    rewrite copies so that the rows keep both."""
    return _with_extras(spec, (row_id_column, commit_version_column), spec.positions)


def with_positions(spec: ReadSchema, column: str) -> ReadSchema:
    """``spec`` whose rows also carry their physical position in the file (what a deletion vector counts: rows
    it deletes still take their place) as an int64 column named ``column``, last: what a reader that will mark
    some rows deleted (MERGE, UPDATE) must know of each row."""
    return _with_extras(spec, spec.row_tracking, column)


def _with_extras(spec: ReadSchema, row_tracking: tuple[str, str] | None, positions: str | None) -> ReadSchema:
    """``spec`` whose rows carry its columns, then the row-tracking columns, then the positions."""
    extra = [pa.field(n, pa.int64()) for n in row_tracking or ()]
    if positions is not None:
        extra.append(pa.field(positions, pa.int64()))
    schema = pa.schema([*(c.field for c in spec.columns), *extra])
    return dataclasses.replace(spec, schema=schema, row_tracking=row_tracking, positions=positions)


@dataclass(frozen=True)
class DataFile:
    """One live file as the log describes it: ``path`` as the log spells it (a URI reference, relative to
    the table root or absolute), partition values keyed by physical name, its DV, ``num_records`` from
    its stats when known, and its row-tracking fields."""

    path: str
    partition_values: Mapping[str, str | None]
    deletion_vector: DeletionVector | None = None
    num_records: int | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None

    @classmethod
    def of(cls, add: Add) -> DataFile:
        """The file an ``add`` action names (``numRecords`` taken from its stats when they parse)."""
        return cls(
            add.path,
            dict(add.partition_values),
            add.deletion_vector,
            _num_records(add.stats),
            add.base_row_id,
            add.default_row_commit_version,
        )

    @classmethod
    def described(
        cls,
        path: str,
        partition_values: Mapping[str, str | None],
        deletion_vector: DeletionVector | None,
        stats: str | None,
    ) -> DataFile:
        """A file the log describes by other actions than an ``add`` (a remove, a change reader's pair)."""
        return cls(path, dict(partition_values), deletion_vector, _num_records(stats))


def _num_records(stats: str | None) -> int | None:
    if not stats:
        return None
    try:
        value = orjson.loads(stats).get("numRecords")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def partition_scalars(spec: ReadSchema, file: DataFile, source: str) -> dict[str, pa.Scalar]:
    """The typed values of ``spec``'s partition columns for ``file`` (a null value is a null scalar); a value
    that is not of its column's type is a :class:`CorruptDataError` naming ``source``."""
    out = {}
    for column in spec.columns:
        if column.name not in spec.partition:
            continue
        raw = file.partition_values.get(column.physical)
        try:
            out[column.name] = pa.scalar(parse_value(spec.partition[column.name], raw), type=column.type)
        except (PartitionValueError, pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as exc:
            raise CorruptDataError(
                f"{source}: partition value {raw!r} of column {column.name!r} is not a {column.type}: {exc}",
                path=source,
            ) from None
    return out


class _ParquetErrors:
    """Arrow's complaints about a file's bytes are corrupt data; I/O failures are the store's (typed by
    :func:`~deltalog.data.locate.typed_failure`). A class rather than a generator-based context manager: it is
    entered twice for every file read, and compaction reads thousands of small files."""

    __slots__ = ("source",)

    def __init__(self, source: str) -> None:
        self.source = source

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if exc is None:
            return
        if isinstance(exc, (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)):
            raise CorruptDataError(f"{self.source}: not a readable parquet file: {exc}", path=self.source) from None
        typed = typed_failure(exc, self.source)
        if typed is not None:
            raise typed


def _mask(marked: np.ndarray, start: int, n: int, keep_marked: bool) -> pa.Array | None:
    """The keep-mask of rows ``[start, start + n)``: the ``marked`` rows (sorted indexes) kept and the others
    dropped, or the other way round; None when none of the rows is marked."""
    lo, hi = np.searchsorted(marked, [start, start + n])
    if lo == hi:
        return None
    keep = np.full(n, not keep_marked, dtype=bool)
    keep[marked[lo:hi] - start] = keep_marked
    return bool_array(keep)


@dataclass(frozen=True, eq=False)
class _Layout:
    """Where one layout of data file (its Arrow schema) keeps the columns a :class:`ReadSchema` wants: worked out
    once per distinct layout, since the files of a table mostly share one. ``found`` maps each wanted column
    to its field's index (None: the file lacks it), ``tracked`` the materialized row-tracking columns, ``names``
    the fields to read (None: every field, when a name has a dot that pyarrow would take for a nested path), and
    ``position`` each field's index in what is read."""

    found: Mapping[str, int | None]
    tracked: Sequence[int | None]
    names: list[str] | None
    position: Mapping[int, int]


class FileReads:
    """What reads of many files of one table version share: where local files are, the typed values of each
    partition, the layout of each kind of file. Compaction and full scans read thousands of small files, where
    working these out again for every file cost as much as decoding it. Safe to share between reader threads:
    each entry is worked out whole before it is stored, and two threads at most work one out twice."""

    def __init__(self, store: LogStore, spec: ReadSchema, constants: Constants | None = None) -> None:
        self.store = store
        self.spec = spec
        #: the partition columns of files with equal values share their buffers
        self.constants = constants if constants is not None else Constants()
        self.local_root = store.root if store.capabilities.local else None
        self._partitions: dict[tuple[tuple[str, str | None], ...], dict[str, pa.Scalar]] = {}
        self._layouts: list[tuple[pa.Schema, _Layout]] = []

    def locate(self, path: str) -> tuple[str, str | None]:
        """The store key (or absolute path) of a log path, and its local file system path when it has one."""
        if self.local_root is not None and not needs_canonicalizing(path):
            return path, os.path.join(self.local_root, path)  # the common case: a plain key under a local root
        where = resolve(self.store, path)
        return where, native_path(self.store, where)

    def partitions(self, file: DataFile, source: str) -> dict[str, pa.Scalar]:
        """:func:`partition_scalars` of ``file``, parsed once per distinct set of values."""
        key = tuple(file.partition_values.items())
        found = self._partitions.get(key)
        if found is None:
            found = self._partitions[key] = partition_scalars(self.spec, file, source)
        return found

    def layout(self, schema: pa.Schema, partitions: Mapping[str, pa.Scalar], source: str) -> _Layout:
        """How to read a file of ``schema``. Files match a known layout by their fields' names and types, and in
        ``id`` mode (which matches by field id) by their metadata too; a writer's file-level metadata then tells
        layouts apart that are the same, which costs a lookup, never a wrong match."""
        spec = self.spec
        by_id = spec.mode == "id"
        for known, layout in self._layouts:
            if known.equals(schema, check_metadata=by_id):
                return layout
        fields = list(schema)
        found = {c.name: match(fields, c, spec.mode, source) for c in spec.columns if c.name not in partitions}
        names = [f.name for f in fields]
        tracked = [names.index(c) if c in names else None for c in spec.row_tracking or ()]
        selected = sorted({i for i in [*found.values(), *tracked] if i is not None})
        # pyarrow reads "a.b" as a nested path: with such a name, read every column and pick by position
        by_name = not any("." in names[i] for i in selected)
        position = {i: (k if by_name else i) for k, i in enumerate(selected)}
        layout = _Layout(found, tracked, [names[i] for i in selected] if by_name else None, position)
        if len(self._layouts) < _MAX_LAYOUTS:
            self._layouts.append((schema, layout))
        return layout


#: file layouts one :class:`FileReads` remembers (a table has a few: one per schema change that reached files)
_MAX_LAYOUTS = 32


@dataclass(frozen=True)
class _Plan:
    """How one file's raw batches become the table's rows: its layout, its partition values, its name."""

    layout: _Layout
    partitions: Mapping[str, pa.Scalar]
    source: str


@dataclass(frozen=True)
class _Piece:
    """One raw batch of a file (the file's own columns and types), how to assemble it, the columns the spec adds
    after the table's (stable row ids and commit versions, physical positions), and which of its rows to keep
    (None: all of them).

    The mask is applied after assembling, in the table's types: pyarrow cannot filter some of a file's types
    (a ``string_view`` column deltalake wrote)."""

    plan: _Plan
    batch: pa.RecordBatch
    ids: list[pa.Array] | None
    keep: pa.Array | None
    constants: Constants | None = None

    def rows(self, spec: ReadSchema) -> pa.RecordBatch:
        out = _assemble(spec, self.batch, self.plan, self.ids, self.constants)
        return out if self.keep is None else pc.filter(out, self.keep, memory_pool=DATA_POOL)


def _pieces(reads: FileReads, file: DataFile, batch_rows: int, rows: np.ndarray | None = None) -> Iterator[_Piece]:
    """The file's raw batches that hold live rows (or, with ``rows``, rows among those), each with how to
    assemble it and which of its rows to keep."""
    store, spec = reads.store, reads.spec
    source = file.path
    partitions = reads.partitions(file, source)
    deleted = None
    if file.deletion_vector is not None:
        deleted = read_deletion_vector(store, file.deletion_vector)
    if rows is not None:
        rows = rows if deleted is None else np.setdiff1d(rows, deleted, assume_unique=True)
        if not len(rows):
            return
    if spec.row_tracking is not None:
        _check_tracked(file, source)
    where, local = reads.locate(file.path)
    with _ParquetErrors(source):
        # a local file opened natively (reads without the GIL); a path string would make pyarrow work out its
        # filesystem again for every file, which costs as much as reading a small file
        handle: Any = pa.OSFile(local) if local is not None else open_input(store, where, source)
    try:
        with _ParquetErrors(source):
            # pre-buffering coalesces ranged reads, which pays on object stores and costs on a local disk
            parquet = parquet_file(handle, coerce_int96_timestamp_unit="us", pre_buffer=local is None)
            num_rows = parquet.metadata.num_rows
            schema = parquet.schema_arrow
        _check_rows(file, deleted, num_rows, source)
        if rows is not None:
            _check_rows(file, rows, num_rows, source)
        layout = reads.layout(schema, partitions, source)
        plan = _Plan(layout, partitions, source)
        with _ParquetErrors(source):
            for start, batch in _file_batches(parquet, batch_rows, layout.names, rows):
                n = batch.num_rows
                if rows is not None:
                    keep = _mask(rows, start, n, keep_marked=True)
                    if keep is None:
                        continue
                else:
                    keep = None if deleted is None else _mask(deleted, start, n, keep_marked=False)
                ids = None if spec.row_tracking is None else _row_ids(file, batch, layout, start)
                if spec.positions is not None:
                    ids = [*(ids or ()), pa.array(np.arange(start, start + n, dtype=np.int64))]
                yield _Piece(plan, batch, ids, keep, reads.constants)
    finally:
        handle.close()


def read_batches(
    store: LogStore,
    spec: ReadSchema,
    file: DataFile,
    batch_rows: int = BATCH_ROWS,
    rows: np.ndarray | None = None,
    reads: FileReads | None = None,
    constants: Constants | None = None,
) -> Iterator[pa.RecordBatch]:
    """The file's live rows in ``spec``'s schema, batch by batch (deleted rows dropped, empty batches skipped).

    ``rows`` (sorted, distinct ``int64`` physical row indexes) reads only those of the live rows, decoding only
    the row groups that hold one: what a change reader wants of a file whose deletion vector changed, and what
    a MERGE or UPDATE reads of the rows it acts on.

    ``reads``, a :class:`FileReads` of the same store and spec, is what a reader of many files shares between
    them; ``constants`` (one per read of many files, when it reads them with different specs) makes the
    partition columns of files with equal values share their buffers.

    Every failure is typed and names the file: missing or corrupt data or DV files, a DV that disagrees
    with the file, a partition value that is not of its column's type.
    """
    for piece in _pieces(reads or FileReads(store, spec, constants), file, batch_rows, rows):
        out = piece.rows(spec)
        if out.num_rows:
            yield out


def read_many(
    store: LogStore, spec: ReadSchema, files: Sequence[DataFile], batch_rows: int = BATCH_ROWS
) -> Iterator[pa.RecordBatch]:
    """The live rows of ``files`` in order, as :func:`read_batches` gives them, in batches of at most
    ``batch_rows``: consecutive files of one partition and one layout have their raw rows joined (into batches of
    exactly ``batch_rows`` while the run lasts) before they are assembled once, and what every file would work
    out again (its partition's values, its layout's columns) is worked out once, so many small files cost little
    more than their decoding (what compaction reads). A batch with deleted rows, stable row ids or positions is
    assembled on its own. A failure in assembling a joined batch names its first file."""
    reads = FileReads(store, spec)
    held: list[pa.RecordBatch] = []
    held_plan: _Plan | None = None
    count = 0

    def flush(whole: bool = True) -> Iterator[pa.RecordBatch]:
        """The held rows assembled; unless ``whole``, only the first ``batch_rows`` of them (the rest stay held)."""
        nonlocal held, count
        if held and held_plan is not None:
            # joined in the data plane's pool (:mod:`deltalog.data.memory`): the joined rows are what a compaction
            # buffers for its row groups
            joined = pa.Table.from_batches(held).combine_chunks(memory_pool=DATA_POOL) if len(held) > 1 else None
            raw = held[0] if joined is None else joined.to_batches()[0]
            held, count = [], 0
            if not whole and raw.num_rows > batch_rows:
                held, count = [raw.slice(batch_rows)], raw.num_rows - batch_rows
                raw = raw.slice(0, batch_rows)
            yield _assemble(spec, raw, held_plan, constants=reads.constants)

    for file in files:
        for piece in _pieces(reads, file, batch_rows):
            if piece.ids is not None or piece.keep is not None:
                yield from flush()
                out = piece.rows(spec)
                if out.num_rows:
                    yield out
                continue
            if piece.batch.num_rows == 0:
                continue
            plan = piece.plan
            if held_plan is None or plan.layout is not held_plan.layout or plan.partitions is not held_plan.partitions:
                yield from flush()
                held_plan = plan
            held.append(piece.batch)
            count += piece.batch.num_rows
            if count >= batch_rows:
                yield from flush(whole=False)
    yield from flush()


def _file_batches(
    parquet: pq.ParquetFile, batch_rows: int, columns: list[str] | None, rows: np.ndarray | None = None
) -> Iterator[tuple[int, pa.RecordBatch]]:
    """(first row's physical position, batch) of the file's rows in batches of at most ``batch_rows``: a small
    row group read whole in one call (no batch reader to set up: several times cheaper for the many small files
    compaction reads), a large one through the batch reader, so memory stays bounded by ``batch_rows`` whatever
    the writer's row groups. With ``rows`` (sorted physical positions), only the row groups holding one."""
    meta = parquet.metadata
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    offsets = list(itertools.accumulate(sizes, initial=0))
    groups: Sequence[int] = range(len(sizes))
    if rows is not None:
        holding = np.unique(np.searchsorted(np.asarray(offsets), rows, side="right") - 1)
        groups = [int(g) for g in holding if 0 <= g < len(sizes)]
    for i in groups:
        start = offsets[i]
        if sizes[i] <= batch_rows:
            table = parquet.read_row_group(i, columns=columns, use_threads=False)
            parts = table.combine_chunks(DATA_POOL).to_batches(max_chunksize=batch_rows) if table.num_rows else []
        else:
            parts = parquet.iter_batches(batch_size=batch_rows, row_groups=[i], columns=columns)
        for batch in parts:
            yield start, batch
            start += batch.num_rows


def _check_tracked(file: DataFile, source: str) -> None:
    """Refuses a file whose stable ids cannot be known (no ``baseRowId`` or ``defaultRowCommitVersion`` in its
    add)."""
    if file.base_row_id is None or file.default_row_commit_version is None:
        raise UnsupportedFeatureError(
            f"{source}: its add has no baseRowId/defaultRowCommitVersion, so the row ids and commit versions of "
            "its rows are unknown and cannot be kept by a rewrite",
            feature="rowTracking",
            path=source,
        )


def _row_ids(file: DataFile, batch: pa.RecordBatch, layout: _Layout, start: int) -> list[pa.Array]:
    """The stable row ids and commit versions of a batch of the file's physical rows from ``start``."""
    assert file.base_row_id is not None and file.default_row_commit_version is not None
    n = batch.num_rows
    fresh = [
        pa.array(np.arange(file.base_row_id + start, file.base_row_id + start + n, dtype=np.int64)),
        pa.array(np.full(n, file.default_row_commit_version, dtype=np.int64)),
    ]
    out = []
    for index, default in zip(layout.tracked, fresh, strict=True):
        stored = None if index is None else batch.column(layout.position[index])
        if stored is None or stored.null_count == len(stored):
            out.append(default)
        else:
            out.append(pc.coalesce(stored.cast(pa.int64()), default))
    return out


def _check_rows(file: DataFile, deleted: np.ndarray | None, rows: int, source: str) -> None:
    if deleted is None:
        return
    if file.num_records is not None and file.num_records != rows:
        raise CorruptDataError(
            f"{source}: the file has {rows} rows, its numRecords says {file.num_records} (a DV needs them equal)",
            path=source,
        )
    if len(deleted) and int(deleted[-1]) >= rows:
        raise CorruptDataError(
            f"{source}: its deletion vector deletes row {int(deleted[-1])} of {rows}",
            path=source,
        )


def _assemble(
    spec: ReadSchema,
    batch: pa.RecordBatch,
    plan: _Plan,
    ids: Sequence[pa.Array] | None = None,
    constants: Constants | None = None,
) -> pa.RecordBatch:
    n = batch.num_rows
    found, position, partitions, source = plan.layout.found, plan.layout.position, plan.partitions, plan.source
    arrays = []
    for column in spec.columns:
        if column.name in partitions:
            value = partitions[column.name]
            arrays.append(
                constants.column(value, n) if constants is not None else pa.repeat(value, n, memory_pool=DATA_POOL)
            )
            continue
        i = found.get(column.name)
        if i is None:
            arrays.append(pa.nulls(n, column.type))
        else:
            arrays.append(conform(batch.column(position[i]), column, spec.mode, source))
    if ids is not None:
        arrays.extend(ids)
    return pa.RecordBatch.from_arrays(arrays, schema=spec.schema)


def physical_rows(store: LogStore, file: DataFile) -> int:
    """How many rows the data file holds, deleted ones included (what a deletion vector counts): its
    ``numRecords``, else the parquet footer's count."""
    if file.num_records is not None:
        return file.num_records
    source = file.path
    where = resolve(store, file.path)
    with contextlib.ExitStack() as stack, _ParquetErrors(source):
        local = native_path(store, where)
        handle: Any = local if local is not None else stack.enter_context(open_input(store, where, source))
        return int(pq.ParquetFile(handle).metadata.num_rows)


def read_file(store: LogStore, spec: ReadSchema, file: DataFile) -> pa.Table:
    """All live rows of one file as a table (tests and small files; scans use :func:`read_batches`)."""
    return pa.Table.from_batches(list(read_batches(store, spec, file)), schema=spec.schema)


__all__ = [
    "BATCH_ROWS",
    "DataFile",
    "FileReads",
    "ReadSchema",
    "partition_scalars",
    "physical_rows",
    "read_batches",
    "read_file",
    "read_many",
    "read_schema",
    "with_positions",
    "with_row_tracking",
]
