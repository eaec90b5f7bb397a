"""Reading checkpoints (classic, multi-part, V2 with sidecars) into a replay base.

Only the columns replay needs are read: non-file actions in full (they are few rows), file actions
without ``stats`` unless asked. A checkpoint that cannot be read is a :class:`CorruptLogError` naming the
file: the protocol gives no permission to fall back silently to older state.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any
from urllib.parse import unquote

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltalog.core import actions as A
from deltalog.core.codec import ActionDecodeError, from_dict
from deltalog.core.file_columns import (
    ADD_COLUMNS_NO_STATS,
    ADD_SCHEMA,
    REMOVE_FIELDS,
    REMOVE_SCHEMA,
    conform,
    table_from_dicts,
)
from deltalog.core.jsonlines import objects
from deltalog.core.paths import LOG_DIR, SIDECAR_DIR
from deltalog.core.replay import BaseState
from deltalog.core.segment import CheckpointRef
from deltalog.errors import CorruptLogError
from deltalog.storage.base import LogStore

log = logging.getLogger(__name__)

_NON_FILE = ("protocol", "metaData", "txn", "domainMetadata", "checkpointMetadata", "sidecar")
_MAP_FIELDS = {"metaData": ("configuration",), "sidecar": ("tags",), "checkpointMetadata": ("tags",)}


def _plain_maps(key: str, body: dict[str, Any]) -> dict[str, Any]:
    """Arrow renders map values as lists of pairs; actions expect JSON objects."""
    for name in _MAP_FIELDS.get(key, ()):
        if isinstance(body.get(name), list):
            body[name] = dict(body[name])
    if key == "metaData" and isinstance(body.get("format"), dict):
        fmt = dict(body["format"])
        if isinstance(fmt.get("options"), list):
            fmt["options"] = dict(fmt["options"])
        body["format"] = fmt
    return body


def _sidecar_name(path: str) -> str:
    """A sidecar's file name in ``_sidecars/``: its path is a URI reference, decoded exactly once."""
    return unquote(path).rsplit("/", 1)[-1]


class _Collected:
    def __init__(self) -> None:
        self.protocol: A.Protocol | None = None
        self.metadata: A.Metadata | None = None
        self.txns: dict[str, A.Txn] = {}
        self.domains: dict[str, A.DomainMetadata] = {}
        self.sidecars: list[A.Sidecar] = []
        self.has_checkpoint_metadata = False

    def take(self, key: str, body: Any, path: str) -> None:
        try:
            action = from_dict(key, _plain_maps(key, dict(body)))
        except ActionDecodeError as exc:
            raise CorruptLogError(f"{path}: invalid {key} row: {exc}", path=path) from None
        if isinstance(action, A.Protocol):
            self.protocol = action
        elif isinstance(action, A.Metadata):
            self.metadata = action
        elif isinstance(action, A.Txn):
            self.txns[action.app_id] = action
        elif isinstance(action, A.DomainMetadata):
            if not action.removed:
                self.domains[action.domain] = action
        elif isinstance(action, A.Sidecar):
            self.sidecars.append(action)
        elif isinstance(action, A.CheckpointMetadata):
            self.has_checkpoint_metadata = True


@contextmanager
def _open_parquet(store: LogStore, path: str) -> Iterator[pq.ParquetFile]:
    """A parquet reader over the store's stream, closed when the block ends."""
    try:
        handle = store.open(path)
    except FileNotFoundError:
        raise CorruptLogError(f"checkpoint file {path} disappeared while reading", path=path) from None
    try:
        try:
            pf = pq.ParquetFile(handle)
        except (pa.ArrowInvalid, OSError) as exc:
            raise CorruptLogError(f"{path} is not a readable parquet checkpoint: {exc}", path=path) from None
        yield pf
    finally:
        handle.close()


