"""Logical conflict checks between this transaction and a commit that won the version it wanted.

Pure and ordered as Delta Spark orders them: the cheap, file-independent checks first (protocol, metadata,
domains, application transactions), then appends that match what we read, removes of files we read, and
removes of files we also remove. Each conflict is its own error class carrying the winning version, its
commitInfo and the file or partition at fault, so a program can decide what to do without parsing text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deltalog.core import actions as A
from deltalog.core.partitions import Condition, PartitionValueError, parse_value
from deltalog.core.pathkeys import canonical_path
from deltalog.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    MetadataChangedError,
    ProtocolChangedError,
)

SERIALIZABLE = "Serializable"
WRITE_SERIALIZABLE = "WriteSerializable"
SNAPSHOT_ISOLATION = "SnapshotIsolation"
ISOLATION_LEVELS = (SERIALIZABLE, WRITE_SERIALIZABLE)


@dataclass(frozen=True)
class ReadPredicate:
    """One recorded read: conditions ANDed on partition columns; no conditions means the whole table."""

    conditions: tuple[Condition, ...] = ()

    @property
    def whole_table(self) -> bool:
        return not self.conditions


@dataclass(frozen=True)
class PartitionSchema:
    """What predicate evaluation needs of the read snapshot: column types and logical -> physical names."""

    types: Mapping[str, Any]
    physical: Mapping[str, str]

    @property
    def partitioned(self) -> bool:
        return bool(self.types)


@dataclass(frozen=True)
class ReadSet:
    predicates: tuple[ReadPredicate, ...] = ()
    files: frozenset[str] = frozenset()  # canonical path keys
    app_ids: frozenset[str] = frozenset()

    @property
    def reads_whole_table(self) -> bool:
        return any(p.whole_table for p in self.predicates)

    @property
    def empty(self) -> bool:
        return not self.predicates and not self.files


@dataclass(frozen=True)
class Intent:
    """What this transaction read and is about to write, as the checker needs it."""

    read_set: ReadSet
    isolation: str
    partition_schema: PartitionSchema
    root: str | None
    changes_metadata: bool = False
    changes_protocol: bool = False
    removed: frozenset[str] = frozenset()  # canonical path keys of our removes
    domains: frozenset[str] = frozenset()
    is_blind_append: bool = False
    txn_id: str | None = None
    read_protocol: A.Protocol | None = None


@dataclass(frozen=True)
class Winner:
    """A commit that took a version after our read version."""

    version: int
    actions: Sequence[A.Action]
    commit_info: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_blind_append(self) -> bool:
        return self.commit_info.get("isBlindAppend") is True

    @property
    def txn_id(self) -> str | None:
        v = self.commit_info.get("txnId")
        return v if isinstance(v, str) else None


def effective_isolation(requested: str, actions: Sequence[A.Action]) -> str:
    """Downgrade to SnapshotIsolation when nothing changes data (Delta Spark's rule, e.g. compaction).

    Only file actions (all with ``dataChange=false``) may be present; anything else keeps the level.
    """
    file_actions = [a for a in actions if isinstance(a, (A.Add, A.Remove))]
    if not file_actions or len(file_actions) != len([a for a in actions if not isinstance(a, A.CommitInfo)]):
        return requested
    if any(a.data_change for a in file_actions):
        return requested
    return SNAPSHOT_ISOLATION


def _key(path: str, root: str | None) -> str:
    return canonical_path(path, root)


def _protocol_features(p: A.Protocol) -> set[str]:
    return set(p.reader_features or ()) | set(p.writer_features or ())


def _matches(pred: ReadPredicate, add: A.Add, schema: PartitionSchema) -> bool:
    if pred.whole_table:
        return True
    for cond in pred.conditions:
        raw = add.partition_values.get(schema.physical.get(cond.column, cond.column))
        try:
            value = parse_value(schema.types[cond.column], raw)
        except PartitionValueError:
            return True  # a value we cannot judge conflicts: never pass a conflict silently
        if not cond.matches(value):
            return False
    return True


def check_winner(
    intent: Intent,
    winner: Winner,
    check_protocol: Callable[[A.Protocol], None] | None = None,
) -> None:
    """Raise the typed conflict error if ``winner`` invalidates ``intent``; return quietly otherwise.

    ``check_protocol`` re-runs the read and write protocol checks on a winner's new protocol (the caller
    knows which features the engine honours).
    """
    info = dict(winner.commit_info)
    common: dict[str, Any] = {"winning_version": winner.version, "winning_commit_info": info}
    where = f"version {winner.version} ({info.get('operation') or 'unknown operation'})"
    protocols = [a for a in winner.actions if isinstance(a, A.Protocol)]
    metadata = [a for a in winner.actions if isinstance(a, A.Metadata)]
    adds = [a for a in winner.actions if isinstance(a, A.Add)]
    removes = [a for a in winner.actions if isinstance(a, A.Remove)]

    # 1. protocol
    if protocols:
        if intent.changes_protocol:
            raise ProtocolChangedError(f"the protocol was changed concurrently by {where}", **common)
        if intent.read_protocol is not None:
            dropped = _protocol_features(intent.read_protocol) - _protocol_features(protocols[-1])
            if dropped:
                raise ProtocolChangedError(f"{where} dropped table features {sorted(dropped)}", **common)
        if check_protocol is not None:
            try:
                check_protocol(protocols[-1])
            except Exception as exc:
                msg = f"{where} upgraded the protocol beyond this engine: {exc}"
                raise ProtocolChangedError(msg, **common) from exc
    # 2. metadata
    if metadata:
        raise MetadataChangedError(f"the table metadata was changed concurrently by {where}", **common)
    # 3. domain metadata
    for dm in (a for a in winner.actions if isinstance(a, A.DomainMetadata)):
        if dm.domain in intent.domains:
            raise ConcurrentTransactionError(f"domain {dm.domain!r} was also written by {where}", **common)
    # 4. application transactions this transaction read
    for txn in (a for a in winner.actions if isinstance(a, A.Txn)):
        if txn.app_id in intent.read_set.app_ids:
            raise ConcurrentTransactionError(
                f"application {txn.app_id!r} committed version {txn.version} concurrently in {where}", **common
            )
    # 5. files added that we should have read
    _check_appends(intent, winner, adds, where, common)
    # 6. files removed that we read
    read = intent.read_set
    for rm in removes:
        k = _key(rm.path, intent.root)
        if read.reads_whole_table or k in read.files:
            raise ConcurrentDeleteReadError(
                f"{where} removed {rm.path}, which this transaction read",
                conflicting_file=rm.path,
                conflicting_partition=dict(rm.partition_values) if rm.partition_values is not None else None,
                **common,
            )
    # 7. files removed that we also remove
    for rm in removes:
        if _key(rm.path, intent.root) in intent.removed:
            raise ConcurrentDeleteDeleteError(
                f"{where} also removed {rm.path}",
                conflicting_file=rm.path,
                conflicting_partition=dict(rm.partition_values) if rm.partition_values is not None else None,
                **common,
            )


def _check_appends(intent: Intent, winner: Winner, adds: list[A.Add], where: str, common: dict[str, Any]) -> None:
    if intent.is_blind_append or intent.isolation == SNAPSHOT_ISOLATION or not intent.read_set.predicates:
        return
    if intent.isolation == WRITE_SERIALIZABLE and not intent.changes_metadata and winner.is_blind_append:
        return  # only the writes need a serial order: a concurrent blind append could have come after us
    schema = intent.partition_schema
    for add in adds:
        hit = not schema.partitioned or any(_matches(p, add, schema) for p in intent.read_set.predicates)
        if hit:
            partition = dict(add.partition_values)
            part = f" in partition {partition}" if partition else ""
            raise ConcurrentAppendError(
                f"{where} added {add.path}{part}, which matches what this transaction read",
                conflicting_file=add.path,
                conflicting_partition=partition or None,
                **common,
            )


__all__ = [
    "ISOLATION_LEVELS",
    "SERIALIZABLE",
    "SNAPSHOT_ISOLATION",
    "WRITE_SERIALIZABLE",
    "Intent",
    "PartitionSchema",
    "ReadPredicate",
    "ReadSet",
    "Winner",
    "check_winner",
    "effective_isolation",
]
