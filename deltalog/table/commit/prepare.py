"""Stage 2, prepared: a transaction's staged actions turned into a commit, by every rule of every commit.

One place runs them for every commit a transaction makes (appends, DDL, restore, the data writer's), so a rule
added for a table feature cannot be skipped by one kind of commit: the per-commit rules
(:func:`~deltalog.core.commit.rules.prepare_commit`, which also holds the commit to the obligations of its kind),
every feature's check (:func:`~deltalog.core.features.commit_checks.check_commit`), row tracking's enablement,
the effective isolation level, the conflict checker's summary and the commitInfo. What the checks return (what
the writer vouched for, e.g. that new rows passed the table's constraints) goes into the commitInfo.

The kind of the commit (:func:`~deltalog.core.features.kinds.commit_kind`) is chosen here too: a caller
may name it (a restore is a restore), otherwise what the actions do decides, and a winner's protocol is later
checked for that same kind. The result is a :class:`Prepared` value; the attempts
(:mod:`deltalog.table.commit.attempts`) make each attempt's bytes from it, since row ids and in-commit timestamps
depend on the version attempted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deltalog._version import ENGINE_INFO
from deltalog.core import actions as A
from deltalog.core.commit.conflicts import HeldTo, ReadSet, TxnSummary, effective_isolation, is_blind_append
from deltalog.core.commit.rules import commit_info_of, prepare_commit
from deltalog.core.features import identity, row_tracking
from deltalog.core.features.commit_checks import Declarations, check_commit, needs_known_files, touched_paths
from deltalog.core.features.constraints import with_record
from deltalog.core.features.deletion_vectors import new_dvs_allowed
from deltalog.core.features.kinds import WRITE, commit_kind
from deltalog.core.features.obligations import DEFAULT_IMPLEMENTED
from deltalog.core.files.facts import NO_FILES, KnownFiles, known_files
from deltalog.core.files.pathkeys import file_key
from deltalog.core.log.paths import LOG_DIR
from deltalog.table.commit.read_state import ReadState
from deltalog.table.context import TableContext


@dataclass(frozen=True)
class CommitRequest:
    """What a transaction asks of one commit besides its actions."""

    txn_id: str
    operation: str  # commitInfo.operation
    kind: str  # the kind the commit is held to (:func:`kind_of`)
    declared: Declarations  # what only the writer knows of the rows
    isolation: str  # the transaction's level, before :func:`effective_isolation` looks at the actions
    parameters: Mapping[str, Any] | None = None
    user_metadata: str | None = None
    metrics: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Prepared:
    """A commit ready to be attempted: its actions after every rule and check (without commitInfo), its
    commitInfo, and what the conflict checker judges winners by."""

    read: ReadState
    actions: tuple[A.Action, ...]
    commit_info: A.CommitInfo
    summary: TxnSummary
    request: CommitRequest

    @property
    def isolation(self) -> str:
        """The effective isolation level (a commit that changes no data may run at a weaker one)."""
        return self.summary.isolation


def kind_of(named: str, actions: Sequence[A.Action], operation: str, read: ReadState) -> str:
    """The kind a commit is held to: the one the caller named, or (``WRITE``, the default) the one its actions
    and ``commitInfo.operation`` amount to on the table as read."""
    if named != WRITE:
        return named
    new_dvs = read.protocol is not None and new_dvs_allowed(read.protocol, read.configuration)
    return commit_kind(actions, operation, new_dvs=new_dvs)


def where(ctx: TableContext, read: ReadState) -> str:
    """The log and the version read, as errors name them."""
    version = f"version {read.version}" if read.version >= 0 else "new table"
    return f"{ctx.location}/{LOG_DIR} ({version})"


def prepare(
    ctx: TableContext, read: ReadState, staged: Sequence[A.Action], request: CommitRequest, reads: ReadSet
) -> Prepared:
    """``staged`` checked by every per-commit rule and feature check against ``read`` (the version as the
    transaction read it, never a refreshed one), with the commitInfo and the summary of ``reads`` (what the
    transaction read) that winners are checked against. Refusals are typed; nothing has been written."""
    source = where(ctx, read)
    implemented = request.declared.implemented
    actions = prepare_commit(
        staged, read.protocol, read.metadata, read.schema, source, operation=request.kind, implemented=implemented
    )
    protocol = next((a for a in reversed(actions) if isinstance(a, A.Protocol)), read.protocol)
    metadata = next((a for a in reversed(actions) if isinstance(a, A.Metadata)), read.metadata)
    assert protocol is not None and metadata is not None, "prepare_commit refuses a create without both"
    record = check_commit(
        actions,
        protocol=protocol,
        metadata=metadata,
        read_metadata=read.metadata,
        domains=read.domains,
        operation=request.operation,
        declared=request.declared,
        known=known_files_for(ctx, read, actions, protocol),
        has_rows=lambda: read.num_files() > 0,
        source=source,
    )
    before = read.configuration if read.version >= 0 else None
    actions = [
        row_tracking.enable(a, before, protocol, read.num_files) if isinstance(a, A.Metadata) else a for a in actions
    ]
    isolation = effective_isolation(request.isolation, actions, request.operation)
    summary = summarize(
        ctx, read, reads, actions, isolation, txn_id=request.txn_id, kind=request.kind, implemented=implemented
    )
    info = commit_info_of(
        actions,
        operation=request.operation,
        parameters=request.parameters,
        read_version=read.version,
        isolation=isolation,
        blind_append=summary.is_blind_append,
        metrics=request.metrics,
        engine_info=ENGINE_INFO,
        txn_id=request.txn_id,
        user_metadata=request.user_metadata,
        now_ms=ctx.now_ms(),
    )
    if summary.identity_marks_only:  # tagged as Delta Spark tags it: a winner's checker tells it from a real change
        tags = {**dict(info.other.get("tags") or {}), identity.SCHEMA_UPDATE_TAG: "true"}
        info = dataclasses.replace(info, other={**info.other, "tags": tags})
    return Prepared(read, tuple(actions), with_record(info, record), summary, request)


def summarize(
    ctx: TableContext,
    read: ReadState,
    reads: ReadSet,
    actions: Sequence[A.Action],
    isolation: str,
    *,
    txn_id: str,
    kind: str = WRITE,
    implemented: frozenset[str] = DEFAULT_IMPLEMENTED,
) -> TxnSummary:
    """What the conflict checker needs of a commit of ``actions`` by transaction ``txn_id`` that read ``reads``
    of ``read``; ``kind`` is what a winner's new protocol is checked for (any commit's, before the commit), with
    the feature checks the commit meets (``implemented``). A commit whose only change is a metaData advancing
    identity marks is summarized as such: each attempt re-bases it on a winner's marks
    (:mod:`deltalog.table.identity_rebase`)."""
    root = ctx.store.root
    held_to = None
    if read.metadata is not None:
        held_to = HeldTo(kind, read.configuration, read.schema, f"{ctx.location}/{LOG_DIR}", implemented)
    return TxnSummary(
        read_set=reads,
        isolation=isolation,
        partition_schema=read.partition_schema,
        root=root,
        changes_metadata=any(isinstance(a, A.Metadata) for a in actions),
        changes_protocol=any(isinstance(a, A.Protocol) for a in actions),
        removed=frozenset(file_key(a.path, None, root) for a in actions if isinstance(a, A.Remove)),
        domains=frozenset(a.domain for a in actions if isinstance(a, A.DomainMetadata)),
        is_blind_append=is_blind_append(actions, reads),
        txn_id=txn_id,
        read_protocol=read.protocol,
        table_id=read.metadata.id if read.metadata is not None else None,
        held_to=held_to,
        identity_marks_only=identity.marks_only_update(actions, read.metadata),
    )


def known_files_for(
    ctx: TableContext, read: ReadState, actions: Sequence[A.Action], protocol: A.Protocol
) -> KnownFiles:
    """The live adds of the paths the commit touches, when the deletion-vector checks need them (only then: a
    blind append loads no file list)."""
    if read.version < 0 or not needs_known_files(actions, protocol):
        return NO_FILES
    root = ctx.store.root
    return known_files(read.live_adds(touched_paths(actions, root), root), root)


def with_app_version(actions: Sequence[A.Action], app_id: str, version: int, now_ms: int) -> list[A.Action]:
    """An exactly-once commit's actions: its own ``txn`` action for ``app_id`` replaces any the caller staged."""
    kept = [a for a in actions if not (isinstance(a, A.Txn) and a.app_id == app_id)]
    return [*kept, A.Txn(app_id, version, now_ms)]


__all__ = [
    "CommitRequest",
    "Prepared",
    "kind_of",
    "known_files_for",
    "prepare",
    "summarize",
    "where",
    "with_app_version",
]