def _read_struct(
    pf: pq.ParquetFile, path: str, struct: str, fields: list[str], keep_nulls: bool = False
) -> pa.Table | None:
    """Rows of top-level struct column ``struct`` (only ``fields`` of it).

    Rows of other actions are dropped, unless ``keep_nulls``: then they stay as rows with a null ``path``,
    so a caller that filters anyway can do it once, together with its own mask, instead of copying every
    nested column twice.
    """
    names = pf.schema_arrow.names
    if struct not in names:
        return None
    stype = pf.schema_arrow.field(struct).type
    present = [f for f in fields if stype.get_field_index(f) >= 0]
    if "path" not in present:
        return None
    try:
        column = pf.read(columns=[f"{struct}.{f}" for f in present]).column(struct)
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorruptLogError(f"{path} is not a readable parquet checkpoint: {exc}", path=path) from None
    table = pa.Table.from_struct_array(column)  # flattening applies the struct's own nulls to its fields
    return table if keep_nulls else table.filter(pc.is_valid(table.column("path")))


def _stats_from_parsed(pf: pq.ParquetFile, path: str) -> pa.ChunkedArray:
    """JSON stats rebuilt from ``stats_parsed`` for checkpoints written with structs only."""
    table = _read_struct(pf, path, "add", ["path", "stats_parsed"], keep_nulls=True)
    if table is None or "stats_parsed" not in table.column_names:
        n = 0 if table is None else table.num_rows
        return pa.chunked_array([pa.nulls(n, pa.string())])
    out = [None if row is None else stats_json(row) for row in table.column("stats_parsed").to_pylist()]
    return pa.chunked_array([pa.array(out, pa.string())])


def _drop_nulls(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _drop_nulls(x) for k, x in v.items() if x is not None}
    return v


_NUMBER = re.compile(r'"\\u0000([^"\\]*)\\u0000"')


def _json_value(v: Any) -> Any:
    if isinstance(v, Decimal):
        return f"\x00{v}\x00"  # a marker the regex below turns into a bare JSON number
    if isinstance(v, dt.datetime):
        text = v.isoformat(timespec="milliseconds")
        return text.replace("+00:00", "Z") if v.tzinfo is not None else text
    if isinstance(v, dt.date):
        return v.isoformat()
    raise TypeError(f"cannot write {type(v).__name__} in stats")


def stats_json(row: dict[str, Any]) -> str:
    """Stats JSON as Delta Spark writes it: decimals as exact numbers, timestamps in ms with ``Z``."""
    text = orjson.dumps(_drop_nulls(row), default=_json_value, option=orjson.OPT_PASSTHROUGH_DATETIME).decode()
    return _NUMBER.sub(r"\1", text)


