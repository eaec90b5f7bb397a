"""The replayed file state of a version: live adds and tombstones as Arrow, and their reconciliation keys.

A file is identified by its decoded path plus its deletion vector's id
(:func:`deltalog.core.pathkeys.file_key`); the newest action per key wins. Keys are computed column-wise,
and plain relative paths (most logs) are their own keys without a copy.

Every row of the state, from a checkpoint or from either commit parser, has its ``partitionValues`` in
one shape (:func:`conform_partition_values`): the table's partition keys in order, each with the value
the action gave it, or null. That is the shape a reader gives the map anyway (it looks each partition
column up and takes a missing key as null), and the only one Arrow's JSON reader can produce, so the
two parsers cannot differ on it, and a checkpoint written from the state never carries a stray key on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.core.pathkeys import dv_id_of, file_key
from deltalog.core.state.columns import STRING_MAP, array_of, map_column, repeats, scalar_of


@dataclass(frozen=True)
class FileState:
    """Live adds and tombstones as Arrow, with the stats column produced only on request."""

    base: pa.Table
    base_mask: pa.ChunkedArray | pa.Array | None
    base_stats: Callable[[], pa.ChunkedArray] | None
    tail: pa.Table
    base_removes: Callable[[], pa.Table]
    touched: pa.Array | pa.ChunkedArray  # keys of every file action replayed after the base (duplicates allowed)
    tail_removes: pa.Table
    root: str | None
    #: loads the ``stats`` column of ``tail`` (same row order) when the replay left it unparsed
    tail_stats: Callable[[], pa.ChunkedArray | pa.Array] | None = None
    #: checkpoints the loader had to skip to build this state (their files' names): the state came from
    #: older checkpoints or the commits instead, and a damaged log may hide more than those files show
    distrusted: tuple[str, ...] = ()
    #: the keys every row's ``partitionValues`` holds (see :func:`conform_partition_values`)
    partition_keys: tuple[str, ...] | None = None

    def conform(self, table: pa.Table) -> pa.Table:
        """``table`` (adds or removes, e.g. re-read from the base checkpoint) in this state's partition shape."""
        return conform_partition_values(table, self.partition_keys)

    def adds(self, stats: bool = False) -> pa.Table:
        base = self.base
        if stats and self.base_stats is not None and base.num_rows:
            base = base.set_column(base.schema.get_field_index("stats"), "stats", self.base_stats())
        if self.base_mask is not None:
            base = base.filter(self.base_mask)
        tail = self.tail_adds(stats)
        if not tail.num_rows:
            return base
        if not base.num_rows:
            return tail
        return pa.concat_tables([base, tail])

    def tail_adds(self, stats: bool = False) -> pa.Table:
        """The adds replayed after the base, with their stats when asked for."""
        tail = self.tail
        if stats and self.tail_stats is not None and tail.num_rows:
            tail = tail.set_column(tail.schema.get_field_index("stats"), "stats", self.tail_stats())
        return tail

    def tombstones(self) -> pa.Table:
        base = self.base_removes()
        if len(self.touched) and base.num_rows:
            base = base.filter(pc.invert(pc.is_in(key_column(base, self.root), value_set=self.touched)))
        if not self.tail_removes.num_rows:
            return base
        return pa.concat_tables([base, self.tail_removes]) if base.num_rows else self.tail_removes

    @property
    def num_files(self) -> int:
        base: int = self.base.num_rows if self.base_mask is None else int(pc.sum(self.base_mask).as_py() or 0)
        return base + int(self.tail.num_rows)


