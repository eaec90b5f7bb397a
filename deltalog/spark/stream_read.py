"""The streaming source's driver side: Delta Spark's offsets over a table's versions, and what each batch reads.

Facts from Delta Spark (delta-io/delta ``spark/.../sources/DeltaSource.scala`` and ``DeltaSourceOffset.scala``
at 010edccc / 062e5724), kept here so that a query's checkpoint means what it means there:

* An offset is ``{"sourceVersion": 1, "reservoirId": <table id>, "reservoirVersion": v, "index": i,
  "isStartingVersion": b}``: everything up to file ``i`` of version ``v`` has been read (``i`` = -1: nothing of
  ``v`` yet). ``isStartingVersion`` (the initial snapshot flag, under its old name) says ``v``'s files are the
  table's live files at ``v`` rather than what ``v`` added.
* Without ``startingVersion``/``startingTimestamp`` a new query reads the snapshot at the version it finds first
  (its files ordered by modification time, then path), then each later version's ``dataChange`` adds in their
  order in the commit. With one of them there is no snapshot: only the ``dataChange`` adds of the versions from
  the start on (``latest``: from the next version; a timestamp: the first version committed at or after it).
* A version's last file moves the offset to the next version (index -1), so a finished version is never read
  again; a version without files still moves it (its index -1 entry).
* A version that removes rows fails the stream, typed (:class:`~deltalog.errors.DataChangedError`), unless
  ``ignoreDeletes`` (a version of removes only), ``ignoreChanges`` (any: its adds are read again, rows and all)
  or ``skipChangeCommits`` (the whole version passes unread). A schema change the read schema cannot read, or
  any new column, fails it too (restart the query to read with the new schema), as does a protocol deltalog
  cannot read.
* Admission control: a batch takes files while fewer than ``maxFilesPerTrigger`` (default 1000) were taken and
  fewer than ``maxBytesPerTrigger`` bytes (the file that crosses it is taken); Spark's read limit for the
  trigger decides (``ReadAllAvailable`` ignores both; ``Trigger.AvailableNow`` reads up to the version latest
  when it began, in batches that honour them).
* An offset naming another table id than the table's fails the query
  (:class:`~deltalog.errors.SourceTableChangedError`): the table was recreated, or the checkpoint is another
  query's.

With ``readChangeFeed`` the offsets index a version's change files instead (the change data feed's files of each
version, :func:`deltalog.core.change_feed.version_files`; the initial snapshot's files read as inserts), and every
change is streamed: nothing fails the stream for removing rows.

What is read once stays read: each version's commit file is read once per run of the query (kept until Spark
commits a batch past it), however often Spark asks for offsets and partitions.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from deltalog.core import actions as A
from deltalog.core import properties
from deltalog.core.change_feed import inserted, read_incompatibility, recorded, version_files
from deltalog.core.features import check_readable
from deltalog.core.ict import ict_enablement
from deltalog.core.paths import LOG_DIR, commit_name
from deltalog.core.schema import parse_schema
from deltalog.data.read import DataFile
from deltalog.errors import (
    ChangeDataNotRecordedError,
    DataChangedError,
    IncompatibleSchemaChangeError,
    InvalidArgumentError,
    SourceTableChangedError,
)
from deltalog.log import DeltaLog
from deltalog.spark._changes_io import change_row
from deltalog.spark._scan_io import file_row
from deltalog.spark.options import Parsed, byte_size, non_negative, positive
from deltalog.spark.read_plan import TableRead
from deltalog.table.listing import list_log
from deltalog.table.version_walk import VersionWalk, first_version_from

logger = logging.getLogger(__name__)

#: the offset format's version (Delta Spark's VERSION_1: the index before a version's files is -1)
SOURCE_VERSION = 1
BASE_INDEX = -1
#: Delta Spark's default ``maxFilesPerTrigger``
DEFAULT_MAX_FILES = 1000
#: the reservoir version of the offset a new query starts from, before it has found its first version
NOT_STARTED = -1


@dataclass(frozen=True, order=True)
class Offset:
    """A position in the stream (Delta Spark's ``DeltaSourceOffset``)."""

    version: int
    index: int
    initial: bool
    table_id: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "sourceVersion": SOURCE_VERSION,
            "reservoirId": self.table_id,
            "reservoirVersion": self.version,
            "index": self.index,
            "isStartingVersion": self.initial,
        }

    @property
    def started(self) -> bool:
        return self.version != NOT_STARTED


