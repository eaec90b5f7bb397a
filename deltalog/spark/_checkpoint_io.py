"""Executor-side halves of the Spark checkpoint writer (pyarrow and deltalog's stores; no pyspark).

``read_log_files`` turns log files (checkpoint parts, JSON commits, the latter through the core decoder
:func:`deltalog.core.codec.decode_lines`) into one row per action:
``(kind, key, version, ord, del_ts, payload)`` with the action body as JSON text. ``write_parts`` turns the
reconciled rows of each part into ``<v>.checkpoint.<k>.<p>.parquet`` with the checkpoint schema of
:mod:`deltalog.checkpoint.schema`, exactly as the local writer lays them out.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.checkpoint import schema as S
from deltalog.checkpoint.parts import part_of
from deltalog.core.codec import decode_lines, to_dict
from deltalog.core.pathkeys import dv_id_of, file_key
from deltalog.core.paths import LOG_DIR, checkpoint_name, multipart_name
from deltalog.errors import DeltaLogError, FileAlreadyExistsError
from deltalog.spark._files import carry_error
from deltalog.storage.uri import store_for

ACTIONS_SCHEMA = pa.schema(
    [
        pa.field("kind", pa.string()),
        pa.field("key", pa.string()),
        pa.field("version", pa.int64()),
        pa.field("ord", pa.int64()),
        pa.field("del_ts", pa.int64()),
        pa.field("payload", pa.string()),
        pa.field("part", pa.int64()),
    ]
)
ACTIONS_DDL = "kind string, key string, version long, ord long, del_ts long, payload string, part long"
PART_RESULT_SCHEMA = pa.schema(
    [
        pa.field("part", pa.int64()),
        pa.field("path", pa.string()),
        pa.field("rows", pa.int64()),
        pa.field("adds", pa.int64()),
        pa.field("size", pa.int64()),
    ]
)
PART_RESULT_DDL = "part long, path string, rows long, adds long, size long"
KINDS = ("add", "remove", "metaData", "protocol", "txn", "domainMetadata")
_BATCH = 8192


def _row(kind: str, body: Mapping[str, Any], version: int, order: int, root: str) -> dict[str, Any]:
    if kind in ("add", "remove"):
        key = file_key(body["path"], dv_id_of(body.get("deletionVector")), root)
        del_ts = body.get("deletionTimestamp") if kind == "remove" else None
    elif kind == "txn":
        key, del_ts = str(body.get("appId")), None
    elif kind == "domainMetadata":
        key, del_ts = str(body.get("domain")), None
    else:
        key, del_ts = "", None
    return {"kind": kind, "key": key, "version": version, "ord": order, "del_ts": del_ts, "payload": body, "part": 0}


def _commit_rows(data: bytes, path: str, version: int, root: str) -> Iterator[dict[str, Any]]:
    """The commit's actions through the core decoder, as the local reader decodes them: a line it refuses is
    the same CorruptLogError naming the file and line, and each row's body is the action as deltalog writes it."""
    for line, action in decode_lines(data, path):
        if isinstance(action, dict):
            continue  # a commitInfo: never in a checkpoint
        ((kind, body),) = to_dict(action).items()
        if kind in KINDS:
            yield _row(kind, body, version, line - 1, root)


def _checkpoint_rows(data: bytes, version: int, root: str) -> Iterator[dict[str, Any]]:
    pf = pq.ParquetFile(io.BytesIO(data))
    names = [k for k in KINDS if k in pf.schema_arrow.names]
    order = 0
    for batch in pf.iter_batches(batch_size=_BATCH, columns=names):
        for kind in names:
            col = batch.column(kind)
            for i, body in enumerate(col.to_pylist()):
                if body is not None:
                    yield _row(kind, _plain(body), version, order + i, root)
        order += batch.num_rows


_MAP_FIELDS = frozenset({"partitionValues", "tags", "configuration", "options"})


