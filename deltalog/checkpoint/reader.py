"""Reading checkpoints (classic, multi-part, V2 with sidecars) into a replay base.

Only the columns replay needs are read (see :mod:`deltalog.checkpoint.scan`): non-file actions located by
one leaf and decoded only where they are, file actions batch by batch without ``stats`` unless asked. A
checkpoint that cannot be read is a :class:`CorruptLogError` naming the file: the protocol gives no
permission to fall back silently to older state.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import orjson
import pyarrow as pa

from deltalog.checkpoint.columns import check_required
from deltalog.checkpoint.scan import (
    READ_ERRORS,
    Layout,
    checked_layout,
    fetch_errors,
    iter_rows,
    non_file_rows,
    open_parquet,
)
from deltalog.core import actions as A
from deltalog.core.codec import ActionDecodeError, from_dict
from deltalog.core.jsonlines import objects
from deltalog.core.paths import LOG_DIR, SIDECAR_DIR
from deltalog.core.segment import CheckpointRef
from deltalog.core.state import BaseState
from deltalog.core.state.columns import (
    ADD_COLUMNS_NO_STATS,
    ADD_SCHEMA,
    REMOVE_FIELDS,
    REMOVE_SCHEMA,
    array_of,
    conform,
    empty_adds,
    empty_removes,
    table_from_dicts,
)
from deltalog.errors import CorruptLogError
from deltalog.storage.base import LogStore

if TYPE_CHECKING:
    import pyarrow.parquet as pq

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


class FileActions:
    """The file actions of one checkpoint, read on demand in the row order of :attr:`BaseState.adds`.

    Used as ``BaseState.adds_stats`` (calling it returns the ``stats`` column); a checkpoint writer that
    finds one behind a snapshot streams the adds with their stats batch by batch (:meth:`iter_adds`)
    instead of holding the whole table with stats at once.
    """

    def __init__(
        self,
        store: LogStore,
        files: list[str],
        inline_adds: list[dict[str, Any]],
        inline_removes: list[dict[str, Any]],
        inline_source: str = "",
    ) -> None:
        self.store = store
        self.files = files
        self.inline_adds = inline_adds
        self.inline_removes = inline_removes
        #: the JSON checkpoint the inline actions come from, for errors
        self.inline_source = inline_source

    def adds_in(self, pf: pq.ParquetFile, layout: Layout, path: str, stats: bool) -> Iterator[pa.Table]:
        """One file's add rows (``ADD_SCHEMA``), batch by batch; ``stats`` from JSON or ``stats_parsed``."""
        if not layout.has("add"):
            return
        fields = list(ADD_COLUMNS_NO_STATS)
        parsed = False
        if stats:
            if layout.field_type("add").get_field_index("stats") >= 0:
                fields.append("stats")
            else:
                fields.append("stats_parsed")
                parsed = True
        for table in iter_rows(pf, layout, path, "add", fields):
            if parsed:
                table = _with_stats_from_parsed(table)
            table = _conformed(table, ADD_SCHEMA, path)
            check_required(table, "add", path)
            yield table

    def iter_adds(self, stats: bool = True) -> Iterator[pa.Table]:
        """Every add row of the checkpoint in order (``ADD_SCHEMA``), at most ``BATCH_ROWS`` per table."""
        for path in self.files:
            with open_parquet(self.store, path) as pf:
                yield from self.adds_in(pf, checked_layout(pf, path), path, stats)
        if self.inline_adds:
            yield self.inline_table()

    def inline_table(self) -> pa.Table:
        """The adds of a JSON checkpoint, as a table (checked like a parquet checkpoint's)."""
        return inline_actions(self.inline_adds, "add", self.inline_source)

    def __call__(self) -> pa.ChunkedArray:
        """The ``stats`` column of every add row, in order (``BaseState.adds_stats``)."""
        chunks: list[pa.Array] = []
        for path in self.files:
            with open_parquet(self.store, path) as pf:
                layout = checked_layout(pf, path)
                if not layout.has("add"):
                    continue
                if layout.field_type("add").get_field_index("stats") >= 0:
                    for table in iter_rows(pf, layout, path, "add", ["path", "stats"]):
                        chunks.append(_stats_of(table))
                else:
                    for table in iter_rows(pf, layout, path, "add", ["path", "stats_parsed"]):
                        chunks.append(_with_stats_from_parsed(table).column("stats").combine_chunks())
        if self.inline_adds:
            inline = [a.get("stats") for a in self.inline_adds]
            texts = [s if s is None or isinstance(s, str) else orjson.dumps(s).decode() for s in inline]
            chunks.append(array_of(texts, pa.string()))
        return pa.chunked_array(chunks, type=pa.string())

    def removes(self) -> pa.Table:
        """The checkpoint's tombstones (``REMOVE_SCHEMA``); the footer usually shows there are none."""
        parts: list[pa.Table] = []
        for path in self.files:
            with open_parquet(self.store, path) as pf:
                layout = checked_layout(pf, path)
                for t in iter_rows(pf, layout, path, "remove", _REMOVE_NAMES):
                    t = _conformed(t, REMOVE_SCHEMA, path)
                    check_required(t, "remove", path)
                    parts.append(t)
        if self.inline_removes:
            parts.append(inline_actions(self.inline_removes, "remove", self.inline_source))
        return pa.concat_tables(parts) if parts else empty_removes()


