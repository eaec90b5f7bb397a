"""Preparing a commit: the per-commit rules and every feature duty, then the attempts that carry it.

One place runs them for every commit a transaction makes (appends, DDL, restore, the data writer's), so a
rule added for a table feature cannot be skipped by one kind of commit. The writer-feature gate's operation
is chosen here too: a caller may name it (a restore is gated as a restore), otherwise what the actions do
decides, and a winner's protocol is later checked for that same operation.

What the duties return (what the writer vouched for, e.g. that new rows passed the table's constraints) goes
into the commitInfo; the attempts (:mod:`deltalog.table.attempts`) then make each attempt's bytes from the
prepared actions, since row ids and in-commit timestamps depend on the version attempted.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from deltalog._version import ENGINE_INFO
from deltalog.core import actions as A
from deltalog.core import identity
from deltalog.core.commit_rules import commit_info_of, prepare_commit
from deltalog.core.conflicts import TxnSummary, effective_isolation
from deltalog.core.constraints import with_record
from deltalog.core.deletion_vectors import new_dvs_allowed
from deltalog.core.feature_duties import Declarations, check_duties, needs_known_files, touched_paths
from deltalog.core.feature_gate import WRITE, commit_operation
from deltalog.core.file_facts import NO_FILES, KnownFiles, known_files, path_key
from deltalog.data.target import parquet_options
from deltalog.errors import (
    CommitNotReachableError,
    ConcurrentModificationError,
    InvalidCommitError,
    MaxCommitAttemptsError,
    ProtocolError,
)
from deltalog.table.acknowledgment import Outcome
from deltalog.table.attempts import Attempts, enable_row_tracking, known_for, listed_mtime, read_facts
from deltalog.table.commit_loop import NO_TABLE, CommitResult, Committer, Young
from deltalog.table.context import TableContext
from deltalog.table.identity_rebase import IdentityRebase
from deltalog.table.snapshot import Snapshot

#: failures after which the commit certainly is not in the table (files written for it may go)
NOT_LANDED = (
    ConcurrentModificationError,
    InvalidCommitError,
    ProtocolError,
    MaxCommitAttemptsError,
    CommitNotReachableError,
)


@dataclass(frozen=True)
class Prepared:
    """A commit's actions after every rule and duty, and what the writer vouched for (for its commitInfo)."""

    actions: list[A.Action]
    record: dict[str, Any]


def gate_operation(gate: str, actions: Sequence[A.Action], operation: str, snap: Snapshot | None) -> str:
    """The feature gate's operation for a commit: the one the caller named, or (``WRITE``, the default) the one
    its actions and ``commitInfo.operation`` amount to on the table as read."""
    if gate != WRITE:
        return gate
    new_dvs = snap is not None and new_dvs_allowed(snap.protocol, snap.configuration)
    return commit_operation(actions, operation, new_dvs=new_dvs)


def prepare(
    ctx: TableContext,
    snap: Snapshot | None,
    actions: Sequence[A.Action],
    *,
    gate_op: str,
    operation: str,
    declared: Declarations,
) -> Prepared:
    """``actions`` checked by every per-commit rule and feature duty against ``snap`` as the transaction read it
    (``None``: the commit creates the table and stages its own protocol)."""
    where = f"version {snap.version}" if snap is not None else "new table"
    prepared = prepare_commit(
        actions,
        snap.protocol if snap is not None else None,
        snap.metadata if snap is not None else None,
        snap.schema_json if snap is not None else None,
        f"{ctx.location}/_delta_log ({where})",
        operation=gate_op,
        implemented=declared.implemented,
    )
    protocol = next((a for a in reversed(prepared) if isinstance(a, A.Protocol)), None)
    metadata = next((a for a in reversed(prepared) if isinstance(a, A.Metadata)), None)
    if snap is not None:
        protocol, metadata = protocol or snap.protocol, metadata or snap.metadata
    assert protocol is not None and metadata is not None, "a commit that creates the table stages both"
    record = check_duties(
        prepared,
        protocol=protocol,
        metadata=metadata,
        read_metadata=snap.metadata if snap is not None else None,
        domains=snap.domain_metadata if snap is not None else {},
        operation=operation,
        declared=declared,
        known=known_files_for(ctx, snap, prepared, protocol),
        has_rows=lambda: snap is not None and snap.num_files > 0,
        source=f"{ctx.location}/_delta_log ({where})",
    )
    return Prepared(prepared, record)


def known_files_for(
    ctx: TableContext, snap: Snapshot | None, actions: Sequence[A.Action], protocol: A.Protocol
) -> KnownFiles:
    """The live adds of the paths the commit touches, when the deletion-vector rules need them (only then: a
    blind append loads no file list)."""
    if snap is None or not needs_known_files(actions, protocol):
        return NO_FILES
    root = ctx.store.root
    wanted = touched_paths(actions, root)
    return known_files((a for a in snap.add_actions() if path_key(a.path, root) in wanted), root)


