"""The parquet layout of a checkpoint, as Delta Spark writes it.

One top-level struct column per action kind, every field nullable, maps as ``map<string,string>`` (parquet
``key_value`` groups), lists as 3-level ``list/element``, deletion-vector ``offset``/``sizeInBytes`` as int32,
protocol versions as int32. ``stats_parsed`` and ``partitionValues_parsed`` are typed from the table
schema with physical names; they are never inferred from the JSON.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from deltalog.arrow.schema import arrow_type
from deltalog.core.schema import PHYSICAL_NAME, top_level_fields
from deltalog.core.state.columns import ADD_FIELDS, REMOVE_FIELDS, STRING_MAP

STRING_LIST = pa.list_(pa.field("element", pa.string()))

TXN = pa.struct([pa.field("appId", pa.string()), pa.field("version", pa.int64()), pa.field("lastUpdated", pa.int64())])


def _pick(fields: list[pa.Field], names: list[str]) -> list[pa.Field]:
    """Fields of the replay layout, in the order Spark writes them in a checkpoint (types defined once)."""
    by_name = {f.name: f for f in fields}
    return [by_name[n] for n in names]


# Checkpoints drop stats and tags from removes.
REMOVE = pa.struct(
    _pick(
        REMOVE_FIELDS,
        [
            "path",
            "deletionTimestamp",
            "dataChange",
            "extendedFileMetadata",
            "partitionValues",
            "size",
            "deletionVector",
            "baseRowId",
            "defaultRowCommitVersion",
        ],
    )
)
METADATA = pa.struct(
    [
        pa.field("id", pa.string()),
        pa.field("name", pa.string()),
        pa.field("description", pa.string()),
        pa.field("format", pa.struct([pa.field("provider", pa.string()), pa.field("options", STRING_MAP)])),
        pa.field("schemaString", pa.string()),
        pa.field("partitionColumns", STRING_LIST),
        pa.field("configuration", STRING_MAP),
        pa.field("createdTime", pa.int64()),
    ]
)
PROTOCOL = pa.struct(
    [
        pa.field("minReaderVersion", pa.int32()),
        pa.field("minWriterVersion", pa.int32()),
        pa.field("readerFeatures", STRING_LIST),
        pa.field("writerFeatures", STRING_LIST),
    ]
)
DOMAIN = pa.struct(
    [pa.field("domain", pa.string()), pa.field("configuration", pa.string()), pa.field("removed", pa.bool_())]
)
CHECKPOINT_METADATA = pa.struct([pa.field("version", pa.int64()), pa.field("tags", STRING_MAP)])
SIDECAR = pa.struct(
    [
        pa.field("path", pa.string()),
        pa.field("sizeInBytes", pa.int64()),
        pa.field("modificationTime", pa.int64()),
        pa.field("tags", STRING_MAP),
    ]
)

_ADD_BASE = _pick(
    ADD_FIELDS,
    [
        "path",
        "partitionValues",
        "size",
        "modificationTime",
        "dataChange",
        "tags",
        "deletionVector",
        "baseRowId",
        "defaultRowCommitVersion",
        "clusteringProvider",
    ],
)

# Types whose min/max a stats struct can hold exactly; others (decimals read from JSON floats, binary,
# nested collections) are left out of stats_parsed, which readers treat as "no statistic", never as a bound.
_STAT_TYPES = {"string", "long", "integer", "short", "byte", "float", "double", "date", "timestamp", "timestamp_ntz"}


def _physical(field: dict[str, Any], mode: str) -> str:
    meta = field.get("metadata") or {}
    return str(meta.get(PHYSICAL_NAME, field["name"])) if mode in ("name", "id") else str(field["name"])


def _stat_fields(fields: list[dict[str, Any]], mode: str, counts: bool) -> list[pa.Field]:
    out = []
    for f in fields:
        t = f["type"]
        name = _physical(f, mode)
        if isinstance(t, dict) and t.get("type") == "struct":
            children = _stat_fields(t.get("fields", []), mode, counts)
            if children:
                out.append(pa.field(name, pa.struct(children)))
        elif counts:
            out.append(pa.field(name, pa.int64()))
        elif isinstance(t, str) and t in _STAT_TYPES:
            out.append(pa.field(name, arrow_type(t)))
    return out


def stats_parsed_type(schema: dict[str, Any], mode: str, partition_columns: list[str]) -> pa.StructType:
    """``stats_parsed`` for the table's data columns (partition columns have no file statistics)."""
    data = [f for f in top_level_fields(schema) if f["name"] not in partition_columns]
    fields = [pa.field("numRecords", pa.int64())]
    mins = _stat_fields(data, mode, counts=False)
    if mins:
        fields += [pa.field("minValues", pa.struct(mins)), pa.field("maxValues", pa.struct(mins))]
    counts = _stat_fields(data, mode, counts=True)
    if counts:
        fields.append(pa.field("nullCount", pa.struct(counts)))
    fields.append(pa.field("tightBounds", pa.bool_()))
    return pa.struct(fields)


