"""The bytes of each attempt of a commit: the feature obligations that depend on the version attempted and
on the commits before it, run again for every attempt.

In-commit timestamps (:mod:`deltalog.core.ict`) must exceed the previous version's timestamp and name the
enablement version; row ids (:mod:`deltalog.core.row_tracking`) are numbered above the previous high-water
mark and carry the version as ``defaultRowCommitVersion``; identity values another writer took first are moved
beyond its marks (:mod:`deltalog.table.identity_rebase`). A retry comes after winners the first attempt
never saw, possibly on a protocol a winner changed (one that added row tracking), so an attempt is never
patched from the last one: :meth:`Attempts.encode` computes it from the prepared actions, the read version
and every winner so far. It is the commit loop's :data:`~deltalog.table.commit_loop.Encode` hook, which
keeps the loop free of feature knowledge.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from deltalog.core import actions as A
from deltalog.core import ict, properties, row_tracking
from deltalog.core.codec import encode_actions
from deltalog.core.file_facts import NO_FILES, KnownFiles, known_files, path_key
from deltalog.core.paths import LOG_DIR, commit_name
from deltalog.core.reachability import UNLISTED
from deltalog.core.schema import parse_schema, physical_names, walk_fields
from deltalog.errors import CorruptLogError, NotFoundError
from deltalog.table.commit_loop import Won
from deltalog.table.context import TableContext
from deltalog.table.history import commit_info
from deltalog.table.identity_rebase import IdentityRebase
from deltalog.table.listing import list_log
from deltalog.table.snapshot import Snapshot

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReadFacts:
    """What the attempts need of the version the transaction read (all empty for the commit that creates
    the table): protocol and configuration, the row-id high-water mark, and how to learn its commit time."""

    version: int
    protocol: A.Protocol | None = None
    configuration: Mapping[str, str] | None = None
    mark: int = row_tracking.NO_MARK
    time: Callable[[], ict.CommitTime] | None = None


def read_facts(ctx: TableContext, snap: Snapshot | None) -> ReadFacts:
    if snap is None:
        return ReadFacts(-1)
    return ReadFacts(
        snap.version,
        snap.protocol,
        snap.configuration,
        row_tracking.high_water_mark({k: d.configuration for k, d in snap.domain_metadata.items()}),
        lambda: snapshot_time(ctx, snap),
    )


def snapshot_time(ctx: TableContext, snap: Snapshot) -> ict.CommitTime:
    """The read version's commit time: its ``inCommitTimestamp`` when it has one, else its file's time.

    The snapshot's own commitInfo when it replayed that commit; otherwise (loaded from a checkpoint at its
    version) the commit file is read. A commit file cleaned up leaves the time of the file that stands for
    the version (its checkpoint).
    """
    info = snap.commit_info
    if info is None:
        try:
            info = commit_info(ctx, snap.version)
        except NotFoundError:
            info = {}
    stamped = stamp_of(info)
    mtime = snap.tip.files[0][2] if snap.tip.files else 0
    if stamped is None and mtime == UNLISTED:
        mtime = listed_mtime(ctx, snap.version)
    return ict.CommitTime(snap.version, stamped, mtime)


def stamp_of(info: Mapping[str, Any]) -> int | None:
    """A commitInfo's ``inCommitTimestamp`` when it is an integer (another engine's odd value: none)."""
    value = info.get("inCommitTimestamp")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def listed_mtime(ctx: TableContext, version: int) -> int:
    """The store's time of commit ``version`` (one short listing): for a commit read without a listing."""
    name = commit_name(version)
    for p in list_log(ctx.store, version, version):
        if p.name == name:
            return p.mtime
    raise CorruptLogError(f"{LOG_DIR}/{name} is not listed, though it was just read", path=f"{LOG_DIR}/{name}")


