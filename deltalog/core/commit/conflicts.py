"""Logical conflict checks between this transaction and a commit that won the version it wanted.

Pure, and aligned rule by rule with Delta Spark's ``ConflictChecker`` (delta-io/delta,
``spark/src/main/scala/org/apache/spark/sql/delta/``; CC = ``ConflictChecker.scala``, OT =
``OptimisticTransaction.scala``, TH = ``util/TransactionHelper.scala``, line numbers as cited in
``../shared/docs/delta-write-rules.md`` section 4). Checks run in Spark's order: the cheap, file-independent ones
first (protocol, metadata, domains, application transactions), then appends that match what we read, removes of
files we read, and removes of files we also remove. Each conflict is its own error class carrying the winning
version, its commitInfo and the file or partition at fault, so a program can decide what to do without parsing
text. A winner whose protocol deltalog cannot write is an :class:`~deltalog.errors.UnsupportedFeatureError`
instead: no retry can get past it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deltalog.core import actions as A
from deltalog.core.commit.operations import changes_data
from deltalog.core.features import identity
from deltalog.core.features.obligations import DEFAULT_IMPLEMENTED, check_operation
from deltalog.core.features.protocol import supported_features
from deltalog.core.files.partitions import Condition, PartitionValueError, parse_value
from deltalog.core.files.pathkeys import file_key
from deltalog.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    MetadataChangedError,
    ProtocolChangedError,
    UnsupportedFeatureError,
)

SERIALIZABLE = "Serializable"
WRITE_SERIALIZABLE = "WriteSerializable"
SNAPSHOT_ISOLATION = "SnapshotIsolation"
ISOLATION_LEVELS = (SERIALIZABLE, WRITE_SERIALIZABLE)
#: the one domain Spark lets through a SnapshotIsolation downgrade: row tracking resolves its own conflicts
ROW_TRACKING_DOMAIN = "delta.rowTracking"
#: Spark's ``FileAction``s (actions.scala:704, 1263): ``cdc`` is one, so it is neither "other" nor an add
FILE_ACTIONS = (A.Add, A.Remove, A.Cdc)


@dataclass(frozen=True)
class ReadPredicate:
    """One recorded read: conditions ANDed on partition columns; no conditions means the whole table.

    Only partition conditions belong here: as Spark's ``trackReadPredicates`` (OT) splits a read's filters,
    the partition ones are used for conflict detection and data ones are dropped, so a read with data
    conditions only is the ``true`` predicate, which every added file matches.
    """

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
class HeldTo:
    """What a winner's new protocol is checked for: the kind of operation the commit is (the obligations it is
    held to) on the table as read (its configuration and schema JSON), and the feature checks it meets
    (``implemented``: every commit's, and those its writer declared); ``source`` names the log in errors."""

    kind: str
    configuration: Mapping[str, str]
    schema: Any
    source: str
    implemented: frozenset[str] = DEFAULT_IMPLEMENTED


@dataclass(frozen=True)
class TxnSummary:
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
    #: the ``metaData.id`` of the table read (None: the commit creates it)
    table_id: str | None = None
    #: what a winner's protocol must still allow (None: the commit creates the table, no winner is checked)
    held_to: HeldTo | None = None
    #: our metaData only advances identity high-water marks, and each attempt re-bases it (and the values it
    #: generated) on a winner's (:mod:`deltalog.table.identity_rebase`)
    identity_marks_only: bool = False


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


def effective_isolation(requested: str, actions: Sequence[A.Action], operation: str | None = None) -> str:
    """The level a commit runs at: ``requested``, or SnapshotIsolation when nothing it does changes data.

    Spark's ``canDowngradeToSnapshotIsolation`` (TH:111-145): every action is a file action (``add``,
    ``remove`` or ``cdc``) or the row-tracking domain, and none has ``dataChange=true``; under WriteSerializable
    the operation must not change data either (:func:`~deltalog.core.commit.operations.changes_data`; a name Spark
    does not define counts as changing data). An empty action list qualifies: with nothing written, the commit
    can be ordered before any winner (Spark's "Note-2"). Our own commitInfo is not an action here.
    """
    data_changed = False
    for a in actions:
        if isinstance(a, A.CommitInfo):
            continue
        if isinstance(a, FILE_ACTIONS):
            data_changed = data_changed or a.data_change
        elif not (isinstance(a, A.DomainMetadata) and a.domain == ROW_TRACKING_DOMAIN):
            return requested  # metadata, protocol, txn, other domains: their order matters
    if data_changed:
        return requested
    if requested == SERIALIZABLE or (requested == WRITE_SERIALIZABLE and not changes_data(operation)):
        return SNAPSHOT_ISOLATION
    return requested


def is_blind_append(actions: Sequence[A.Action], read_set: ReadSet) -> bool:
    """Spark's ``isBlindAppend`` (OT:1882-1887): every file action is an ``add`` and nothing was read.

    A ``cdc`` action is a file action that is not an add, so a commit carrying one is not blind; other
    writers then check its adds against what they read even under WriteSerializable.
    """
    only_adds = all(isinstance(a, A.Add) for a in actions if isinstance(a, FILE_ACTIONS))
    return only_adds and not read_set.predicates and not read_set.files


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


def check_winner(summary: TxnSummary, winner: Winner) -> None:
    """Raise the typed conflict error if ``winner`` invalidates ``summary``; return quietly otherwise.

    A winner's new protocol is checked again for what the commit is held to (``summary.held_to``): the read and
    write protocol checks, raising :class:`~deltalog.errors.UnsupportedFeatureError`.
    """
    info = dict(winner.commit_info)
    common: dict[str, Any] = {"winning_version": winner.version, "winning_commit_info": info}
    where = f"version {winner.version} ({info.get('operation') or 'unknown operation'})"
    protocols = [a for a in winner.actions if isinstance(a, A.Protocol)]
    metadata = [a for a in winner.actions if isinstance(a, A.Metadata)]
    adds = [a for a in winner.actions if isinstance(a, A.Add)]
    removes = [a for a in winner.actions if isinstance(a, A.Remove)]

    # 1. another table: a table id never changes in a table's life, so a winner carrying another one is a
    # table deleted and created again at this path (checked first: no other rule means anything across tables)
    other = next((m.id for m in metadata if summary.table_id is not None and m.id != summary.table_id), None)
    if other is not None:
        raise MetadataChangedError(
            f"the table was replaced: {where} belongs to table {other}, while this transaction read table "
            f"{summary.table_id} (was it deleted and created again at this path?)",
            **common,
        )
    if protocols:
        _check_protocol(summary, winner, protocols[0], where, common)
    # 2. metadata; a winner's that only advances identity marks (its commitInfo tag says so) passes a commit
    # changing no metadata (CC:647-700) and, deltalog's addition, one that itself only advances the marks
    if metadata and not (_identity_only(info) and (not summary.changes_metadata or summary.identity_marks_only)):
        raise MetadataChangedError(f"the table metadata was changed concurrently by {where}", **common)
    # 3. domain metadata
    for dm in (a for a in winner.actions if isinstance(a, A.DomainMetadata)):
        if dm.domain in summary.domains:
            raise ConcurrentTransactionError(f"domain {dm.domain!r} was also written by {where}", **common)
    # 4. application transactions this transaction read
    for txn in (a for a in winner.actions if isinstance(a, A.Txn)):
        if txn.app_id in summary.read_set.app_ids:
            raise ConcurrentTransactionError(
                f"application {txn.app_id!r} committed version {txn.version} concurrently in {where}", **common
            )
    # 5. files added that we should have read (a winner's cdc files are not adds: Spark ignores them)
    _check_appends(summary, winner, adds, where, common)
    # 6. files removed that we read (CC:1171-1221 compare paths only)
    read = summary.read_set
    for rm in removes:
        k = file_key(rm.path, None, summary.root)
        if read.reads_whole_table or k in read.files:
            raise ConcurrentDeleteReadError(
                f"{where} removed {rm.path}, which this transaction read",
                conflicting_file=rm.path,
                conflicting_partition=dict(rm.partition_values) if rm.partition_values is not None else None,
                **common,
            )
    # 7. files removed that we also remove
    for rm in removes:
        if file_key(rm.path, None, summary.root) in summary.removed:
            raise ConcurrentDeleteDeleteError(
                f"{where} also removed {rm.path}",
                conflicting_file=rm.path,
                conflicting_partition=dict(rm.partition_values) if rm.partition_values is not None else None,
                **common,
            )


def _identity_only(info: Mapping[str, Any]) -> bool:
    tags = info.get("tags")
    return identity.tagged(tags.items() if isinstance(tags, Mapping) else ())


def _check_protocol(
    summary: TxnSummary,
    winner: Winner,
    protocol: A.Protocol,
    where: str,
    common: dict[str, Any],
) -> None:
    """Spark's ``checkProtocolCompatibility`` (CC), in its order.

    1. The winner's protocol must be readable and writable by this engine (``protocolRead``/``protocolWrite``);
       if not, retrying can never succeed, so the error is :class:`UnsupportedFeatureError` naming the feature
       and the winner's version, not a retryable-looking :class:`ProtocolChangedError`.
    2. If we change the protocol too, :class:`ProtocolChangedError`.
    3. If the winner drops a feature our read protocol supports, :class:`ProtocolChangedError`. Supported means
       listed *or implied by legacy versions* (``implicitlyAndExplicitlySupportedFeatures`` in Spark's
       ``TableFeature.isProtocolRemovingFeatures``): (1,4) -> (3,7) whose lists omit ``changeDataFeed`` drops it.
    Otherwise the winner's protocol is adopted.
    """
    held = summary.held_to
    if held is not None:
        try:
            check_operation(
                held.kind, protocol, held.configuration, held.schema, held.source, implemented=held.implemented
            )
        except UnsupportedFeatureError as exc:
            raise UnsupportedFeatureError(
                f"{where} changed the protocol to one deltalog cannot write: {exc}",
                feature=exc.feature,
                path=exc.path,
                version=winner.version,
            ) from exc
    if summary.changes_protocol:
        raise ProtocolChangedError(f"the protocol was changed concurrently by {where}", **common)
    if summary.read_protocol is not None:
        dropped = supported_features(summary.read_protocol) - supported_features(protocol)
        if dropped:
            raise ProtocolChangedError(f"{where} dropped table features {sorted(dropped)}", **common)


def _check_appends(summary: TxnSummary, winner: Winner, adds: list[A.Add], where: str, common: dict[str, Any]) -> None:
    """Spark's ``checkForAddedFilesThatShouldHaveBeenReadByCurrentTxn`` and ``getFirstFileMatchingPartitionPredicates``.

    Which of the winner's adds count depends on our level: none at SnapshotIsolation; under WriteSerializable
    without a metadata change of ours, none from a winner whose commitInfo says ``isBlindAppend``; all others.
    Which of those conflict (CC:1004-1016): none if we are a blind append; the first one if the table (as
    read) is unpartitioned or we read all of it, whatever else we recorded (a non-blind transaction that only
    read or removes files included); otherwise the first one a recorded partition predicate matches.
    """
    if summary.is_blind_append or summary.isolation == SNAPSHOT_ISOLATION:
        return
    if summary.isolation == WRITE_SERIALIZABLE and not summary.changes_metadata and winner.is_blind_append:
        return  # only the writes need a serial order: a concurrent blind append could have come after us
    hit = _first_add_read(summary, adds)
    if hit is not None:
        partition = dict(hit.partition_values)
        part = f" in partition {partition}" if partition else ""
        raise ConcurrentAppendError(
            f"{where} added {hit.path}{part}, which matches what this transaction read",
            conflicting_file=hit.path,
            conflicting_partition=partition or None,
            **common,
        )


def _first_add_read(summary: TxnSummary, adds: list[A.Add]) -> A.Add | None:
    schema = summary.partition_schema
    if not schema.partitioned or summary.read_set.reads_whole_table:
        return adds[0] if adds else None
    for pred in summary.read_set.predicates:
        for add in adds:
            if _matches(pred, add, schema):
                return add
    return None


__all__ = [
    "FILE_ACTIONS",
    "ISOLATION_LEVELS",
    "ROW_TRACKING_DOMAIN",
    "SERIALIZABLE",
    "SNAPSHOT_ISOLATION",
    "WRITE_SERIALIZABLE",
    "HeldTo",
    "TxnSummary",
    "PartitionSchema",
    "ReadPredicate",
    "ReadSet",
    "Winner",
    "check_winner",
    "effective_isolation",
    "is_blind_append",
]
