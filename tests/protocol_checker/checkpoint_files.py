"""Reading one checkpoint layout with its sidecars into actions and the state they describe."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote, urlparse

from .logfiles import CheckpointLayout, LogListing
from .reading import Action, ReadProblem, read_json_actions, read_parquet_actions
from .state import TableState, apply_version

SIDECARS = "_sidecars"


@dataclass(frozen=True)
class CheckpointRead:
    actions: list[Action]
    sidecar_actions: list[Action]
    sidecar_files: list[str]
    problems: list[ReadProblem]
    schemas: dict[str, Any]

    @property
    def readable(self) -> bool:
        return not self.problems

    def state(self, version: int) -> TableState:
        """The snapshot this checkpoint describes (history before it unknown)."""
        state = TableState(complete_history=False)
        apply_version(state, version, self.actions + self.sidecar_actions, None)
        state.ict = None
        return state


def sidecar_name(path: Any) -> str | None:
    """Where a sidecar action's path points, relative to _delta_log (sidecars live in _delta_log/_sidecars)."""
    if not isinstance(path, str) or not path:
        return None
    parsed = urlparse(path)
    if parsed.scheme or path.startswith("/"):
        return f"{SIDECARS}/{PurePosixPath(unquote(parsed.path)).name}"
    return f"{SIDECARS}/{unquote(path)}"


def read_layout(listing: LogListing, layout: CheckpointLayout) -> CheckpointRead:
    actions: list[Action] = []
    problems: list[ReadProblem] = []
    schemas: dict[str, Any] = {}
    for name in layout.files:
        if name.endswith(".json"):
            got, probs = read_json_actions(listing.path(name), name)
            actions += got
            problems += probs
        else:
            pf = read_parquet_actions(listing.path(name), name)
            actions += pf.actions
            schemas[name] = pf.schema
            if pf.problem:
                problems.append(pf.problem)
    sidecar_actions: list[Action] = []
    sidecar_files: list[str] = []
    for a in actions:
        if a.kind != "sidecar" or not isinstance(a.body, dict):
            continue
        name = sidecar_name(a.body.get("path"))
        if name is None:
            problems.append(ReadProblem(a.file, a.line, f"sidecar path {a.body.get('path')!r} is unusable"))
            continue
        sidecar_files.append(name)
        if not listing.path(name).is_file():
            problems.append(ReadProblem(name, None, "the referenced sidecar file does not exist"))
            continue
        pf = read_parquet_actions(listing.path(name), name)
        sidecar_actions += pf.actions
        schemas[name] = pf.schema
        if pf.problem:
            problems.append(pf.problem)
    return CheckpointRead(actions, sidecar_actions, sidecar_files, problems, schemas)
