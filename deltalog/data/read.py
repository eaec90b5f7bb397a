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
from deltalog.core.schema import top_level_fields
from deltalog.core.state.columns import bool_array
from deltalog.data.conform import Column, conform, match, plan_field
from deltalog.data.constants import Constants
from deltalog.data.dv import read_deletion_vector
from deltalog.data.locate import failures_named, native_path, open_input, resolve
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


@contextlib.contextmanager
def _parquet_errors(source: str) -> Iterator[None]:
    """Arrow's complaints about a file's bytes are corrupt data; I/O failures are the store's."""
    with failures_named(source):
        try:
            yield
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise CorruptDataError(f"{source}: not a readable parquet file: {exc}", path=source) from None


def _mask(marked: np.ndarray, start: int, n: int, keep_marked: bool) -> pa.Array | None:
    """The keep-mask of rows ``[start, start + n)``: the ``marked`` rows (sorted indexes) kept and the others
    dropped, or the other way round; None when none of the rows is marked."""
    lo, hi = np.searchsorted(marked, [start, start + n])
    if lo == hi:
        return None
    keep = np.full(n, not keep_marked, dtype=bool)
    keep[marked[lo:hi] - start] = keep_marked
    return bool_array(keep)


@dataclass(frozen=True)
class _Plan:
    """How one file's raw batches become the table's rows: where each column is, and the partition values."""

    found: Mapping[str, int | None]
    position: Mapping[int, int]
    partitions: Mapping[str, pa.Scalar]
    source: str

    def key(self, file: DataFile, raw: pa.Schema) -> tuple[Any, ...]:
        """Files whose raw batches can be joined before assembling: same columns found alike, same partition."""
        return (
            raw,
            tuple(self.found.items()),
            tuple(self.position.items()),
            tuple(sorted(file.partition_values.items())),
        )


@dataclass(frozen=True)
class _Piece:
    """One raw batch of a file (the file's own columns and types), how to assemble it, the columns the spec adds
    after the table's (stable row ids and commit versions, physical positions), which of its rows to keep
    (None: all of them), and where its partition columns come from.

    The mask is applied after assembling, in the table's types: pyarrow cannot filter some of a file's types
    (a ``string_view`` column deltalake wrote)."""

    plan: _Plan
    batch: pa.RecordBatch
    ids: list[pa.Array] | None
    keep: pa.Array | None
    constants: Constants | None = None

    def rows(self, spec: ReadSchema) -> pa.RecordBatch:
        p = self.plan
        out = _assemble(spec, self.batch, p.found, p.position, p.partitions, p.source, self.ids, self.constants)
        return out if self.keep is None else pc.filter(out, self.keep, memory_pool=DATA_POOL)


def _pieces(
    store: LogStore,
    spec: ReadSchema,
    file: DataFile,
    batch_rows: int,
    rows: np.ndarray | None = None,
    constants: Constants | None = None,
) -> Iterator[_Piece]:
    """The file's raw batches that hold live rows (or, with ``rows``, rows among those), each with how to
    assemble it and which of its rows to keep."""
    source = file.path
    partitions = partition_scalars(spec, file, source)
    deleted = None
    if file.deletion_vector is not None:
        deleted = read_deletion_vector(store, file.deletion_vector)
    if rows is not None:
        rows = rows if deleted is None else np.setdiff1d(rows, deleted, assume_unique=True)
        if not len(rows):
            return
    where = resolve(store, file.path)
    with contextlib.ExitStack() as stack:
        with _parquet_errors(source):
            local = native_path(store, where)
            # a local file opened natively (reads without the GIL); a path string would make pyarrow work out
            # its filesystem again for every file, which costs as much as reading a small file
            handle: Any = (
                stack.enter_context(pa.OSFile(local))
                if local is not None
                else stack.enter_context(open_input(store, where, source))
            )
            # pre-buffering coalesces ranged reads, which pays on object stores and costs on a local disk
            parquet = parquet_file(handle, coerce_int96_timestamp_unit="us", pre_buffer=local is None)
            stack.callback(parquet.close)
            num_rows = parquet.metadata.num_rows
            file_fields = list(parquet.schema_arrow)
        _check_rows(file, deleted, num_rows, source)
        if rows is not None:
            _check_rows(file, rows, num_rows, source)
        wanted = [c for c in spec.columns if c.name not in partitions]
        found = {c.name: match(file_fields, c, spec.mode, source) for c in wanted}
        tracked = _tracked_fields(spec, file, file_fields, source)
        selected = sorted({i for i in [*found.values(), *tracked] if i is not None})
        names = [file_fields[i].name for i in selected]
        # pyarrow reads "a.b" as a nested path: with such a name, read every column and pick by position
        by_name = not any("." in n for n in names)
        position = {i: (k if by_name else i) for k, i in enumerate(selected)}
        plan = _Plan(found, position, partitions, source)
        with _parquet_errors(source):
            for start, batch in _file_batches(parquet, batch_rows, names if by_name else None, rows):
                n = batch.num_rows
                if rows is not None:
                    keep = _mask(rows, start, n, keep_marked=True)
                    if keep is None:
                        continue
                else:
                    keep = None if deleted is None else _mask(deleted, start, n, keep_marked=False)
                ids = None if spec.row_tracking is None else _row_ids(file, batch, tracked, position, start)
                if spec.positions is not None:
                    ids = [*(ids or ()), pa.array(np.arange(start, start + n, dtype=np.int64))]
                yield _Piece(plan, batch, ids, keep, constants)


