"""Reading what changed: the change data feed of a range of versions, and the rows appended since a version.

:func:`plan_changes` turns a caller's range into the files to read, checking what Delta Spark checks before it
reads a row (``CDCReader.getCDCRelation`` and ``changesToDF``; the rules are :mod:`deltalog.core.change_feed`):

* the bounds: one start (a version, a timestamp, or version 0), one end (the latest version by default); a
  timestamp start is the first version committed at or after it, a timestamp end the last committed at or
  before it, on time travel's clock (:mod:`deltalog.table.version_walk`); an end past the latest version is
  clipped to it; a start past the latest version or an end before the start is refused, typed, or with
  ``allow_out_of_range`` read as no changes (Delta Spark's ``timestampOutOfRange.enabled``, deltalake's
  ``allow_out_of_range``);
* every commit of the range is still in the log (log cleanup removes old ones: refused naming the version);
* change data feed was on at the start and at every ``metaData`` of the range (refused naming the first version
  where it was off);
* every schema of the range can be read in the table's latest schema, the schema rows come out in (Delta
  Spark's default, and deltalake's).

The log part of the range is read and checked before the first row, as Delta Spark's driver does; the rows then
stream (:func:`deltalog.data.changes.read_changes`), version after version, in bounded memory.

:func:`new_files` is the append-only reader (Delta Spark's streaming source over a table without change data):
the rows of the ``dataChange`` adds after a version, refusing (or with ``skip_change_commits`` skipping) versions
that remove or change rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from deltalog.core import actions as A
from deltalog.core.change_feed import (
    VersionChanges,
    inserted,
    read_incompatibility,
    recorded,
    removes_data,
    version_files,
)
from deltalog.core.column_mapping import mode as mapping_mode
from deltalog.core.features import check_readable
from deltalog.core.ict import ict_enablement
from deltalog.core.paths import LOG_DIR, commit_name
from deltalog.core.schema import SchemaError, parse_schema
from deltalog.core.segment import build_segment
from deltalog.core.timetravel import to_epoch_ms
from deltalog.data.changes import ChangeFilter, ChangeSchema, change_schema, read_changes
from deltalog.errors import (
    ChangeDataNotRecordedError,
    CorruptLogError,
    DataChangedError,
    IncompatibleSchemaChangeError,
    InvalidArgumentError,
    VersionNotFoundError,
)
from deltalog.table.context import TableContext
from deltalog.table.load import load_state
from deltalog.table.snapshot import Snapshot
from deltalog.table.version_walk import VersionWalk, first_version_from, last_version_until, shown_time

Timestamp = Any  # str (ISO-8601), datetime, date, or epoch milliseconds


@dataclass(frozen=True)
class ChangePlan:
    """A checked range and what to read for it: versions ``start..end`` (``versions`` holds those with rows to
    read, in order) in ``spec``'s columns, rows kept by ``filter``. Empty (no versions) when the range was out of
    range and the caller allowed it."""

    start: int | None
    end: int | None
    spec: ChangeSchema
    filter: ChangeFilter | None
    versions: tuple[VersionChanges, ...]

    def read(self, ctx: TableContext, workers: int | None = None) -> pa.RecordBatchReader:
        """The planned rows, streamed (files read ``workers`` at a time)."""
        return read_changes(ctx.store, self.spec, self.versions, self.filter, workers)


def _version_arg(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(f"{name} must be a version (an integer >= 0), not {value!r}")
    return value


def _one(version: Any, timestamp: Any, bound: str) -> None:
    if version is not None and timestamp is not None:
        raise InvalidArgumentError(f"pass {bound}_version or {bound}_timestamp, not both")


@dataclass(frozen=True)
class Bounds:
    """A caller's range of versions: a start (a version or a timestamp; neither means version 0), an end (one or
    the other; neither means the latest version), and whether a range outside the log reads as no changes."""

    starting_version: int | None = None
    ending_version: int | None = None
    starting_timestamp: Timestamp | None = None
    ending_timestamp: Timestamp | None = None
    allow_out_of_range: bool = False

    def resolve(self, ctx: TableContext, latest: Snapshot) -> tuple[int, int] | None:
        """The versions ``(start, end)`` these bounds mean on a table whose latest version is ``latest``'s; None
        when they are out of range and ``allow_out_of_range`` says to read nothing."""
        _one(self.starting_version, self.starting_timestamp, "starting")
        _one(self.ending_version, self.ending_timestamp, "ending")
        start_arg = _version_arg(self.starting_version, "starting_version")
        end_arg = _version_arg(self.ending_version, "ending_version")
        begin, until, allow = self.starting_timestamp, self.ending_timestamp, self.allow_out_of_range
        last = latest.version
        snapshot: Callable[[], Snapshot] = lambda: latest  # noqa: E731 - the latest, as time travel asks for it
        start = first_version_from(ctx, snapshot, begin) if begin is not None else start_arg or 0
        if start > last:
            if allow:
                return None
            at = f" (the first commit at or after {shown_time(begin)})" if begin is not None else ""
            raise VersionNotFoundError(f"starting version {start}{at} is after the latest version {last}", latest=last)
        if until is not None:
            if begin is not None and to_epoch_ms(begin) > to_epoch_ms(until):
                if allow:
                    return None
                raise InvalidArgumentError(
                    f"ending timestamp {shown_time(until)} is before starting timestamp {shown_time(begin)}"
                )
            try:
                end = last_version_until(ctx, snapshot, until)
            except VersionNotFoundError:
                if allow:
                    return None
                raise
            if begin is not None and end == start - 1:  # both between the same two commits: nothing changed
                return None
        else:
            end = last if end_arg is None else min(end_arg, last)
        if end < start:
            if allow:
                return None
            raise InvalidArgumentError(f"ending version {end} is before starting version {start}")
        return start, end


def _schema_of(metadata: A.Metadata, version: int) -> dict[str, Any]:
    try:
        return parse_schema(metadata.schema_string)
    except SchemaError as exc:
        path = f"{LOG_DIR}/{commit_name(version)}"
        raise CorruptLogError(f"{path}: {exc}", path=path) from None


def _not_recorded(version: int, start: int, end: int) -> ChangeDataNotRecordedError:
    return ChangeDataNotRecordedError(
        f"change data feed was not enabled at version {version} (delta.enableChangeDataFeed is not true there), "
        f"so the changes of versions {start}..{end} cannot be read",
        version=version,
    )


class _SchemaCheck:
    """Every schema of the range against the read schema (the latest)."""

    def __init__(self, latest: Snapshot, start: int, end: int) -> None:
        self.read = latest.schema_json
        self.read_mode = latest.column_mapping_mode
        self.start, self.end = start, end

    def check(self, schema: dict[str, Any], mode: str, version: int) -> None:
        problem = read_incompatibility(schema, mode, self.read, self.read_mode)
        if problem:
            raise IncompatibleSchemaChangeError(
                f"the schema at version {version} cannot be read in the table's latest schema: {problem}; the "
                f"changes of versions {self.start}..{self.end} cannot be read together (read a range that does "
                "not span the change)",
                version=version,
            )


def _start_snapshot(ctx: TableContext, latest: Snapshot, walk: VersionWalk, start: int) -> Snapshot:
    if start == latest.version:
        return latest
    return load_state(ctx, build_segment(walk.paths, start, where=f"{ctx.location}/{LOG_DIR}"))


def plan_changes(
    ctx: TableContext,
    latest: Snapshot,
    bounds: Bounds,
    columns: Sequence[str] | None = None,
    filter: Any = None,
) -> ChangePlan:
    """The checked range and its files (see the module docstring for the checks); nothing of the data is read
    until :meth:`ChangePlan.read` (see :meth:`deltalog.DeltaLog.changes` for the arguments)."""
    row_filter = None
    if filter is not None:
        mode = latest.column_mapping_mode
        row_filter = ChangeFilter(latest.schema_json, latest.partition_columns, mode, filter)
    also = row_filter.columns if row_filter is not None else ()
    spec = change_schema(latest.schema_json, latest.partition_columns, latest.column_mapping_mode, columns, also)
    resolved = bounds.resolve(ctx, latest)
    if resolved is None:
        return ChangePlan(None, None, spec, row_filter, ())
    start, end = resolved
    walk = VersionWalk(ctx, ict_enablement(latest.configuration, latest.protocol))
    walk.check_range(start, end)
    first = _start_snapshot(ctx, latest, walk, start)
    if not recorded(first.configuration):
        raise _not_recorded(start, start, end)
    schemas = _SchemaCheck(latest, start, end)
    protocol = first.protocol
    versions = []
    for commit in walk.commits(start, end):
        v = commit.version
        for action in commit.actions:
            if isinstance(action, A.Protocol):
                check_readable(action, f"{ctx.location}/{LOG_DIR}/{commit_name(v)}")
                protocol = action
        for action in commit.actions:
            if isinstance(action, A.Metadata):
                if not recorded(action.configuration):
                    raise _not_recorded(v, start, end)
                if v > start:
                    schemas.check(_schema_of(action, v), mapping_mode(protocol, action.configuration), v)
        files = version_files(commit.actions, commit.commit_info)
        if files:
            versions.append(VersionChanges(v, commit.timestamp, tuple(files)))
    schemas.check(first.schema_json, first.column_mapping_mode, start)
    return ChangePlan(start, end, spec, row_filter, tuple(versions))


# ---------------------------------------------------------------------------------------------- appends only
def plan_new_files(
    ctx: TableContext,
    latest: Snapshot,
    since_version: int,
    until_version: int | None = None,
    *,
    skip_change_commits: bool = False,
) -> ChangePlan:
    """The adds of versions ``since_version + 1 .. until_version`` (the latest by default, clipped to it) as a
    plan whose rows have no ``_change_type`` (see :meth:`deltalog.DeltaLog.new_files`); a version that removes or
    changes rows is a :class:`DataChangedError` naming it, or skipped with ``skip_change_commits``.
    ``since_version`` -1 starts at version 0."""
    if isinstance(since_version, bool) or not isinstance(since_version, int) or since_version < -1:
        raise InvalidArgumentError(f"since_version must be a version (an integer >= -1), not {since_version!r}")
    until = _version_arg(until_version, "until_version")
    last = latest.version
    spec = change_schema(latest.schema_json, latest.partition_columns, latest.column_mapping_mode, change_type=False)
    if since_version > last:
        raise VersionNotFoundError(
            f"since_version {since_version} is after the latest version {last}", earliest=None, latest=last
        )
    if until is not None and until < since_version:
        raise InvalidArgumentError(f"until_version {until} is before since_version {since_version}")
    start, end = since_version + 1, last if until is None else min(until, last)
    if start > end:
        return ChangePlan(None, None, spec, None, ())
    walk = VersionWalk(ctx, ict_enablement(latest.configuration, latest.protocol))
    versions = []
    for commit in walk.commits(start, end):
        if removes_data(commit.actions):
            if skip_change_commits:
                continue
            raise DataChangedError(
                f"version {commit.version} removes or changes rows ({(commit.commit_info or {}).get('operation')}), "
                "which a reader of new files cannot follow; read its changes with changes(), or pass "
                "skip_change_commits=True to skip such versions",
                version=commit.version,
            )
        files = [inserted(a) for a in commit.actions if isinstance(a, A.Add) and a.data_change]
        if files:
            versions.append(VersionChanges(commit.version, commit.timestamp, tuple(files)))
    return ChangePlan(start, end, spec, None, tuple(versions))


__all__ = [
    "Bounds",
    "ChangePlan",
    "plan_changes",
    "plan_new_files",
]