def parse_offset(doc: Mapping[str, Any], table_id: str, uri: str) -> Offset:
    """``doc`` as an offset of the table ``table_id``; an offset of another table fails the query, typed."""
    try:
        found = str(doc["reservoirId"])
        offset = Offset(int(doc["reservoirVersion"]), int(doc["index"]), bool(doc["isStartingVersion"]), found)
    except (KeyError, TypeError, ValueError):
        raise InvalidArgumentError(f"not an offset of a deltalog or Delta stream: {dict(doc)!r}") from None
    if found != table_id:
        raise SourceTableChangedError(
            f"the stream's checkpoint holds offsets of table {found}, but the table at {uri} is {table_id}: the "
            "table was deleted and created again, or the checkpoint belongs to a query that read another table; "
            "start the query with a new checkpoint location",
            table_id=table_id,
            checkpoint_table_id=found,
        )
    return offset


@dataclass(frozen=True)
class StreamOptions:
    """A streaming read's options, typed (Delta Spark's names, :mod:`deltalog.spark.options`)."""

    max_files: int | None = None
    max_bytes: int | None = None
    ignore_deletes: bool = False
    ignore_changes: bool = False
    skip_change_commits: bool = False
    exclude: str | None = None
    starting_version: int | str | None = None  # an int, or "latest"
    starting_timestamp: str | None = None
    change_feed: bool = False

    @classmethod
    def of(cls, parsed: Parsed) -> StreamOptions:
        files = parsed.get("maxFilesPerTrigger")
        size = parsed.get("maxBytesPerTrigger")
        start = parsed.get("startingVersion")
        starting: int | str | None = None
        if start is not None:
            starting = "latest" if start.strip().lower() == "latest" else non_negative("startingVersion", start)
        if starting is not None and parsed.get("startingTimestamp") is not None:
            raise InvalidArgumentError("options startingVersion and startingTimestamp go alone: pass one of them")
        exclude = parsed.get("excludeRegex")
        if exclude is not None:
            try:
                re.compile(exclude)
            except re.error as exc:
                raise InvalidArgumentError(
                    f"option excludeRegex={exclude!r} is not a regular expression: {exc}"
                ) from None
        return cls(
            max_files=positive("maxFilesPerTrigger", files) if files is not None else None,
            max_bytes=byte_size("maxBytesPerTrigger", size) if size is not None else None,
            ignore_deletes=parsed.flag("ignoreDeletes"),
            ignore_changes=parsed.flag("ignoreChanges") or parsed.flag("ignoreFileDeletion"),
            skip_change_commits=parsed.flag("skipChangeCommits"),
            exclude=exclude,
            starting_version=starting,
            starting_timestamp=parsed.get("startingTimestamp"),
            change_feed=parsed.flag("readChangeFeed") or parsed.flag("readChangeData"),
        )

    @property
    def starts_at_a_version(self) -> bool:
        return self.starting_version is not None or self.starting_timestamp is not None

    def default_limit(self) -> tuple[int | None, int | None]:
        """(files, bytes) a trigger reads by default: Delta Spark's ``AdmissionLimits().toReadLimit``."""
        if self.max_files is None and self.max_bytes is None:
            return DEFAULT_MAX_FILES, None
        return self.max_files, self.max_bytes