def known_for(snap: Snapshot | None, actions: Sequence[A.Action], operation: str, root: str) -> KnownFiles:
    """The last committed add of each path the commit re-commits or removes (only those paths, and only when
    there is one: a blind append of new files loads no file list). A restore's adds come from the version it
    restores, so those carrying row ids are their own last add."""
    touched = [a for a in actions if isinstance(a, (A.Add, A.Remove))]
    if not any(
        isinstance(a, A.Remove) or a.base_row_id is not None or a.default_row_commit_version is not None
        for a in touched
    ):
        return NO_FILES
    wanted = {path_key(a.path, root) for a in touched}
    live = [a for a in snap.add_actions() if path_key(a.path, root) in wanted] if snap is not None else []
    if operation == "RESTORE":
        have = {path_key(a.path, root) for a in live}
        live += [
            a
            for a in touched
            if isinstance(a, A.Add) and a.base_row_id is not None and path_key(a.path, root) not in have
        ]
    return known_files(live, root)


def enable_row_tracking(actions: Sequence[A.Action], read: ReadFacts, live_files: Callable[[], int]) -> list[A.Action]:
    """A commit whose metaData switches ``delta.enableRowTracking`` on: the materialized column names are
    chosen (as Delta Spark names them) and the enablement is checked
    (:func:`~deltalog.core.row_tracking.check_enablement`: refused on a table with live files, which would
    need a backfill)."""
    out = list(actions)
    for i, a in enumerate(out):
        if not isinstance(a, A.Metadata):
            continue
        conf = dict(a.configuration)
        before = read.configuration
        if not properties.get_bool(conf, row_tracking.ENABLED) or (
            before is not None and properties.get_bool(before, row_tracking.ENABLED)
        ):
            return out
        conf.setdefault(row_tracking.MATERIALIZED_ROW_ID, f"_row-id-col-{uuid.uuid4()}")
        conf.setdefault(row_tracking.MATERIALIZED_COMMIT_VERSION, f"_row-commit-version-col-{uuid.uuid4()}")
        protocol = next((p for p in out if isinstance(p, A.Protocol)), read.protocol)
        assert protocol is not None
        schema = row_tracking_schema(a)
        row_tracking.check_enablement(
            before,
            conf,
            protocol,
            live_files=live_files() if read.version >= 0 else 0,
            column_names=schema,
        )
        out[i] = replace(a, configuration=conf)
    return out


def row_tracking_schema(metadata: A.Metadata) -> list[str]:
    """Every logical and physical column name of ``metadata``'s schema (materialized names must differ)."""
    schema = parse_schema(metadata.schema_string)
    names = [at.field.get("name", "") for at in walk_fields(schema)]
    mode = properties.column_mapping_mode(metadata.configuration)
    return [*names, *physical_names(schema, mode).values()]


