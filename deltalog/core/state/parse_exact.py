"""The exact parser: every commit line through orjson, every input, every error with its file and line.

It reads each line as one JSON object and each of its keys as an action, in order: adds and removes are
collected as they stand (bodies with their positions, built into Arrow tables once at the end) for the
reconciler, and protocol, metaData, txn and domainMetadata go to the small state. It checks what the
reconciler relies on (a file action is an object with a string path, a deletion vector is an object)
and what the columns hold (every add and remove decodes into its Arrow row, superseded or not, as Delta
Spark and delta-rs decode every action of a commit).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import pyarrow as pa

from deltalog.core.log.jsonlines import corrupt_line, parse_lines
from deltalog.core.state import BaseState, CommitData, FileActions, Parsed
from deltalog.core.state.columns import ADD_SCHEMA, REMOVE_SCHEMA, table_from_dicts
from deltalog.core.state.small import STATE_KEYS, SmallState
from deltalog.errors import CorruptLogError


def _corrupt(commit: CommitData, line: int, why: str) -> Exception:
    return corrupt_line(commit.path)(line, why)


def _locate_bad_action(commits: Sequence[CommitData], exc: Exception) -> Exception:
    """Find the file and line of an add/remove whose field types do not fit (only on the error path)."""
    for commit in commits:
        for line_no, obj in enumerate(parse_lines(commit.data, commit.path), start=1):
            if not isinstance(obj, dict):
                continue  # a blank line (a ``null`` line parses as one too)
            for key, schema in (("add", ADD_SCHEMA), ("remove", REMOVE_SCHEMA)):
                body = obj.get(key)
                if isinstance(body, dict):
                    try:
                        table_from_dicts([body], schema)
                    except (pa.ArrowInvalid, pa.ArrowTypeError) as bad:
                        return _corrupt(commit, line_no, f"invalid {key} action: {bad}")
    return CorruptLogError(f"a file action in {commits[0].path} .. {commits[-1].path} has invalid fields: {exc}")


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while the parse builds many short-lived acyclic dicts.

    A parse of 100k adds otherwise triggers hundreds of collections that scan every live dict, about half
    of the load time; nothing the parse allocates forms a reference cycle, so pausing loses nothing.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse(base: BaseState, commits: Sequence[CommitData]) -> Parsed:
    """The state after ``commits`` (on top of ``base``) and every add and remove they hold."""
    with _gc_paused():
        return _parse(base, commits)


def _parse(base: BaseState, commits: Sequence[CommitData]) -> Parsed:
    state = SmallState(base)
    adds: list[dict[str, Any]] = []
    removes: list[dict[str, Any]] = []
    add_at: list[int] = []
    remove_at: list[int] = []
    position = 0
    for commit in commits:
        commit.check_not_empty()
        for line_no, obj in enumerate(parse_lines(commit.data, commit.path), start=1):
            if obj is None:
                continue  # a blank line
            if type(obj) is not dict:
                raise _corrupt(commit, line_no, "a log line must be a JSON object")
            if len(obj) == 1:
                # The hot path: one add per line, a string path, no deletion vector.
                add = obj.get("add")
                if type(add) is dict and type(add.get("path")) is str and "deletionVector" not in add:
                    adds.append(add)
                    add_at.append(position)
                    position += 1
                    continue
            for key, body in obj.items():
                if body is None:
                    continue  # a null action is no action
                if key == "add" or key == "remove":
                    if not isinstance(body, dict) or not isinstance(body.get("path"), str):
                        raise _corrupt(commit, line_no, f"{key} action without a path")
                    dv = body.get("deletionVector")
                    if dv is not None and not isinstance(dv, dict):
                        raise _corrupt(commit, line_no, f"{key} action with an invalid deletionVector")
                    (adds if key == "add" else removes).append(body)
                    (add_at if key == "add" else remove_at).append(position)
                    position += 1
                elif key in STATE_KEYS:
                    state.take_body(key, body, commit.path, line_no)
                # commitInfo is read once, when the state is frozen; cdc, checkpointMetadata, sidecar and
                # unknown actions take no part in state.
    try:
        actions = FileActions(
            adds=table_from_dicts(adds, ADD_SCHEMA),
            add_positions=np.array(add_at, dtype="int64"),
            removes=table_from_dicts(removes, REMOVE_SCHEMA),
            remove_positions=np.array(remove_at, dtype="int64"),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise _locate_bad_action(commits, exc) from None
    return Parsed(state.freeze(commits), actions)


__all__ = ["parse"]