def read_batches(
    store: LogStore,
    spec: ReadSchema,
    file: DataFile,
    batch_rows: int = BATCH_ROWS,
    rows: np.ndarray | None = None,
    constants: Constants | None = None,
) -> Iterator[pa.RecordBatch]:
    """The file's live rows in ``spec``'s schema, batch by batch (deleted rows dropped, empty batches skipped).

    ``rows`` (sorted, distinct ``int64`` physical row indexes) reads only those of the live rows, decoding only
    the row groups that hold one: what a change reader wants of a file whose deletion vector changed, and what
    a MERGE or UPDATE reads of the rows it acts on. ``constants`` (one per read of many files) makes the
    partition columns of files with equal values share their buffers.

    Every failure is typed and names the file: missing or corrupt data or DV files, a DV that disagrees
    with the file, a partition value that is not of its column's type.
    """
    for piece in _pieces(store, spec, file, batch_rows, rows, constants):
        out = piece.rows(spec)
        if out.num_rows:
            yield out


def read_many(
    store: LogStore, spec: ReadSchema, files: Sequence[DataFile], batch_rows: int = BATCH_ROWS
) -> Iterator[pa.RecordBatch]:
    """The live rows of ``files`` in order, as :func:`read_batches` gives them, in batches of about
    ``batch_rows``: consecutive files of one partition and one file schema have their raw rows joined before
    they are assembled once, so many small files cost little more than their decoding (what compaction reads).
    A batch with deleted rows, stable row ids or positions is assembled on its own. A failure in assembling a
    joined batch names its first file."""
    held: list[pa.RecordBatch] = []
    held_plan: _Plan | None = None
    held_key: tuple[Any, ...] | None = None
    count = 0
    constants = Constants()

    def flush() -> Iterator[pa.RecordBatch]:
        nonlocal held, count
        if held and held_plan is not None:
            joined = pa.Table.from_batches(held).combine_chunks()
            p = held_plan
            for raw in joined.to_batches(max_chunksize=batch_rows):
                yield _assemble(spec, raw, p.found, p.position, p.partitions, p.source, constants=constants)
        held, count = [], 0

    for file in files:
        for piece in _pieces(store, spec, file, batch_rows, constants=constants):
            if piece.ids is not None or piece.keep is not None:
                yield from flush()
                out = piece.rows(spec)
                if out.num_rows:
                    yield out
                continue
            if piece.batch.num_rows == 0:
                continue
            key = piece.plan.key(file, piece.batch.schema)
            if key != held_key:
                yield from flush()
                held_plan, held_key = piece.plan, key
            held.append(piece.batch)
            count += piece.batch.num_rows
            if count >= batch_rows:
                yield from flush()
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
    offsets = np.cumsum([0, *sizes])
    groups: Sequence[int] = range(len(sizes))
    if rows is not None:
        holding = np.unique(np.searchsorted(offsets, rows, side="right") - 1)
        groups = [int(g) for g in holding if 0 <= g < len(sizes)]
    for i in groups:
        start = int(offsets[i])
        if sizes[i] <= batch_rows:
            table = parquet.read_row_group(i, columns=columns, use_threads=False)
            parts = table.combine_chunks(DATA_POOL).to_batches(max_chunksize=batch_rows) if table.num_rows else []
        else:
            parts = parquet.iter_batches(batch_size=batch_rows, row_groups=[i], columns=columns)
        for batch in parts:
            yield start, batch
            start += batch.num_rows


def _tracked_fields(spec: ReadSchema, file: DataFile, file_fields: Sequence[pa.Field], source: str) -> list[int | None]:
    """Where the file keeps materialized row ids and commit versions (None: not materialized); refuses a file
    whose stable ids cannot be known (no ``baseRowId`` or ``defaultRowCommitVersion`` in its add)."""
    if spec.row_tracking is None:
        return []
    if file.base_row_id is None or file.default_row_commit_version is None:
        raise UnsupportedFeatureError(
            f"{source}: its add has no baseRowId/defaultRowCommitVersion, so the row ids and commit versions of "
            "its rows are unknown and cannot be kept by a rewrite",
            feature="rowTracking",
            path=source,
        )
    names = [f.name for f in file_fields]
    return [names.index(c) if c in names else None for c in spec.row_tracking]


def _row_ids(
    file: DataFile,
    batch: pa.RecordBatch,
    tracked: Sequence[int | None],
    position: Mapping[int, int],
    start: int,
) -> list[pa.Array]:
    """The stable row ids and commit versions of a batch of the file's physical rows from ``start``."""
    assert file.base_row_id is not None and file.default_row_commit_version is not None
    n = batch.num_rows
    fresh = [
        pa.array(np.arange(file.base_row_id + start, file.base_row_id + start + n, dtype=np.int64)),
        pa.array(np.full(n, file.default_row_commit_version, dtype=np.int64)),
    ]
    out = []
    for index, default in zip(tracked, fresh, strict=True):
        stored = None if index is None else batch.column(position[index])
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
    found: Mapping[str, int | None],
    position: Mapping[int, int],
    partitions: Mapping[str, pa.Scalar],
    source: str,
    ids: Sequence[pa.Array] | None = None,
    constants: Constants | None = None,
) -> pa.RecordBatch:
    n = batch.num_rows
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
    with contextlib.ExitStack() as stack, _parquet_errors(source):
        local = native_path(store, where)
        handle: Any = local if local is not None else stack.enter_context(open_input(store, where, source))
        return int(pq.ParquetFile(handle).metadata.num_rows)


def read_file(store: LogStore, spec: ReadSchema, file: DataFile) -> pa.Table:
    """All live rows of one file as a table (tests and small files; scans use :func:`read_batches`)."""
    return pa.Table.from_batches(list(read_batches(store, spec, file)), schema=spec.schema)


__all__ = [
    "BATCH_ROWS",
    "DataFile",
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
