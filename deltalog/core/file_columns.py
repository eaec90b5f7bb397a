"""Arrow layouts for file actions, and builders from parsed JSON.

Part of the columnar replay (the one place the pure core uses pyarrow): live files are held as one Arrow
table, never as one Python object per file, because replay speed on large tables is the product.
Column names follow the checkpoint's ``add``/``remove`` struct fields so that checkpoints can be written
from this state without renaming.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

STRING_MAP = pa.map_(pa.string(), pa.string())
DV_TYPE = pa.struct(
    [
        pa.field("storageType", pa.string()),
        pa.field("pathOrInlineDv", pa.string()),
        pa.field("offset", pa.int32()),
        pa.field("sizeInBytes", pa.int32()),
        pa.field("cardinality", pa.int64()),
    ]
)

ADD_FIELDS: list[pa.Field] = [
    pa.field("path", pa.string()),
    pa.field("partitionValues", STRING_MAP),
    pa.field("size", pa.int64()),
    pa.field("modificationTime", pa.int64()),
    pa.field("dataChange", pa.bool_()),
    pa.field("stats", pa.string()),
    pa.field("tags", STRING_MAP),
    pa.field("deletionVector", DV_TYPE),
    pa.field("baseRowId", pa.int64()),
    pa.field("defaultRowCommitVersion", pa.int64()),
    pa.field("clusteringProvider", pa.string()),
]
ADD_SCHEMA = pa.schema(ADD_FIELDS)

REMOVE_FIELDS: list[pa.Field] = [
    pa.field("path", pa.string()),
    pa.field("deletionTimestamp", pa.int64()),
    pa.field("dataChange", pa.bool_()),
    pa.field("extendedFileMetadata", pa.bool_()),
    pa.field("partitionValues", STRING_MAP),
    pa.field("size", pa.int64()),
    pa.field("stats", pa.string()),
    pa.field("tags", STRING_MAP),
    pa.field("deletionVector", DV_TYPE),
    pa.field("baseRowId", pa.int64()),
    pa.field("defaultRowCommitVersion", pa.int64()),
]
REMOVE_SCHEMA = pa.schema(REMOVE_FIELDS)

#: add columns read from checkpoints by default; ``stats`` is read only when asked for
ADD_COLUMNS_NO_STATS = [f.name for f in ADD_FIELDS if f.name != "stats"]


def _map_items(v: Any) -> list[tuple[str, str | None]] | None:
    if v is None:
        return None
    return [(k, None if x is None else (x if isinstance(x, str) else orjson.dumps(x).decode())) for k, x in v.items()]


def _stats_text(v: Any) -> str | None:
    if v is None or isinstance(v, str):
        return v
    return orjson.dumps(v).decode()  # some writers put an object where a JSON string belongs


def _dv_value(v: Any) -> dict[str, Any] | None:
    if v is None:
        return None
    return {
        "storageType": v.get("storageType"),
        "pathOrInlineDv": v.get("pathOrInlineDv"),
        "offset": v.get("offset"),
        "sizeInBytes": v.get("sizeInBytes"),
        "cardinality": v.get("cardinality"),
    }


def table_from_dicts(rows: Sequence[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Build a file-action table from the parsed JSON bodies of ``add`` or ``remove`` actions."""
    arrays = []
    for f in schema:
        name = f.name
        if name in ("partitionValues", "tags"):
            values: list[Any] = [_map_items(r.get(name)) for r in rows]
        elif name == "stats":
            values = [_stats_text(r.get(name)) for r in rows]
        elif name == "deletionVector":
            values = [_dv_value(r.get(name)) for r in rows]
        else:
            values = [r.get(name) for r in rows]
        arrays.append(pa.array(values, type=f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Reshape a table read from a checkpoint to ``schema``: missing columns become nulls, types are cast.

    Other writers differ in small ways (int64 DV offsets, extra ``maxRowIndex``, no ``tags``), and the
    replay must not care.
    """
    n = table.num_rows
    arrays = []
    for f in schema:
        if f.name in table.column_names:
            col = table.column(f.name)
            if col.type != f.type:
                col = _cast(col, f.type)
            arrays.append(col)
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _cast(col: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    if pa.types.is_struct(target) and pa.types.is_struct(col.type):
        chunks = []
        for chunk in col.chunks:
            children = []
            for field in target:
                idx = chunk.type.get_field_index(field.name)
                if idx < 0:
                    children.append(pa.nulls(len(chunk), field.type))
                else:
                    child = chunk.field(idx)
                    children.append(child if child.type == field.type else child.cast(field.type))
            chunks.append(pa.StructArray.from_arrays(children, fields=list(target), mask=pc.is_null(chunk)))
        return pa.chunked_array(chunks, type=target)
    return col.cast(target)


__all__ = [
    "ADD_COLUMNS_NO_STATS",
    "ADD_FIELDS",
    "ADD_SCHEMA",
    "DV_TYPE",
    "REMOVE_FIELDS",
    "REMOVE_SCHEMA",
    "STRING_MAP",
    "conform",
    "table_from_dicts",
]