def _canonical_chunk(chunk: pa.MapArray, keys: tuple[str, ...]) -> bool:
    """Whether every map of ``chunk`` already holds exactly ``keys``, in order (null maps hold nothing)."""
    n = len(chunk)
    k = len(keys)
    offsets = chunk.offsets
    lengths = pc.subtract(offsets.slice(1, n), offsets.slice(0, n))
    if chunk.null_count:
        want = pc.if_else(chunk.is_valid(), scalar_of(k, pa.int32()), scalar_of(0, pa.int32()))
    else:
        want = scalar_of(k, pa.int32())
    if not pc.all(pc.equal(lengths, want)).as_py():
        return False
    rows = n - chunk.null_count
    if k == 0 or not rows:
        return True
    first = offsets[0].as_py()
    return repeats(chunk.keys.slice(first, offsets[n].as_py() - first), keys)  # ``keys`` ignores the slice


def _conformed_chunk(chunk: pa.MapArray, keys: tuple[str, ...]) -> pa.Array:
    if _canonical_chunk(chunk, keys):
        return chunk
    rows: list[dict[str, Any] | None] = []
    for pairs in chunk.to_pylist():  # rare (a stray or missing key): the plain way is clear enough
        if pairs is None:
            rows.append(None)
            continue
        given = dict(pairs)  # a key given twice: the last one, as a JSON object's duplicate key parses
        rows.append({key: given.get(key) for key in keys})
    return map_column(rows)


def conform_partition_values(table: pa.Table, keys: tuple[str, ...] | None) -> pa.Table:
    """``table`` with each ``partitionValues`` map holding exactly ``keys``, in order.

    A key the table does not partition by is dropped, a partition key the action left out becomes null, a
    value is kept as written (``""`` stays ``""``), and a null map (a remove may omit the map) stays null.
    ``keys`` None (no metadata to say them) leaves the table as it is.
    """
    if keys is None or not table.num_rows:
        return table
    col = table.column("partitionValues")
    given = (col if col.type == STRING_MAP else col.cast(STRING_MAP)).chunks
    chunks = [_conformed_chunk(c, keys) for c in given]
    if col.type == STRING_MAP and all(a is b for a, b in zip(chunks, given, strict=True)):
        return table
    index = table.schema.get_field_index("partitionValues")
    return table.set_column(index, pa.field("partitionValues", STRING_MAP), pa.chunked_array(chunks, type=STRING_MAP))


def _may_need_canonicalizing(paths: pa.Array) -> bool:
    """Whether any path may need decoding or normalising (:func:`~deltalog.core.pathkeys.needs_canonicalizing`).

    Most logs hold plain relative paths: one byte search over the string data rules that out at memchr
    speed, before any per-row pass (a sliced chunk's buffer may hold more strings than the slice: a
    false alarm only costs the exact pass).
    """
    data = paths.buffers()[2]
    if data is None:
        return False
    raw = data.to_pybytes()
    if b"%" in raw or b":" in raw or b"//" in raw or b"/." in raw:
        return True
    edges = pc.or_(pc.or_(pc.starts_with(paths, "/"), pc.starts_with(paths, ".")), pc.ends_with(paths, "/"))
    if pc.any(edges).as_py():
        return True
    return bool(pc.min(pc.binary_length(paths)).as_py() == 0)  # an empty path (no Python scalar: no pandas probe)


def key_column(table: pa.Table, root: str | None) -> pa.Array | pa.ChunkedArray:
    """The reconciliation key of every row of a file-action table, vectorised where the paths allow.

    Plain paths without deletion vectors are their own keys: the path column is returned as it is,
    chunks and all, without a copy.
    """
    paths = table.column("path")
    chunks = paths.chunks if isinstance(paths, pa.ChunkedArray) else [paths]
    dvs = table.column("deletionVector")
    if dvs.null_count == len(dvs) and not any(_may_need_canonicalizing(c) for c in chunks):
        return paths
    values = paths.to_pylist()
    if dvs.null_count == len(dvs):
        keys = [file_key(p, None, root) for p in values]
    else:
        keys = [file_key(p, dv_id_of(d), root) for p, d in zip(values, dvs.to_pylist(), strict=True)]
    return array_of(keys, pa.string())


__all__ = ["FileState", "conform_partition_values", "key_column"]