def attempts_for(
    ctx: TableContext,
    snap: Snapshot | None,
    prepared: Sequence[A.Action],
    commit_info: A.CommitInfo,
    operation: str,
    rebase: IdentityRebase | None = None,
) -> Attempts:
    """The attempts of a prepared commit: what each version attempted needs of the version read, the files it
    re-commits (their row ids) and, when the commit enables row tracking, its materialized column names."""
    read = read_facts(ctx, snap)
    actions = enable_row_tracking(prepared, read, lambda: snap.files().num_rows if snap is not None else 0)
    return Attempts(
        actions,
        commit_info,
        read,
        known=partial(known_for, snap, actions, operation, ctx.store.root),
        now_ms=ctx.now_ms,
        mtime_of=lambda version: listed_mtime(ctx, version),
        rebase=rebase,
    )


def with_app_version(actions: Sequence[A.Action], app_id: str, version: int, now_ms: int) -> list[A.Action]:
    """An exactly-once commit's actions: its own ``txn`` action for ``app_id`` replaces any the caller staged."""
    kept = [a for a in actions if not (isinstance(a, A.Txn) and a.app_id == app_id)]
    return [*kept, A.Txn(app_id, version, now_ms)]


def skipped(txn_id: str, operation: str, read_version: int, isolation: str) -> CommitResult:
    """The result of an exactly-once commit whose application already reached its version: nothing written."""
    return CommitResult(
        version=None,
        attempts=0,
        winners=(),
        txn_id=txn_id,
        operation=operation,
        actions=(),
        read_version=read_version,
        isolation_level=isolation,
        skipped=True,
    )


@dataclass(frozen=True)
class CommitRequest:
    """What a transaction asks of one commit besides its actions."""

    txn_id: str
    operation: str  # commitInfo.operation
    gate_op: str  # the feature gate's operation (:func:`gate_operation`)
    declared: Declarations  # what only the writer knows of the rows
    isolation: str  # the transaction's level, before :func:`effective_isolation` looks at the actions
    parameters: Mapping[str, Any] | None = None
    user_metadata: str | None = None
    metrics: Mapping[str, str] | None = None


def run_commit(
    ctx: TableContext,
    snap: Snapshot | None,
    actions: Sequence[A.Action],
    request: CommitRequest,
    *,
    summarize: Callable[[Sequence[A.Action], str], TxnSummary],
    committer: Committer,
    young: Young | None,
    started: float,
) -> tuple[CommitResult, Outcome]:
    """Prepare ``actions`` as a commit on ``snap`` (the snapshot as the transaction read it, never a refreshed
    one) and run it through the commit loop; ``summarize`` gives the conflict checker's view of the commit at
    its effective isolation level, ``started`` the monotonic time the commit began."""
    checked = prepare(
        ctx, snap, actions, gate_op=request.gate_op, operation=request.operation, declared=request.declared
    )
    isolation = effective_isolation(request.isolation, checked.actions, request.operation)
    intent = summarize(checked.actions, isolation)
    read_version = snap.version if snap is not None else -1
    info = commit_info_of(
        checked.actions,
        operation=request.operation,
        parameters=request.parameters,
        read_version=read_version,
        isolation=isolation,
        blind_append=intent.is_blind_append,
        metrics=request.metrics,
        engine_info=ENGINE_INFO,
        txn_id=request.txn_id,
        user_metadata=request.user_metadata,
        now_ms=ctx.now_ms(),
    )
    rebase = None
    if snap is not None and identity.marks_only_update(checked.actions, snap.metadata):
        intent = dataclasses.replace(intent, identity_marks_only=True)
        tags = {**dict(info.other.get("tags") or {}), identity.SCHEMA_UPDATE_TAG: "true"}
        info = dataclasses.replace(info, other={**info.other, "tags": tags})
        rebase = IdentityRebase(ctx.store, request.declared.identity_runs, parquet_options(snap.configuration))
    attempts = attempts_for(ctx, snap, checked.actions, with_record(info, checked.record), request.operation, rebase)
    tip = snap.tip if snap is not None else NO_TABLE
    try:
        outcome = committer.commit(
            read_version,
            attempts.encode(read_version + 1),
            intent,
            request.txn_id,
            tip,
            encode=attempts.encode,
            young=young,
        )
    except NOT_LANDED:
        if rebase is not None:
            rebase.refused()
        raise
    if rebase is not None:
        rebase.landed()
    result = CommitResult(
        version=outcome.version,
        metrics=dict(info.operation_metrics or {}),
        attempts=outcome.attempts,
        winners=tuple(outcome.winners),
        txn_id=request.txn_id,
        operation=request.operation,
        actions=tuple(a for a in attempts.actions if not isinstance(a, A.CommitInfo)),
        read_version=read_version,
        isolation_level=isolation,
        elapsed_s=time.monotonic() - started,
        recovered_unknown_outcome=outcome.ours_found_after_unknown,
    )
    return result, outcome


__all__ = [
    "CommitRequest",
    "Prepared",
    "attempts_for",
    "gate_operation",
    "known_files_for",
    "prepare",
    "run_commit",
    "skipped",
    "with_app_version",
]
