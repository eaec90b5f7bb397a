"""Builders for hand-made Delta tables in unit tests (owned by the unit-test suite).

Every byte of a ``_delta_log`` written here is chosen by the test: commits are lists of action dicts
written as newline-delimited JSON with orjson (or raw bytes written verbatim), checkpoints are parquet
files in the shape Delta Spark writes (one top-level struct column per action kind, one action per row),
and commit times are file modification times set with :func:`os.utime`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

LOG = "_delta_log"
TABLE_ID = "11111111-2222-4333-8444-555555555555"
#: 2025-01-01T00:00:00Z in ms; version v is committed at T0 + v * STEP unless told otherwise.
T0 = 1_735_689_600_000
STEP = 60_000


def commit_name(version: int) -> str:
    return f"{version:020d}.json"


def log_dir(root: Path) -> Path:
    d = root / LOG
    d.mkdir(parents=True, exist_ok=True)
    return d


# ---------------------------------------------------------------------------------------------- actions


def protocol(
    reader: int = 1,
    writer: int = 2,
    reader_features: Sequence[str] | None = None,
    writer_features: Sequence[str] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": writer}
    if reader_features is not None:
        body["readerFeatures"] = list(reader_features)
    if writer_features is not None:
        body["writerFeatures"] = list(writer_features)
    return {"protocol": body}


def schema_string(columns: Mapping[str, Any], physical: Mapping[str, str] | None = None) -> str:
    """A struct schema string for ``{name: type}``; ``physical`` adds column-mapping metadata."""
    fields = []
    for i, (name, t) in enumerate(columns.items(), start=1):
        meta: dict[str, Any] = {}
        if physical and name in physical:
            meta = {"delta.columnMapping.id": i, "delta.columnMapping.physicalName": physical[name]}
        fields.append({"name": name, "type": t, "nullable": True, "metadata": meta})
    return orjson.dumps({"type": "struct", "fields": fields}).decode()


def metadata(
    columns: Mapping[str, Any] | None = None,
    partition_columns: Sequence[str] = (),
    configuration: Mapping[str, str] | None = None,
    *,
    table_id: str = TABLE_ID,
    physical: Mapping[str, str] | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    cols = columns if columns is not None else {"id": "long", "p": "string"}
    body: dict[str, Any] = {
        "id": table_id,
        "format": {"provider": "parquet", "options": {}},
        "schemaString": schema_string(cols, physical),
        "partitionColumns": list(partition_columns),
        "configuration": dict(configuration or {}),
        "createdTime": T0,
    }
    if name is not None:
        body["name"] = name
    return {"metaData": body}


def dv(path_or_inline: str, storage_type: str = "u", offset: int | None = 1, cardinality: int = 1) -> dict[str, Any]:
    out: dict[str, Any] = {
        "storageType": storage_type,
        "pathOrInlineDv": path_or_inline,
        "sizeInBytes": 36,
        "cardinality": cardinality,
    }
    if offset is not None:
        out["offset"] = offset
    return out


def add(
    path: str,
    partition_values: Mapping[str, str | None] | None = None,
    *,
    size: int = 100,
    modification_time: int = T0,
    data_change: bool = True,
    stats: str | None = None,
    tags: Mapping[str, str] | None = None,
    deletion_vector: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "path": path,
        "partitionValues": dict(partition_values or {}),
        "size": size,
        "modificationTime": modification_time,
        "dataChange": data_change,
    }
    if stats is not None:
        body["stats"] = stats
    if tags is not None:
        body["tags"] = dict(tags)
    if deletion_vector is not None:
        body["deletionVector"] = dict(deletion_vector)
    return {"add": body}


def remove(
    path: str,
    *,
    deletion_timestamp: int = T0,
    partition_values: Mapping[str, str | None] | None = None,
    size: int | None = None,
    deletion_vector: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"path": path, "deletionTimestamp": deletion_timestamp, "dataChange": True}
    if partition_values is not None:
        body["extendedFileMetadata"] = True
        body["partitionValues"] = dict(partition_values)
        body["size"] = size if size is not None else 100
    if deletion_vector is not None:
        body["deletionVector"] = dict(deletion_vector)
    return {"remove": body}


def txn(app_id: str, version: int, last_updated: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"appId": app_id, "version": version}
    if last_updated is not None:
        body["lastUpdated"] = last_updated
    return {"txn": body}


def domain(name: str, configuration: str = "{}", removed: bool = False) -> dict[str, Any]:
    return {"domainMetadata": {"domain": name, "configuration": configuration, "removed": removed}}


def commit_info(operation: str = "WRITE", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"timestamp": T0, "operation": operation, "operationParameters": {}}
    body.update(extra)
    return {"commitInfo": body}


def stats(num_records: int, **min_max: tuple[Any, Any]) -> str:
    return orjson.dumps(
        {
            "numRecords": num_records,
            "minValues": {k: v[0] for k, v in min_max.items()},
            "maxValues": {k: v[1] for k, v in min_max.items()},
            "nullCount": {k: 0 for k in min_max},
        }
    ).decode()


# ---------------------------------------------------------------------------------------------- files


def set_mtime_ms(path: Path, ms: int) -> None:
    ns = ms * 1_000_000
    os.utime(path, ns=(ns, ns))


def write_commit(
    root: Path, version: int, actions: Sequence[Mapping[str, Any]] | bytes, mtime_ms: int | None = None
) -> Path:
    """Write ``_delta_log/<version>.json`` and set its mtime (default ``T0 + version * STEP``)."""
    path = log_dir(root) / commit_name(version)
    data = actions if isinstance(actions, bytes) else b"".join(orjson.dumps(a) + b"\n" for a in actions)
    path.write_bytes(data)
    set_mtime_ms(path, T0 + version * STEP if mtime_ms is None else mtime_ms)
    return path


def write_table(root: Path, commits: Iterable[Sequence[Mapping[str, Any]] | bytes], start: int = 0) -> Path:
    """Write consecutive commits from version ``start``; return ``root``."""
    for i, actions in enumerate(commits):
        write_commit(root, start + i, actions)
    return root


def basic_table(root: Path, extra_commits: int = 0) -> Path:
    """Version 0 (protocol, metadata, one add), plus ``extra_commits`` commits adding one file each."""
    commits: list[Sequence[Mapping[str, Any]]] = [
        [commit_info("CREATE TABLE"), protocol(), metadata(), add("part-0.parquet")]
    ]
    for v in range(1, extra_commits + 1):
        commits.append([commit_info(), add(f"part-{v}.parquet")])
    return write_table(root, commits)


# ---------------------------------------------------------------------------------------------- checkpoints

_MAP = pa.map_(pa.string(), pa.string())
_DV = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
    ]
)
CHECKPOINT_SCHEMA = pa.schema(
    [
        ("txn", pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])),
        (
            "add",
            pa.struct(
                [
                    ("path", pa.string()),
                    ("partitionValues", _MAP),
                    ("size", pa.int64()),
                    ("modificationTime", pa.int64()),
                    ("dataChange", pa.bool_()),
                    ("tags", _MAP),
                    ("deletionVector", _DV),
                    ("baseRowId", pa.int64()),
                    ("defaultRowCommitVersion", pa.int64()),
                    ("clusteringProvider", pa.string()),
                    ("stats", pa.string()),
                ]
            ),
        ),
        (
            "remove",
            pa.struct(
                [
                    ("path", pa.string()),
                    ("deletionTimestamp", pa.int64()),
                    ("dataChange", pa.bool_()),
                    ("extendedFileMetadata", pa.bool_()),
                    ("partitionValues", _MAP),
                    ("size", pa.int64()),
                    ("deletionVector", _DV),
                    ("baseRowId", pa.int64()),
                    ("defaultRowCommitVersion", pa.int64()),
                ]
            ),
        ),
        (
            "metaData",
            pa.struct(
                [
                    ("id", pa.string()),
                    ("name", pa.string()),
                    ("description", pa.string()),
                    ("format", pa.struct([("provider", pa.string()), ("options", _MAP)])),
                    ("schemaString", pa.string()),
                    ("partitionColumns", pa.list_(pa.string())),
                    ("configuration", _MAP),
                    ("createdTime", pa.int64()),
                ]
            ),
        ),
        (
            "protocol",
            pa.struct(
                [
                    ("minReaderVersion", pa.int32()),
                    ("minWriterVersion", pa.int32()),
                    ("readerFeatures", pa.list_(pa.string())),
                    ("writerFeatures", pa.list_(pa.string())),
                ]
            ),
        ),
        (
            "domainMetadata",
            pa.struct([("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())]),
        ),
    ]
)


def _map_pairs(v: Any) -> Any:
    return None if v is None else list(dict(v).items())


def _struct_value(struct: pa.StructType, body: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in struct:
        v = body.get(f.name)
        if v is not None and pa.types.is_map(f.type):
            v = _map_pairs(v)
        elif v is not None and pa.types.is_struct(f.type):
            v = _struct_value(f.type, v)
        out[f.name] = v
    return out


def checkpoint_table(actions: Sequence[Mapping[str, Any]]) -> pa.Table:
    """A Spark-shaped checkpoint table: one row per action, every other column null in that row."""
    columns: dict[str, list[Any]] = {f.name: [] for f in CHECKPOINT_SCHEMA}
    for action in actions:
        ((key, body),) = action.items()
        if key not in columns:
            raise ValueError(f"{key} does not go into a checkpoint")
        for f in CHECKPOINT_SCHEMA:
            columns[f.name].append(_struct_value(f.type, body) if f.name == key else None)
    return pa.Table.from_pydict(columns, schema=CHECKPOINT_SCHEMA)


def write_checkpoint(root: Path, version: int, actions: Sequence[Mapping[str, Any]], name: str | None = None) -> Path:
    """Write a classic checkpoint (or a file called ``name``) for ``version`` from the given actions."""
    path = log_dir(root) / (name or f"{version:020d}.checkpoint.parquet")
    pq.write_table(checkpoint_table(actions), path)
    return path


def write_last_checkpoint(root: Path, obj: Mapping[str, Any] | bytes) -> Path:
    path = log_dir(root) / "_last_checkpoint"
    path.write_bytes(obj if isinstance(obj, bytes) else orjson.dumps(obj))
    return path


# ---------------------------------------------------------------------------------------------- observation


def tree_state(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root`` (relative path -> bytes, mtime ns), and every directory (as ``b""``, -1)."""
    out: dict[str, tuple[bytes, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root) + "/"] = (b"", -1)
        for f in filenames:
            full = os.path.join(dirpath, f)
            out[os.path.relpath(full, root)] = (Path(full).read_bytes(), os.stat(full).st_mtime_ns)
    return out


