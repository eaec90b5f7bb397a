"""The content of a log compaction file: the reconciled actions of a run of commits (PROTOCOL "Log Compaction
Files", "Action Reconciliation").

A compaction file ``x.y.compacted.json`` stands in for commits ``x..y`` in a replay that starts before ``x``,
so it must leave exactly what those commits leave, *relative to any earlier state*: a remove that wins its
file key stays (a tombstone that cancels an add from before ``x``), a removed domain stays (it deletes a
domain set before ``x``), and the newest protocol, metaData and txn per app id stay. ``commitInfo``, ``cdc``
and unknown actions go: they are no state.

Which file action wins its key is decided by the one reconciler (:func:`~deltalog.core.state.reconcile.
winning_positions`) on the exact parser's reading of the run, which also vets every action as a load would
(a bad one is a :class:`~deltalog.errors.CorruptLogError` naming its commit and line). The winners are then
written as they stand in the commits, fields Delta Spark reads and deltalog does not model included; a
replay of the file gives the same live files, tombstones, txns, domains, metadata and protocol as a replay
of the commits, and the differential test in tests/ proves it on every table at hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from deltalog.core.log.jsonlines import objects
from deltalog.core.state import BaseState, CommitData, parse_exact
from deltalog.core.state.reconcile import winning_positions
from deltalog.core.state.small import STATE_KEYS

#: one compacted action: its key (``add``, ``remove``, ``txn``...) and its body as the commit wrote it
Action = tuple[str, dict[str, Any]]

_STATE_ORDER = {"protocol": 0, "metaData": 1, "txn": 2, "domainMetadata": 3}


def _identity(key: str, body: dict[str, Any]) -> str:
    """What one state action replaces: the protocol, the metadata, the txn of its app, the domain."""
    if key == "txn":
        return str(body.get("appId"))
    if key == "domainMetadata":
        return str(body.get("domain"))
    return ""


def compacted_actions(commits: Sequence[CommitData], root: str | None) -> tuple[Action, ...]:
    """The reconciled actions of ``commits`` (ascending and contiguous), in a deterministic order: protocol,
    metaData, txns by app id, domains by name, then the winning adds and removes in the order of their
    winning lines (the order a replay of the commits leaves them in)."""
    if not commits:
        return ()
    base = BaseState(version=commits[0].version - 1, source=commits[0].path)
    won = winning_positions(parse_exact.parse(base, commits).actions, root)
    state: dict[tuple[str, str], dict[str, Any]] = {}
    files: list[Action] = []
    position = 0  # counted as the exact parser counts: every non-null add or remove, in file order
    for commit in commits:
        for _, obj in objects(commit.data, commit.path):
            for key, body in obj.items():
                if body is None:
                    continue
                if key == "add" or key == "remove":
                    if position in won:
                        files.append((key, body))
                    position += 1
                elif key in STATE_KEYS:
                    state[(key, _identity(key, body))] = body
    ordered = sorted(state.items(), key=lambda item: (_STATE_ORDER[item[0][0]], item[0][1]))
    return tuple((key, body) for (key, _), body in ordered) + tuple(files)


def encode(actions: Sequence[Action]) -> bytes:
    """Newline-delimited JSON, one action per line, as commits are written (:func:`deltalog.core.log.codec.
    encode_actions`)."""
    return b"".join(orjson.dumps({key: body}) + b"\n" for key, body in actions)


__all__ = ["Action", "compacted_actions", "encode"]
