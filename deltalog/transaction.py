"""Optimistic transactions: record what was read, stage what to write, commit with conflict checks.

A transaction binds one snapshot for its whole life. What it reads through :meth:`Transaction.read`,
:meth:`~Transaction.read_files` and :meth:`~Transaction.app_version` becomes its read set, the thing other
writers' commits are checked against; reading directly from ``snapshot`` is not recorded, on purpose, for
callers that know a read does not matter to correctness.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog import intents as _intents
from deltalog._version import ENGINE_INFO
from deltalog.committer import Committer, RetryPolicy
from deltalog.core import actions as A
from deltalog.core import properties
from deltalog.core.codec import encode_actions
from deltalog.core.commit_rules import validate_actions, validate_new_metadata
from deltalog.core.conflicts import (
    ISOLATION_LEVELS,
    SERIALIZABLE,
    Intent,
    PartitionSchema,
    ReadPredicate,
    ReadSet,
    effective_isolation,
    is_blind_append,
)
from deltalog.core.feature_gate import CommitKind
from deltalog.core.features import (
    check_configuration_honoured,
    required_features,
    supported_features,
    upgrade_protocol,
)
from deltalog.core.partitions import PartitionValueError, conditions_from_where, typed_conditions
from deltalog.core.pathkeys import file_key
from deltalog.core.schema import top_level_fields
from deltalog.errors import CommitStateUnknownError, InvalidArgumentError, InvalidCommitError

if TYPE_CHECKING:
    from deltalog.log import DeltaLog
    from deltalog.snapshot import Snapshot

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CommitResult:
    """What a commit did. ``version`` is None only when an exactly-once commit was skipped."""

    version: int | None
    attempts: int
    winners: tuple[int, ...]
    txn_id: str
    operation: str
    actions: tuple[A.Action, ...]
    read_version: int
    isolation_level: str
    skipped: bool = False
    elapsed_s: float = 0.0
    recovered_unknown_outcome: bool = False


class Transaction:
    """One optimistic transaction against ``snapshot``; create it with :meth:`DeltaLog.start_transaction`."""

    def __init__(
        self,
        log: DeltaLog,
        snapshot: Snapshot,
        isolation: str | None = None,
        app_id: str | None = None,
        app_version: int | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self._log = log
        self._snapshot = snapshot
        if isolation is not None and isolation not in ISOLATION_LEVELS:
            raise InvalidArgumentError(f"isolation level {isolation!r} is not one of {ISOLATION_LEVELS}")
        self.isolation: str = isolation or _table_isolation(snapshot.configuration)
        self.retry = retry or RetryPolicy()
        self.txn_id = str(uuid.uuid4())
        self._predicates: list[ReadPredicate] = []
        self._read_files: set[str] = set()
        self._app_ids: set[str] = set()
        self._staged: list[A.Action] = []
        self._done = False
        self._declared: _intents.IntentHandle | None = None  # see declare_intent
        self._early_through = snapshot.version
        self.app_id = app_id
        self.app_target = app_version
        self.already_committed = False
        #: what the commit is to the writer-feature gate; a caller that applied rule modules declares them here
        self.kind = CommitKind()
        if app_id is not None:
            if app_version is None:
                raise InvalidArgumentError("app_version is required with app_id")
            current = self.app_version(app_id)
            self.already_committed = current is not None and current >= app_version

    # ------------------------------------------------------------------------------------------ reading
    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    @property
    def read_version(self) -> int:
        return self._snapshot.version

    def read(self, where: Mapping[str, Any] | None = None) -> pa.Table:
        """The live files matching ``where`` (all files without it), recorded as read.

        Both the predicate and the matched files enter the read set, as Delta Spark's ``filterFiles`` does:
        a concurrent append that matches the predicate, or a concurrent remove of a matched file, is a
        conflict. Conditions on non-partition columns cannot be judged from the log: as Spark's
        ``trackReadPredicates`` does, they are left out of the recorded predicate and the partition conditions
        kept (a read by data columns only is thus a read of every partition).
        """
        files = self._snapshot.files(where=where)  # validates columns and values
        self._predicates.append(self._predicate(where))
        self._read_files.update(self._key(p) for p in files.column("path").to_pylist())
        return files

    def read_files(self, paths: Iterable[str]) -> None:
        """Record files the new data depends on (paths as in the log)."""
        self._read_files.update(self._key(p) for p in paths)

    def app_version(self, app_id: str) -> int | None:
        """The committed version of ``app_id``, recorded so a concurrent commit of that app conflicts."""
        self._app_ids.add(app_id)
        return self._snapshot.app_version(app_id)

    def _key(self, path: str) -> str:
        return file_key(path, None, self._log.store.root)

    def _partition_schema(self) -> PartitionSchema:
        snap = self._snapshot
        cols = {f["name"]: f["type"] for f in top_level_fields(snap.schema_json)}
        return PartitionSchema(
            types={c: cols[c] for c in snap.partition_columns if c in cols},
            physical={c: snap.physical_names.get(c, c) for c in snap.partition_columns},
        )

    def _predicate(self, where: Mapping[str, Any] | None) -> ReadPredicate:
        if not where:
            return ReadPredicate()
        schema = self._partition_schema()
        conds = [c for c in conditions_from_where(where) if c.column in schema.types]
        try:
            return ReadPredicate(tuple(typed_conditions(conds, schema.types)))
        except PartitionValueError as exc:
            raise InvalidArgumentError(str(exc)) from None

    # ------------------------------------------------------------------------------------------ intents
    def declare_intent(
        self,
        where: Mapping[str, Any] | None = None,
        files: Iterable[str] | None = None,
        *,
        heartbeat_s: float = 10.0,
        timeout_s: float = 60.0,
        is_compaction: bool = False,
        operation: str = "WRITE",
    ) -> _intents.IntentHandle:
        """Record the read of ``where`` (and ``files``) as :meth:`read` does and publish it as a live intent
        until commit or abort, so declared writers can stop early; it binds no commit (:mod:`deltalog.core.intents`)."""
        if self._done or self._declared is not None:
            raise InvalidArgumentError("an intent is declared once, before commit or abort")
        self.read(where)
        if files is not None:
            self.read_files(files)
        files_read, now = sorted(self._read_files), self._log.now_ms()
        what = {"operation": operation, "is_compaction": is_compaction, "heartbeat_s": heartbeat_s}
        self._declared = _intents.declare(
            self._log.store, self.txn_id, self.read_version, self._predicates, files_read, now, timeout_s, **what
        )
        return self._declared

    def check_early(self) -> None:
        """Raise now the typed conflict error the commit would raise (cheap; call it between work units): a
        commit since the read conflicts, or another writer's live intent overlaps ours with priority."""
        staged = list(self._staged)
        operation = self._declared.record.operation if self._declared is not None else None
        # Nothing staged yet is not an empty commit (its writes are still to come): no downgrade for that.
        isolation = effective_isolation(self.isolation, staged, operation) if staged else self.isolation
        intent = self._intent(staged, isolation)
        types = self._partition_schema().types
        self._early_through = _intents.check_early(
            self._log.store, intent, self._early_through, self._check_winner_protocol, self._declared, types
        )

    def _release_intent(self) -> None:
        if self._declared is not None:
            self._declared.remove()

    # ------------------------------------------------------------------------------------------ staging
    def add(self, *adds: A.Add) -> None:
        self._staged.extend(adds)

    def stage(self, actions: Iterable[A.Action]) -> None:
        """Add actions to this transaction; several staged operations commit as one version."""
        self._staged.extend(actions)

    def remove_where(self, where: Mapping[str, Any] | None = None, data_change: bool = True) -> list[A.Remove]:
        """Stage removes of the live files matching ``where`` (all without it), and record the read.

        A delete reads what it deletes: a concurrent append into the same partitions is a conflict. Only
        partition columns are allowed: the log cannot tell which rows of a file match a data column, and
        removing whole files on such a condition would delete rows that do not match.
        """
        partition = set(self._snapshot.partition_columns)
        data_columns = sorted(k for k in (where or {}) if k not in partition)
        if data_columns:
            raise InvalidArgumentError(
                f"remove_where can only select by partition columns {sorted(partition)}, not {data_columns}: "
                "the log knows files, not rows"
            )
        self.read(where)
        now = self._log.now_ms()
        removes = [a.remove(now, data_change) for a in self._snapshot.add_actions(where)]
        self._staged.extend(removes)
        return removes

    def remove_files(self, paths: Iterable[str], data_change: bool = True) -> list[A.Remove]:
        """Stage removes of specific live files (paths as in the log); they are recorded as read."""
        wanted = {self._key(p) for p in paths}
        now = self._log.now_ms()
        removes = [a.remove(now, data_change) for a in self._snapshot.add_actions() if self._key(a.path) in wanted]
        found = {self._key(r.path) for r in removes}
        missing = wanted - found
        if missing:
            raise InvalidArgumentError(f"not live at version {self.read_version}: {sorted(missing)[:5]}")
        self._read_files.update(found)
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
        names (RESTORE's, for one).
        """
        try:
            result = self._commit(actions, operation, operation_parameters, user_metadata, operation_metrics)
        except CommitStateUnknownError:
            raise  # it may have landed: the intent stays live for a retried commit; abort() removes it
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
            return CommitResult(
                version=None,
                attempts=0,
                winners=(),
                txn_id=self.txn_id,
                operation=operation,
                actions=(),
                read_version=self.read_version,
                isolation_level=self.isolation,
                skipped=True,
            )
        if self.app_id is not None and self.app_target is not None:
            all_actions = [a for a in all_actions if not (isinstance(a, A.Txn) and a.app_id == self.app_id)]
            all_actions.append(A.Txn(self.app_id, self.app_target, self._log.now_ms()))
        prepared = self._prepare(all_actions)
        isolation = effective_isolation(self.isolation, prepared, operation)
        intent = self._intent(prepared, isolation)
        commit_info = self._commit_info(prepared, operation, params, isolation, intent, meta, metrics)
        data = encode_actions([commit_info, *prepared])
        committer = Committer(self._log.store, self.retry, self._check_winner_protocol)
        outcome = committer.commit(self.read_version, data, intent, self.txn_id, self._snapshot.tip)
        self._done = True
        result = CommitResult(
            version=outcome.version,
            attempts=outcome.attempts,
            winners=tuple(outcome.winners),
            txn_id=self.txn_id,
            operation=operation,
            actions=tuple(prepared),
            read_version=self.read_version,
            isolation_level=isolation,
            elapsed_s=time.monotonic() - started,
            recovered_unknown_outcome=outcome.ours_found_after_unknown,
        )
        self._log._committed(self._snapshot, outcome, data, result)
        return result

    def abort(self) -> None:
        self._done = True
        self._release_intent()
        self._staged.clear()

    def _prepare(self, actions: Sequence[A.Action]) -> list[A.Action]:
        snap = self._snapshot
        metas = [a for a in actions if isinstance(a, A.Metadata)]
        protocols = [a for a in actions if isinstance(a, A.Protocol)]
        metadata = metas[-1] if metas else snap.metadata
        protocol = protocols[-1] if protocols else snap.protocol
        source = f"{self._log.location}/_delta_log (version {snap.version})"
        schema = snap.schema_json
        if metas:
            # The rules for what this metadata changes (the table's own fields and values are not
            # re-checked), and the features it needs, added to the protocol in this same commit.
            schema = validate_new_metadata(metadata, snap.metadata)
            changed = {k: v for k, v in metadata.configuration.items() if snap.configuration.get(k) != v}
            check_configuration_honoured(changed, schema, source, previous_schema=snap.schema_json)
            upgraded = upgrade_protocol(protocol, required_features(metadata.configuration, schema))
            if upgraded != protocol and len(protocols) <= 1:
                actions = [*(a for a in actions if not isinstance(a, A.Protocol)), upgraded]
                protocols, protocol = [upgraded], upgraded
        mode = properties.column_mapping_mode(metadata.configuration)
        validate_actions(actions, metadata, mode, previous=snap.metadata if metas else None)
        if protocols:
            self._check_protocol_change(snap.protocol, protocol)
        self.kind.check(protocol, metadata.configuration, schema, source)
        return list(actions)

    @staticmethod
    def _check_protocol_change(old: A.Protocol, new: A.Protocol) -> None:
        if new.min_reader_version < old.min_reader_version or new.min_writer_version < old.min_writer_version:
            raise InvalidCommitError("a protocol may not be downgraded by a commit", rule="no-protocol-downgrade")
        # Legacy versions count with the features they imply: (1,2) -> (1,7) must still list appendOnly and
        # invariants, or the upgrade silently drops them.
        dropped = supported_features(old) - supported_features(new)
        if dropped:
            raise InvalidCommitError(
                f"a commit may not drop table features {sorted(dropped)} (a protocol listing features must keep "
                "those its legacy versions implied)",
                rule="no-feature-drop",
            )

    def _check_winner_protocol(self, protocol: A.Protocol) -> None:
        snap = self._snapshot
        self.kind.check(protocol, snap.configuration, snap.schema_json, f"{self._log.location}/_delta_log")

    def _intent(self, actions: Sequence[A.Action], isolation: str) -> Intent:
        read_set = ReadSet(tuple(self._predicates), frozenset(self._read_files), frozenset(self._app_ids))
        return Intent(
            read_set=read_set,
            isolation=isolation,
            partition_schema=self._partition_schema(),
            root=self._log.store.root,
            changes_metadata=any(isinstance(a, A.Metadata) for a in actions),
            changes_protocol=any(isinstance(a, A.Protocol) for a in actions),
            removed=frozenset(self._key(a.path) for a in actions if isinstance(a, A.Remove)),
            domains=frozenset(a.domain for a in actions if isinstance(a, A.DomainMetadata)),
            is_blind_append=is_blind_append(actions, read_set),
            txn_id=self.txn_id,
            read_protocol=self._snapshot.protocol,
        )

    def _commit_info(
        self,
        actions: Sequence[A.Action],
        operation: str,
        parameters: Mapping[str, Any] | None,
        isolation: str,
        intent: Intent,
        user_metadata: str | None,
        given_metrics: Mapping[str, str] | None = None,
    ) -> A.CommitInfo:
        adds = [a for a in actions if isinstance(a, A.Add)]
        removes = [a for a in actions if isinstance(a, A.Remove)]
        metrics = (
            dict(given_metrics)
            if given_metrics is not None
            else {
                "numAddedFiles": str(len(adds)),
                "numRemovedFiles": str(len(removes)),
                "numAddedBytes": str(sum(a.size for a in adds)),
                "numRemovedBytes": str(sum(r.size or 0 for r in removes)),
            }
        )
        return A.CommitInfo(
            timestamp=self._log.now_ms(),
            operation=operation,
            operation_parameters=dict(parameters or {}),
            read_version=self.read_version if self.read_version >= 0 else None,
            isolation_level=isolation,
            is_blind_append=intent.is_blind_append,
            operation_metrics=metrics,
            engine_info=ENGINE_INFO,
            txn_id=self.txn_id,
            user_metadata=user_metadata,
        )


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


__all__ = ["CommitResult", "RetryPolicy", "Transaction"]