def partition_values_parsed_type(
    schema: dict[str, Any], mode: str, partition_columns: list[str]
) -> pa.StructType | None:
    by_name = {f["name"]: f for f in top_level_fields(schema)}
    fields = [
        pa.field(_physical(by_name[c], mode), arrow_type(by_name[c]["type"])) for c in partition_columns if c in by_name
    ]
    return pa.struct(fields) if fields else None  # parquet cannot hold an empty struct


def add_type(stats_json: bool, stats_parsed: pa.StructType | None, pv_parsed: pa.StructType | None) -> pa.StructType:
    fields = list(_ADD_BASE)
    if stats_json:
        fields.append(pa.field("stats", pa.string()))
    if pv_parsed is not None:
        fields.append(pa.field("partitionValues_parsed", pv_parsed))
    if stats_parsed is not None:
        fields.append(pa.field("stats_parsed", stats_parsed))
    return pa.struct(fields)


def checkpoint_schema(add: pa.StructType, v2: bool = False, sidecar_file: bool = False) -> pa.Schema:
    """The file's schema; a V2 sidecar holds only ``add`` and ``remove``."""
    if sidecar_file:
        return pa.schema([pa.field("add", add), pa.field("remove", REMOVE)])
    fields = [
        pa.field("txn", TXN),
        pa.field("add", add),
        pa.field("remove", REMOVE),
        pa.field("metaData", METADATA),
        pa.field("protocol", PROTOCOL),
        pa.field("domainMetadata", DOMAIN),
    ]
    if v2:
        fields += [pa.field("checkpointMetadata", CHECKPOINT_METADATA), pa.field("sidecar", SIDECAR)]
    return pa.schema(fields)


def _leaves(name: str, t: pa.DataType) -> list[str]:
    """Parquet column paths under ``name`` as pyarrow writes them with compliant nested types."""
    if pa.types.is_struct(t):
        return [p for f in t for p in _leaves(f"{name}.{f.name}", f.type)]
    if pa.types.is_map(t):
        return [*_leaves(f"{name}.key_value.key", t.key_type), *_leaves(f"{name}.key_value.value", t.item_type)]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _leaves(f"{name}.list.element", t.value_type)
    return [name]


#: unique per file, so a dictionary never pays: the writer would build one per page and then drop it
_NO_DICTIONARY = frozenset({"add.path", "add.stats", "remove.path", "remove.stats"})
#: min/max of a million JSON strings prune nothing; ``add.path`` keeps its statistics (null counts let
#: readers skip row groups without adds)
_NO_STATISTICS = frozenset({"add.stats"})


def encoding_options(schema: pa.Schema) -> dict[str, list[str]]:
    """``ParquetWriter`` options for a checkpoint: which leaves get dictionaries and statistics.

    Encodings only: the values written are the same; encoding a million-file checkpoint gets about a
    third cheaper.
    """
    leaves = [p for f in schema for p in _leaves(f.name, f.type)]
    return {
        "use_dictionary": [p for p in leaves if p not in _NO_DICTIONARY],
        "write_statistics": [p for p in leaves if p not in _NO_STATISTICS],
    }


__all__ = [
    "CHECKPOINT_METADATA",
    "DOMAIN",
    "METADATA",
    "PROTOCOL",
    "REMOVE",
    "SIDECAR",
    "TXN",
    "add_type",
    "checkpoint_schema",
    "encoding_options",
    "partition_values_parsed_type",
    "stats_parsed_type",
]
