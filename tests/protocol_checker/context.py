"""What a rule sees: one commit (with the state before and after it), one checkpoint, or the whole log."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .features import Protocol
from .logfiles import CheckpointLayout, LogListing
from .reading import Action, ReadProblem
from .schema import SchemaInfo
from .state import TableState, column_mapping_mode


@dataclass(frozen=True)
class CommitContext:
    """Commit ``version`` read from ``file``; ``before`` is the snapshot of ``version - 1`` (empty for a new table).

    ``before.complete_history`` is false when replay started from a checkpoint: rules that need the
    table's earlier history (was this DV ever seen, what was this path's last add) skip what they cannot know.
    """

    version: int
    file: str
    actions: list[Action]
    before: TableState
    after: TableState
    listing: LogListing
    read_problems: list[ReadProblem] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[Action]:
        return [a for a in self.actions if a.kind == kind and isinstance(a.body, dict)]

    @cached_property
    def adds(self) -> list[Action]:
        return self.of_kind("add")

    @cached_property
    def removes(self) -> list[Action]:
        return self.of_kind("remove")

    @cached_property
    def commit_info(self) -> Action | None:
        return next((a for a in self.actions if a.kind == "commitInfo"), None)

    @property
    def operation(self) -> str | None:
        info = self.commit_info
        op = info.body.get("operation") if info is not None and isinstance(info.body, dict) else None
        return op if isinstance(op, str) else None

    @property
    def protocol(self) -> Protocol | None:
        """The protocol the commit is written under: its own protocol action's, else the previous one."""
        return self.after.protocol

    @property
    def configuration(self) -> dict[str, Any]:
        return self.after.configuration

    @property
    def schema(self) -> SchemaInfo:
        return self.after.schema

    @cached_property
    def mapping_mode(self) -> str:
        return column_mapping_mode(self.protocol, self.configuration)

    @property
    def changes_protocol_or_metadata(self) -> bool:
        return any(a.kind in ("protocol", "metaData") for a in self.actions)


@dataclass(frozen=True)
class CheckpointContext:
    """One checkpoint layout: every action read from it (and its sidecars), and the replayed state to agree with.

    ``reference`` is ``None`` when the checkpoint's version was not replayed from commits (it is the replay
    start, or commits around it are missing): the content rules then have nothing to compare against.
    """

    layout: CheckpointLayout
    listing: LogListing
    actions: list[Action]  # the checkpoint's own rows
    sidecar_actions: list[Action]
    sidecar_files: list[str]  # sidecar files as resolved under _delta_log (missing ones included)
    problems: list[ReadProblem]
    schemas: dict[str, Any]  # file -> pyarrow schema of a parquet file
    reference: TableState | None
    loaded: TableState  # the state this checkpoint alone describes

    def of_kind(self, kind: str, *, sidecars: bool = True) -> list[Action]:
        rows = self.actions + (self.sidecar_actions if sidecars else [])
        return [a for a in rows if a.kind == kind and isinstance(a.body, dict)]

    @property
    def version(self) -> int:
        return self.layout.version

    @property
    def file(self) -> str:
        return self.layout.files[0]


@dataclass(frozen=True)
class CheckpointSummary:
    layout: CheckpointLayout
    readable: bool
    num_actions: int  # rows that hold an action, sidecars included
    num_adds: int
    v2_spec: bool  # holds a checkpointMetadata action


@dataclass(frozen=True)
class LogContext:
    """The whole listing, after replay: what the log-level rules (density, hints, compactions) look at."""

    listing: LogListing
    checkpoints: dict[str, CheckpointSummary]  # by first file name
    only_after: int  # incremental mode: report only on versions above this; -1 reports everything
    replay_start: int | None  # the version replay started from (-1: an empty table), None: nowhere to start
    checked_compactions: frozenset[str] = frozenset()  # compaction files an earlier (incremental) check saw