@dataclass(frozen=True)
class Entry:
    """One position of the stream (Delta Spark's ``IndexedFile``): a file of a version (``row`` for the read
    task, ``size`` for admission), or the entry before a version's files (``row`` None)."""

    version: int
    index: int
    row: tuple[Any, ...] | None = None
    size: int = 0
    path: str = ""
    is_last: bool = False

    def after(self, offset: Offset) -> bool:
        return (self.version, self.index) > (offset.version, offset.index)


class Admission:
    """Delta Spark's ``AdmissionLimits``: files are admitted while the budget lasts; the one that exhausts it
    is admitted too (a batch always makes progress)."""

    def __init__(self, files: int | None, size: int | None) -> None:
        self.files = files if files is not None else 1 << 62
        self.bytes = size if size is not None else 1 << 62

    def admit(self, entry: Entry) -> bool:
        room = self.files > 0 and self.bytes > 0
        if entry.row is not None:
            self.files -= 1
            self.bytes -= entry.size
        return room


class StreamPlanner:
    """One streaming query's reader state on the driver: the table it reads (pinned when the query started),
    the versions it has read (each read once), and the offsets it hands Spark."""

    def __init__(self, table: TableRead, table_id: str, options: StreamOptions) -> None:
        self.table = table
        self.table_id = table_id
        self.options = options
        self._log: DeltaLog | None = None
        self._versions: dict[int, list[Entry]] = {}
        self._snapshot: tuple[int, list[Entry]] | None = None
        self._start: Offset | None = None  # where a query that has committed nothing starts, once found
        self._until: int | None = None  # Trigger.AvailableNow: the last version to read
        self._exclude = re.compile(options.exclude) if options.exclude else None
        #: commit files read by this planner (each version once): what a test counts
        self.commits_read: list[int] = []

    # ------------------------------------------------------------------------------------------ the table
    @property
    def log(self) -> DeltaLog:
        if self._log is None:
            t = self.table
            self._log = DeltaLog.for_table(t.uri, dict(t.storage_options) if t.storage_options else None)
        return self._log

    def _latest_version(self) -> int:
        latest = self.log.latest_version()
        return latest if self._until is None else min(latest, self._until)

    def prepare_available_now(self) -> None:
        """Trigger.AvailableNow: read up to the version that is the latest now, and no further."""
        self._until = self.log.latest_version()

    # ------------------------------------------------------------------------------------------ offsets
    def initial_offset(self) -> dict[str, Any]:
        """The offset of a query that has read nothing: its first version is found when it first asks for data
        (and found again from the batch's end offset when a restart repeats that batch)."""
        return Offset(NOT_STARTED, BASE_INDEX, not self.options.starts_at_a_version, self.table_id).to_json()

    def _starting_version(self) -> int:
        o = self.options
        if o.starting_version == "latest":
            return self.log.latest_version() + 1
        if isinstance(o.starting_version, int):
            latest = self.log.latest_version()
            if o.starting_version > latest:
                raise InvalidArgumentError(
                    f"option startingVersion={o.starting_version} is after the table's latest version {latest}"
                )
            return o.starting_version
        assert o.starting_timestamp is not None
        snapshot = self.log.snapshot
        return first_version_from(self.log.context, snapshot, o.starting_timestamp)

    def _first(self) -> Offset:
        """Where a new query starts: the snapshot at the latest version, or the starting version's adds."""
        if self._start is None:
            if self.options.starts_at_a_version:
                self._start = Offset(self._starting_version(), BASE_INDEX, False, self.table_id)
            else:
                self._start = Offset(self.log.latest_version(), BASE_INDEX, True, self.table_id)
        return self._start

    def _from_end(self, end: Offset) -> Offset:
        """The start of a first batch repeated after a restart, from its end offset (Delta Spark's ``getBatch``
        without a start): the snapshot at the end's version, or at the one before when the end moved past it."""
        if self.options.starts_at_a_version:
            return self._first()
        if end.initial:
            return Offset(end.version, BASE_INDEX, True, self.table_id)
        return Offset(end.version - 1, BASE_INDEX, True, self.table_id)

    def latest_offset(
        self, start_doc: Mapping[str, Any], limit: tuple[int | None, int | None] | None
    ) -> dict[str, Any]:
        """The end of the next batch from ``start_doc`` under ``limit`` ((files, bytes); None: all available)."""
        start = parse_offset(start_doc, self.table_id, self.table.uri)
        begin = start if start.started else self._first()
        if begin.version < 0:  # an empty log (no version yet)
            return dict(start_doc)
        admission = Admission(*limit) if limit is not None else None
        last: Entry | None = None
        for entry in self._entries(begin):
            if admission is not None and not admission.admit(entry):
                break
            last = entry
        if last is None:
            return dict(start_doc)
        if last.is_last:
            end = Offset(last.version + 1, BASE_INDEX, False, self.table_id)
        else:
            end = Offset(last.version, last.index, last.version == begin.version and begin.initial, self.table_id)
        return end.to_json()

    def rows(self, start_doc: Mapping[str, Any], end_doc: Mapping[str, Any]) -> list[tuple[tuple[Any, ...], int]]:
        """The files of the batch after ``start_doc`` up to ``end_doc``: (task row, size) each, in order."""
        start = parse_offset(start_doc, self.table_id, self.table.uri)
        end = parse_offset(end_doc, self.table_id, self.table.uri)
        if (start.version, start.index, start.initial) == (end.version, end.index, end.initial):
            return []
        begin = start if start.started else self._from_end(end)
        out = []
        # an end at a version's first entry holds nothing of it (that version may not even exist yet)
        last = end.version - 1 if end.index == BASE_INDEX else end.version
        for entry in self._entries(begin, last):
            if (entry.version, entry.index) > (end.version, end.index):
                break
            if entry.row is None or (self._exclude is not None and self._exclude.search(entry.path)):
                continue
            out.append((entry.row, entry.size))
        return out

    def committed(self, end_doc: Mapping[str, Any]) -> None:
        """Spark committed the batch ending at ``end_doc``: what comes before it is never asked for again."""
        end = parse_offset(end_doc, self.table_id, self.table.uri)
        for version in [v for v in self._versions if v < end.version]:
            del self._versions[version]
        if not end.initial:
            self._snapshot = None

    # ------------------------------------------------------------------------------------------ entries
    def _entries(self, begin: Offset, last: int | None = None) -> Iterator[Entry]:
        """Every entry after ``begin``, in order: the rest of the snapshot when ``begin`` is in it, then each
        version's entries up to ``last`` (the latest by default)."""
        if begin.initial:
            for entry in self._snapshot_entries(begin.version):
                if entry.after(begin):
                    yield entry
            first = begin.version + 1
        else:
            first = begin.version
        until = self._latest_version() if last is None else last
        for version in range(first, until + 1):
            for entry in self._version_entries(version, until):
                if entry.after(begin):
                    yield entry

    def _snapshot_entries(self, version: int) -> list[Entry]:
        if self._snapshot is None or self._snapshot[0] != version:
            snap = self.log.snapshot(version=version)
            adds = sorted(snap.add_actions(), key=lambda a: (a.modification_time, a.path))
            timestamp = self._version_time(version) if self.options.change_feed else 0
            entries = [self._file_entry(version, i, a, timestamp, i == len(adds) - 1) for i, a in enumerate(adds)]
            self._snapshot = (version, entries)
        return self._snapshot[1]

    def _version_time(self, version: int) -> int:
        """A version's time as time travel resolves it (the change rows' ``_commit_timestamp``)."""
        log = self.log
        latest = log.snapshot()
        walk = VersionWalk(log.context, ict_enablement(latest.configuration, latest.protocol))
        return next(iter(walk.commits(version, version))).timestamp

    def _file_entry(self, version: int, index: int, add: A.Add, timestamp: int, is_last: bool) -> Entry:
        row = change_row(inserted(add), version, timestamp) if self.options.change_feed else file_row(DataFile.of(add))
        return Entry(version, index, row, add.size, add.path, is_last)

    def _version_entries(self, version: int, until: int) -> list[Entry]:
        if version not in self._versions:
            self._read_versions(version, until)
        return self._versions[version]

    def _read_versions(self, first: int, until: int) -> None:
        """Read the commits of ``first..until`` not read yet (each once) into entries."""
        log = self.log
        latest = log.snapshot()
        enablement = ict_enablement(latest.configuration, latest.protocol)
        paths = list_log(log.store, 0 if self.options.change_feed else first)
        walk = VersionWalk(log.context, enablement, paths)
        missing = [v for v in range(first, until + 1) if v not in self._versions]
        if not missing:
            return
        for commit in walk.commits(missing[0], missing[-1]):
            self.commits_read.append(commit.version)
            self._versions[commit.version] = self._entries_of(commit.version, commit.timestamp, commit)

    def _entries_of(self, version: int, timestamp: int, commit: Any) -> list[Entry]:
        actions: tuple[A.Action, ...] = commit.actions
        source = f"{LOG_DIR}/{commit_name(version)}"
        for action in actions:
            if isinstance(action, A.Protocol):
                check_readable(action, source)
            elif isinstance(action, A.Metadata):
                self._check_metadata(action, version)
        base = Entry(version, BASE_INDEX)
        if self.options.change_feed:
            files = version_files(actions, commit.commit_info)
            rows = [(change_row(f, version, timestamp), f.size or 0, f.path) for f in files]
        else:
            adds = self._admitted_adds(version, actions, commit.commit_info)
            rows = [(file_row(DataFile.of(a)), a.size, a.path) for a in adds]
        entries = [base]
        for i, (row, size, path) in enumerate(rows):
            entries.append(Entry(version, i, row, size, path, i == len(rows) - 1))
        return entries

    def _admitted_adds(
        self, version: int, actions: tuple[A.Action, ...], info: Mapping[str, Any] | None
    ) -> list[A.Add]:
        """A version's ``dataChange`` adds, after Delta Spark's checks of what else it does."""
        adds = [a for a in actions if isinstance(a, A.Add) and a.data_change]
        removed = next((a.path for a in actions if isinstance(a, A.Remove) and a.data_change), None)
        if removed is None:
            return adds
        o = self.options
        if o.skip_change_commits:
            return []
        operation = (info or {}).get("operation")
        if adds and not o.ignore_changes:
            raise DataChangedError(
                f"version {version} of {self.table.uri} changes rows ({operation}: it removes {removed} and adds "
                "files), which a streaming read of appended rows cannot follow; set option skipChangeCommits to "
                "pass over such versions (or ignoreChanges to read their new files again)",
                version=version,
            )
        if not adds and not (o.ignore_deletes or o.ignore_changes):
            raise DataChangedError(
                f"version {version} of {self.table.uri} deletes rows ({operation}: it removes {removed}), which a "
                "streaming read of appended rows cannot follow; set option ignoreDeletes (or skipChangeCommits) to "
                "pass over such versions",
                version=version,
            )
        return adds

    def _check_metadata(self, metadata: A.Metadata, version: int) -> None:
        if self.options.change_feed and not recorded(metadata.configuration):
            raise ChangeDataNotRecordedError(
                f"change data feed is off from version {version} of {self.table.uri} on: the stream of its changes "
                "cannot go on",
                version=version,
            )
        if metadata.schema_string is None:
            return
        schema = parse_schema(metadata.schema_string)
        mode = properties.column_mapping_mode(metadata.configuration)
        problem = read_incompatibility(schema, mode, self.table.schema, self.table.column_mapping)
        if problem:
            raise IncompatibleSchemaChangeError(
                f"version {version} of {self.table.uri} changes the schema the stream reads ({problem}); restart "
                "the query to read with the new schema",
                version=version,
            )


__all__ = [
    "BASE_INDEX",
    "DEFAULT_MAX_FILES",
    "Admission",
    "Entry",
    "Offset",
    "StreamOptions",
    "StreamPlanner",
    "parse_offset",
]
