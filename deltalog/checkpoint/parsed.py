"""``stats_parsed`` and ``partitionValues_parsed`` columns, built from the JSON the log holds.

Types come from the table schema (physical names), never from the JSON. A value that does not parse
leaves the whole parsed column out (with a warning) rather than writing a wrong bound: readers treat a
missing statistic as "unknown", but they trust a present one to prune files.
"""

from __future__ import annotations

import io
import logging
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from deltalog.core.files.partitions import PartitionValueError, parse_value
from deltalog.core.schema import top_level_fields
from deltalog.core.state.columns import array_of

log = logging.getLogger(__name__)


def _json_read_type(t: pa.DataType) -> pa.DataType:
    """What Arrow's JSON reader can parse directly: dates arrive as strings and are cast afterwards."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _json_read_type(f.type)) for f in t])
    if pa.types.is_date(t):
        return pa.string()
    return t


def _parse_stats(texts: list[bytes], target: pa.StructType) -> pa.Array | None:
    data = b"\n".join(texts)
    read_schema = pa.schema([pa.field(f.name, _json_read_type(f.type)) for f in target])
    try:
        table = pj.read_json(
            io.BytesIO(data),
            read_options=pj.ReadOptions(block_size=max(1 << 20, len(data) // 8 + 1)),
            parse_options=pj.ParseOptions(explicit_schema=read_schema, unexpected_field_behavior="ignore"),
        )
        return table.to_struct_array().combine_chunks().cast(target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None


def stats_parsed(stats: pa.ChunkedArray | pa.Array, target: pa.StructType) -> pa.Array | None:
    """Typed statistics for each row's JSON ``stats`` string (null where a file has none)."""
    values = stats.combine_chunks() if isinstance(stats, pa.ChunkedArray) else stats
    n = len(values)
    if n == 0:
        return pa.nulls(0, target)
    texts = [t.encode() if t else b"{}" for t in values.to_pylist()]
    parsed = _parse_stats(texts, target)
    if parsed is None:
        # One file with ill-typed stats must not erase every file's: parse row by row, null for the bad ones.
        rows = [_parse_stats([t], target) for t in texts]
        bad = sum(r is None for r in rows)
        log.warning("stats of %d file(s) do not fit the table schema; their stats_parsed is left null", bad)
        parsed = pa.concat_arrays([r if r is not None else pa.nulls(1, target) for r in rows])
        mask = array_of([r is None for r in rows], pa.bool_())
        values = pc.if_else(mask, pa.nulls(1, pa.string())[0], values)
    if parsed.null_count or values.null_count:
        parsed = pa.StructArray.from_arrays(
            [parsed.field(i) for i in range(parsed.type.num_fields)], fields=list(target), mask=values.is_null()
        )
    return parsed


def partition_values_parsed(
    partition_values: pa.ChunkedArray | pa.Array,
    schema: dict[str, Any],
    physical: dict[str, str],
    partition_columns: list[str],
    target: pa.StructType,
) -> pa.Array | None:
    """Typed partition values per row; the protocol's null spellings become null."""
    pv = partition_values.combine_chunks() if isinstance(partition_values, pa.ChunkedArray) else partition_values
    types = {f["name"]: f["type"] for f in top_level_fields(schema)}
    children = []
    for column, field in zip(partition_columns, target, strict=True):
        raw = pc.map_lookup(pv, physical.get(column, column), "first")
        encoded = raw.dictionary_encode()
        try:
            typed = [parse_value(types[column], v) for v in encoded.dictionary.to_pylist()]
            uniques = pa.array(typed, field.type)
        except (PartitionValueError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            log.warning("leaving partitionValues_parsed out of the checkpoint: column %r (%s)", column, exc)
            return None
        children.append(uniques.take(encoded.indices) if len(uniques) else pa.nulls(len(pv), field.type))
    return pa.StructArray.from_arrays(children, fields=list(target))


__all__ = ["partition_values_parsed", "stats_parsed"]