def paths_of(table: pa.Table) -> list[str]:
    return sorted(table.column("path").to_pylist())


# ---------------------------------------------------------------------------------------------- races

RACE_NAME = "_delta_log/00000000000000000001.json"


def race_payload(i: int) -> bytes:
    return f"process {i}\n".encode() * 1000


def race_put_if_absent(root: str, i: int, barrier: Any, out: Any) -> None:
    """Child-process body for the put-if-absent race (module level so that ``spawn`` can import it)."""
    from deltalog.errors import FileAlreadyExistsError
    from deltalog.storage.local import LocalLogStore

    store = LocalLogStore(root)
    barrier.wait(timeout=120)
    try:
        store.put_if_absent(RACE_NAME, race_payload(i))
        out.put((i, "won"))
    except FileAlreadyExistsError:
        out.put((i, "lost"))
    except Exception as exc:  # reported by the parent's assertion
        out.put((i, f"error: {exc!r}"))


# ---------------------------------------------------------------------------------------------- V2 checkpoints

SIDECAR_SCHEMA = pa.schema([CHECKPOINT_SCHEMA.field("add"), CHECKPOINT_SCHEMA.field("remove")])
_V2_EXTRA = [
    ("checkpointMetadata", pa.struct([("version", pa.int64()), ("tags", _MAP)])),
    (
        "sidecar",
        pa.struct(
            [("path", pa.string()), ("sizeInBytes", pa.int64()), ("modificationTime", pa.int64()), ("tags", _MAP)]
        ),
    ),
]
V2_CHECKPOINT_SCHEMA = pa.schema(list(CHECKPOINT_SCHEMA) + [pa.field(n, t) for n, t in _V2_EXTRA])


