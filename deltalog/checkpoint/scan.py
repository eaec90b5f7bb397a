"""Projected, batched reads of one action column of a checkpoint parquet file.

A checkpoint keeps every action kind in its own top-level struct column, one action per row, so each
column is null in almost every row. Reading a whole struct over a million rows to find its two set rows
costs more than the rows are worth, and holding a million-row table twice (read, then filtered) doubles
the peak memory. So the footer's statistics decide first which leaves can hold a value at all, a single
leaf locates the rows of the few-row actions, and file actions are read in batches that are filtered one
by one.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.checkpoint.columns import check_columns
from deltalog.errors import CorruptLogError, NotFoundError, StorageError
from deltalog.storage.base import LogStore

if TYPE_CHECKING:
    import pyarrow.parquet as pq

log = logging.getLogger(__name__)

#: rows per batch when file actions are streamed; the peak holds about one batch on top of the result
BATCH_ROWS = 65_536
#: rows per batch when looking for the few rows of a non-file action (they are usually the first rows)
_LOOKUP_ROWS = 8_192
#: the field every valid row of a non-file action has: a null there means the row is not that action
_KEY_FIELD = {
    "protocol": "minReaderVersion",
    "metaData": "id",
    "txn": "appId",
    "domainMetadata": "domain",
    "checkpointMetadata": "version",
    "sidecar": "path",
}
_READ_BUFFER = 1 << 20
#: what a damaged parquet file makes pyarrow raise: any Arrow error (KeyError included), or a ValueError such as
#: a name that is not UTF-8
READ_ERRORS = (pa.ArrowException, OSError, ValueError)


def _corrupt(path: str, exc: Exception) -> CorruptLogError:
    return CorruptLogError(f"{path} is not a readable parquet checkpoint: {exc}", path=path)


def unreadable(path: str, exc: StorageError) -> CorruptLogError:
    """A checkpoint file the store cannot give back as a file (a directory, a FIFO, a link loop in its place).

    Only permanent failures come here: a checkpoint is then as unusable as a torn one, and the loader may
    rebuild the version without it. A transient failure stays a :class:`StorageError`, so a flaky store
    never makes a reader distrust a sound checkpoint.
    """
    return CorruptLogError(f"checkpoint file {path} cannot be read: {exc}", path=path)


@contextmanager
def fetch_errors(path: str) -> Iterator[None]:
    """Around fetching a checkpoint file: one the listing named but the store no longer has, or one it cannot
    give back (:func:`unreadable`), is a :class:`CorruptLogError` naming it; a transient failure stays a
    :class:`StorageError`, for the caller to retry."""
    try:
        yield
    except NotFoundError:
        raise CorruptLogError(f"checkpoint file {path} disappeared while reading", path=path) from None
    except StorageError as exc:
        if exc.retryable:
            raise
        raise unreadable(path, exc) from None


@contextmanager
def open_parquet(store: LogStore, path: str) -> Iterator[pq.ParquetFile]:
    """A parquet reader over the store's stream, closed when the block ends.

    A local file is reopened as an Arrow file: reads then bypass Python's file object (and the GIL),
    which makes decoding a large checkpoint about twice as fast. Reads are buffered, so a column chunk
    is never held whole in memory before it is decoded. Page checksums are verified where the writer left
    them (parquet-mr since 1.12, and deltalog): a flipped bit in a page then fails the read instead of
    turning one file path or size into another.
    """
    with fetch_errors(path):
        handle = store.open(path)
    source: Any = handle
    try:
        if isinstance(handle, io.BufferedReader) and isinstance(handle.name, str):
            try:
                source = pa.OSFile(handle.name)
            except OSError:
                source = handle
        import pyarrow.parquet as pq  # a checkpoint's first read pays for it, not ``import deltalog``

        try:
            pf = pq.ParquetFile(source, buffer_size=_READ_BUFFER, pre_buffer=False, page_checksum_verification=True)
        except READ_ERRORS as exc:
            raise _corrupt(path, exc) from None
        yield pf
    finally:
        if source is not handle:
            source.close()
        handle.close()


def checked_layout(pf: pq.ParquetFile, path: str) -> Layout:
    """The file's :class:`Layout`, once its action columns are known to have types a reader can trust
    (see :mod:`deltalog.checkpoint.columns`); a column the file leaves out holds no action."""
    try:
        layout = Layout(pf)
    except READ_ERRORS as exc:
        raise _corrupt(path, exc) from None
    check_columns(layout.schema, path)
    return layout


def _check_physical_types(md: pq.FileMetaData, row_group: int) -> None:
    """Refuse a footer whose column chunks disagree with the schema about their physical type.

    Such a footer (a flipped bit is enough) makes pyarrow's statistics accessor throw from C++ where it
    cannot be caught: the process aborts. Checking the types first turns that into an error.
    """
    group = md.row_group(row_group)
    for i in range(md.num_columns):
        if group.column(i).physical_type != md.schema.column(i).physical_type:
            raise ValueError(f"row group {row_group}, column {i}: the footer's physical types disagree")


class Layout:
    """Which leaves of a parquet file can hold a value, from the footer's statistics.

    A leaf whose null count equals its value count in every row group holds no value anywhere. Only
    leaves without repetition are judged: a null entry of a repeated leaf may also be an empty map or list,
    which is a value.
    """

    def __init__(self, pf: pq.ParquetFile) -> None:
        md = pf.metadata
        self.schema = pf.schema_arrow
        self.num_rows = md.num_rows
        self._leaves: dict[str, list[str]] = {}  # top-level column -> its leaf paths
        self._empty: set[str] = set()
        repeated: set[str] = set()
        indices: list[int] = []
        for i in range(md.num_columns):
            column = md.schema.column(i)
            leaf = column.path
            self._leaves.setdefault(leaf.split(".", 1)[0], []).append(leaf)
            if column.max_repetition_level > 0:
                repeated.add(leaf)
            else:
                indices.append(i)
        paths = {i: md.schema.column(i).path for i in indices}
        empty = set(paths.values())
        for r in range(md.num_row_groups):
            _check_physical_types(md, r)
        for r in range(md.num_row_groups):
            if not empty:
                break
            group = md.row_group(r)
            for i in indices:
                if paths[i] not in empty:
                    continue
                chunk = group.column(i)
                stats = chunk.statistics
                if stats is None or not stats.has_null_count or stats.null_count != chunk.num_values:
                    empty.discard(paths[i])
        self._empty = empty
        self._repeated = repeated

    def has(self, column: str) -> bool:
        return column in self._leaves

    def field_type(self, column: str) -> pa.DataType:
        return self.schema.field(column).type

    def child_empty(self, column: str, child: str) -> bool:
        """True if ``column.child`` holds no value in any row (every leaf null, none repeated)."""
        prefix = f"{column}.{child}"
        leaves = [p for p in self._leaves.get(column, []) if p == prefix or p.startswith(prefix + ".")]
        return bool(leaves) and all(p in self._empty for p in leaves)

    def column_empty(self, column: str) -> bool:
        """True if no row holds this action: every leaf of it is null everywhere (none repeated).

        A struct whose non-repeated leaves are all null has no required field either, so no valid action
        can hide in such a file.
        """
        leaves = [p for p in self._leaves.get(column, []) if p not in self._repeated]
        return bool(leaves) and all(p in self._empty for p in leaves)


def iter_rows(
    pf: pq.ParquetFile, layout: Layout, path: str, column: str, fields: list[str], batch_rows: int = BATCH_ROWS
) -> Iterator[pa.Table]:
    """The rows of action ``column`` (its ``fields`` that the file has), batch by batch, in file order.

    Rows of other actions (a null ``path``) are dropped per batch. Fields that hold no value anywhere are
    not read; the caller's :func:`~deltalog.core.state.columns.conform` supplies them as nulls.
    """
    if not layout.has(column):
        return
    stype = layout.field_type(column)
    present = [f for f in fields if stype.get_field_index(f) >= 0]
    if "path" not in present or layout.child_empty(column, "path"):
        return
    read = [f for f in present if f == "path" or not layout.child_empty(column, f)]
    try:
        columns = [f"{column}.{f}" for f in read]
        for batch in pf.iter_batches(batch_size=batch_rows, columns=columns, use_threads=False):
            struct = batch.column(0)
            if struct.null_count == len(struct):
                continue
            children = struct.flatten()  # applies the struct's own nulls to its fields
            table = pa.Table.from_arrays(children, names=[struct.type.field(i).name for i in range(len(children))])
            paths = table.column("path")
            if paths.null_count:
                table = table.filter(pc.is_valid(paths))
            if table.num_rows:
                yield table
    except READ_ERRORS as exc:
        raise _corrupt(path, exc) from None


def non_file_rows(pf: pq.ParquetFile, layout: Layout, path: str, column: str) -> list[dict[str, Any]]:
    """The set rows of non-file action ``column``, as Python dicts in file order.

    The footer rules out most columns; otherwise one leaf locates the rows and the full struct is decoded
    only up to the last of them, which in checkpoints written by Delta Spark or delta-rs are the first rows.
    """
    if not layout.has(column) or layout.column_empty(column):
        return []
    stype = layout.field_type(column)
    key = _KEY_FIELD.get(column)
    if key is None or stype.get_field_index(key) < 0:
        return _all_rows(pf, path, column)
    try:
        located = pf.read(columns=[f"{column}.{key}"], use_threads=False).column(column)
    except READ_ERRORS as exc:
        raise _corrupt(path, exc) from None
    if located.null_count == len(located):
        return []
    where = pc.indices_nonzero(pc.is_valid(located)).to_pylist()
    out: list[dict[str, Any]] = []
    md = pf.metadata
    start = 0
    for rg in range(md.num_row_groups):
        end = start + md.row_group(rg).num_rows
        inside = [i for i in where if start <= i < end]
        if inside:
            out.extend(_rows_up_to(pf, path, column, rg, inside[-1] - start))
        start = end
    return out


def _rows_up_to(pf: pq.ParquetFile, path: str, column: str, rg: int, last: int) -> list[dict[str, Any]]:
    """The set rows of ``column`` in row group ``rg``, decoding batches only until row ``last`` is seen."""
    out: list[dict[str, Any]] = []
    seen = 0
    try:
        for batch in pf.iter_batches(batch_size=_LOOKUP_ROWS, row_groups=[rg], columns=[column], use_threads=False):
            struct = batch.column(0)
            if struct.null_count != len(struct):
                out.extend(struct.filter(pc.is_valid(struct)).to_pylist())
            seen += len(struct)
            if seen > last:
                break
    except READ_ERRORS as exc:
        raise _corrupt(path, exc) from None
    return out


def _all_rows(pf: pq.ParquetFile, path: str, column: str) -> list[dict[str, Any]]:
    try:
        values = pf.read(columns=[column]).column(column)
    except READ_ERRORS as exc:
        raise _corrupt(path, exc) from None
    if values.null_count == len(values):
        return []
    return list(values.filter(pc.is_valid(values)).to_pylist())


__all__ = [
    "BATCH_ROWS",
    "Layout",
    "checked_layout",
    "fetch_errors",
    "iter_rows",
    "non_file_rows",
    "open_parquet",
    "unreadable",
]