_REMOVE_NAMES = [f.name for f in REMOVE_FIELDS]


def _stats_of(table: pa.Table) -> pa.Array:
    if "stats" not in table.column_names:
        return pa.nulls(table.num_rows, pa.string())
    col = table.column("stats").combine_chunks()
    return col if col.type == pa.string() else col.cast(pa.string())


def _with_stats_from_parsed(table: pa.Table) -> pa.Table:
    """JSON stats rebuilt from ``stats_parsed`` for checkpoints written with structs only."""
    if "stats_parsed" not in table.column_names:
        return table.append_column("stats", pa.nulls(table.num_rows, pa.string()))
    rows = table.column("stats_parsed").to_pylist()
    text = array_of([None if row is None else stats_json(row) for row in rows], pa.string())
    return table.drop_columns(["stats_parsed"]).append_column("stats", text)


class CheckpointReader:
    """Reads one complete checkpoint of a table through its store."""

    def __init__(self, store: LogStore) -> None:
        self.store = store

    def _files(self, ref: CheckpointRef) -> list[str]:
        return [f"{LOG_DIR}/{p.name}" for p in ref.files]

    def read_base(self, ref: CheckpointRef) -> BaseState:
        """Everything replay needs from the checkpoint; ``stats`` and tombstones are loaded on demand.

        Add rows are read batch by batch and only the rows that are adds are kept, so ``adds_valid`` is
        always None and the peak memory is the table plus one batch.
        """
        collected = _Collected()
        inline_adds: list[dict[str, Any]] = []
        inline_removes: list[dict[str, Any]] = []
        parquet_files: list[str] = []
        files = self._files(ref)
        actions = FileActions(self.store, parquet_files, inline_adds, inline_removes, inline_source=files[0])
        add_parts: list[pa.Table] = []
        lacking_dv: list[str] = []
        for path in files:
            if path.endswith(".json"):
                self._read_json(path, collected, inline_adds, inline_removes)
            else:
                with open_parquet(self.store, path) as pf:
                    layout = self._read_top(pf, path, collected)
                    add_parts.extend(actions.adds_in(pf, layout, path, stats=False))
                if _without_dv_field(layout):
                    lacking_dv.append(path)
                parquet_files.append(path)
        for s in collected.sidecars:
            path = f"{LOG_DIR}/{SIDECAR_DIR}/{_sidecar_name(s.path)}"
            with open_parquet(self.store, path) as pf:
                layout = checked_layout(pf, path)
                add_parts.extend(actions.adds_in(pf, layout, path, stats=False))
            if _without_dv_field(layout):
                lacking_dv.append(path)
            parquet_files.append(path)
        if inline_adds:
            add_parts.append(actions.inline_table())
        _check_deletion_vectors(collected, lacking_dv)
        base = self._base(ref, collected)
        base.adds = pa.concat_tables(add_parts) if add_parts else empty_adds()
        base.adds_stats = actions
        base.removes = actions.removes
        return base

    def read_non_file(self, ref: CheckpointRef) -> BaseState:
        """Protocol, metadata, txns and domain metadata of the checkpoint, without its file actions.

        What a blind append needs, at the cost of the footer and a few leaf columns: a V2 checkpoint's
        sidecars hold only file actions and are not opened. The result has no adds and no tombstones.
        """
        collected = _Collected()
        for path in self._files(ref):
            if path.endswith(".json"):
                self._read_json(path, collected, [], [])
            else:
                with open_parquet(self.store, path) as pf:
                    self._read_top(pf, path, collected)
        return self._base(ref, collected)

    def _read_top(self, pf: pq.ParquetFile, path: str, collected: _Collected) -> Layout:
        """Check and read the non-file actions of one of the checkpoint's own files (not a sidecar).

        Any action column may be missing: PROTOCOL.md ("Checkpoints") reads a missing column as null, and
        writers that write each part with only the actions it holds (delta-kernel-rs, Delta Spark's
        multi-part writer) leave out ``add`` in a part without adds. Only a column present with the wrong
        type makes the file unusable (:func:`~deltalog.checkpoint.scan.checked_layout`).
        """
        layout = checked_layout(pf, path)
        self._read_non_file(pf, layout, path, collected)
        return layout

    def _base(self, ref: CheckpointRef, collected: _Collected) -> BaseState:
        """A base with the checkpoint's non-file actions and no file actions (yet).

        One without protocol or metaData is refused by the loader, as Delta Spark does, not skipped.
        """
        return BaseState(
            version=ref.version,
            source=self._files(ref)[0],
            protocol=collected.protocol,
            metadata=collected.metadata,
            txns=collected.txns,
            domains=collected.domains,
            adds=empty_adds(),
            removes=empty_removes,
        )

    def _read_non_file(self, pf: pq.ParquetFile, layout: Layout, path: str, collected: _Collected) -> None:
        for col in _NON_FILE:
            for body in non_file_rows(pf, layout, path, col):
                collected.take(col, body, path)

    def _read_json(
        self, path: str, collected: _Collected, adds: list[dict[str, Any]], removes: list[dict[str, Any]]
    ) -> None:
        with fetch_errors(path):
            data = self.store.read(path)
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


