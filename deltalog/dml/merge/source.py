"""A merge's source, read once and kept where it can be read again: in memory while it fits a budget, else
spilled to an Arrow IPC file in a temporary directory (deleted when the merge ends).

A merge reads its source more than once: joined with each group of target files, then for the rows it updates
and the rows it inserts. Delta Spark materializes the source for the same reason when it cannot prove it
re-readable and deterministic (``MergeIntoMaterializeSource``): a reader, a generator or a query result would
give other rows, or none, the second time. Here every source is materialized, except an in-memory Arrow table,
which is already both. Batches are normalised on the way in to the Arrow types of the Delta columns that would
hold them (large and view strings, dictionaries, unsigned integers widened, timestamps in microseconds), with
only the casts that lose nothing: a value that does not fit is refused naming its column.

Memory: what stays in memory is bounded by ``budget`` bytes; beyond it, every batch goes to the spill file, in
batches of at most ``chunk_bytes``, and is read back one batch at a time (never memory-mapped: pages read for
one group are released before the next).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from deltalog.arrow.schema import arrow_type, delta_type
from deltalog.data.batches import input_stream
from deltalog.errors import SchemaMismatchError, UnsupportedFeatureError

log = logging.getLogger(__name__)

#: the column holding each source row's position in the source (its identity through the merge)
ROW = "__deltalog_source_row"


def normalised_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with each column in the Arrow type of the Delta column that would hold it (what batches are
    normalised to)."""
    out = []
    for f in schema:
        try:
            out.append(pa.field(f.name, arrow_type(delta_type(f.type)), f.nullable))
        except UnsupportedFeatureError as exc:  # a type Delta cannot hold
            raise SchemaMismatchError(f"source column {f.name!r}: {exc}", column=f.name) from None
    return pa.schema(out)


def _normalised(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    if batch.schema.equals(schema):
        return batch
    arrays = []
    for f, arr in zip(schema, batch.columns, strict=True):
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        try:
            arrays.append(arr if arr.type == f.type else arr.cast(f.type, safe=True))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise SchemaMismatchError(
                f"source column {f.name!r} ({arr.type}) does not fit {f.type} without losing values: {exc}",
                column=f.name,
            ) from None
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _split(batch: pa.RecordBatch, chunk_bytes: int) -> Iterator[pa.RecordBatch]:
    if batch.nbytes <= chunk_bytes or batch.num_rows <= 1:
        yield batch
        return
    rows = max(1, int(batch.num_rows * chunk_bytes / max(batch.nbytes, 1)))
    for start in range(0, batch.num_rows, rows):
        yield batch.slice(start, rows)


@dataclass
class MergeSource:
    """The materialized source: its schema, row count, and batches with their first row's position.

    ``spill`` is the IPC file (None while everything is in memory). :meth:`close` deletes the temporary
    directory; a closed source cannot be read again.
    """

    schema: pa.Schema
    batches: list[pa.RecordBatch] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    num_rows: int = 0
    spill: Path | None = None
    directory: Path | None = None
    nbytes: int = 0

    @property
    def spilled(self) -> bool:
        return self.spill is not None

    def chunks(self, max_bytes: int | None = None) -> Iterator[tuple[int, pa.RecordBatch]]:
        """(first row's position, batch) for the whole source. In memory, batches are combined up to
        ``max_bytes`` (one join per chunk builds one hash table); spilled, one IPC batch at a time."""
        if self.spill is None:
            yield from _combined(self.batches, self.offsets, max_bytes)
            return
        reader = ipc.open_file(pa.OSFile(str(self.spill), "rb"))
        for i, start in enumerate(self.offsets):
            yield start, reader.get_batch(i)

    def take(self, rows: np.ndarray, columns: Sequence[str] | None = None) -> pa.RecordBatch:
        """The source rows at positions ``rows`` (ascending, unique), in that order, with ``columns`` only."""
        names = list(self.schema.names) if columns is None else list(columns)
        schema = pa.schema([self.schema.field(n) for n in names])
        if len(rows) == 0:
            return pa.RecordBatch.from_pylist([], schema=schema)
        starts = np.asarray(self.offsets, dtype=np.int64)
        which = np.searchsorted(starts, rows, side="right") - 1
        parts = []
        reader = ipc.open_file(pa.OSFile(str(self.spill), "rb")) if self.spill is not None else None
        for b in np.unique(which):
            batch = self.batches[b] if reader is None else reader.get_batch(int(b))
            local = rows[which == b] - starts[b]
            parts.append(batch.select(names).take(pa.array(local)))
        if len(parts) == 1:
            return parts[0]
        return pa.Table.from_batches(parts, schema=schema).combine_chunks().to_batches()[0]

    def close(self) -> None:
        self.batches = []
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None


def _combined(
    batches: Sequence[pa.RecordBatch], offsets: Sequence[int], max_bytes: int | None
) -> Iterator[tuple[int, pa.RecordBatch]]:
    group: list[pa.RecordBatch] = []
    start, size = 0, 0
    for batch, offset in zip(batches, offsets, strict=True):
        if group and max_bytes is not None and size + batch.nbytes > max_bytes:
            yield start, _concat(group)
            group, size = [], 0
        if not group:
            start = offset
        group.append(batch)
        size += batch.nbytes
    if group:
        yield start, _concat(group)


def _concat(group: Sequence[pa.RecordBatch]) -> pa.RecordBatch:
    if len(group) == 1:
        return group[0]
    return pa.Table.from_batches(group).combine_chunks().to_batches()[0]


def materialize(data: Any, budget: int, chunk_bytes: int, directory: str | None = None) -> MergeSource:
    """Read ``data`` (anything :func:`deltalog.write` takes) once into a :class:`MergeSource`: in memory up to
    ``budget`` bytes, spilled beyond (an in-memory Arrow table is kept as it is)."""
    raw_schema, stream = input_stream(data)
    schema = normalised_schema(raw_schema)
    out = MergeSource(schema)
    keep = isinstance(data, pa.Table)
    writer: ipc.RecordBatchFileWriter | None = None
    try:
        for raw in stream:
            for batch in _split(_normalised(raw, schema), chunk_bytes):
                if batch.num_rows == 0:
                    continue
                out.offsets.append(out.num_rows)
                out.num_rows += batch.num_rows
                out.nbytes += batch.nbytes
                if writer is None and not keep and out.nbytes > budget:
                    writer = _open_spill(out, directory)
                if writer is not None:
                    writer.write_batch(batch)
                else:
                    out.batches.append(batch)
        if writer is not None:
            writer.close()
    except BaseException:
        if writer is not None:
            writer.close()
        out.close()
        raise
    return out


def _open_spill(out: MergeSource, directory: str | None) -> ipc.RecordBatchFileWriter:
    """Move what is held so far into a new spill file and keep writing there."""
    out.directory = Path(tempfile.mkdtemp(prefix="deltalog-merge-", dir=directory))
    out.spill = out.directory / "source.arrow"
    log.info("the merge source passed its memory budget: spilling it to %s", out.spill)
    writer = ipc.new_file(str(out.spill), out.schema)
    for batch in out.batches:
        writer.write_batch(batch)
    out.batches = []
    return writer


__all__ = ["ROW", "MergeSource", "materialize", "normalised_schema"]
