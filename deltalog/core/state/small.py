"""Protocol, metadata, txns and domain metadata: the small part of a version's state, applied in log order.

Both parsers (and a snapshot that defers its files) take these actions through one class, so the
newest protocol and metadata, the txn per app id and the live domains mean the same everywhere. A
``null`` body is no action (as Delta Spark reads a ``SingleAction`` whose field is null); any other body
that does not decode is a :class:`CorruptLogError` naming the file and line. ``commitInfo`` is the last
one of the last commit (:func:`deltalog.core.log.jsonlines.last_commit_info`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from deltalog.core import actions as A
from deltalog.core.features.configuration import TableConfiguration
from deltalog.core.log.codec import ActionDecodeError, from_dict
from deltalog.core.log.jsonlines import last_commit_info, objects
from deltalog.core.schema import SchemaError, parse_schema, physical_names
from deltalog.core.state import BaseState, CommitData, ReplayedState
from deltalog.errors import CorruptLogError

#: the non-file actions that make up table state (commitInfo, cdc, sidecars and unknown actions do not)
STATE_KEYS = frozenset({"metaData", "protocol", "txn", "domainMetadata"})


def partition_keys(protocol: A.Protocol | None, metadata: A.Metadata | None, source: str | None) -> tuple[str, ...]:
    """The keys a file's ``partitionValues`` hold in this table: its partition columns, by physical name
    under column mapping (as the snapshot looks them up), each once, in ``partitionColumns`` order.

    ``source`` names the file the metadata came from, for the error when column mapping is on and the
    schema cannot say the physical names.
    """
    if metadata is None:
        return ()
    columns = metadata.partition_columns
    mode = TableConfiguration.of(protocol, metadata).column_mapping_mode if protocol is not None else "none"
    if columns and mode in ("name", "id"):
        try:
            physical = physical_names(parse_schema(metadata.schema_string), mode)
        except (SchemaError, KeyError, TypeError, AttributeError) as exc:
            raise CorruptLogError(
                f"{source}: the schema does not give the physical names of the partition columns ({exc})", path=source
            ) from None
        columns = tuple(physical.get(c, c) for c in columns)
    return tuple(dict.fromkeys(columns))


class SmallState:
    """Protocol, metadata, txns and domains applied in log order, from a base state on."""

    def __init__(self, base: BaseState) -> None:
        self.base_version = base.version
        self.protocol = base.protocol
        self.protocol_source = base.source if base.protocol else None
        self.metadata = base.metadata
        self.metadata_source = base.source if base.metadata else None
        self.txns = dict(base.txns)
        self.domains = dict(base.domains)

    def take(self, action: A.Action, source: str) -> None:
        if isinstance(action, A.Metadata):
            self.metadata, self.metadata_source = action, source
        elif isinstance(action, A.Protocol):
            self.protocol, self.protocol_source = action, source
        elif isinstance(action, A.Txn):
            self.txns[action.app_id] = action
        elif isinstance(action, A.DomainMetadata):
            if action.removed:
                self.domains.pop(action.domain, None)
            else:
                self.domains[action.domain] = action

    def take_body(self, key: str, body: Any, path: str, line: int) -> None:
        """Decode and take one state action (``key`` in :data:`STATE_KEYS`) from line ``line`` of ``path``."""
        if body is None:
            return
        try:
            action = from_dict(key, body)
        except ActionDecodeError as exc:
            raise CorruptLogError(f"{path} line {line}: invalid {key} action: {exc}", path=path, line=line) from None
        if action is not None:
            self.take(action, path)

    def apply(self, commit: CommitData) -> None:
        """Take every state action of ``commit``, wherever its lines hold one."""
        for line, obj in objects(commit.data, commit.path):
            for key, body in obj.items():
                if key in STATE_KEYS:
                    self.take_body(key, body, commit.path, line)

    def freeze(self, commits: Sequence[CommitData]) -> ReplayedState:
        """The state after ``commits`` (the run applied onto the base) as a value, with the last commit's
        commitInfo."""
        last = commits[-1] if commits else None
        return ReplayedState(
            version=self.base_version if last is None else last.version,
            protocol=self.protocol,
            protocol_source=self.protocol_source,
            metadata=self.metadata,
            metadata_source=self.metadata_source,
            txns=MappingProxyType(self.txns),
            domains=MappingProxyType(self.domains),
            commit_info=None if last is None else last_commit_info(last.data, last.path),
        )


def version_partition_keys(state: ReplayedState | SmallState) -> tuple[str, ...] | None:
    """:func:`partition_keys` of a version's protocol and metadata, or None when it has no metadata."""
    if state.metadata is None:
        return None
    return partition_keys(state.protocol, state.metadata, state.metadata_source)


def live_txns(txns: Mapping[str, A.Txn], retention_ms: int | None, now_ms: int) -> dict[str, A.Txn]:
    """Txns that survive ``delta.setTransactionRetentionDuration``.

    Like Delta Spark, a txn without ``lastUpdated`` expires as soon as a retention is set: it cannot prove
    it is recent, and keeping it forever would make the retention meaningless.
    """
    if retention_ms is None:
        return dict(txns)
    cutoff = now_ms - retention_ms
    return {k: t for k, t in txns.items() if t.last_updated is not None and t.last_updated > cutoff}


__all__ = ["STATE_KEYS", "SmallState", "live_txns", "partition_keys", "version_partition_keys"]
