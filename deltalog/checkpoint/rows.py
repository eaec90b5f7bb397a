"""A version's checkpoint rows as Arrow in checkpoint types: non-file actions, adds, tombstones.

Built from the version's state and files and a clock, never from a snapshot. The live adds of a file
state loaded from a checkpoint are, row for row, that checkpoint's adds minus the
masked-out ones, followed by the adds of later commits. :func:`streamed_adds` yields them in that order one
batch at a time, re-reading the old checkpoint with its ``stats``, so a checkpoint of a million files never
holds every stats string at once.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.checkpoint import schema as S
from deltalog.checkpoint.reader import FileActions
from deltalog.checkpoint.scan import BATCH_ROWS
from deltalog.core.features import properties
from deltalog.core.state.columns import array_of
from deltalog.core.state.files import FileState
from deltalog.core.version_state import VersionState
from deltalog.errors import CheckpointError

log = logging.getLogger(__name__)


def false_array(n: int) -> pa.Array:
    """``n`` false booleans (``dataChange`` of reconciled state), built from a zeroed bitmap."""
    return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bytearray((n + 7) // 8))])


def null_table(schema: pa.Schema, column: str, values: pa.Array) -> pa.Table:
    """Rows of one action kind: ``values`` in ``column``, every other column null."""
    n = len(values)
    return pa.Table.from_arrays([values if f.name == column else pa.nulls(n, f.type) for f in schema], schema=schema)


def _mask(values: Sequence[Any]) -> pa.Array | None:
    nulls = [v is None for v in values]
    return array_of(nulls, pa.bool_()) if any(nulls) else None


def nested_array(values: Sequence[Any], t: pa.DataType) -> pa.Array:
    """``pa.array(values, t)`` for the few non-file rows, without pyarrow's pandas probe.

    Structs come from dicts, lists from lists, maps from lists of pairs; leaves go through
    :func:`~deltalog.core.state.columns.array_of` (``pa.array`` would import pandas, half a second).
    """
    if pa.types.is_struct(t):
        children = [nested_array([None if v is None else v.get(f.name) for v in values], f.type) for f in t]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=_mask(values))
    if pa.types.is_map(t) or pa.types.is_list(t):
        offsets = [0]
        flat: list[Any] = []
        for v in values:
            flat.extend(v or ())
            offsets.append(len(flat))
        offset_array = array_of(offsets, pa.int32())
        if pa.types.is_map(t):
            keys = nested_array([k for k, _ in flat], t.key_type)
            items = nested_array([x for _, x in flat], t.item_type)
            return pa.MapArray.from_arrays(offset_array, keys, items, type=t, mask=_mask(values))
        return pa.ListArray.from_arrays(offset_array, nested_array(flat, t.value_type), type=t, mask=_mask(values))
    if all(v is None for v in values):
        return pa.nulls(len(values), t)
    return array_of(values, t)


def _struct(rows: list[dict[str, Any]], t: pa.StructType) -> pa.Array:
    return nested_array(rows, t)


def non_file_arrays(state: VersionState, now_ms: int) -> list[tuple[str, pa.Array]]:
    """Protocol, metaData, txns live at ``now_ms`` and domain metadata of ``state``, one struct array per kind."""
    p = state.protocol
    m = state.metadata
    protocol = {
        "minReaderVersion": p.min_reader_version,
        "minWriterVersion": p.min_writer_version,
        "readerFeatures": list(p.reader_features) if p.reader_features is not None else None,
        "writerFeatures": list(p.writer_features) if p.writer_features is not None else None,
    }
    metadata = {
        "id": m.id,
        "name": m.name,
        "description": m.description,
        "format": {"provider": m.format.provider, "options": list(m.format.options.items())},
        "schemaString": m.schema_string,
        "partitionColumns": list(m.partition_columns),
        "configuration": list(m.configuration.items()),
        "createdTime": m.created_time,
    }
    out = [("protocol", _struct([protocol], S.PROTOCOL)), ("metaData", _struct([metadata], S.METADATA))]
    live = state.live_txns(now_ms).values()
    txns = [{"appId": t.app_id, "version": t.version, "lastUpdated": t.last_updated} for t in live]
    if txns:
        out.append(("txn", _struct(txns, S.TXN)))
    domains = [{"domain": d.domain, "configuration": d.configuration, "removed": False} for d in state.domains.values()]
    if domains:
        out.append(("domainMetadata", _struct(domains, S.DOMAIN)))
    return out


def non_file_table(state: VersionState, now_ms: int, schema: pa.Schema) -> pa.Table:
    return pa.concat_tables([null_table(schema, col, arr) for col, arr in non_file_arrays(state, now_ms)])


def _column(table: pa.Table, f: pa.Field) -> pa.Array:
    chunked = table.column(f.name)
    col = chunked.chunk(0) if chunked.num_chunks == 1 else chunked.combine_chunks()
    return col.cast(f.type) if col.type != f.type else col


def add_struct(
    adds: pa.Table, add_t: pa.StructType, sp: pa.Array | None = None, pvp: pa.Array | None = None
) -> pa.Array:
    """``adds`` (the log's field names) as the checkpoint's ``add`` struct; ``dataChange`` is false."""
    n = adds.num_rows
    if not n:
        return pa.nulls(0, add_t)
    children = []
    for f in add_t:
        if f.name == "dataChange":
            children.append(false_array(n))  # reconciled state, as Spark writes it
        elif f.name == "stats_parsed":
            children.append(sp)
        elif f.name == "partitionValues_parsed":
            children.append(pvp)
        else:
            children.append(_column(adds, f))
    return pa.StructArray.from_arrays(children, fields=list(add_t))


def live_tombstones(state: VersionState, files: FileState, now_ms: int) -> tuple[pa.Table, pa.Array]:
    """Tombstones within the deleted-file retention at ``now_ms``, as a table and as the checkpoint's
    ``remove`` struct."""
    retention = properties.deleted_file_retention_ms(state.configuration)
    tomb = files.tombstones()
    if tomb.num_rows:
        ts = pc.fill_null(tomb.column("deletionTimestamp"), 0)
        tomb = tomb.filter(pc.greater(ts, now_ms - retention))
    if not tomb.num_rows:
        return tomb, pa.nulls(0, S.REMOVE)
    children = [false_array(tomb.num_rows) if f.name == "dataChange" else _column(tomb, f) for f in S.REMOVE]
    return tomb, pa.StructArray.from_arrays(children, fields=list(S.REMOVE))


def streamed_adds(files: FileState, stats: bool) -> Iterator[pa.Table] | None:
    """The live adds of ``files`` in ``adds()`` order, batch by batch, or None if not streamable.

    Streamable means the file state's base came from a checkpoint read (its ``base_stats`` is that
    checkpoint's :class:`FileActions`): its rows are re-read with ``stats``, the live mask applied slice by
    slice, then the adds of later commits follow.
    """
    if not isinstance(files.base_stats, FileActions):
        return None
    return _stream(files, files.base_stats, stats)


def _stream(files: FileState, source: FileActions, stats: bool) -> Iterator[pa.Table]:
    mask = files.base_mask
    offset = 0
    for table in source.iter_adds(stats=stats):
        table = files.conform(table)  # the checkpoint's rows in the state's partition shape, as adds() gives them
        n = table.num_rows
        if mask is not None:
            part = mask.slice(offset, n)
            if part.null_count or pc.sum(part).as_py() != n:
                table = table.filter(part)
        offset += n
        if table.num_rows:
            yield table
    if offset != files.base.num_rows:
        raise CheckpointError(f"the checkpoint behind this snapshot now has {offset} adds, not {files.base.num_rows}")
    tail = files.tail_adds(stats)
    for start in range(0, tail.num_rows, BATCH_ROWS):
        yield tail.slice(start, BATCH_ROWS)


__all__ = [
    "add_struct",
    "false_array",
    "live_tombstones",
    "non_file_arrays",
    "nested_array",
    "non_file_table",
    "null_table",
    "streamed_adds",
]
