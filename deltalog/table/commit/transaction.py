"""Stage 1, the transaction: what was read, and what is staged to commit.

A transaction binds what it reads for its whole life: a snapshot, or for the transaction that creates the table,
its :class:`~deltalog.table.commit.new_table.NewTable` (read version -1). What it reads through
:meth:`Transaction.read`, :meth:`~Transaction.read_files` and :meth:`~Transaction.app_version` becomes its read set,
the thing other writers' commits are checked against; reading directly from ``snapshot`` is not recorded, on
purpose, for callers that know a read does not matter to correctness.

Every version goes through here: data writes, metadata changes, restores, and creating the table. :meth:`commit`
runs the stages of :mod:`deltalog.table.commit` (prepared, attempts, loop, acknowledged) on values, so the rules
every commit must meet live in one place. What happens after a commit (advancing a cached snapshot, hooks,
automatic checkpoints) is whoever started the transaction's: it is handed the :class:`Committed` value once.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, Protocol

import pyarrow as pa

from deltalog.core import actions as A
from deltalog.core.commit.conflicts import ISOLATION_LEVELS, SERIALIZABLE, effective_isolation
from deltalog.core.features.commit_checks import Declarations, validation
from deltalog.core.features.identity import Run
from deltalog.core.features.obligations import WRITE
from deltalog.errors import (
    CommitNotReachableError,
    CommitStateUnknownError,
    InvalidArgumentError,
    MetadataChangedError,
    ProtocolChangedError,
)
from deltalog.table import snapshot as snapshots
from deltalog.table.commit import declared_intents
from deltalog.table.commit.anchor import Young
from deltalog.table.commit.attempts import Attempts
from deltalog.table.commit.committed import NOT_LANDED, CommitResult, Committed, skipped
from deltalog.table.commit.loop import Committer, RetryPolicy
from deltalog.table.commit.new_table import NewTable
from deltalog.table.commit.prepare import CommitRequest, kind_of, prepare, summarize, with_app_version
from deltalog.table.commit.read_set import ReadRecord
from deltalog.table.commit.read_state import ReadState, read_state
from deltalog.table.context import TableContext
from deltalog.table.snapshot import Snapshot

log = logging.getLogger(__name__)


class LatestSource(Protocol):
    """Where a transaction started on a cached snapshot, without a listing, gets the latest one when it first
    reads (:class:`deltalog.table.latest.Latest`)."""

    def for_transaction(self) -> tuple[Snapshot, Young | None]: ...


class Transaction:
    """One optimistic transaction; create it with :meth:`DeltaLog.start_transaction` (or, to create the table,
    :meth:`DeltaLog.start_create`).

    ``read`` is the snapshot it reads, or the :class:`NewTable` it creates (read version -1). ``on_committed``
    is handed the :class:`Committed` value once after a commit lands; an error in it is logged, never raised (a
    commit that landed is never reported as failed).
    """

    def __init__(
        self,
        context: TableContext,
        read: Snapshot | NewTable,
        isolation: str | None = None,
        app_id: str | None = None,
        app_version: int | None = None,
        retry: RetryPolicy | None = None,
        *,
        on_committed: Callable[[Committed], None] | None = None,
        young: Young | None = None,
        latest: LatestSource | None = None,
    ) -> None:
        """A :class:`NewTable` ``read`` is the table this transaction creates: its protocol and metadata are
        staged, so whatever else is committed (the first data files) lands in the same version 0.

        ``young`` lets the commit skip listings while it holds (:class:`~deltalog.table.commit.anchor.Young`):
        the caller vouches that ``read`` descends from a commit it sent at ``young.anchor_ms``.

        With ``latest``, ``read`` is the caller's cached snapshot, taken without a listing: the first read
        (:meth:`read`, :attr:`snapshot`, removes, app versions, intents) replaces it by
        ``latest.for_transaction()``'s, so what the transaction reads is as current as a listing makes it. A
        transaction that reads nothing (a blind append) commits on the cached snapshot: the commit loop checks
        whatever came since, and a metadata or protocol change there makes it start again once on the refreshed
        snapshot (having read nothing, it is the transaction it would have been had it started after that change).
        """
        if isolation is not None and isolation not in ISOLATION_LEVELS:
            raise InvalidArgumentError(f"isolation level {isolation!r} is not one of {ISOLATION_LEVELS}")
        self._context = context
        self._read = read
        self._on_committed = on_committed
        self._young = young
        self._latest = latest if isinstance(read, Snapshot) else None
        self.isolation: str = isolation or _table_isolation(read.configuration)
        self.retry = retry or RetryPolicy()
        self.txn_id = str(uuid.uuid4())
        self._reads = ReadRecord(context.store.root)
        self._staged: list[A.Action] = list(read.actions) if isinstance(read, NewTable) else []
        self._done = False
        self._declared: declared_intents.IntentHandle | None = None  # see declare_intent
        self._early_through = self.read_version
        self.app_id = app_id
        self.app_target = app_version
        self.already_committed = False
        if app_id is not None:
            if app_version is None:
                raise InvalidArgumentError("app_version is required with app_id")
            current = self.app_version(app_id)
            self.already_committed = current is not None and current >= app_version

    # ------------------------------------------------------------------------------------------ reading
    @property
    def context(self) -> TableContext:
        """The table (store, location, clock) this transaction commits to."""
        return self._context

    def _observe(self) -> None:
        """Before the first read: replace a snapshot taken without a listing by a refreshed one."""
        latest, self._latest = self._latest, None
        if latest is not None and not self._done:
            self._read, self._young = latest.for_transaction()
            self._early_through = self.read_version

    @property
    def snapshot(self) -> Snapshot:
        """The snapshot this transaction reads; a transaction that creates the table has none."""
        self._observe()
        if not isinstance(self._read, Snapshot):
            raise InvalidArgumentError("this transaction creates the table: there is no snapshot to read")
        return self._read

    @property
    def new_table(self) -> NewTable | None:
        """The table this transaction creates (its version 0 as it will be committed), or None."""
        return self._read if isinstance(self._read, NewTable) else None

    @property
    def read_version(self) -> int:
        """The version read: -1 for the transaction that creates the table."""
        return self._state.version

    @property
    def _state(self) -> ReadState:
        """What was read as the commit stages ask about it; never refreshes (a check inside a commit must see
        what the transaction read, not a newer snapshot)."""
        return read_state(self._read)

    @property
    def intent(self) -> declared_intents.IntentHandle | None:
        """The intent :meth:`declare_intent` published, until commit or abort releases it (then stopped)."""
        return self._declared

    def read(self, where: Any = None) -> pa.Table:
        """The live files matching ``where`` (all files without it), recorded as read.

        Both the predicate and the matched files enter the read set, as Delta Spark's ``filterFiles`` does:
        a concurrent append that matches the predicate, or a concurrent remove of a matched file, is a
        conflict. Conditions on non-partition columns cannot be judged from the log: as Spark's
        ``trackReadPredicates`` does, they are left out of the recorded predicate and the partition conditions
        kept (a read by data columns only is thus a read of every partition).
        """
        snap = self.snapshot
        chosen = (
            None if where is None or (isinstance(where, Mapping) and not where) else snapshots.row_filter(snap, where)
        )
        files = snap.files(where=chosen)  # validates columns and values
        self._reads.add_predicate(chosen.conditions() if chosen is not None else None, self._state.partition_schema)
        self._reads.add_files(files.column("path").to_pylist())
        return files

    def read_files(self, paths: Iterable[str]) -> None:
        """Record files the new data depends on (paths as in the log)."""
        self._observe()
        self._reads.add_files(paths)

    def app_version(self, app_id: str) -> int | None:
        """The committed version of ``app_id``, recorded so a concurrent commit of that app conflicts."""
        self._observe()
        self._reads.app_ids.add(app_id)
        return self._read.app_version(app_id) if isinstance(self._read, Snapshot) else None

    # ------------------------------------------------------------------------------------------ intents
    def declare_intent(
        self,
        where: Any = None,
        files: Iterable[str] | None = None,
        *,
        heartbeat_s: float = 10.0,
        timeout_s: float = 60.0,
        is_compaction: bool = False,
        operation: str = "WRITE",
    ) -> declared_intents.IntentHandle:
        """Record the read of ``where`` (and ``files``) as :meth:`read` does and publish it as a live intent
        until commit or abort, so declared writers can stop early; it binds no commit
        (:mod:`deltalog.core.commit.declared_intents`)."""
        if self._done or self._declared is not None:
            raise InvalidArgumentError("an intent is declared once, before commit or abort")
        self.read(where)
        if files is not None:
            self.read_files(files)
        files_read, now = sorted(self._reads.files), self._context.now_ms()
        self._declared = declared_intents.declare(
            self._context.store,
            self.txn_id,
            self.read_version,
            self._reads.predicates,
            files_read,
            now,
            timeout_s,
            operation=operation,
            is_compaction=is_compaction,
            heartbeat_s=heartbeat_s,
        )
        return self._declared

    def check_early(self) -> None:
        """Raise now the typed conflict error the commit would raise (cheap; call it between work units): a
        commit since the read conflicts, or another writer's live intent overlaps ours with priority."""
        self._observe()
        staged = list(self._staged)
        operation = self._declared.record.operation if self._declared is not None else None
        # Nothing staged yet is not an empty commit (its writes are still to come): no downgrade for that.
        isolation = effective_isolation(self.isolation, staged, operation) if staged else self.isolation
        state = self._state
        summary = summarize(self._context, state, self._reads.read_set(), staged, isolation, txn_id=self.txn_id)
        self._early_through = declared_intents.check_early(
            self._context.store, summary, self._early_through, self._declared, state.partition_schema.types
        )

    def _release_intent(self) -> None:
        if self._declared is not None:
            self._declared.remove()

    # ------------------------------------------------------------------------------------------ staging
    def stage(self, actions: Iterable[A.Action]) -> None:
        """Add actions to this transaction; several staged operations commit as one version."""
        self._staged.extend(actions)

    def remove_where(self, where: Any = None, data_change: bool = True) -> list[A.Remove]:
        """Stage removes of the live files matching ``where`` (all without it), and record the read.

        A delete reads what it deletes: a concurrent append into the same partitions is a conflict. Only
        partition columns are allowed: the log cannot tell which rows of a file match a data column, and
        removing whole files on such a condition would delete rows that do not match.
        """
        snap = self.snapshot
        partition = set(snap.partition_columns)
        chosen = (
            None if where is None or (isinstance(where, Mapping) and not where) else snapshots.row_filter(snap, where)
        )
        data_columns = sorted(c for c in (chosen.columns if chosen is not None else ()) if c not in partition)
        if data_columns or (chosen is not None and chosen.tree is None):
            raise InvalidArgumentError(
                f"remove_where can only select by partition columns {sorted(partition)}, not "
                f"{data_columns or 'an Expression it cannot read'}: the log knows files, not rows"
            )
        self.read(chosen)
        now = self._context.now_ms()
        removes = [a.remove(now, data_change) for a in snap.add_actions(chosen, exact=True)]
        self._staged.extend(removes)
        return removes

    def remove_files(self, paths: Iterable[str], data_change: bool = True) -> list[A.Remove]:
        """Stage removes of specific live files (paths as in the log); they are recorded as read."""
        key = self._reads.key
        wanted = {key(p) for p in paths}
        now = self._context.now_ms()
        removes = [a.remove(now, data_change) for a in self.snapshot.add_actions() if key(a.path) in wanted]
        found = {key(r.path) for r in removes}
        missing = wanted - found
        if missing:
            raise InvalidArgumentError(f"not live at version {self.read_version}: {sorted(missing)[:5]}")
        self._reads.files.update(found)
        self._staged.extend(removes)
        return removes

    # ------------------------------------------------------------------------------------------ commit
    def commit(
        self,
        actions: Iterable[A.Action] = (),
        operation: str = "WRITE",
        operation_parameters: Mapping[str, Any] | None = None,
        *,
        user_metadata: str | None = None,
        operation_metrics: Mapping[str, str] | None = None,
        kind: str = WRITE,
        data_validated: bool | str = False,
        existing_data_validated: bool | str = False,
        copies_rows: bool | None = None,
        cdc_covers_all: bool = False,
        row_ids_preserved: bool = False,
        identity_runs: Sequence[Run] = (),
        identity_preserved: bool = False,
    ) -> CommitResult:
        """Commit the staged actions plus ``actions`` as one new version.

        Raises a :class:`~deltalog.errors.ConcurrentModificationError` subclass on a real conflict,
        :class:`~deltalog.errors.InvalidCommitError` (nothing written) when the actions break a rule,
        :class:`~deltalog.errors.UnsupportedFeatureError` when the table needs writer features deltalog
        does not implement, :class:`~deltalog.errors.CommitNotReachableError` (nothing stays written) when the
        version it read is gone from the log or the version it won is one readers never see (docs/commits.md),
        and :class:`~deltalog.errors.CommitStateUnknownError` when it cannot tell whether the commit landed.
        A declared intent is removed after success or a definite refusal; after an unknown outcome it stays
        live for a retried commit, and :meth:`abort` removes it. ``operation_metrics`` replaces the file counts
        recorded in ``commitInfo`` by default, for operations whose metrics other engines know by their own
        names (RESTORE's, for one). ``kind`` is the kind of operation the commit is held to the obligations of
        (:data:`deltalog.core.features.obligations.RESTORE` for a restore); by default, what its actions amount to.

        What only the writer knows (:class:`~deltalog.core.features.commit_checks.Declarations`):
        ``data_validated`` True when the new rows satisfy the table's CHECK constraints, invariants and generated
        columns (a table with any refuses new rows without it; ``"checked"`` is for deltalog's data writer, which
        evaluated them), ``existing_data_validated`` the same for the rows already there when the commit adds such
        a rule; both are recorded in ``commitInfo``. On a change-data-feed table, ``copies_rows=False`` says
        files added next to removed ones hold no rows copied from them (a partition overwrite), and
        ``cdc_covers_all=True`` that the commit's ``cdc`` files hold every change it makes. On a table with row
        tracking enabled, ``row_ids_preserved=True`` says rows copied into new files carry their row ids and
        commit versions in the materialized columns (which lets a rewrite commit there). ``identity_runs`` are
        the identity values deltalog's data writer generated into the files (another writer's commit taking
        them first moves them: :mod:`deltalog.table.identity_rebase`); ``identity_preserved=True`` says rows
        copied into new files kept their identity values (which lets a rewrite commit on a table with identity
        columns).
        """
        declared = Declarations(
            copies_rows=copies_rows,
            cdc_covers_all=cdc_covers_all,
            row_ids_preserved=row_ids_preserved,
            rows_validated=validation(data_validated, "data_validated"),
            existing_rows_validated=validation(existing_data_validated, "existing_data_validated"),
            identity_runs=tuple(identity_runs),
            identity_preserved=identity_preserved,
        )
        commit = partial(self._commit, actions, operation, operation_parameters, user_metadata, operation_metrics)
        try:
            try:
                result = commit(kind, declared)
            except (MetadataChangedError, ProtocolChangedError):
                if self._latest is None:
                    raise
                read = self._read
                self._observe()
                if isinstance(read, Snapshot) and read.metadata.id != self.snapshot.metadata.id:
                    # another table now (deleted and created again): what was staged was made for the one read
                    self._done = True
                    raise
                log.info("a metadata or protocol change since the cached snapshot: committing on the latest")
                result = commit(kind, declared)
        except CommitStateUnknownError:
            raise  # it may have landed: the intent stays live for a retried commit; abort() removes it
        except CommitNotReachableError:
            # Nothing stayed written. A young transaction never listed: refreshing lets the log see what
            # happened (a table recreated under it) so that the next transaction starts from the log.
            self._observe()
            self._release_intent()
            raise
        except BaseException:
            self._release_intent()
            raise
        self._release_intent()
        return result

    def _commit(
        self,
        actions: Iterable[A.Action],
        operation: str,
        params: Mapping[str, Any] | None,
        meta: str | None,
        metrics: Mapping[str, str] | None,
        kind: str,
        declared: Declarations,
    ) -> CommitResult:
        """The stages, each on the value the last one made; what was read is ``self._read`` as it is (never
        :attr:`snapshot`, which refreshes a young transaction: a read it did not make)."""
        if self._done:
            raise InvalidArgumentError("this transaction has already committed or aborted")
        started = time.monotonic()
        if self.already_committed:
            self._done = True
            log.info("skipping commit: application %s already reached version %s", self.app_id, self.app_target)
            return skipped(self.txn_id, operation, self.read_version, self.isolation)
        staged = [*self._staged, *actions]
        if self.app_id is not None and self.app_target is not None:
            staged = with_app_version(staged, self.app_id, self.app_target, self._context.now_ms())
        ctx, read = self._context, self._read
        state = read_state(read)
        kind = kind_of(kind, staged, operation, state)
        request = CommitRequest(self.txn_id, operation, kind, declared, self.isolation, params, meta, metrics)
        prepared = prepare(ctx, state, staged, request, self._reads.read_set())
        attempts = Attempts(ctx, prepared)
        committer = Committer(ctx.store, self.retry, ctx.now_ms)
        try:
            landed = committer.commit(
                state.version, attempts, prepared.summary, self.txn_id, state.tip, young=self._young
            )
            acknowledged = committer.acknowledger.acknowledge(landed, self.txn_id)
        except NOT_LANDED:
            attempts.refused()
            raise
        attempts.landed()
        self._done = True
        result = CommitResult(
            version=acknowledged.version,
            attempts=acknowledged.attempts,
            winners=tuple(c.version for c in acknowledged.winners),
            txn_id=self.txn_id,
            operation=operation,
            actions=tuple(a for a in attempts.actions if not isinstance(a, A.CommitInfo)),
            read_version=state.version,
            isolation_level=prepared.isolation,
            elapsed_s=time.monotonic() - started,
            recovered_unknown_outcome=acknowledged.recovered,
            metrics=dict(prepared.commit_info.operation_metrics or {}),
        )
        if self._on_committed is not None:
            committed = Committed(read, tuple(acknowledged.commits()), result, acknowledged.sent_ms)
            try:
                self._on_committed(committed)
            except Exception:  # the commit has landed: a failing hand-off must not report it as failed
                log.exception("the post-commit hand-off failed after version %s", result.version)
        return result

    def abort(self) -> None:
        """Give the transaction up: nothing staged is committed, and its declared intent is released."""
        self._done = True
        self._release_intent()
        self._staged.clear()


def _table_isolation(configuration: Mapping[str, str]) -> str:
    """The table's ``delta.isolationLevel``. A value deltalog does not implement (another engine wrote it)
    commits as Serializable, the strictest level, so the table stays writable (and repairable by
    set_properties/unset_properties) without any commit being checked less than it asks."""
    value = configuration.get("delta.isolationLevel")
    if value is None:
        return SERIALIZABLE
    level = {lv.lower(): lv for lv in ISOLATION_LEVELS}.get(str(value).strip().lower())
    if level is None:
        log.warning(
            "table property delta.isolationLevel=%r is not an isolation level deltalog implements; committing "
            "as Serializable. Fix the table with set_properties({'delta.isolationLevel': 'Serializable'}) or "
            "unset_properties(['delta.isolationLevel'])",
            value,
        )
        return SERIALIZABLE
    return level


__all__ = ["CommitResult", "Committed", "RetryPolicy", "Transaction"]
