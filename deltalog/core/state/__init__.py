"""The state of one table version as replay builds it, and the types every part of that build shares.

Replay is two parsers feeding one reconciler. The exact parser (:mod:`.parse_exact`, orjson, every
input) and the bulk parser (:mod:`.parse_bulk`, Arrow's JSON reader, long runs) read the commits into
the same things: the small state (:mod:`.small`: protocol, metadata, txns, domains) and every add and
remove as Arrow rows with their positions in the log (:class:`FileActions`). :mod:`.reconcile` alone
decides what those rows mean: the newest action per file wins, the base rows it supersedes are masked,
winners keep log order, partition values get one shape. :mod:`.replay` picks the parser and runs the
pipeline; :mod:`.files` holds the resulting file state and :mod:`.columns` the Arrow layouts.

The types live here, in a module that imports neither parser nor the reconciler, so that every part
can import them without an import cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from deltalog.core import actions as A
from deltalog.core.state.columns import empty_adds, empty_removes
from deltalog.core.state.files import FileState
from deltalog.errors import CorruptLogError


@dataclass(frozen=True)
class CommitData:
    """One commit file's bytes with the facts replay reports in errors and history."""

    version: int
    path: str  # store-relative, e.g. "_delta_log/00000000000000000003.json"
    data: bytes
    mtime: int = 0

    def check_not_empty(self) -> None:
        """A commit holds at least one action: an empty file is a damaged log, not a no-op commit."""
        if not self.data.strip():
            raise CorruptLogError(f"{self.path} is empty: a commit holds at least one action", path=self.path)


@dataclass
class BaseState:
    """The starting point of a replay: non-file actions plus file-action tables (from a checkpoint or snapshot).

    ``adds_stats`` loads the ``stats`` column for ``adds`` (same row order) when the table was read without
    it; ``removes`` is a loader because tombstones are rarely needed.
    """

    version: int
    source: str
    protocol: A.Protocol | None = None
    metadata: A.Metadata | None = None
    txns: dict[str, A.Txn] = field(default_factory=dict)
    domains: dict[str, A.DomainMetadata] = field(default_factory=dict)
    adds: pa.Table = field(default_factory=empty_adds)
    #: rows of ``adds`` that are adds (a checkpoint read keeps other actions' rows to filter only once)
    adds_valid: pa.ChunkedArray | pa.Array | None = None
    adds_stats: Callable[[], pa.ChunkedArray] | None = None
    removes: Callable[[], pa.Table] = field(default=empty_removes)


@dataclass(frozen=True)
class ReplayedState:
    """Everything of a version but its files: the protocol and metadata in force (with the file each came
    from, for errors), the txn per app id, the live domains, and the last commit's raw commitInfo."""

    version: int
    protocol: A.Protocol | None
    protocol_source: str | None
    metadata: A.Metadata | None
    metadata_source: str | None
    txns: Mapping[str, A.Txn]
    domains: Mapping[str, A.DomainMetadata]
    commit_info: dict[str, Any] | None


@dataclass(frozen=True)
class FileActions:
    """Every add and remove a parser read from a run of commits, in log order, not yet reconciled.

    ``*_positions`` give each row's place in the run (int64, strictly increasing within each table, no
    position shared between the two): a later position is a newer action. What the rows mean is
    :func:`deltalog.core.state.reconcile.reconcile`'s to decide, for both parsers alike.
    """

    adds: pa.Table
    add_positions: np.ndarray
    removes: pa.Table
    remove_positions: np.ndarray


#: given the positions of the winning adds, a loader of their ``stats`` (for a parse that skipped them)
StatsAt = Callable[[np.ndarray], Callable[[], pa.Array]]


@dataclass(frozen=True)
class Parsed:
    """What a parser read from a run of commits: the state after it and its raw file actions."""

    state: ReplayedState
    actions: FileActions
    #: set when the parse left the adds' ``stats`` unread (:class:`StatsAt`)
    stats_at: StatsAt | None = None


@dataclass(frozen=True)
class ReplayResult:
    """A replayed version: its :class:`ReplayedState`, and its files unless they were left unread."""

    state: ReplayedState
    files: FileState | None  # None for a replay that skipped the file actions (``state_only``)

    @property
    def version(self) -> int:
        return self.state.version

    @property
    def protocol(self) -> A.Protocol | None:
        return self.state.protocol

    @property
    def protocol_source(self) -> str | None:
        return self.state.protocol_source

    @property
    def metadata(self) -> A.Metadata | None:
        return self.state.metadata

    @property
    def metadata_source(self) -> str | None:
        return self.state.metadata_source

    @property
    def txns(self) -> Mapping[str, A.Txn]:
        return self.state.txns

    @property
    def domains(self) -> Mapping[str, A.DomainMetadata]:
        return self.state.domains

    @property
    def commit_info(self) -> dict[str, Any] | None:
        return self.state.commit_info


__all__ = [
    "BaseState",
    "CommitData",
    "FileActions",
    "Parsed",
    "ReplayResult",
    "StatsAt",
    "ReplayedState",
]
