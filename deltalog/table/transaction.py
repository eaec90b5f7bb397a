"""Optimistic transactions: record what was read, stage what to write, commit with conflict checks.

A transaction binds one snapshot for its whole life. What it reads through :meth:`Transaction.read`,
:meth:`~Transaction.read_files` and :meth:`~Transaction.app_version` becomes its read set, the thing other
writers' commits are checked against; reading directly from ``snapshot`` is not recorded, on purpose, for
callers that know a read does not matter to correctness.

Every version goes through here and the commit loop (:mod:`deltalog.table.commit_loop`): data writes,
metadata changes, restores, and creating the table (a transaction with no snapshot, read version -1). So
the rules every commit must meet live in one place. What happens after a commit (advancing a cached
snapshot, hooks, automatic checkpoints) is the caller's: it hands an ``on_committed`` callback.

This module is the transaction as its callers see it: what it reads (kept by :mod:`deltalog.table.read_set`)
and what it stages. Turning staged actions into a commit (every rule and feature duty, the commitInfo, the
attempts the commit loop sends) is :mod:`deltalog.table.prepare`.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from deltalog.core import actions as A
from deltalog.core.conflicts import ISOLATION_LEVELS, SERIALIZABLE, TxnSummary, effective_isolation
from deltalog.core.feature_duties import NOTHING_DECLARED, Declarations, validation
from deltalog.core.feature_gate import WRITE, check_operation
from deltalog.core.identity import Run
from deltalog.errors import (
    CommitNotReachableError,
    CommitStateUnknownError,
    InvalidArgumentError,
    MetadataChangedError,
    ProtocolChangedError,
)
from deltalog.table import declared_intents
from deltalog.table.commit_loop import CommitResult, Committed, Committer, RetryPolicy, Young
from deltalog.table.context import TableContext
from deltalog.table.new_table import NewTable
from deltalog.table.prepare import CommitRequest, gate_operation, run_commit, skipped, with_app_version
from deltalog.table.read_set import ReadRecord, partition_schema
from deltalog.table.snapshot import Snapshot

log = logging.getLogger(__name__)


class Transaction:
    """One optimistic transaction against ``snapshot``; create it with :meth:`DeltaLog.start_transaction`.

    ``snapshot`` ``None`` creates the table (read version -1). ``on_committed`` is called once after a
    commit lands; an error in it is logged, never raised (a commit that landed is never reported as failed).
    """

    def __init__(
        self,
        context: TableContext,
        snapshot: Snapshot | None,
        isolation: str | None = None,
        app_id: str | None = None,
        app_version: int | None = None,
        retry: RetryPolicy | None = None,
        *,
        on_committed: Callable[[Committed], None] | None = None,
        young: Young | None = None,
        refresh: Callable[[], tuple[Snapshot, Young | None]] | None = None,
        new_table: NewTable | None = None,
    ) -> None:
        """``new_table`` (with ``snapshot`` None) is the table this transaction creates: its protocol and
        metadata are staged, so whatever else is committed (the first data files) lands in the same version 0.

        ``young`` lets the commit skip listings while it holds (:class:`~deltalog.table.commit_loop.Young`):
        the caller vouches that ``snapshot`` descends from a commit it sent at ``young.anchor_ms``.

        With ``refresh``, ``snapshot`` is the caller's cached one, taken without a listing: the first read
        (:meth:`read`, :attr:`snapshot`, removes, app versions, intents) replaces it by ``refresh()``'s, so
        what the transaction reads is as current as a listing makes it. A transaction that reads nothing (a
        blind append) commits on the cached snapshot: the commit loop checks whatever came since, and a
        metadata or protocol change there makes it start again once on the refreshed snapshot (having read
        nothing, it is the transaction it would have been had it started after that change).
        """
        self._context = context
        self._snapshot = snapshot
        self._on_committed = on_committed
        self._young = young
        self._refresh = refresh
        if new_table is not None and snapshot is not None:
            raise InvalidArgumentError("a transaction that creates the table reads no snapshot")
        self._new_table = new_table
        #: the gate operation of the commit being made (a winner's protocol is checked for it); WRITE before
        self._gate_op = WRITE
        if isolation is not None and isolation not in ISOLATION_LEVELS:
            raise InvalidArgumentError(f"isolation level {isolation!r} is not one of {ISOLATION_LEVELS}")
        table = snapshot if snapshot is not None else new_table
        conf = table.configuration if table is not None else {}
        self.isolation: str = isolation or _table_isolation(conf)
        self.retry = retry or RetryPolicy()
        self.txn_id = str(uuid.uuid4())
        self._reads = ReadRecord(context.store.root)
        self._staged: list[A.Action] = list(new_table.actions) if new_table is not None else []
        self._done = False
        self._gate = WRITE  # the feature-gate operation a caller named (commit(gate=...)); WRITE: from the actions
        self._declared: declared_intents.IntentHandle | None = None  # see declare_intent
        self._declarations = NOTHING_DECLARED  # what commit() was told of the rows
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
        refresh, self._refresh = self._refresh, None
        if refresh is not None and not self._done:
            self._snapshot, self._young = refresh()
            self._early_through = self.read_version

    @property
    def snapshot(self) -> Snapshot:
        """The snapshot this transaction reads; a transaction that creates the table has none."""
        self._observe()
        if self._snapshot is None:
            raise InvalidArgumentError("this transaction creates the table: there is no snapshot to read")
        return self._snapshot

    @property
    def new_table(self) -> NewTable | None:
        """The table this transaction creates (its version 0 as it will be committed), or None."""
        return self._new_table

    @property
    def read_version(self) -> int:
        """The version read: -1 for the transaction that creates the table."""
        return self._snapshot.version if self._snapshot is not None else -1

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
        chosen = (
            None if where is None or (isinstance(where, Mapping) and not where) else self.snapshot.row_filter(where)
        )
        files = self.snapshot.files(where=chosen)  # validates columns and values
        self._reads.add_predicate(chosen.conditions() if chosen is not None else None, self._snapshot)
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
        return self._snapshot.app_version(app_id) if self._snapshot is not None else None

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
        (:mod:`deltalog.core.declared_intents`)."""
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
        summary = self._summary(staged, isolation)
        types = partition_schema(self._snapshot).types
        self._early_through = declared_intents.check_early(
            self._context.store, summary, self._early_through, self._check_winner_protocol, self._declared, types
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
        chosen = None if where is None or (isinstance(where, Mapping) and not where) else snap.row_filter(where)
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
        gate: str = WRITE,
        data_validated: bool | str = False,
        existing_data_validated: bool | str = False,
        copies_rows: bool | None = None,
        cdc_covers_all: bool = False,
        row_ids_preserved: bool = False,
        identity_runs: Sequence[Run] = (),
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
        names (RESTORE's, for one). ``gate`` is the writer-feature gate's operation the commit is
        (:data:`deltalog.core.feature_gate.RESTORE` for a restore): its duties are checked, not every commit's.

        What only the writer knows (:class:`~deltalog.core.feature_duties.Declarations`): ``data_validated``
        True when the new rows satisfy the table's CHECK constraints, invariants and generated columns (a table
        with any refuses new rows without it; ``"checked"`` is for deltalog's data writer, which evaluated
        them), ``existing_data_validated`` the same for the rows already there when the commit adds such a
        rule; both are recorded in ``commitInfo``. On a change-data-feed table, ``copies_rows=False`` says
        files added next to removed ones hold no rows copied from them (a partition overwrite), and
        ``cdc_covers_all=True`` that the commit's ``cdc`` files hold every change it makes. On a table with row
        tracking enabled, ``row_ids_preserved=True`` says rows copied into new files carry their row ids and
        commit versions in the materialized columns (which lets a rewrite commit there).
        ``identity_runs`` are
        the identity values deltalog's data writer generated into the files (another writer's commit taking
        them first moves them: :mod:`deltalog.table.identity_rebase`).
        """
        self._gate = gate
        self._declarations = Declarations(
            copies_rows=copies_rows,
            cdc_covers_all=cdc_covers_all,
            row_ids_preserved=row_ids_preserved,
            rows_validated=validation(data_validated, "data_validated"),
            existing_rows_validated=validation(existing_data_validated, "existing_data_validated"),
            identity_runs=tuple(identity_runs),
        )
        try:
            try:
                result = self._commit(actions, operation, operation_parameters, user_metadata, operation_metrics)
            except (MetadataChangedError, ProtocolChangedError):
                if self._refresh is None:
                    raise
                read = self._snapshot
                self._observe()
                if read is not None and self._snapshot is not None and read.metadata.id != self._snapshot.metadata.id:
                    # another table now (deleted and created again): what was staged was made for the one read
                    self._done = True
                    raise
                log.info("a metadata or protocol change since the cached snapshot: committing on the latest")
                result = self._commit(actions, operation, operation_parameters, user_metadata, operation_metrics)
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
        metrics: Mapping[str, str] | None = None,
    ) -> CommitResult:
        if self._done:
            raise InvalidArgumentError("this transaction has already committed or aborted")
        all_actions = [*self._staged, *actions]
        started = time.monotonic()
        if self.already_committed:
            self._done = True
            log.info("skipping commit: application %s already reached version %s", self.app_id, self.app_target)
            return skipped(self.txn_id, operation, self.read_version, self.isolation)
        if self.app_id is not None and self.app_target is not None:
            all_actions = with_app_version(all_actions, self.app_id, self.app_target, self._context.now_ms())
        self._gate_op = gate_operation(self._gate, all_actions, operation, self._snapshot)
        request = CommitRequest(
            self.txn_id, operation, self._gate_op, self._declarations, self.isolation, params, meta, metrics
        )
        ctx = self._context
        committer = Committer(ctx.store, self.retry, self._check_winner_protocol, ctx.now_ms)
        # the snapshot as read, never :attr:`snapshot` (that refreshes a young transaction: a read it did not make)
        result, outcome = run_commit(
            ctx,
            self._snapshot,
            all_actions,
            request,
            summarize=self._summary,
            committer=committer,
            young=self._young,
            started=started,
        )
        self._done = True
        if self._on_committed is not None:
            try:
                self._on_committed(Committed(self._snapshot, tuple(outcome.commits()), result, outcome.sent_ms))
            except Exception:  # the commit has landed: a failing callback must not report it as failed
                log.exception("the post-commit callback failed after version %s", result.version)
        return result

    def abort(self) -> None:
        """Give the transaction up: nothing staged is committed, and its declared intent is released."""
        self._done = True
        self._release_intent()
        self._staged.clear()

    def _check_winner_protocol(self, protocol: A.Protocol) -> None:
        snap = self._snapshot  # not :attr:`snapshot`: a check inside the commit never refreshes what it read
        if snap is None:
            raise InvalidArgumentError("this transaction creates the table: there is no snapshot to check against")
        where = f"{self._context.location}/_delta_log"
        check_operation(
            self._gate_op,
            protocol,
            snap.configuration,
            snap.schema_json,
            where,
            implemented=self._declarations.implemented,
        )

    def _summary(self, actions: Sequence[A.Action], isolation: str) -> TxnSummary:
        return self._reads.summary(actions, isolation, self._snapshot, self.txn_id)


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
