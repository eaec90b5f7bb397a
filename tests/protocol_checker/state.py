"""The table state the checker replays version by version (PROTOCOL.md "Action Reconciliation").

:class:`TableState` is the snapshot after one version plus the history the rules need and a snapshot
does not keep: the last add of every path ever added (row tracking copies its ids from it), every
(path, DV) pair ever added (to tell a new deletion vector from a re-committed one), physical names ever
bound to column ids. Replay is deliberately plain dict work: the checker must be easy to trust.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from .features import Protocol, is_int, is_true
from .reading import Action
from .schema import SchemaInfo, parse_schema
from .values import file_key

ROW_TRACKING_DOMAIN = "delta.rowTracking"
CLUSTERING_DOMAIN = "delta.clustering"
FileKey = tuple[str, str | None]


@dataclass
class TableState:
    version: int = -1
    protocol_body: Any = None
    metadata: Any = None
    txns: dict[str, Any] = field(default_factory=dict)
    domains: dict[str, Any] = field(default_factory=dict)  # live domains only (tombstones dropped)
    live: dict[FileKey, dict[str, Any]] = field(default_factory=dict)
    last_add: dict[str, dict[str, Any]] = field(default_factory=dict)  # path -> its last add, live or not
    seen_files: set[FileKey] = field(default_factory=set)  # every (path, dvId) ever added
    complete_history: bool = True  # False when replay started from a checkpoint: history before it unknown
    ict: int | None = None  # inCommitTimestamp of this version's commitInfo, when it has one
    commit_mtime: int | None = None  # modification time of this version's commit file (ms)
    bound_ids: dict[tuple[str, ...], Any] = field(default_factory=dict)  # physical path -> column id

    # ---- derived views (cheap: recomputed from the actions they come from)

    @property
    def protocol(self) -> Protocol | None:
        return Protocol.of(self.protocol_body)

    @property
    def configuration(self) -> dict[str, Any]:
        conf = self.metadata.get("configuration") if isinstance(self.metadata, dict) else None
        return conf if isinstance(conf, dict) else {}

    @property
    def schema(self) -> SchemaInfo:
        raw = self.metadata.get("schemaString") if isinstance(self.metadata, dict) else None
        return parse_schema(raw if isinstance(raw, str) else None)

    @property
    def partition_columns(self) -> list[str]:
        cols = self.metadata.get("partitionColumns") if isinstance(self.metadata, dict) else None
        return [c for c in cols if isinstance(c, str)] if isinstance(cols, list) else []

    @property
    def live_paths(self) -> dict[str, FileKey]:
        return {k[0]: k for k in self.live}

    def copy(self) -> TableState:
        """A state later replay cannot change (action bodies are never mutated, containers are copied)."""
        out = copy.copy(self)
        out.txns, out.domains, out.live = dict(self.txns), dict(self.domains), dict(self.live)
        out.last_add, out.seen_files, out.bound_ids = dict(self.last_add), set(self.seen_files), dict(self.bound_ids)
        return out


# ---------------------------------------------------------------------------------------------- feature states


def column_mapping_mode(protocol: Protocol | None, configuration: dict[str, Any]) -> str:
    """``name``/``id`` only where the protocol supports column mapping; the property is ignored otherwise."""
    mode = configuration.get("delta.columnMapping.mode")
    if protocol is None or not protocol.supports("columnMapping") or mode not in ("name", "id"):
        return "none"
    return str(mode)


def ict_enabled(protocol: Protocol | None, configuration: dict[str, Any]) -> bool:
    """PROTOCOL.md "In-Commit Timestamps" > Enablement: writer 7 + feature + property true."""
    return (
        protocol is not None
        and protocol.writer_version == 7
        and protocol.writer_supports("inCommitTimestamp")
        and is_true(configuration, "delta.enableInCommitTimestamps")
    )


def row_tracking_assigning(protocol: Protocol | None, configuration: dict[str, Any]) -> bool:
    """Row tracking supported and not suspended: writers must assign ids (PROTOCOL.md "Row Tracking")."""
    return (
        protocol is not None
        and protocol.writer_supports("rowTracking")
        and not is_true(configuration, "delta.rowTrackingSuspended")
    )


def high_water_mark(domains: dict[str, Any]) -> tuple[int | None, str | None]:
    """The ``delta.rowTracking`` domain's ``rowIdHighWaterMark``: (mark, None), (None, None) or (None, why)."""
    body = domains.get(ROW_TRACKING_DOMAIN)
    if body is None:
        return None, None
    try:
        conf = orjson.loads(body.get("configuration") or "")
    except (orjson.JSONDecodeError, TypeError):
        return None, "the delta.rowTracking domain configuration is not JSON"
    mark = conf.get("rowIdHighWaterMark") if isinstance(conf, dict) else None
    if not is_int(mark):
        return None, f"the delta.rowTracking domain has no integer rowIdHighWaterMark ({conf!r})"
    return mark, None


# ---------------------------------------------------------------------------------------------- replay


def last_of(actions: Iterable[Action], kind: str) -> Any:
    found = None
    for a in actions:
        if a.kind == kind:
            found = a.body
    return found


def apply_domains(domains: dict[str, Any], actions: Iterable[Action]) -> dict[str, Any]:
    out = dict(domains)
    for a in actions:
        if a.kind == "domainMetadata" and isinstance(a.body, dict) and isinstance(a.body.get("domain"), str):
            if a.body.get("removed") is True:
                out.pop(a.body["domain"], None)
            else:
                out[a.body["domain"]] = a.body
    return out


def apply_version(state: TableState, version: int, actions: list[Action], mtime: int | None) -> None:
    """Advance ``state`` by one commit (or load a checkpoint's actions into an empty state)."""
    protocol = last_of(actions, "protocol")
    if protocol is not None:
        state.protocol_body = protocol
    metadata = last_of(actions, "metaData")
    if metadata is not None:
        state.metadata = metadata
        for f in state.schema.fields:
            if f.column_id is not None:
                state.bound_ids.setdefault(f.physical_path, f.column_id)
    for a in actions:
        if a.kind == "txn" and isinstance(a.body, dict) and isinstance(a.body.get("appId"), str):
            state.txns[a.body["appId"]] = a.body
    state.domains = apply_domains(state.domains, actions)
    for a in actions:
        if a.kind == "remove" and isinstance(a.body, dict):
            state.live.pop(file_key(a.body), None)
    for a in actions:
        if a.kind == "add" and isinstance(a.body, dict):
            key = file_key(a.body)
            state.live[key] = a.body
            state.last_add[key[0]] = a.body
            state.seen_files.add(key)
    info = next((a.body for a in actions if a.kind == "commitInfo"), None)
    ict = info.get("inCommitTimestamp") if isinstance(info, dict) else None
    state.ict = ict if is_int(ict) else None
    state.commit_mtime = mtime
    state.version = version
