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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from deltalog.checkpoint.reader import CheckpointReader
from deltalog.core import engine_safety, properties
from deltalog.core import last_checkpoint as hints
from deltalog.core.features import check_readable, check_writable
from deltalog.core.paths import LAST_CHECKPOINT, LOG_DIR, SIDECAR_DIR, Kind, LogPath, commit_name, parse, version_prefix
from deltalog.core.replay import BaseState, CommitData, replay
from deltalog.core.segment import (
    LogSegment,
    build_segment,
    complete_checkpoints,
    earliest_version,
    latest_version,
)
from deltalog.core.timetravel import monotonize, to_epoch_ms, version_at
from deltalog.errors import (
    CheckpointError,
    CorruptLogError,
    DeltaLogError,
    InvalidArgumentError,
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
    from deltalog.maintenance.cleanup import CleanupResult
    from deltalog.maintenance.restore import RestoreResult
    from deltalog.maintenance.vacuum import VacuumProgress, VacuumResult
    from deltalog.transaction import CommitResult, Transaction

log = logging.getLogger(__name__)

Timestamp = Any  # str (ISO-8601), datetime, date, or epoch milliseconds


@dataclass(frozen=True)
class HistoryEntry:
    """One commit as history shows it: its version, its time (ms), and its commitInfo (raw JSON object)."""

    version: int
    timestamp: int
    commit_info: dict[str, Any]

    @property
    def operation(self) -> str | None:
        op = self.commit_info.get("operation")
        return op if isinstance(op, str) else None


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
        return int(self._clock() * 1000)

    # ------------------------------------------------------------------------------------------ listing
    def list_log(self, from_version: int = 0) -> list[LogPath]:
        """Parsed log files with version ``>= from_version``, sorted; unknown names are skipped."""
        out = []
        for info in self.store.list_from(f"{LOG_DIR}/{version_prefix(from_version)}"):
            p = parse(info.name, info.size, info.mtime)
            if p is not None:
                out.append(p)
        return out

    def read_hint(self) -> hints.LastCheckpoint | None:
        """``_last_checkpoint`` if present and sound; a warning and ``None`` otherwise."""
        path = f"{LOG_DIR}/{LAST_CHECKPOINT}"
        try:
            data = self.store.read(path)
        except FileNotFoundError:
            return None
        try:
            return hints.parse(data)
        except hints.HintError as exc:
            log.warning("ignoring %s/%s: %s; listing the log instead", self.location, path, exc)
            return None

    def _listing_for(self, version: int | None) -> list[LogPath]:
        hint = self.read_hint()
        if hint is None or hint.version == 0 or (version is not None and version < hint.version):
            return self.list_log(0)
        paths = self.list_log(hint.version)
        if not any(c.version == hint.version for c in complete_checkpoints(paths)):
            log.warning(
                "%s/_delta_log/_last_checkpoint names version %d but no complete checkpoint exists there; "
                "listing the whole log",
                self.location,
                hint.version,
            )
            return self.list_log(0)
        return paths

    def segment(self, version: int | None = None) -> LogSegment:
        paths = self._listing_for(version)
        try:
            return build_segment(paths, version, where=f"{self.location}/{LOG_DIR}")
        except (VersionNotFoundError, TableNotFoundError):
            if paths and paths[0].version > 0:
                # A listing that started at the hint cannot tell about older versions: ask the full log.
                return build_segment(self.list_log(0), version, where=f"{self.location}/{LOG_DIR}")
            raise

    def latest_version(self) -> int:
        v = latest_version(self._listing_for(None))
        if v is None:
            raise TableNotFoundError(f"no Delta table at {self.location}: {LOG_DIR} has no commits")
        return v

    def earliest_version(self) -> int:
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
        if cached is not None and cached.version == version:
            return cached
        return self._replay(self.segment(version))

    def _refresh_latest(self) -> Snapshot:
        with self._lock:
            cached = self._latest
        snap: Snapshot | None = None
        if cached is not None:
            newer = [p for p in self.list_log(cached.version + 1) if p.kind is Kind.COMMIT]
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
            snap = self._replay(self.segment(None))
        self._remember(snap)
        return snap

    def _remember(self, snap: Snapshot) -> None:
        with self._lock:
            if self._latest is None or snap.version >= self._latest.version:
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
    ) -> CommitResult:
        """Create the table (version 0: protocol + metaData); :class:`TableAlreadyExistsError` if it exists.

        ``schema`` is a ``pyarrow.Schema`` or a Delta schema string.
        """
        from deltalog.table_setup import create_table

        return create_table(self, schema, partition_columns, configuration, name, description, retry)

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

        return Transaction(self, self.snapshot(), isolation, app_id=app_id, app_version=app_version, retry=retry)

    def add_columns(self, fields: Any) -> CommitResult:
        from deltalog.table_setup import add_columns

        return add_columns(self, fields)

    def set_properties(self, properties: Mapping[str, str]) -> CommitResult:
        from deltalog.table_setup import set_properties

        return set_properties(self, properties)

    def unset_properties(self, keys: Sequence[str], if_exists: bool = True) -> CommitResult:
        from deltalog.table_setup import unset_properties

        return unset_properties(self, keys, if_exists)

    def enable_feature(self, feature: str) -> CommitResult:
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
        check_writable(snap.protocol, snap.configuration, snap.schema_json, f"{self.location}/{LOG_DIR}")
        if not self.store.exists(f"{LOG_DIR}/{commit_name(snap.version)}") and snap.segment.commits:
            raise CheckpointError(
                f"version {snap.version} has no commit file: only committed versions are checkpointed"
            )
        return write_checkpoint(self.store, snap, parts=parts, progress=progress)

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
            commits = [
                *outcome.winner_data,
                CommitData(result.version, f"{LOG_DIR}/{commit_name(result.version)}", data, self.now_ms()),
            ]
            versions = [c.version for c in commits]
            if versions == list(range(before.version + 1, result.version + 1)):
                self._remember(before.advance(commits))
        except Exception:
            log.exception("could not advance the cached snapshot after version %s", result.version)
        self._notify(result)
        self._auto_checkpoint(result)

    def _auto_checkpoint(self, result: CommitResult) -> None:
        """Checkpoint when the version is a multiple of ``delta.checkpointInterval``, as Delta Spark does.

        A failure is logged and never fails the commit that triggered it: the commit has landed.
        """
        version = result.version
        if not self.auto_checkpoint or version is None or version == 0:
            return
        try:
            snap = self.snapshot(version=version)
            interval = properties.get_int(snap.configuration, "delta.checkpointInterval", 10)
            if interval <= 0 or version % interval != 0:
                return
            self.checkpoint(version=version)
            if properties.get_bool(snap.configuration, "delta.enableExpiredLogCleanup", True) and hasattr(
                self, "cleanup"
            ):
                self.cleanup(dry_run=False)
        except Exception:
            log.exception("automatic checkpoint of version %s failed; the commit itself succeeded", version)

    def _read_commits(self, segment: LogSegment) -> list[CommitData]:
        paths = [f"{LOG_DIR}/{p.name}" for p in segment.commits]

        def read(path: str) -> bytes:
            try:
                return self.store.read(path)
            except FileNotFoundError:
                raise CorruptLogError(f"{path} disappeared while the log was read", path=path) from None

        if len(paths) > 4 and not self.store.capabilities.local:
            with ThreadPoolExecutor(max_workers=16) as pool:
                datas = list(pool.map(read, paths))
        else:
            datas = [read(p) for p in paths]
        if engine_safety.relevant(self.location):
            versions = [p.version for p in segment.commits]
            self._warn_unsafe_engine(engine_safety.first_unsafe(self.location, zip(versions, datas, strict=True)))
        return [
            CommitData(p.version, path, d, p.mtime) for p, path, d in zip(segment.commits, paths, datas, strict=False)
        ]

    def _warn_unsafe_engine(self, risk: engine_safety.EngineRisk | None) -> None:
        """Log, once per DeltaLog, that an engine which cannot share this store safely has committed here."""
        if risk is not None and not getattr(self, "_engine_warned", False):
            self._engine_warned = True
            log.warning("%s", risk.message(self.location))

    def _replay(self, segment: LogSegment) -> Snapshot:
        """Replay ``segment``; an unreadable checkpoint falls back to an older one or to the commits.

        A torn or truncated checkpoint (a crashed writer, a bad copy) must not make a table unreadable when
        the log still holds what is needed without it. The fallback is logged with the file it skipped; only
        when nothing older can rebuild the version does the checkpoint's error reach the caller.
        """
        try:
            return self._replay_once(segment)
        except CorruptLogError as exc:
            cp = segment.checkpoint
            bad = {f"{LOG_DIR}/{p.name}" for p in cp.files} if cp is not None else set()
            in_checkpoint = exc.path is not None and (
                any(exc.path.endswith(b) for b in bad) or f"{LOG_DIR}/{SIDECAR_DIR}/" in exc.path
            )
            if cp is None or not in_checkpoint:
                raise
            skipped = {p.name for p in cp.files}
            paths = [p for p in self.list_log(0) if p.name not in skipped]
            try:
                fallback = build_segment(paths, segment.version, where=f"{self.location}/{LOG_DIR}")
            except DeltaLogError:
                raise exc from None
            log.warning(
                "skipping unreadable checkpoint %s (%s); rebuilding version %d from %s",
                cp.files[0].name,
                exc,
                segment.version,
                fallback.describe(),
            )
            return self._replay(fallback)

    def _replay_once(self, segment: LogSegment) -> Snapshot:
        if segment.checkpoint is not None:
            base = CheckpointReader(self.store).read_base(segment.checkpoint)
        else:
            base = BaseState(version=-1, source=f"{LOG_DIR}/{commit_name(0)}")
        result = replay(base, self._read_commits(segment), self.store.root)
        where = f"{self.location}/{LOG_DIR} ({segment.describe()})"
        if result.protocol is not None:
            check_readable(result.protocol, f"{self.location}/{result.protocol_source}")
        if result.protocol is None:
            raise CorruptLogError(f"no protocol action found in {where}: version {segment.version} is unreadable")
        if result.metadata is None:
            raise CorruptLogError(f"no metaData action found in {where}: version {segment.version} is unreadable")
        result.version = segment.version
        return Snapshot(self, segment, result, now_ms=self.now_ms())

    # ------------------------------------------------------------------------------------------ time
    def commit_timeline(self) -> list[tuple[int, int]]:
        """(version, commit time ms) for every commit file present, ascending.

        Versions before in-commit timestamps were enabled use their files' modification times made
        monotonic; versions from the enablement on use ``commitInfo.inCommitTimestamp``. The two parts are
        not mixed: a table copy rewrites mtimes, but never in-commit timestamps.
        """
        before, ict = self._timeline_parts()
        return before + ict

    def _timeline_parts(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        paths = self.list_log(0)
        commits = [p for p in paths if p.kind is Kind.COMMIT]
        if not paths:
            raise TableNotFoundError(f"no Delta table at {self.location}: {LOG_DIR} has no commits")
        ict_from = self._ict_enablement_version()
        if ict_from is None:
            return monotonize([(p.version, p.mtime) for p in commits]), []
        before = monotonize([(p.version, p.mtime) for p in commits if p.version < ict_from])
        ict: list[tuple[int, int]] = []
        for p in commits:
            if p.version < ict_from:
                continue
            value = self._commit_info(p.version).get("inCommitTimestamp")
            if not isinstance(value, int) or isinstance(value, bool):
                path = f"{LOG_DIR}/{p.name}"
                raise CorruptLogError(f"{path} has no inCommitTimestamp although the table enables them", path=path)
            ict.append((p.version, value))
        return before, ict

    def _ict_enablement(self) -> tuple[int, int | None] | None:
        # The latest snapshot also vets the protocol: history of a table we cannot read is refused too.
        conf = self.snapshot().configuration
        if str(conf.get("delta.enableInCommitTimestamps", "false")).lower() != "true":
            return None
        try:
            version = int(conf.get("delta.inCommitTimestampEnablementVersion", "0"))
        except ValueError:
            version = 0
        raw_ts = conf.get("delta.inCommitTimestampEnablementTimestamp")
        try:
            ts = int(raw_ts) if raw_ts is not None else None
        except ValueError:
            ts = None
        return version, ts

    def _ict_enablement_version(self) -> int | None:
        found = self._ict_enablement()
        return None if found is None else found[0]

    def version_at(self, timestamp: Timestamp, allow_after_latest: bool = False) -> int:
        """The version "as of" ``timestamp``: the latest commit at or before it.

        With in-commit timestamps, a time at or after their enablement searches only the versions that have
        them, and an earlier time only the versions before (as the protocol prescribes).
        """
        ts = to_epoch_ms(timestamp)
        earliest = self.earliest_version()
        before, ict = self._timeline_parts()
        before = [(v, t) for v, t in before if v >= earliest]
        ict = [(v, t) for v, t in ict if v >= earliest]
        enablement = self._ict_enablement()
        if ict:
            enabled_at = enablement[1] if enablement and enablement[1] is not None else ict[0][1]
            if ts >= enabled_at or not before:
                return version_at(ict, ts, allow_after_latest=allow_after_latest)
            return version_at(before, ts, allow_after_latest=True)
        return version_at(before, ts, allow_after_latest=allow_after_latest)

    def _commit_info(self, version: int) -> dict[str, Any]:
        path = f"{LOG_DIR}/{commit_name(version)}"
        data = self.store.read(path)
        for line_no, raw in enumerate(data.split(b"\n"), start=1):
            if b'"commitInfo"' not in raw:
                continue
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise CorruptLogError(
                    f"{path} line {line_no}: malformed JSON ({exc})", path=path, line=line_no
                ) from None
            info = obj.get("commitInfo") if isinstance(obj, dict) else None
            if isinstance(info, dict):
                return info
        return {}

    def history(self, limit: int | None = None) -> Iterator[HistoryEntry]:
        """Commits newest first: version, time (ms, as time travel sees it) and commitInfo."""
        timeline = self.commit_timeline()
        newest_first = list(reversed(timeline))
        for version, ts in newest_first if limit is None else newest_first[:limit]:
            info = self._commit_info(version)
            self._warn_unsafe_engine(engine_safety.engine_risk(info.get("engineInfo"), self.location, version))
            yield HistoryEntry(version, ts, info)

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
        self, version: int | None = None, timestamp: Timestamp | None = None, *, check_files: bool = True
    ) -> RestoreResult:
        """Commit the table's file set of ``version`` (or as of ``timestamp``) as a new version, operation RESTORE.

        See :mod:`deltalog.maintenance.restore`.
        """
        from deltalog.maintenance.restore import restore

        return restore(self, version=version, timestamp=timestamp, check_files=check_files)

    def __repr__(self) -> str:
        return f"DeltaLog({self.location!r})"


__all__ = ["DeltaLog", "HistoryEntry"]