def _without_dv_field(layout: Layout) -> bool:
    return layout.has("add") and layout.field_type("add").get_field_index("deletionVector") < 0


def _check_deletion_vectors(collected: _Collected, lacking: list[str]) -> None:
    """A table with deletion vectors whose checkpoint adds have no ``deletionVector`` field lost them all.

    Every reader would then see the deleted rows again; the writers that support the feature always write
    the field, so its absence is damage (``conform`` would otherwise supply it as all null).
    """
    features = collected.protocol.reader_features if collected.protocol is not None else None
    if lacking and features and "deletionVectors" in features:
        raise CorruptLogError(
            f"{lacking[0]} is not a usable checkpoint: the table has deletion vectors, but its add actions have "
            "no deletionVector field",
            path=lacking[0],
        )


#: the columns that say which file an action is about; parquet readers do not check that strings are UTF-8
_IDENTITY = ("path", "partitionValues", "deletionVector")


def _conformed(table: pa.Table, schema: pa.Schema, path: str) -> pa.Table:
    """``conform`` with its failures (an integer out of range, bytes that are not UTF-8) naming the file."""
    try:
        table = conform(table, schema)
        for name in _IDENTITY:
            table.column(name).validate(full=True)
    except READ_ERRORS as exc:
        raise CorruptLogError(f"{path} is not a usable checkpoint: {exc}", path=path) from None
    return table


def inline_actions(rows: list[dict[str, Any]], kind: str, path: str) -> pa.Table:
    """The adds or removes of a JSON checkpoint as a table; a field of the wrong JSON type names the file."""
    try:
        table = table_from_dicts(rows, ADD_SCHEMA if kind == "add" else REMOVE_SCHEMA)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise CorruptLogError(f"{path}: invalid {kind} action: {exc}", path=path) from None
    check_required(table, kind, path)
    return table


__all__ = ["CheckpointReader", "FileActions", "stats_json"]
