"""``DeltaLog``: the facade over one table.

It opens the store, keeps the latest snapshot (:class:`~deltalog.table.latest.Latest`), starts the transactions
every write runs on (DDL, delete and restore take the one it starts), holds the post-commit hooks and owns the
post-commit policy (advance the cache, run the hooks, checkpoint at ``delta.checkpointInterval``, compact the
log), which every transaction it starts is handed as its ``on_committed``. Everything else is one call into
:mod:`deltalog.table` (listing, loading, history, transactions, DDL), :mod:`deltalog.dml` or
:mod:`deltalog.maintenance`, with the table's :class:`~deltalog.table.context.TableContext`; nothing below this
module knows a ``DeltaLog``.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deltalog.checkpoint import hint
from deltalog.core.log import last_checkpoint as hints
from deltalog.core.log.paths import LogPath
from deltalog.core.log.reachability import holds
from deltalog.core.log.segment import LogSegment
from deltalog.errors import InvalidArgumentError
from deltalog.storage.base import LogStore
from deltalog.storage.uri import store_for
from deltalog.table import listing, load
from deltalog.table import snapshot as snapshots
from deltalog.table.context import TableContext
from deltalog.table.latest import Latest
from deltalog.table.snapshot import Snapshot

if TYPE_CHECKING:
    import pyarrow as pa

    from deltalog.checkpoint.writer import CheckpointResult, Progress
    from deltalog.core.plans.cleanup import Retention
    from deltalog.dml.merge.builder import MergeBuilder
    from deltalog.dml.optimize import OptimizeResult
    from deltalog.maintenance.cleanup import CleanupResult
    from deltalog.maintenance.log_compaction import LogCompactionResult
    from deltalog.maintenance.restore import RestoreResult
    from deltalog.maintenance.vacuum import VacuumProgress, VacuumResult
    from deltalog.table.commit import CommitResult, Committed, NewTable, RetryPolicy, Transaction
    from deltalog.table.history import HistoryEntry
    from deltalog.table.schema_change import SchemaChange

log = logging.getLogger(__name__)

Timestamp = Any  # str (ISO-8601), datetime, date, or epoch milliseconds
#: what a time after the latest commit means to :meth:`DeltaLog.snapshot`: an error (Delta Spark) or the latest
AFTER_LATEST = ("error", "latest")


class DeltaLog:
    """Entry point for one Delta table."""

    def __init__(
        self,
        store: LogStore,
        location: str,
        clock: Callable[[], float] = time.time,
        auto_checkpoint: bool = True,
        log_compaction_interval: int = 0,
    ) -> None:
        #: the table's store, location and clock, as everything below the facade takes them
        self.context = TableContext(store, location, clock)
        #: the store as the table layer uses it: what it raises is deltalog's errors (:mod:`deltalog.storage.typed`)
        self.store = self.context.store
        self.location = location
        #: checkpoint after commits at multiples of delta.checkpointInterval; off leaves it to the compaction job
        self.auto_checkpoint = auto_checkpoint
        #: opt-in: after the commit of v with (v + 1) % N == 0, write the compaction file of the last N commits
        self.log_compaction_interval = log_compaction_interval
        #: the latest snapshot as this log keeps it, and the anchor of its one-request commits
        self._table = Latest(self.context)
        self._hooks: list[Callable[[CommitResult], None]] = []

    @classmethod
    def for_table(
        cls,
        location: str | os.PathLike[str],
        storage_options: dict[str, Any] | None = None,
        *,
        clock: Callable[[], float] = time.time,
        auto_checkpoint: bool = True,
        log_compaction_interval: int = 0,
    ) -> DeltaLog:
        """Open the table at a path or URI (``file://``, ``memory://``, and the cloud schemes when installed).

        ``log_compaction_interval`` N >= 2 writes a log compaction file of the last N commits after every
        N-th commit made through this log (off by default: Delta Spark reads them, other engines ignore them).
        """
        store = store_for(location, storage_options)
        return cls(
            store,
            store.root,
            clock=clock,
            auto_checkpoint=auto_checkpoint,
            log_compaction_interval=log_compaction_interval,
        )

    def now_ms(self) -> int:
        """This log's clock in epoch milliseconds: what retention, intents and tombstones are judged by
        (a ``clock`` given to :meth:`for_table` replaces the system's, for tests and replays)."""
        return self.context.now_ms()

    # ------------------------------------------------------------------------------------------ listing
    def list_log(self, from_version: int = 0, to_version: int | None = None) -> list[LogPath]:
        """Parsed log files with ``from_version <= version <= to_version`` (open-ended when None), sorted;
        unknown names are skipped."""
        return listing.list_log(self.store, from_version, to_version)

    def read_hint(self) -> hints.LastCheckpoint | None:
        """``_last_checkpoint`` if present and sound; a warning and ``None`` otherwise."""
        return hint.read_hint(self.store, self.location)

    def segment(self, version: int | None = None) -> LogSegment:
        """The checkpoint and commit files that rebuild ``version`` (default: the latest), without replaying
        them: what a reader would load, for tools that inspect or copy a log."""
        return listing.segment(self.context, version)

    def latest_version(self) -> int:
        """The newest version in the log (one listing, no replay); :class:`TableNotFoundError` if none."""
        return listing.latest_version(self.context)

    def earliest_version(self) -> int:
        """The oldest reconstructable version: 0 when ``0.json`` is there (one short listing), else a full one."""
        return listing.earliest_version(self.context)

    # ------------------------------------------------------------------------------------------ snapshots
    def snapshot(
        self, version: int | None = None, timestamp: Timestamp | None = None, *, after_latest: str = "error"
    ) -> Snapshot:
        """The table at ``version``, at the latest commit at or before ``timestamp``, or at the latest version.

        ``timestamp`` is ISO-8601 text (``"2026-11-01T10:00:00Z"``; no zone means UTC), a ``datetime`` or
        ``date``, or epoch milliseconds. A time after the latest commit is a
        :class:`~deltalog.errors.VersionNotFoundError` naming that commit's time, as in Delta Spark (a clock or
        zone mistake more often than a wish), unless ``after_latest="latest"``, which gives the latest version
        as deltalake's ``load_as_version`` does. The latest snapshot is cached: asking again replays only the
        commits that arrived since.
        """
        if version is not None and timestamp is not None:
            raise InvalidArgumentError("pass version or timestamp, not both")
        if after_latest not in AFTER_LATEST:
            raise InvalidArgumentError(f"after_latest must be one of {AFTER_LATEST}, not {after_latest!r}")
        if timestamp is not None:
            from deltalog.table import history

            allow = after_latest == "latest"
            found, paths = history.version_and_listing(self.context, self.snapshot, timestamp, allow)
            return load.snapshot_in(self.context, found, paths)
        if version is None:
            return self._refresh()
        cached = self._table.cached
        if (
            cached is not None
            and cached.version == version
            and holds(snapshots.tip(cached), self.list_log(version, version))
        ):
            return cached
        return load.snapshot_at(self.context, version)

    def load_as_version(self, version: int | Timestamp) -> Snapshot:
        """deltalake's ``load_as_version``: an ``int`` is a version; ISO-8601 text, a ``datetime`` or a ``date``
        is a time, and a time after the latest commit gives the latest version (``snapshot(timestamp=t,
        after_latest="latest")``)."""
        if isinstance(version, int) and not isinstance(version, bool):
            return self.snapshot(version=version)
        if not isinstance(version, (str, dt.date)):
            raise InvalidArgumentError(f"load_as_version takes a version (int) or a time, not {version!r}")
        return self.snapshot(timestamp=version, after_latest="latest")

    def fresh_snapshot(self, version: int | None = None) -> Snapshot:
        """The table at ``version`` (the latest by default) loaded from the log as it is now, never from the
        cached snapshot, and not cached either."""
        return load.snapshot_at(self.context, version)

    def _refresh(self, lazy: bool = False) -> Snapshot:
        """The latest snapshot, kept (:meth:`deltalog.table.latest.Latest.refresh`); ``lazy`` defers its files."""
        return self._table.refresh(lazy)

    # ------------------------------------------------------------------------------------------ writing
    def create(
        self,
        schema: Any,
        partition_columns: Sequence[str] | None = (),
        configuration: Mapping[str, str] | None = None,
        name: str | None = None,
        description: str | None = None,
        retry: RetryPolicy | None = None,
        *,
        allow_unknown_properties: bool = False,
        clustering_columns: Sequence[str] | None = None,
        generated: Mapping[str, str] | None = None,
        defaults: Mapping[str, str] | None = None,
        identity: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> CommitResult:
        """Create the table (version 0: protocol + metaData); :class:`TableAlreadyExistsError` if it exists.

        ``schema`` is a ``pyarrow.Schema`` or a Delta schema string. The schema, partitioning and
        ``configuration`` are checked as Delta Spark checks them (:class:`SchemaError`, :class:`PropertyError`
        name the field or key) before anything is written; ``allow_unknown_properties`` stores ``delta.*``
        keys deltalog does not know (other engines'). The protocol lists the features the schema and
        properties need; ``clustering_columns`` makes a clustered table (liquid clustering's metadata).
        ``generated`` (``{"day": "CAST(ts AS DATE)"}``) and ``defaults`` (``{"status": "'new'"}``) map columns to
        Spark SQL: generation expressions and column defaults (or give them as Delta field metadata on the
        schema), checked now by name (deterministic, reading no generated column, binding on the schema).
        ``identity`` (``{"id": {"start": 1, "step": 1, "allowExplicitInsert": False}}``) makes BIGINT identity
        columns, whose values :func:`deltalog.write` generates (refused by name, as Delta Spark refuses them: a
        type other than BIGINT, step 0, a generated or partition column).
        To create a table with its first files in the same version, use :meth:`start_create`.
        """
        from deltalog.table import ddl

        txn = self.start_create(
            schema,
            partition_columns,
            configuration,
            name,
            description,
            retry,
            allow_unknown_properties=allow_unknown_properties,
            clustering_columns=clustering_columns,
            generated=generated,
            defaults=defaults,
            identity=identity,
        )
        return ddl.commit_create(txn)

    def start_create(
        self,
        schema: Any,
        partition_columns: Sequence[str] | None = (),
        configuration: Mapping[str, str] | None = None,
        name: str | None = None,
        description: str | None = None,
        retry: RetryPolicy | None = None,
        *,
        app_id: str | None = None,
        app_version: int | None = None,
        allow_unknown_properties: bool = False,
        clustering_columns: Sequence[str] | None = None,
        generated: Mapping[str, str] | None = None,
        defaults: Mapping[str, str] | None = None,
        identity: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Transaction:
        """A transaction that creates the table: its commit is version 0, holding the table's protocol and
        metadata (checked now, as :meth:`create` checks them) and whatever the caller commits with them,
        typically the first data files, as Delta Spark and deltalake create a table with data. Until it
        commits there is no table, so a failed first write leaves none behind.

        ``txn.new_table`` is the table as it will be (schema with physical names, partitioning, features),
        for writing the files. Another writer creating the table first makes the commit raise
        :class:`TableAlreadyExistsError` (nothing written).
        """
        from deltalog.table import ddl
        from deltalog.table.commit import Transaction

        table = ddl.plan_table(
            self.context,
            schema,
            partition_columns,
            configuration,
            name,
            description,
            allow_unknown_properties=allow_unknown_properties,
            clustering_columns=clustering_columns,
            generated=generated,
            defaults=defaults,
            identity=identity,
        )
        return Transaction(
            self.context,
            table,
            app_id=app_id,
            app_version=app_version,
            retry=retry,
            on_committed=self._committed,
        )

    def start_planned_create(
        self,
        table: NewTable,
        *,
        app_id: str | None = None,
        app_version: int | None = None,
        retry: RetryPolicy | None = None,
    ) -> Transaction:
        """The transaction that creates ``table``, a create planned by :meth:`start_create` (``txn.new_table``) in
        another process: an engine plans the table and writes its files on one machine and commits on another
        (Spark's driver and its Python workers). It commits exactly the planned protocol and metadata (the
        physical names its files were written with); :meth:`start_create`'s rules apply."""
        from deltalog.table.commit import Transaction

        if table.location != self.location:
            raise InvalidArgumentError(f"the planned table is at {table.location}, not {self.location}")
        return Transaction(
            self.context,
            table,
            app_id=app_id,
            app_version=app_version,
            retry=retry,
            on_committed=self._committed,
        )

    def start_transaction(
        self,
        isolation: str | None = None,
        *,
        app_id: str | None = None,
        app_version: int | None = None,
        retry: RetryPolicy | None = None,
        version: int | None = None,
    ) -> Transaction:
        """A transaction on the latest snapshot; with ``app_id``/``app_version`` it commits exactly once.

        ``version`` makes it read that version instead, for an engine that planned its work on one snapshot and
        commits from another process (Spark's driver plans, a Python worker commits): every commit since is
        checked against what the transaction reads, as if it had been started when the work was planned.
        """
        from deltalog.table.commit import Transaction

        if version is not None:
            snap = self.snapshot(version=version)
            return Transaction(
                self.context,
                snap,
                isolation,
                app_id=app_id,
                app_version=app_version,
                retry=retry,
                on_committed=self._committed,
            )

        # A blind append needs protocol, metadata and txns, not the file list: the transaction's snapshot
        # loads its files only if the transaction reads them. While our last commit is young the cached
        # snapshot is taken as it is (no listing), and refreshed only if the transaction reads.
        cached = self._table.cached
        young = self._table.young(cached)
        if cached is None or young is None or app_id is not None:
            cached = self._refresh(lazy=True)
            young = self._table.young(cached)
            return Transaction(
                self.context,
                cached,
                isolation,
                app_id=app_id,
                app_version=app_version,
                retry=retry,
                on_committed=self._committed,
                young=young,
            )
        return Transaction(
            self.context,
            cached,
            isolation,
            retry=retry,
            on_committed=self._committed,
            young=young,
            latest=self._table,
        )

    def add_columns(self, fields: Any) -> CommitResult:
        """Commit new nullable columns (``pyarrow.Field`` s or Delta field dicts) at the end of the schema,
        as Spark's ``mergeSchema`` does; existing files read them as null."""
        from deltalog.table import ddl

        return ddl.add_columns(self.start_transaction(), fields)

    def rename_column(
        self, column: str, new_name: str, *, enable_column_mapping: bool = False, dry_run: bool = False
    ) -> SchemaChange:
        """``ALTER TABLE RENAME COLUMN`` (``"a.b"`` for a nested field) through column mapping: no file is
        rewritten. A table without column mapping is refused unless ``enable_column_mapping`` turns on name
        mode in the same commit (a protocol upgrade). ``dry_run`` returns the plan (old and new protocol, the
        peers that would no longer write the table) and commits nothing. See :mod:`deltalog.table.schema_change`."""
        from deltalog.table import schema_change

        return schema_change.rename_column(
            self.start_transaction(), column, new_name, enable_column_mapping=enable_column_mapping, dry_run=dry_run
        )

    def drop_columns(
        self, columns: Sequence[str], *, enable_column_mapping: bool = False, dry_run: bool = False
    ) -> SchemaChange:
        """``ALTER TABLE DROP COLUMNS`` through column mapping, as :meth:`rename_column` (the same
        ``enable_column_mapping`` and ``dry_run``); partition and clustering columns, the last column and
        columns a constraint or generated column reads are refused by name."""
        from deltalog.table import schema_change

        return schema_change.drop_columns(
            self.start_transaction(), columns, enable_column_mapping=enable_column_mapping, dry_run=dry_run
        )

    def change_column_type(
        self, column: str, new_type: Any, *, enable_type_widening: bool = False, dry_run: bool = False
    ) -> SchemaChange:
        """Widen ``column``'s type (``"long"``, ``"double"``, ``"decimal(12,2)"``, ``"timestamp_ntz"`` or a pyarrow
        type) by exactly the changes PROTOCOL.md's type widening allows (``long -> double`` is not one), recorded
        in ``delta.typeChanges``; no file is rewritten, older ones are cast when read. The table must allow it
        (``delta.enableTypeWidening=true``), or ``enable_type_widening`` sets that and the ``typeWidening``
        feature in the same commit. ``dry_run`` as :meth:`rename_column`."""
        from deltalog.table import schema_change

        return schema_change.change_column_type(
            self.start_transaction(), column, new_type, enable_type_widening=enable_type_widening, dry_run=dry_run
        )

    def set_properties(self, properties: Mapping[str, str], *, allow_unknown_properties: bool = False) -> CommitResult:
        """Commit table properties, checked as Delta Spark checks them: keys matched case-insensitively and
        values parsed, ``delta.feature.X=supported`` upgrades the protocol, a property turning on a feature
        deltalog cannot honour is refused, and unknown ``delta.*`` keys need ``allow_unknown_properties``."""
        from deltalog.table import ddl

        return ddl.set_properties(
            self.start_transaction(), properties, allow_unknown_properties=allow_unknown_properties
        )

    def unset_properties(self, keys: Sequence[str], if_exists: bool = True) -> CommitResult:
        """Commit the removal of table properties; a key that is not set is an error unless ``if_exists``."""
        from deltalog.table import ddl

        return ddl.unset_properties(self.start_transaction(), keys, if_exists)

    def enable_feature(self, feature: str) -> CommitResult:
        """Commit a protocol upgrade that supports table feature ``feature`` (writer 7, reader 3 if needed)."""
        from deltalog.table import ddl

        return ddl.enable_feature(self.start_transaction(), feature)

    def cluster_by(self, columns: Sequence[str]) -> CommitResult:
        """Commit new clustering columns (``ALTER TABLE CLUSTER BY``; ``[]`` for ``CLUSTER BY NONE``); an
        unpartitioned table becomes clustered. Live files need statistics for a newly added column."""
        from deltalog.table import ddl

        return ddl.cluster_by(self.start_transaction(), columns)

    def add_constraint(self, name: str, expression: str, *, existing_data_validated: bool = False) -> CommitResult:
        """Commit a CHECK constraint after checking every live row against it (a violation or null raises
        :class:`ConstraintViolationError`, nothing committed), or on the caller's word with
        ``existing_data_validated=True``; ``commitInfo`` records which."""
        from deltalog.table import ddl

        return ddl.add_constraint(
            self.start_transaction(), name, expression, existing_data_validated=existing_data_validated
        )

    def drop_constraint(self, name: str, *, if_exists: bool = False) -> CommitResult:
        """Commit the removal of a CHECK constraint; an unknown name is an error unless ``if_exists``."""
        from deltalog.table import ddl

        return ddl.drop_constraint(self.start_transaction(), name, if_exists=if_exists)

    def checkpoint(
        self, version: int | None = None, parts: int | None = None, progress: Progress | None = None
    ) -> CheckpointResult:
        """Write a checkpoint of ``version`` (the latest by default) and move ``_last_checkpoint`` forward.

        Classic single file by default; ``parts`` asks for a classic multi-part checkpoint; tables with the
        ``v2Checkpoint`` feature and ``delta.checkpointPolicy=v2`` get a V2 checkpoint (UUID manifest plus
        sidecars). The writer features' obligations on checkpoints are checked first (unknown features are refused
        by name).
        """
        from deltalog.maintenance.checkpoint_job import checkpoint_snapshot

        return checkpoint_snapshot(self.context, self.snapshot(version=version), parts=parts, progress=progress)

    # ------------------------------------------------------------------------------------------ after a commit
    def on_commit(self, callback: Callable[[CommitResult], None]) -> Callable[[CommitResult], None]:
        """Call ``callback(result)`` after every commit made through this log; errors in it are logged."""
        self._hooks.append(callback)
        return callback

    def _committed(self, committed: Committed) -> None:
        """The post-commit policy, handed every landed commit of a transaction this log started: advance the
        kept snapshot by the winners and our commit (:meth:`deltalog.table.latest.Latest.committed`), run the
        hooks, then checkpoint and compact the log when due. Never raises: the commit has landed."""
        result = committed.result
        version = result.version or 0
        self._table.committed(committed)
        for hook in list(self._hooks):
            try:
                hook(result)
            except Exception:
                log.exception("post-commit hook %r failed for version %s", hook, result.version)
        if self.auto_checkpoint and version:
            from deltalog.maintenance.checkpoint_job import checkpoint_when_due

            checkpoint_when_due(self.context, version, self.snapshot, cached=self._table.cached)
        if self.log_compaction_interval and version:
            from deltalog.maintenance.log_compaction import compact_when_due

            compact_when_due(self.context, version, self.log_compaction_interval, self.snapshot)
        self._auto_compact(result)

    def _auto_compact(self, result: CommitResult) -> None:
        """Auto compaction (``delta.autoOptimize.autoCompact``) of the partitions the commit wrote into; see
        :mod:`deltalog.dml.auto_compact`. Never raises."""
        latest = self._table.cached
        if result.version is None or latest is None:
            return
        from deltalog.dml import auto_compact

        if not auto_compact.enabled(latest.configuration):
            return
        try:
            snap = self.snapshot()
        except Exception:
            log.exception("auto compaction could not read version %s", result.version)
            return
        auto_compact.compact_when_due(self.start_transaction, snap, result.operation, result.actions)

    # ------------------------------------------------------------------------------------------ time
    def commit_timeline(self) -> list[tuple[int, int]]:
        """(version, commit time ms) for every commit file present, ascending; see :mod:`deltalog.table.history`."""
        from deltalog.table import history

        return history.commit_timeline(self.context, self.snapshot)

    def version_at(self, timestamp: Timestamp, allow_after_latest: bool = False) -> int:
        """The version "as of" ``timestamp``: the latest commit at or before it; see :mod:`deltalog.table.history`."""
        from deltalog.table import history

        return history.version_at(self.context, self.snapshot, timestamp, allow_after_latest)

    def changes(
        self,
        starting_version: int | None = None,
        ending_version: int | None = None,
        *,
        starting_timestamp: Timestamp | None = None,
        ending_timestamp: Timestamp | None = None,
        columns: Sequence[str] | None = None,
        filter: Any = None,
        allow_out_of_range: bool = False,
    ) -> pa.RecordBatchReader:
        """What changed in versions ``starting_version..ending_version`` (change data feed), streamed: the rows in
        the table's latest schema (``columns``: some of them) plus ``_change_type`` (``insert``, ``delete``,
        ``update_preimage``, ``update_postimage``), ``_commit_version`` and ``_commit_timestamp``, versions in
        order. A bound is a version or a timestamp (both for one bound is an error); no start means version 0, no
        end the latest version, and an end past it is clipped. ``filter`` (a pyarrow Expression, as
        :meth:`Snapshot.scan` takes, which may also name the change columns) prunes files and keeps rows.

        Typed errors (:class:`ChangeDataNotRecordedError`, :class:`IncompatibleSchemaChangeError`,
        :class:`VersionNotFoundError`) name the version at fault; ``allow_out_of_range`` reads a start past the
        latest version, or an end before the start, as no changes. See :mod:`deltalog.dml.changes`.
        """
        from deltalog.dml.changes import Bounds, plan_changes

        bounds = Bounds(starting_version, ending_version, starting_timestamp, ending_timestamp, allow_out_of_range)
        latest = self._refresh(lazy=True)  # its schema and properties; never its file list
        return plan_changes(self.context, latest, bounds, columns, filter).read(self.context)

    def new_files(
        self, since_version: int, until_version: int | None = None, *, skip_change_commits: bool = False
    ) -> pa.RecordBatchReader:
        """The rows the versions after ``since_version`` (up to ``until_version``, the latest by default) appended,
        with ``_commit_version`` and ``_commit_timestamp``: for append-only pipelines, on tables with or without
        change data feed. A version that removes or changes rows raises :class:`DataChangedError` naming it, or
        is skipped whole with ``skip_change_commits`` (Delta Spark's streaming source option)."""
        from deltalog.dml.changes import plan_new_files

        latest = self._refresh(lazy=True)  # its schema and properties; never its file list
        plan = plan_new_files(
            self.context, latest, since_version, until_version, skip_change_commits=skip_change_commits
        )
        return plan.read(self.context)

    def history(self, limit: int | None = None) -> list[HistoryEntry]:
        """Commits newest first (at most ``limit``): version, time (ms, as time travel sees it), the commitInfo's
        fields as typed attributes; reads the log's listing and the commitInfos shown, never the table."""
        from deltalog.table import history

        return history.entries(self.context, self.snapshot, limit)

    # ------------------------------------------------------------------------------------------ maintenance
    def cleanup(self, retention: Retention | None = None, dry_run: bool = True) -> CleanupResult:
        """Delete expired log files below a checkpoint (a dry run by default); see :mod:`deltalog.maintenance.cleanup`.

        ``retention`` overrides ``delta.logRetentionDuration`` (ms, timedelta, or ``"30d"``). The result's
        ``horizon`` is the earliest version still reconstructable afterwards.
        """
        from deltalog.maintenance.cleanup import cleanup

        return cleanup(self.context, self.snapshot(), retention=retention, dry_run=dry_run)

    def compact_log(
        self, start: int | None = None, end: int | None = None, dry_run: bool = False
    ) -> LogCompactionResult:
        """Write the log compaction file of commits ``start..end`` (PROTOCOL "Log Compaction Files").

        Defaults: from the version after the newest checkpoint or compaction file to the latest. Ranges of
        fewer than 2 commits, reaching past the latest, or into a cleaned-up or damaged part of the log are
        refused with typed errors; tables with writer features deltalog cannot checkpoint are refused by
        name. An identical file already there is fine; nothing is ever overwritten.
        """
        from deltalog.maintenance.log_compaction import compact_log

        return compact_log(self.context, self.snapshot(), start=start, end=end, dry_run=dry_run)

    def vacuum(
        self,
        retention: Retention | None = None,
        dry_run: bool = True,
        *,
        force: bool = False,
        progress: VacuumProgress | None = None,
        lite: bool = False,
        retention_hours: float | None = None,
        enforce_retention_duration: bool | None = None,
    ) -> VacuumResult:
        """Delete data files no version within the retention references (a dry run by default).

        See :mod:`deltalog.maintenance.vacuum`. A retention shorter than ``delta.deletedFileRetentionDuration``
        is refused unless ``force``. ``lite`` takes the candidates from the expired removes in the log instead
        of listing the table (Delta Spark's ``VACUUM LITE``): far fewer requests, but files no commit named are
        left for a full vacuum. deltalake's names work too: ``retention_hours`` for ``retention``,
        ``enforce_retention_duration=False`` for ``force=True``.
        """
        from deltalog.maintenance.vacuum import vacuum

        if retention_hours is not None:
            if retention is not None:
                raise InvalidArgumentError("pass retention or retention_hours, not both")
            retention = _hours(retention_hours)
        if enforce_retention_duration is not None:
            if force and enforce_retention_duration:
                raise InvalidArgumentError("force=True and enforce_retention_duration=True contradict each other")
            force = not enforce_retention_duration
        snap = self.snapshot()
        return vacuum(
            self.context, snap, retention=retention, dry_run=dry_run, force=force, progress=progress, lite=lite
        )

    def restore(
        self,
        version: int | None = None,
        timestamp: Timestamp | None = None,
        *,
        force: bool = False,
        ignore_missing_files: bool = False,
        check_files: bool = True,
        dry_run: bool = False,
    ) -> RestoreResult:
        """Make ``version`` (or the version as of ``timestamp``) current again as a new version, operation
        RESTORE: its files, metadata and clustering (see :mod:`deltalog.maintenance.restore`).

        ``force`` allows a target older than ``delta.deletedFileRetentionDuration``; ``ignore_missing_files``
        restores without the target's files that are gone from storage (``check_files=False`` is its old name).
        ``dry_run`` checks and plans it and commits nothing (the ``deltalog restore`` command's default).
        """
        from deltalog.maintenance import restore

        restore.check_arguments(version, timestamp)
        txn = self.start_transaction()
        target = self.snapshot(version=restore.resolve_target(self.context, txn, version, timestamp))
        missing = ignore_missing_files or not check_files
        return restore.restore(
            self.context,
            txn,
            target,
            version=version,
            timestamp=timestamp,
            force=force,
            ignore_missing_files=missing,
            dry_run=dry_run,
        )

    def __repr__(self) -> str:
        return f"DeltaLog({self.location!r})"

    def optimize(
        self,
        where: Any = None,
        target_size: int | None = None,
        z_order_by: Sequence[str] | None = None,
        min_file_size: int | None = None,
        max_concurrent_tasks: int | None = None,
        dry_run: bool = False,
        *,
        min_commit_interval: float | dt.timedelta | None = None,
    ) -> OptimizeResult:
        """OPTIMIZE: rewrite small files (and files with many rows deleted by deletion vectors) into files of about
        ``target_size`` bytes, committed with ``dataChange: false`` so concurrent appends and deletes of other files
        go on; see :mod:`deltalog.dml.optimize`.

        ``where`` selects partitions (SQL text, a ``where`` mapping, deltalake's DNF filters or a pyarrow
        Expression, on partition columns only). ``target_size`` defaults to ``delta.targetFileSize``, else
        100 MiB; files under ``min_file_size`` (default: ``target_size``) are compacted. ``z_order_by`` rewrites
        every file of the selected partitions sorted along the Z-order curve of those columns. On a clustered
        table it clusters by the clustering columns (Hilbert curve) instead. ``min_commit_interval`` (seconds
        or a timedelta) commits finished work in batches that far apart. ``dry_run`` reports what would be
        rewritten and writes nothing.
        """
        from deltalog.dml.optimize import Request, optimize

        request = Request(
            where=where,
            target_size=target_size,
            z_order_by=(z_order_by,) if isinstance(z_order_by, str) else tuple(z_order_by or ()),
            min_file_size=min_file_size,
            max_concurrent_tasks=max_concurrent_tasks,
            dry_run=dry_run,
            min_commit_interval=_seconds(min_commit_interval),
        )
        return optimize(self.start_transaction, request)

    def purge_deletion_vectors(
        self, where: Any = None, *, max_concurrent_tasks: int | None = None, dry_run: bool = False
    ) -> OptimizeResult:
        """REORG TABLE ... APPLY (PURGE): rewrite every file that has a deletion vector (in the partitions
        ``where`` selects) without its deleted rows, committed as ``REORG`` with ``dataChange: false``, so that
        the table can drop the feature or be read by engines without deletion-vector support."""
        from deltalog.dml.optimize import Request, optimize

        request = Request(where=where, purge=True, max_concurrent_tasks=max_concurrent_tasks, dry_run=dry_run)
        return optimize(self.start_transaction, request)

    def delete(self, predicate: Any = None, *, session_time_zone: str | None = None) -> CommitResult:
        """Delete the rows matching ``predicate`` (Spark SQL text, a pyarrow Expression, DNF tuples or a mapping;
        None: every row) as one commit: deletion vectors where the table enables them, else rewritten files. SQL
        reads timestamps in ``session_time_zone`` (UTC by default). See :func:`deltalog.dml.delete.delete`."""
        from deltalog.dml.delete import delete

        return delete(self.start_transaction(), predicate, session_time_zone=session_time_zone)

    def update(
        self,
        updates: Mapping[str, Any],
        predicate: Any = None,
        *,
        session_time_zone: str | None = None,
        max_memory: int | None = None,
    ) -> CommitResult:
        """Set ``updates`` (column -> Spark SQL value, e.g. ``{"status": "'closed'", "n": "n + 1"}``) on the rows
        matching ``predicate`` (any filter form; None: every row) as one commit, Delta Spark's UPDATE: the
        updated rows go to new files and leave their old files by deletion vectors where the table enables them
        (else those files are rewritten), with change files, row ids kept, generated columns recomputed and
        every row rule checked. See :func:`deltalog.dml.merge.execute.update`."""
        from deltalog.dml.merge.execute import update

        return update(
            self.start_transaction, updates, predicate, session_time_zone=session_time_zone, max_memory=max_memory
        )

    def merge(
        self,
        source: Any,
        predicate: Any,
        source_alias: str | None = "s",
        target_alias: str | None = "t",
        schema_mode: str | None = None,
        *,
        max_memory: int | None = None,
        session_time_zone: str | None = None,
    ) -> MergeBuilder:
        """A MERGE of ``source`` (anything :func:`deltalog.write` takes) into this table on ``predicate``
        (Spark SQL over ``source_alias`` and ``target_alias``, e.g. ``"t.id = s.id"``): add clauses with the
        builder's ``when_matched_update``, ``when_matched_update_all``, ``when_matched_delete``,
        ``when_not_matched_insert``, ``when_not_matched_insert_all``, ``when_not_matched_by_source_update``,
        ``when_not_matched_by_source_delete``, then ``execute()`` it as one commit (Delta Spark's semantics,
        deletion vectors where the table enables them). ``schema_mode="merge"`` adds the source's new columns
        for ``*_all`` clauses; ``max_memory`` (bytes, default 1 GiB) bounds memory, the source being spilled
        to a temporary directory beyond half of it. See docs/merge.md."""
        from deltalog.dml.merge.builder import MergeBuilder

        return MergeBuilder(
            self.start_transaction,
            source,
            predicate,
            source_alias=source_alias,
            target_alias=target_alias,
            schema_mode=schema_mode,
            max_memory=max_memory,
            session_time_zone=session_time_zone,
        )


def _hours(hours: float) -> dt.timedelta:
    """deltalake's ``retention_hours`` as a retention."""
    if isinstance(hours, bool) or not isinstance(hours, (int, float)) or hours != hours or hours < 0:
        raise InvalidArgumentError(f"retention_hours must be a number of hours >= 0, not {hours!r}")
    return dt.timedelta(hours=hours)


def _seconds(interval: float | dt.timedelta | None) -> float | None:
    if interval is None:
        return None
    value = interval.total_seconds() if isinstance(interval, dt.timedelta) else float(interval)
    if value < 0:
        raise InvalidArgumentError(f"min_commit_interval must not be negative, not {interval!r}")
    return value


__all__ = ["AFTER_LATEST", "DeltaLog", "Timestamp"]