class Attempts:
    """The attempts of one commit: ``actions`` (prepared, without commitInfo) and ``info`` on top of ``read``.

    ``known`` gives :func:`known_for` the commit (asked once, and only when row ids are assigned: it may load
    the file list); ``now_ms`` is the writer's clock; ``mtime_of`` the store's time of a winner read without a
    listing (needed only for a winner without an in-commit timestamp); ``rebase`` moves an identity-only
    commit onto a winner's identity marks (:mod:`deltalog.table.identity_rebase`).
    """

    def __init__(
        self,
        actions: Sequence[A.Action],
        info: A.CommitInfo,
        read: ReadFacts,
        *,
        known: Callable[[], KnownFiles],
        now_ms: Callable[[], int],
        mtime_of: Callable[[int], int],
        rebase: IdentityRebase | None = None,
    ) -> None:
        self._rebase = rebase
        self._actions = tuple(actions)
        self._info = info
        self._read = read
        self._known_of = known
        self._known: KnownFiles | None = None
        self._now_ms = now_ms
        self._mtime_of = mtime_of
        self._read_time: ict.CommitTime | None = None
        #: the actions of the last attempt made, commitInfo first
        self.actions: tuple[A.Action, ...] = ()

    def encode(self, version: int, won: Sequence[Won] = ()) -> bytes:
        """The bytes of the attempt at ``version`` after the winners ``won`` (the loop's Encode hook)."""
        self.actions = tuple(self.attempt(version, won))
        return encode_actions(self.actions)

    def attempt(self, version: int, won: Sequence[Won] = ()) -> list[A.Action]:
        protocol, configuration = self._in_force(won)
        actions: list[A.Action] = list(self._actions)
        theirs = next((a for w in reversed(won) for a in w.winner.actions if isinstance(a, A.Metadata)), None)
        if theirs is not None and self._rebase is not None:  # only an identity-only winner got past the checker
            actions = self._rebase.attempt(actions, theirs)
        info = self._info
        if row_tracking.assigns(protocol, configuration):
            mark = self._mark(won)
            if self._known is None:
                self._known = self._known_of()
            actions = list(row_tracking.assign(actions, read_mark=mark, version=version, known=self._known).actions)
            tags = row_tracking.preserved_tags(protocol, configuration, copies_rows=False)
            if tags:
                other = dict(info.other)
                other["tags"] = {**dict(other.get("tags") or {}), **tags}
                info = replace(info, other=other)
        out: list[A.Action] = [info, *actions]
        if not ict.enabled(protocol, configuration):
            return out
        previous = self._previous(won)
        timestamp = ict.first_attempt_timestamp(self._now_ms(), self._time_of_read())
        for w in won:
            timestamp = ict.retry_timestamp(timestamp, self._winner_time(w))
        out = ict.stamp_attempt(
            out,
            version=version,
            timestamp=timestamp,
            protocol=protocol,
            configuration=configuration,
            prior_configuration=self._read.configuration,
        )
        ict.check_stamped(out, previous)
        return out

    def _in_force(self, won: Sequence[Won]) -> tuple[A.Protocol, Mapping[str, str]]:
        """The protocol and configuration after this commit: its own, else the last winner's protocol (a
        winner may add features; a winner's metaData conflicts) and the read version's."""
        protocol = next((a for a in reversed(self._actions) if isinstance(a, A.Protocol)), None)
        if protocol is None:
            for w in won:
                protocol = next((a for a in w.winner.actions if isinstance(a, A.Protocol)), protocol)
        protocol = protocol or self._read.protocol
        metadata = next((a for a in reversed(self._actions) if isinstance(a, A.Metadata)), None)
        configuration = metadata.configuration if metadata is not None else self._read.configuration
        assert protocol is not None and configuration is not None  # prepare_commit ensured both
        return protocol, configuration

    def _mark(self, won: Sequence[Won]) -> int:
        mark = self._read.mark
        for w in won:
            domains = [a for a in w.winner.actions if isinstance(a, A.DomainMetadata)]
            theirs = row_tracking.high_water_mark(domains)
            if any(d.domain == row_tracking.DOMAIN and not d.removed for d in domains):
                if theirs < mark:
                    raise CorruptLogError(
                        f"version {w.winner.version}: its row-id high-water mark {theirs} is below {mark} "
                        "(the mark never decreases)",
                        path=f"{LOG_DIR}/{commit_name(w.winner.version)}",
                    )
                mark = theirs
        return mark

    def _time_of_read(self) -> ict.CommitTime | None:
        if self._read.time is None:
            return None
        if self._read_time is None:
            self._read_time = self._read.time()
        return self._read_time

    def _winner_time(self, w: Won) -> ict.CommitTime:
        stamped = stamp_of(w.winner.commit_info)
        mtime = w.mtime
        if stamped is None and mtime == UNLISTED:
            mtime = self._mtime_of(w.winner.version)
        return ict.CommitTime(w.winner.version, stamped, mtime)

    def _previous(self, won: Sequence[Won]) -> ict.CommitTime | None:
        return self._winner_time(won[-1]) if won else self._time_of_read()


__all__ = ["Attempts", "ReadFacts", "enable_row_tracking", "known_for", "listed_mtime", "read_facts", "snapshot_time"]
