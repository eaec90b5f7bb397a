"""The version a transaction read, as the commit stages ask about it: a snapshot, or nothing (a create).

A transaction reads a :class:`~deltalog.table.snapshot.Snapshot`, except the one that creates the table: it reads
version -1, and its :class:`~deltalog.table.commit.new_table.NewTable` is what it stages, not what it read. The
stages ask the same questions of both (the protocol and metadata read, the live adds of some paths, whether the
table holds rows, the read version's commit time), so the answer to "which kind of read is this" is given once,
here (:func:`read_state`), and every stage takes a :class:`ReadState`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from deltalog.core import actions as A
from deltalog.core.commit.conflicts import PartitionSchema
from deltalog.core.features import ict
from deltalog.core.files.facts import path_key
from deltalog.core.log.paths import LOG_DIR, commit_name
from deltalog.core.log.reachability import UNLISTED, Tip
from deltalog.core.schema import top_level_fields
from deltalog.errors import CorruptLogError, NotFoundError
from deltalog.table import snapshot as snapshots
from deltalog.table.commit.new_table import NewTable
from deltalog.table.context import TableContext
from deltalog.table.history import commit_info
from deltalog.table.listing import list_log
from deltalog.table.snapshot import Snapshot

#: the tip a create is attempted on: the table has no version yet, so there is nothing to have moved on
NO_TABLE = Tip(-1, ())


class ReadState(Protocol):
    """What the commit stages need of the version a transaction read (everything empty for a create)."""

    @property
    def version(self) -> int:
        """The version read: -1 for the transaction that creates the table."""

    @property
    def protocol(self) -> A.Protocol | None:
        """The protocol in force at the read version (None: there is no table yet)."""

    @property
    def metadata(self) -> A.Metadata | None:
        """The metadata in force at the read version (None: there is no table yet)."""

    @property
    def schema(self) -> Mapping[str, Any] | None:
        """The read version's schema JSON (None: there is no table yet)."""

    @property
    def configuration(self) -> Mapping[str, str]:
        """The read version's table properties (none for a create)."""

    @property
    def domains(self) -> Mapping[str, A.DomainMetadata]:
        """The read version's live domains (none for a create)."""

    @property
    def tip(self) -> Tip:
        """The read version's files as listed: what the first attempt is made on top of."""

    @property
    def partition_schema(self) -> PartitionSchema:
        """The partition columns' types and physical names, for judging read predicates."""

    def live_adds(self, keys: Collection[str], root: str) -> list[A.Add]:
        """The live adds whose canonical paths are ``keys`` (loads the file list; a create has none)."""

    def num_files(self) -> int:
        """How many live files the read version has (loads the file list when deferred; a create has none)."""

    def commit_time(self, ctx: TableContext) -> ict.CommitTime | None:
        """The read version's commit time, as in-commit timestamps need it (None: there is no version)."""


@dataclass(frozen=True)
class SnapshotRead:
    """A transaction that read ``snapshot``."""

    snapshot: Snapshot

    @property
    def version(self) -> int:
        return self.snapshot.version

    @property
    def protocol(self) -> A.Protocol:
        return self.snapshot.protocol

    @property
    def metadata(self) -> A.Metadata:
        return self.snapshot.metadata

    @property
    def schema(self) -> Mapping[str, Any]:
        return self.snapshot.schema_json

    @property
    def configuration(self) -> Mapping[str, str]:
        return self.snapshot.configuration

    @property
    def domains(self) -> Mapping[str, A.DomainMetadata]:
        return self.snapshot.domain_metadata

    @property
    def tip(self) -> Tip:
        return snapshots.tip(self.snapshot)

    @property
    def partition_schema(self) -> PartitionSchema:
        snap = self.snapshot
        cols = {f["name"]: f["type"] for f in top_level_fields(snap.schema_json)}
        return PartitionSchema(
            types={c: cols[c] for c in snap.partition_columns if c in cols},
            physical={c: snap.physical_names.get(c, c) for c in snap.partition_columns},
        )

    def live_adds(self, keys: Collection[str], root: str) -> list[A.Add]:
        if not keys:
            return []
        return [a for a in self.snapshot.add_actions() if path_key(a.path, root) in keys]

    def num_files(self) -> int:
        return self.snapshot.num_files

    def commit_time(self, ctx: TableContext) -> ict.CommitTime:
        """The read version's commit time: its ``inCommitTimestamp`` when it has one, else its file's time.

        The snapshot's own commitInfo when it replayed that commit; otherwise (loaded from a checkpoint at its
        version) the commit file is read. A commit file cleaned up leaves the time of the file that stands for
        the version (its checkpoint).
        """
        snap = self.snapshot
        info = snap.commit_info
        if info is None:
            try:
                info = commit_info(ctx, snap.version)
            except NotFoundError:
                info = {}
        stamped = ict.stamp_of(info)
        mtime = snapshots.tip(snap).files[0][2] if snapshots.tip(snap).files else 0
        if stamped is None and mtime == UNLISTED:
            mtime = listed_mtime(ctx, snap.version)
        return ict.CommitTime(snap.version, stamped, mtime)


@dataclass(frozen=True)
class NothingRead:
    """A transaction that creates ``table``: it read version -1, where there is nothing."""

    table: NewTable

    @property
    def version(self) -> int:
        return -1

    @property
    def protocol(self) -> None:
        return None

    @property
    def metadata(self) -> None:
        return None

    @property
    def schema(self) -> None:
        return None

    @property
    def tip(self) -> Tip:
        return NO_TABLE

    @property
    def configuration(self) -> Mapping[str, str]:
        return {}

    @property
    def domains(self) -> Mapping[str, A.DomainMetadata]:
        return {}

    @property
    def partition_schema(self) -> PartitionSchema:
        return PartitionSchema(types={}, physical={})

    def live_adds(self, keys: Collection[str], root: str) -> list[A.Add]:
        return []

    def num_files(self) -> int:
        return 0

    def commit_time(self, ctx: TableContext) -> None:
        return None


def read_state(read: Snapshot | NewTable) -> ReadState:
    """The stages' view of what a transaction read: a snapshot, or a new table (nothing read)."""
    return NothingRead(read) if isinstance(read, NewTable) else SnapshotRead(read)


def listed_mtime(ctx: TableContext, version: int) -> int:
    """The store's time of commit ``version`` (one short listing): for a commit read without a listing."""
    name = commit_name(version)
    for p in list_log(ctx.store, version, version):
        if p.name == name:
            return p.mtime
    raise CorruptLogError(f"{LOG_DIR}/{name} is not listed, though it was just read", path=f"{LOG_DIR}/{name}")


__all__ = ["NO_TABLE", "NothingRead", "ReadState", "SnapshotRead", "listed_mtime", "read_state"]