class CheckpointReader:
    """Reads one complete checkpoint of a table through its store."""

    def __init__(self, store: LogStore) -> None:
        self.store = store

    def _files(self, ref: CheckpointRef) -> list[str]:
        return [f"{LOG_DIR}/{p.name}" for p in ref.files]

    def read_base(self, ref: CheckpointRef) -> BaseState:
        collected = _Collected()
        add_parts: list[pa.Table] = []
        inline_adds: list[dict[str, Any]] = []
        inline_removes: list[dict[str, Any]] = []
        parquet_files: list[str] = []
        for path in self._files(ref):
            if path.endswith(".json"):
                self._read_json(path, collected, inline_adds, inline_removes)
            else:
                with _open_parquet(self.store, path) as pf:
                    self._read_non_file(pf, path, collected)
                    table = _read_struct(pf, path, "add", ADD_COLUMNS_NO_STATS, keep_nulls=True)
                if table is not None:
                    add_parts.append(conform(table, ADD_SCHEMA))
                parquet_files.append(path)
        sidecar_files = [f"{LOG_DIR}/{SIDECAR_DIR}/{_sidecar_name(s.path)}" for s in collected.sidecars]
        for path in sidecar_files:
            with _open_parquet(self.store, path) as pf:
                table = _read_struct(pf, path, "add", ADD_COLUMNS_NO_STATS, keep_nulls=True)
            if table is not None:
                add_parts.append(conform(table, ADD_SCHEMA))
        if inline_adds:
            add_parts.append(table_from_dicts(inline_adds, ADD_SCHEMA))
        adds = pa.concat_tables(add_parts) if add_parts else ADD_SCHEMA.empty_table()
        valid = pc.is_valid(adds.column("path"))
        all_valid = adds.column("path").null_count == 0
        stat_files = parquet_files + sidecar_files
        inline_stats = [a.get("stats") for a in inline_adds]
        source = self._files(ref)[0]
        return BaseState(
            version=ref.version,
            source=source,
            protocol=collected.protocol,
            metadata=collected.metadata,
            txns=collected.txns,
            domains=collected.domains,
            adds=adds,
            adds_valid=None if all_valid else valid,
            adds_stats=self._stats_loader(stat_files, inline_stats),
            removes=self._removes_loader(stat_files, inline_removes),
        )

    def _read_non_file(self, pf: pq.ParquetFile, path: str, collected: _Collected) -> None:
        names = pf.schema_arrow.names
        cols = [c for c in _NON_FILE if c in names]
        if not cols:
            return
        try:
            table = pf.read(columns=cols)
        except (pa.ArrowInvalid, OSError) as exc:
            raise CorruptLogError(f"{path} is not a readable parquet checkpoint: {exc}", path=path) from None
        for col in cols:
            column = table.column(col)
            if column.null_count == len(column):
                continue
            for body in column.filter(pc.is_valid(column)).to_pylist():
                collected.take(col, body, path)

    def _read_json(
        self, path: str, collected: _Collected, adds: list[dict[str, Any]], removes: list[dict[str, Any]]
    ) -> None:
        try:
            data = self.store.read(path)
        except FileNotFoundError:
            raise CorruptLogError(f"checkpoint file {path} disappeared while reading", path=path) from None
        for line_no, obj in objects(data, path):
            for key, body in obj.items():
                if key in ("add", "remove"):
                    if not isinstance(body, dict) or not isinstance(body.get("path"), str):
                        raise CorruptLogError(
                            f"{path} line {line_no}: {key} action without a path", path=path, line=line_no
                        )
                    (adds if key == "add" else removes).append(body)
                elif key in _NON_FILE:
                    collected.take(key, body, path)

    def _stats_loader(self, files: list[str], inline: list[Any]) -> Callable[[], pa.ChunkedArray]:
        def load() -> pa.ChunkedArray:
            chunks: list[pa.Array] = []
            for path in files:
                with _open_parquet(self.store, path) as pf:
                    if "add" not in pf.schema_arrow.names:
                        continue
                    stype = pf.schema_arrow.field("add").type
                    if stype.get_field_index("stats") >= 0:
                        table = _read_struct(pf, path, "add", ["path", "stats"], keep_nulls=True)
                        if table is not None:
                            chunks.extend(table.column("stats").cast(pa.string()).chunks)
                    else:
                        chunks.extend(_stats_from_parsed(pf, path).chunks)
            if inline:
                chunks.append(
                    pa.array(
                        [s if s is None or isinstance(s, str) else orjson.dumps(s).decode() for s in inline],
                        pa.string(),
                    )
                )
            return pa.chunked_array(chunks, type=pa.string())

        return load

    def _removes_loader(self, files: list[str], inline: list[dict[str, Any]]) -> Callable[[], pa.Table]:
        def load() -> pa.Table:
            parts: list[pa.Table] = []
            for path in files:
                with _open_parquet(self.store, path) as pf:
                    table = _read_struct(pf, path, "remove", [f.name for f in REMOVE_FIELDS])
                if table is not None:
                    parts.append(conform(table, REMOVE_SCHEMA))
            if inline:
                parts.append(table_from_dicts(inline, REMOVE_SCHEMA))
            return pa.concat_tables(parts) if parts else REMOVE_SCHEMA.empty_table()

        return load


def iter_checkpoint_actions(store: LogStore, ref: CheckpointRef) -> Iterator[A.Action]:
    """Non-file actions of a checkpoint, for tools that inspect it."""
    base = CheckpointReader(store).read_base(ref)
    if base.protocol:
        yield base.protocol
    if base.metadata:
        yield base.metadata
    yield from base.txns.values()
    yield from base.domains.values()


__all__ = ["CheckpointReader", "iter_checkpoint_actions"]
