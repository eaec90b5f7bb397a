"""One table: a store plus the pure core, wired together.

``DeltaLog`` lists, reads and hands bytes to the core; it holds no table state of its own, so any number
of snapshots (and, later, transactions) can be taken from one instance concurrently.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deltalog import loading, log_listing
from deltalog.core import engine_safety, properties
from deltalog.core import last_checkpoint as hints
from deltalog.core.feature_gate import CHECKPOINT, check_operation
from deltalog.core.jsonlines import commit_info_of
from deltalog.core.paths import LOG_DIR, Kind, LogPath, commit_name, parse
from deltalog.core.reachability import holds, tip_in
from deltalog.core.segment import (
    LogSegment,
    build_segment,
    earliest_version,
    latest_version,
)
from deltalog.core.state import CommitData
from deltalog.errors import (
    CheckpointError,
    CorruptLogError,
    InvalidArgumentError,
    PropertyError,
    TableNotFoundError,
    VersionNotFoundError,
)
from deltalog.snapshot import Snapshot
from deltalog.storage.base import LogStore
from deltalog.storage.uri import store_for

if TYPE_CHECKING:
    from deltalog.checkpoint.writer import CheckpointResult, Progress
    from deltalog.committer import Outcome, RetryPolicy
    from deltalog.core.retention import Retention
    from deltalog.history import HistoryEntry
    from deltalog.maintenance.cleanup import CleanupResult
    from deltalog.maintenance.restore import RestoreResult
    from deltalog.maintenance.vacuum import VacuumProgress, VacuumResult
    from deltalog.transaction import CommitResult, Transaction

log = logging.getLogger(__name__)

Timestamp = Any  # str (ISO-8601), datetime, date, or epoch milliseconds


class DeltaLog:
    """Entry point for one Delta table."""

    def __init__(
        self,
        store: LogStore,
        location: str,
        clock: Callable[[], float] = time.time,
        auto_checkpoint: bool = True,
    ) -> None:
        self.store = store
        self.location = location
        self._clock = clock
        #: checkpoint after commits at multiples of delta.checkpointInterval; off leaves it to the compaction job
        self.auto_checkpoint = auto_checkpoint
        self._lock = threading.Lock()
        self._latest: Snapshot | None = None
        self._hooks: list[Callable[[CommitResult], None]] = []

    @classmethod
    def for_table(
        cls,
        location: str | os.PathLike[str],
        storage_options: dict[str, Any] | None = None,
        *,
        clock: Callable[[], float] = time.time,
        auto_checkpoint: bool = True,
    ) -> DeltaLog:
        """Open the table at a path or URI (``file://``, ``memory://``, and the cloud schemes when installed)."""
        store = store_for(location, storage_options)
        return cls(store, store.root, clock=clock, auto_checkpoint=auto_checkpoint)

    def now_ms(self) -> int:
        """This log's clock in epoch milliseconds: what retention, intents and tombstones are judged by
        (a ``clock`` given to :meth:`for_table` replaces the system's, for tests and replays)."""
        return int(self._clock() * 1000)

    # ------------------------------------------------------------------------------------------ listing
    def list_log(self, from_version: int = 0, to_version: int | None = None) -> list[LogPath]:
        """Parsed log files with ``from_version <= version <= to_version`` (open-ended when None), sorted.

        Unknown names are skipped.
        """
        return log_listing.list_log(self.store, from_version, to_version)

    def read_hint(self) -> hints.LastCheckpoint | None:
        """``_last_checkpoint`` if present and sound; a warning and ``None`` otherwise."""
        return log_listing.read_hint(self.store, self.location)

    def _listing_for(self, version: int | None) -> list[LogPath]:
        return log_listing.listing_and_scope(self.store, self.location, version)[0]

    def segment(self, version: int | None = None) -> LogSegment:
        """The checkpoint and commit files that rebuild ``version`` (default: the latest), without replaying
        them: what a reader would load, for tools that inspect or copy a log."""
        return self._segment_and_listing(version)[0]

    def _segment_and_listing(self, version: int | None) -> tuple[LogSegment, list[LogPath]]:
        paths, whole = log_listing.listing_and_scope(self.store, self.location, version)
        try:
            return build_segment(paths, version, where=f"{self.location}/{LOG_DIR}"), paths
        except (VersionNotFoundError, TableNotFoundError, CorruptLogError):
            if not whole:
                # A listing that started at the hint or near the version cannot tell about the rest of the
                # log: ask the full log, whose answer (a segment, or the error as it always read) stands.
                paths = self.list_log(0)
                return build_segment(paths, version, where=f"{self.location}/{LOG_DIR}"), paths
            raise

    def latest_version(self) -> int:
        """The newest version in the log (one listing, no replay); :class:`TableNotFoundError` if none."""
        v = latest_version(self._listing_for(None))
        if v is None:
            raise TableNotFoundError(f"no Delta table at {self.location}: {LOG_DIR} has no commits")
        return v

    def earliest_version(self) -> int:
        """The oldest reconstructable version: 0 when ``0.json`` is there (one short listing), else a full one."""
        if any(p.version == 0 and p.kind is Kind.COMMIT for p in self.list_log(0, 0)):
            return 0
        v = earliest_version(self.list_log(0))
        if v is None:
            raise TableNotFoundError(f"no Delta table at {self.location}: {LOG_DIR} has no commits")
        return v

    # ------------------------------------------------------------------------------------------ snapshots
    def snapshot(self, version: int | None = None, timestamp: Timestamp | None = None) -> Snapshot:
        """The table at ``version``, at the latest commit at or before ``timestamp``, or at the latest version.

        The latest snapshot is cached: asking again replays only the commits that arrived since.
        """
        if version is not None and timestamp is not None:
            raise InvalidArgumentError("pass version or timestamp, not both")
        if timestamp is not None:
            version = self.version_at(timestamp)
        if version is None:
            return self._refresh_latest()
        with self._lock:
            cached = self._latest
        if cached is not None and cached.version == version and holds(cached.tip, self.list_log(version, version)):
            return cached
        return self._replay(self.segment(version))

    def fresh_snapshot(self, version: int | None = None) -> Snapshot:
        """The table at ``version`` (the latest by default) loaded from the log as it is now, never from the
        cached snapshot, and not cached either."""
        return self._replay(self.segment(version))

    def _refresh_latest(self, lazy: bool = False) -> Snapshot:
        """The latest snapshot; ``lazy`` defers a fresh load's file list (see :func:`loading.load_state`).

        The cached snapshot is trusted only while the log still lists its version's files as it did when
        they were read (:attr:`Snapshot.tip`): log cleanup may have removed them, or the table may have been
        deleted and recreated, and then the log, not the cache, says what the table is. The one listing
        from the cached version serves both that check and finding the commits since.
        """
        with self._lock:
            cached = self._latest
        snap: Snapshot | None = None
        if cached is not None:
            listed = self.list_log(cached.version)
            if not holds(cached.tip, listed):
                log.info(
                    "%s: the log no longer lists version %d as the cached snapshot read it (%s): loading it again",
                    self.location,
                    cached.version,
                    cached.tip.describe(),
                )
            else:
                newer = [p for p in listed if p.kind is Kind.COMMIT and p.version > cached.version]
                expected = cached.version + 1
                contiguous = []
                for p in newer:
                    if p.version != expected:
                        break
                    contiguous.append(p)
                    expected += 1
                if not newer:
                    snap = cached
                elif len(contiguous) == len(newer):
                    segment = LogSegment(newer[-1].version, None, tuple(contiguous))
                    snap = cached.advance(self._read_commits(segment))
        if snap is None:
            segment, listed = self._segment_and_listing(None)
            snap = loading.load_state(self, segment) if lazy else self._replay(segment)
            tip = tip_in(listed, snap.version)
            if tip is not None:
                snap.listed_as(tip)
            if cached is not None and cached.metadata.id != snap.metadata.id:
                log.warning(
                    "the table at %s was replaced: table id %s, cached at version %d, is now %s at version %d",
                    self.location,
                    cached.metadata.id,
                    cached.version,
                    snap.metadata.id,
                    snap.version,
                )
            self._remember(snap, replace=True)
            return snap
        self._remember(snap)
        return snap

    def _remember(self, snap: Snapshot, replace: bool = False) -> None:
        """Cache ``snap`` unless a newer one is cached; ``replace`` caches a fresh load whatever its version."""
        with self._lock:
            if replace or self._latest is None or snap.version >= self._latest.version:
                self._latest = snap

    # ------------------------------------------------------------------------------------------ writing
    def create(
        self,
        schema: Any,
        partition_columns: Sequence[str] = (),
        configuration: Mapping[str, str] | None = None,
        name: str | None = None,
        description: str | None = None,
        retry: RetryPolicy | None = None,
        *,
        allow_unknown_properties: bool = False,
    ) -> CommitResult:
        """Create the table (version 0: protocol + metaData); :class:`TableAlreadyExistsError` if it exists.

        ``schema`` is a ``pyarrow.Schema`` or a Delta schema string. The schema, partitioning and
        ``configuration`` are checked as Delta Spark checks them (:class:`SchemaError`, :class:`PropertyError`
        name the field or key) before anything is written; ``allow_unknown_properties`` stores ``delta.*``
        keys deltalog does not know (other engines'). The protocol lists the features the schema and
        properties need.
        """
        from deltalog.table_setup import create_table

        return create_table(
            self,
            schema,
            partition_columns,
            configuration,
            name,
            description,
            retry,
            allow_unknown_properties=allow_unknown_properties,
        )

    def start_transaction(
        self,
        isolation: str | None = None,
        *,
        app_id: str | None = None,
        app_version: int | None = None,
        retry: RetryPolicy | None = None,
    ) -> Transaction:
        """A transaction on the latest snapshot; with ``app_id``/``app_version`` it commits exactly once."""
        from deltalog.transaction import Transaction

        # A blind append needs protocol, metadata and txns, not the file list: the transaction's snapshot
        # loads its files only if the transaction reads them.
        snap = self._refresh_latest(lazy=True)
        return Transaction(self, snap, isolation, app_id=app_id, app_version=app_version, retry=retry)

    def add_columns(self, fields: Any) -> CommitResult:
        """Commit new nullable columns (``pyarrow.Field`` s or Delta field dicts) at the end of the schema,
        as Spark's ``mergeSchema`` does; existing files read them as null."""
        from deltalog.table_setup import add_columns

        return add_columns(self, fields)

    def set_properties(self, properties: Mapping[str, str], *, allow_unknown_properties: bool = False) -> CommitResult:
        """Commit table properties, checked as Delta Spark checks them: keys matched case-insensitively and
        values parsed, ``delta.feature.X=supported`` upgrades the protocol, a property turning on a feature
        deltalog cannot honour is refused, and unknown ``delta.*`` keys need ``allow_unknown_properties``."""
        from deltalog.table_setup import set_properties

        return set_properties(self, properties, allow_unknown_properties=allow_unknown_properties)

    def unset_properties(self, keys: Sequence[str], if_exists: bool = True) -> CommitResult:
        """Commit the removal of table properties; a key that is not set is an error unless ``if_exists``."""
        from deltalog.table_setup import unset_properties

        return unset_properties(self, keys, if_exists)

    def enable_feature(self, feature: str) -> CommitResult:
        """Commit a protocol upgrade that supports table feature ``feature`` (writer 7, reader 3 if needed)."""
        from deltalog.table_setup import enable_feature

        return enable_feature(self, feature)

    def checkpoint(
        self, version: int | None = None, parts: int | None = None, progress: Progress | None = None
    ) -> CheckpointResult:
        """Write a checkpoint of ``version`` (the latest by default) and move ``_last_checkpoint`` forward.

        Classic single file by default; ``parts`` asks for a classic multi-part checkpoint; tables with the
        ``v2Checkpoint`` feature get a V2 checkpoint (UUID manifest plus sidecars). Writing a checkpoint is
        a write: the writer protocol check runs first.
        """
        from deltalog.checkpoint.writer import write_checkpoint

        snap = self.snapshot(version=version)
        check_operation(CHECKPOINT, snap.protocol, snap.configuration, snap.schema_json, f"{self.location}/{LOG_DIR}")
        properties.check_checkpoint_properties(snap.configuration)
        if not self.store.exists(f"{LOG_DIR}/{commit_name(snap.version)}") and snap.segment.commits:
            raise CheckpointError(
                f"version {snap.version} has no commit file: only committed versions are checkpointed"
            )
        return snap.reading(lambda: write_checkpoint(self.store, snap, parts=parts, progress=progress))

    def on_commit(self, callback: Callable[[CommitResult], None]) -> Callable[[CommitResult], None]:
        """Call ``callback(result)`` after every commit made through this log; errors in it are logged."""
        self._hooks.append(callback)
        return callback

    def _notify(self, result: CommitResult) -> None:
        for hook in list(self._hooks):
            try:
                hook(result)
            except Exception:
                log.exception("post-commit hook %r failed for version %s", hook, result.version)

    def _committed(self, before: Snapshot, outcome: Outcome, data: bytes, result: CommitResult) -> None:
        """Advance the cached snapshot by the winners and our commit, then run hooks; never raises."""
        try:
            assert result.version is not None
            name = commit_name(result.version)
            listed = outcome.listed
            if listed is None or listed.name != name or listed.size != len(data):
                listed = parse(name, len(data))  # unknown time: the next refresh will not trust it, and reload
            assert listed is not None
            commits = [*outcome.winner_data, CommitData(result.version, f"{LOG_DIR}/{name}", data, listed.mtime)]
            versions = [c.version for c in commits]
            if versions == list(range(before.version + 1, result.version + 1)):
                self._remember(before.advance(commits))
        except Exception:
            log.exception("could not advance the cached snapshot after version %s", result.version)
        self._notify(result)
        self._auto_checkpoint(result)

    def _auto_checkpoint(self, result: CommitResult) -> None:
        """Checkpoint when the version is a multiple of ``delta.checkpointInterval``, as Delta Spark does.

        A failure is logged and never fails the commit that triggered it: the commit has landed. A table
        property that stops it is a WARNING naming the property, its value and the fix, every time.
        """
        version = result.version
        if not self.auto_checkpoint or version is None or version == 0:
            return
        try:
            with self._lock:
                cached = self._latest
            # The cache was advanced by this very commit: its configuration is this version's, no listing needed.
            snap = cached if cached is not None and cached.version == version else self.snapshot(version=version)
            conf = snap.configuration
            if version % properties.checkpoint_interval(conf) != 0:
                return
            self.checkpoint(version=version)
        except PropertyError as exc:
            log.warning("automatic checkpoint of version %s not written (the commit succeeded): %s", version, exc)
            return
        except VersionNotFoundError as exc:
            # Another writer checkpointed a later version and cleanup removed this one first: nothing to do.
            log.info("no automatic checkpoint of version %s: %s", version, exc)
            return
        except Exception:
            log.exception("automatic checkpoint of version %s failed; the commit itself succeeded", version)
            return
        try:
            if properties.get_strict_bool(conf, "delta.enableExpiredLogCleanup", True) and hasattr(self, "cleanup"):
                properties.log_retention_ms(conf)
                self.cleanup(dry_run=False)
        except PropertyError as exc:
            log.warning("automatic log cleanup after version %s skipped (the commit succeeded): %s", version, exc)
        except Exception:
            log.exception("automatic log cleanup after version %s failed; the commit itself succeeded", version)

    def _read_commits(self, segment: LogSegment) -> list[CommitData]:
        return loading.read_commits(self, segment)

    def _warn_unsafe_engine(self, risk: engine_safety.EngineRisk | None) -> None:
        """Log, once per DeltaLog, that an engine which cannot share this store safely has committed here."""
        if risk is not None and not getattr(self, "_engine_warned", False):
            self._engine_warned = True
            log.warning("%s", risk.message(self.location))

    def _replay(self, segment: LogSegment) -> Snapshot:
        return loading.load(self, segment)

    # ------------------------------------------------------------------------------------------ time
    def commit_timeline(self) -> list[tuple[int, int]]:
        """(version, commit time ms) for every commit file present, ascending; see :mod:`deltalog.history`."""
        from deltalog import history

        return history.commit_timeline(self)

    def version_at(self, timestamp: Timestamp, allow_after_latest: bool = False) -> int:
        """The version "as of" ``timestamp``: the latest commit at or before it; see :mod:`deltalog.history`."""
        from deltalog import history

        return history.version_at(self, timestamp, allow_after_latest)

    def _commit_info(self, version: int) -> dict[str, Any]:
        path = f"{LOG_DIR}/{commit_name(version)}"
        return commit_info_of(self.store.read(path), path)

    def history(self, limit: int | None = None) -> Iterator[HistoryEntry]:
        """Commits newest first: version, time (ms, as time travel sees it) and commitInfo."""
        from deltalog import history

        for entry in history.entries(self, limit):
            self._warn_unsafe_engine(
                engine_safety.engine_risk(entry.commit_info.get("engineInfo"), self.location, entry.version)
            )
            yield entry

    # ------------------------------------------------------------------------------------------ maintenance
    def cleanup(self, retention: Retention | None = None, dry_run: bool = True) -> CleanupResult:
        """Delete expired log files below a checkpoint (a dry run by default); see :mod:`deltalog.maintenance.cleanup`.

        ``retention`` overrides ``delta.logRetentionDuration`` (ms, timedelta, or ``"30d"``). The result's
        ``horizon`` is the earliest version still reconstructable afterwards.
        """
        from deltalog.maintenance.cleanup import cleanup

        return cleanup(self, retention=retention, dry_run=dry_run)

    def vacuum(
        self,
        retention: Retention | None = None,
        dry_run: bool = True,
        *,
        force: bool = False,
        progress: VacuumProgress | None = None,
    ) -> VacuumResult:
        """Delete data files no version within the retention references (a dry run by default).

        See :mod:`deltalog.maintenance.vacuum`. A retention shorter than ``delta.deletedFileRetentionDuration``
        is refused unless ``force``.
        """
        from deltalog.maintenance.vacuum import vacuum

        return vacuum(self, retention=retention, dry_run=dry_run, force=force, progress=progress)

    def restore(
        self,
        version: int | None = None,
        timestamp: Timestamp | None = None,
        *,
        force: bool = False,
        ignore_missing_files: bool = False,
        check_files: bool = True,
    ) -> RestoreResult:
        """Make ``version`` (or the version as of ``timestamp``) current again as a new version, operation
        RESTORE: its files, metadata and clustering (see :mod:`deltalog.maintenance.restore`).

        ``force`` allows a target older than ``delta.deletedFileRetentionDuration``; ``ignore_missing_files``
        restores without the target's files that are gone from storage (``check_files=False`` is its old name).
        """
        from deltalog.maintenance.restore import restore

        return restore(
            self,
            version=version,
            timestamp=timestamp,
            force=force,
            ignore_missing_files=ignore_missing_files or not check_files,
        )

    def __repr__(self) -> str:
        return f"DeltaLog({self.location!r})"

    def delete(self, predicate: Any = None) -> CommitResult:
        """Delete the rows matching ``predicate`` (a pyarrow Expression, SQL text or a ``where`` mapping; None:
        every row) as one commit: deletion vectors where the table enables them, else rewritten files. See
        :func:`deltalog.dml.delete.delete`."""
        from deltalog.dml.delete import delete

        return delete(self, predicate)


__all__ = ["DeltaLog", "HistoryEntry"]