def _rows_table(actions: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    columns: dict[str, list[Any]] = {f.name: [] for f in schema}
    for action in actions:
        ((key, body),) = action.items()
        if key not in columns:
            raise ValueError(f"{key} has no column in this file")
        for f in schema:
            columns[f.name].append(_struct_value(f.type, body) if f.name == key else None)
    return pa.Table.from_pydict(columns, schema=schema)


def write_sidecar(root: Path, name: str, actions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Write ``_delta_log/_sidecars/<name>`` (add/remove rows only); return its ``sidecar`` action."""
    d = log_dir(root) / "_sidecars"
    d.mkdir(exist_ok=True)
    path = d / name
    pq.write_table(_rows_table(actions, SIDECAR_SCHEMA), path)
    return {"sidecar": {"path": name, "sizeInBytes": path.stat().st_size, "modificationTime": T0}}


def write_v2_checkpoint(
    root: Path, version: int, actions: Sequence[Mapping[str, Any]], uuid: str, fmt: str = "json"
) -> Path:
    """A UUID-named V2 checkpoint (JSON lines or parquet) starting with its ``checkpointMetadata``."""
    rows = [{"checkpointMetadata": {"version": version}}, *actions]
    path = log_dir(root) / f"{version:020d}.checkpoint.{uuid}.{fmt}"
    if fmt == "json":
        path.write_bytes(b"".join(orjson.dumps(a) + b"\n" for a in rows))
    else:
        pq.write_table(_rows_table(rows, V2_CHECKPOINT_SCHEMA), path)
    return path