def _plain(value: Any) -> Any:
    """A checkpoint row as the JSON a commit would hold: maps (lists of pairs) back to objects, nulls dropped."""
    if isinstance(value, dict):
        return {
            k: (dict(v) if k in _MAP_FIELDS and isinstance(v, list) else _plain(v))
            for k, v in value.items()
            if v is not None
        }
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def read_log_files(
    batches: Iterator[pa.RecordBatch], *, root: str, storage_options: Mapping[str, Any] | None, parts: int
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body over rows ``(path, version, is_checkpoint)``: every action of those files, file
    actions tagged with the checkpoint part they belong to. A deltalog error (a corrupt commit line, a
    missing file) is carried to the driver typed."""
    try:
        yield from _log_file_rows(batches, root, storage_options, parts)
    except DeltaLogError as exc:
        raise carry_error(exc) from exc


def _log_file_rows(
    batches: Iterator[pa.RecordBatch], root: str, storage_options: Mapping[str, Any] | None, parts: int
) -> Iterator[pa.RecordBatch]:
    store = store_for(root, dict(storage_options) if storage_options else None)
    for batch in batches:
        for task in batch.to_pylist():
            data = store.read(task["path"])
            if task["is_checkpoint"]:
                rows = _checkpoint_rows(data, task["version"], root)
            else:
                rows = _commit_rows(data, task["path"], task["version"], root)
            out: list[dict[str, Any]] = []
            for row in rows:
                row["payload"] = orjson.dumps(row["payload"]).decode()
                if row["kind"] in ("add", "remove"):
                    row["part"] = part_of(row["key"], parts)
                out.append(row)
                if len(out) >= _BATCH:
                    yield pa.RecordBatch.from_pylist(out, schema=ACTIONS_SCHEMA)
                    out = []
            if out:
                yield pa.RecordBatch.from_pylist(out, schema=ACTIONS_SCHEMA)


# ---------------------------------------------------------------------------------------------- writing parts


def _maps_to_pairs(body: dict[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    for f in fields:
        if isinstance(body.get(f), dict):
            body[f] = list(body[f].items())
    return body


def non_file_arrays(actions: Sequence[tuple[str, dict[str, Any]]]) -> list[tuple[str, pa.Array]]:
    """The protocol, metaData, txn and domainMetadata rows in checkpoint types (the driver's small state)."""
    out = []
    for kind, t in (("protocol", S.PROTOCOL), ("metaData", S.METADATA), ("txn", S.TXN), ("domainMetadata", S.DOMAIN)):
        rows = [dict(b) for k, b in actions if k == kind]
        for b in rows:
            if kind == "metaData":
                b["format"] = _maps_to_pairs(dict(b.get("format") or {"provider": "parquet"}), ["options"])
                _maps_to_pairs(b, ["configuration"])
            if kind == "domainMetadata":
                b["removed"] = False
        if rows:
            out.append((kind, pa.array(rows, type=t)))
    return out


def _null_table(schema: pa.Schema, column: str, values: pa.Array) -> pa.Table:
    n = len(values)
    return pa.Table.from_arrays([values if f.name == column else pa.nulls(n, f.type) for f in schema], schema=schema)


def _file_table(schema: pa.Schema, kind: str, payloads: list[str]) -> pa.Table:
    t = schema.field(kind).type
    rows = []
    for text in payloads:
        body = orjson.loads(text)
        body["dataChange"] = False  # reconciled state, as Spark writes it
        rows.append(_maps_to_pairs(body, ["partitionValues", "tags"]))
    return _null_table(schema, kind, pa.array(rows, type=t))


def _publish(store: Any, path: str, data: bytes, rows: int) -> None:
    """put-if-absent; an existing file with as many rows is a racing writer's (or a retried task's) twin."""
    try:
        store.put_if_absent(path, data)
        return
    except FileAlreadyExistsError:
        pass
    try:
        existing = pq.ParquetFile(io.BytesIO(store.read(path))).metadata.num_rows
    except (OSError, pa.ArrowInvalid):
        existing = -1
    if existing != rows:
        store.put(path, data)  # a torn file from a crashed writer: replace it


def write_parts(
    batches: Iterator[pa.RecordBatch],
    *,
    root: str,
    storage_options: Mapping[str, Any] | None,
    version: int,
    parts: int,
    stats_json: bool,
    compression: str,
    non_file: Sequence[tuple[str, dict[str, Any]]],
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body over rows ``(part, kind, payload)``: one checkpoint part file per part id seen."""
    schema = S.checkpoint_schema(S.add_type(stats_json, None, None))
    by_part: dict[int, dict[str, list[str]]] = {}
    for batch in batches:
        cols = batch.to_pydict()
        for part, kind, payload in zip(cols["part"], cols["kind"], cols["payload"], strict=True):
            bucket = by_part.setdefault(part, {"add": [], "remove": []})
            if kind in bucket and payload is not None:
                bucket[kind].append(payload)
    store = store_for(root, dict(storage_options) if storage_options else None)
    for part, kinds in sorted(by_part.items()):
        tables = []
        if part == 0:
            tables += [_null_table(schema, k, a) for k, a in non_file_arrays(non_file)]
        tables += [_file_table(schema, k, kinds[k]) for k in ("add", "remove") if kinds[k]]
        table = pa.concat_tables(tables) if tables else schema.empty_table()
        sink = io.BytesIO()
        pq.write_table(table, sink, compression=compression, use_compliant_nested_type=True, row_group_size=65_536)
        data = sink.getvalue()
        name = checkpoint_name(version) if parts == 1 else multipart_name(version, part + 1, parts)
        path = f"{LOG_DIR}/{name}"
        _publish(store, path, data, table.num_rows)
        row = {"part": part, "path": path, "rows": table.num_rows, "adds": len(kinds["add"]), "size": len(data)}
        yield pa.RecordBatch.from_pylist([row], schema=PART_RESULT_SCHEMA)


__all__ = ["ACTIONS_DDL", "PART_RESULT_DDL", "non_file_arrays", "read_log_files", "write_parts"]
