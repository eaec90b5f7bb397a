"""Reconciling actions into the state of one version (the columnar replay).

Forward replay, as the protocol states it: the base state (a checkpoint, or an older snapshot) comes first,
then each commit in version order, actions in file order. Per file key ``(decoded path, DV id)`` the newest
action wins; an add is live, a remove is a tombstone. The base is an Arrow table and stays one: commits only
produce the set of keys they touched, and the base rows with those keys are masked out in one vectorised
step. Only commit actions become Python dicts, and only for as long as one replay runs.

Commits are parsed by one of two parsers, this module's exact one (orjson, every input) or the bulk one
(:mod:`deltalog.core.bulk_replay`, Arrow's JSON reader, long runs), and both give the same state for every
input: the bulk parser hands over to the exact one whatever it cannot replay exactly. The semantics, where
the protocol ("Action Reconciliation") leaves a choice:

* Each line is read as one JSON object and each of its keys as an action, in order; a key whose value is
  ``null`` is no action (Delta Spark reads such a ``SingleAction`` field as absent). Unknown actions
  (``cdc``, ``checkpointMetadata``, ``sidecar``, any other) and unknown fields are ignored; a known action
  that does not decode, a non-object line, malformed JSON or an empty commit is a :class:`CorruptLogError`
  naming the file and line. A JSON key given twice: the last one counts.
* File actions are keyed by path (percent-decoded once, made relative to the root) and deletion-vector
  unique id; the newest action per key wins, within a commit too (an add then a remove of one file in one
  commit leaves a tombstone), and a winning row keeps its own fields as written, except:
* ``partitionValues`` holds exactly the table's partition keys at this version (physical names under
  column mapping), in ``partitionColumns`` order: a key that is not one of them (another case, a logical
  name under column mapping) is dropped, a partition key the action left out is null, ``""`` stays ``""``
  and a missing map (a remove may omit it) stays null
  (:func:`deltalog.core.file_state.conform_partition_values`); checkpoint rows are put in the same shape.
* Live files and tombstones come base rows first (in base order), then the commits' winners in the order
  of their winning lines. ``stats`` and ``tags`` are kept as written; a JSON value that is not a string
  where a string belongs (``stats``, a map value) becomes its JSON text.
* protocol, metaData, txn (per app id) and domainMetadata (per domain, ``removed`` deletes) are applied in
  log order, wherever they stand in a commit; ``commitInfo`` is the last one of the last commit
  (:func:`deltalog.core.jsonlines.last_commit_info`).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.core import actions as A
from deltalog.core import bulk_replay
from deltalog.core.file_columns import (
    ADD_SCHEMA,
    REMOVE_SCHEMA,
    array_of,
    empty_adds,
    empty_removes,
    table_from_dicts,
)
from deltalog.core.file_state import FileState, conform_partition_values, key_column, key_of
from deltalog.core.jsonlines import last_commit_info, parse_lines
from deltalog.core.pathkeys import needs_canonicalizing
from deltalog.core.table_state import STATE_KEYS, TableState
from deltalog.errors import CorruptLogError


@dataclass(frozen=True)
class CommitData:
    """One commit file's bytes with the facts replay reports in errors and history."""

    version: int
    path: str  # store-relative, e.g. "_delta_log/00000000000000000003.json"
    data: bytes
    mtime: int = 0


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


@dataclass
class ReplayResult:
    version: int
    protocol: A.Protocol | None
    protocol_source: str | None
    metadata: A.Metadata | None
    metadata_source: str | None
    txns: dict[str, A.Txn]
    domains: dict[str, A.DomainMetadata]
    files: FileState | None  # None until loaded, for a snapshot that defers its files (see state_only)
    commit_info: dict[str, Any] | None  # raw commitInfo of the last replayed commit


def _check_not_empty(commit: CommitData) -> None:
    if not commit.data.strip():
        raise CorruptLogError(f"{commit.path} is empty: a commit holds at least one action", path=commit.path)


def _corrupt(commit: CommitData, line: int, why: str) -> CorruptLogError:
    return CorruptLogError(f"{commit.path} line {line}: {why}", path=commit.path, line=line)


def _locate_bad_action(commits: Sequence[CommitData], exc: Exception) -> CorruptLogError:
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
    """Pause the cyclic garbage collector while replay builds many short-lived acyclic dicts.

    A replay of 100k adds otherwise triggers hundreds of collections that scan every live dict, about half
    of the load time; nothing replay allocates forms a reference cycle, so pausing loses nothing.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def replay(base: BaseState, commits: Sequence[CommitData], root: str | None) -> ReplayResult:
    """Apply ``commits`` (ascending, contiguous, all after ``base.version``) to ``base``.

    Long runs of commits go through Arrow's JSON reader (:mod:`deltalog.core.bulk_replay`) when it can
    replay them exactly; everything else, and every error, takes the exact path below.
    """
    if sum(len(c.data) for c in commits) >= bulk_replay.MIN_BYTES:
        result = _bulk(base, commits, root)
        if result is not None:
            return result
    with _gc_paused():
        return _replay(base, commits, root)


def _bulk(base: BaseState, commits: Sequence[CommitData], root: str | None) -> ReplayResult | None:
    # Stats are most of a commit's bytes: left unparsed, they are parsed again from the same bytes when
    # asked for. Holding the bytes for that is bounded; beyond the bound, they are parsed now.
    defer = sum(len(c.data) for c in commits) <= bulk_replay.DEFER_STATS_BYTES
    done = bulk_replay.replay_commits(base, commits, root, stats=not defer)
    if done is None:
        return None
    info = last_commit_info(commits[-1].data, commits[-1].path)
    tail_stats = _deferred_stats(commits, done.positions) if defer else None
    version = commits[-1].version
    return _result(base, done.state, version, done.adds, done.removes, done.touched, info, root, tail_stats)


def _deferred_stats(commits: Sequence[CommitData], positions: Any) -> Callable[[], pa.Array]:
    loaded: list[pa.Array] = []

    def load() -> pa.Array:
        if not loaded:
            loaded.append(bulk_replay.stats_of(commits, positions))
        return loaded[0]

    return load


def _result(
    base: BaseState,
    state: TableState,
    version: int,
    tail: pa.Table,
    tail_removes: pa.Table,
    touched: pa.Array,
    commit_info: dict[str, Any] | None,
    root: str | None,
    tail_stats: Callable[[], pa.ChunkedArray | pa.Array] | None = None,
) -> ReplayResult:
    keys = state.partition_keys if state.metadata is not None else None
    base_removes = base.removes
    files = FileState(
        base=conform_partition_values(base.adds, keys),
        base_mask=_base_mask(base, touched, root),
        base_stats=base.adds_stats,
        tail=conform_partition_values(tail, keys),
        base_removes=lambda: conform_partition_values(base_removes(), keys),
        touched=touched,
        tail_removes=conform_partition_values(tail_removes, keys),
        root=root,
        tail_stats=tail_stats,
        partition_keys=keys,
    )
    return _from_state(state, version, files, commit_info)


def _from_state(
    state: TableState, version: int, files: FileState | None, commit_info: dict[str, Any] | None
) -> ReplayResult:
    return ReplayResult(
        version=version,
        protocol=state.protocol,
        protocol_source=state.protocol_source,
        metadata=state.metadata,
        metadata_source=state.metadata_source,
        txns=state.txns,
        domains=state.domains,
        files=files,
        commit_info=commit_info,
    )


def state_only(base: BaseState, commits: Sequence[CommitData]) -> ReplayResult:
    """Protocol, metadata, txns, domains and commitInfo after ``commits``, without the file actions.

    What a blind append needs, at the cost of parsing a few small commits: the file list, the expensive
    part of a large table, is left to be loaded when something asks for it. Every commit is still parsed
    in full, so malformed JSON is reported here as it would be by :func:`replay`.
    """
    state = TableState(base)
    for commit in commits:
        _check_not_empty(commit)
        state.apply(commit)
    version = commits[-1].version if commits else base.version
    return _from_state(state, version, None, last_commit_info(commits[-1].data, commits[-1].path) if commits else None)


def _base_mask(base: BaseState, touched: pa.Array, root: str | None) -> pa.ChunkedArray | pa.Array | None:
    """Which base rows survive: valid adds whose key no later action touched."""
    mask = base.adds_valid
    if len(touched) and base.adds.num_rows:
        untouched = pc.invert(pc.is_in(key_column(base.adds, root), value_set=touched))
        if not pc.all(untouched).as_py():
            mask = untouched if mask is None else pc.and_(mask, untouched)
    return mask


def _replay(base: BaseState, commits: Sequence[CommitData], root: str | None) -> ReplayResult:
    state = TableState(base)
    # A key seen again is popped before it is set, so both dicts keep their winners in the order of the
    # winning lines, the order the bulk parser produces.
    live: dict[str, dict[str, Any]] = {}
    tombs: dict[str, dict[str, Any]] = {}
    touched: set[str] = set()
    touched_add = touched.add
    for commit in commits:
        _check_not_empty(commit)
        for line_no, obj in enumerate(parse_lines(commit.data, commit.path), start=1):
            if obj is None:
                continue  # a blank line
            if type(obj) is not dict:
                raise _corrupt(commit, line_no, "a log line must be a JSON object")
            add = obj.get("add")
            if add is not None and len(obj) == 1 and type(add) is dict:
                # The hot path: one add per line, a plain path, no deletion vector.
                path = add.get("path")
                if type(path) is str and "deletionVector" not in add and not needs_canonicalizing(path):
                    touched_add(path)
                    if tombs:
                        tombs.pop(path, None)
                    live.pop(path, None)
                    live[path] = add
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
                    k = key_of(body, root)
                    touched_add(k)
                    live.pop(k, None)
                    tombs.pop(k, None)
                    if key == "add":
                        live[k] = body
                    else:
                        tombs[k] = body
                elif key in STATE_KEYS:
                    state.take_body(key, body, commit.path, line_no)
                # commitInfo is read once, below; cdc, checkpointMetadata, sidecar and unknown actions
                # take no part in state.
    try:
        tail = table_from_dicts(list(live.values()), ADD_SCHEMA)
        tail_removes = table_from_dicts(list(tombs.values()), REMOVE_SCHEMA)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise _locate_bad_action(commits, exc) from None
    touched_keys = array_of(list(touched), pa.string())
    version = commits[-1].version if commits else base.version
    info = last_commit_info(commits[-1].data, commits[-1].path) if commits else None
    return _result(base, state, version, tail, tail_removes, touched_keys, info, root)


def live_txns(txns: Mapping[str, A.Txn], retention_ms: int | None, now_ms: int) -> dict[str, A.Txn]:
    """Txns that survive ``delta.setTransactionRetentionDuration``.

    Like Delta Spark, a txn without ``lastUpdated`` expires as soon as a retention is set: it cannot prove
    it is recent, and keeping it forever would make the retention meaningless.
    """
    if retention_ms is None:
        return dict(txns)
    cutoff = now_ms - retention_ms
    return {k: t for k, t in txns.items() if t.last_updated is not None and t.last_updated > cutoff}


__all__ = [
    "BaseState",
    "CommitData",
    "ReplayResult",
    "live_txns",
    "replay",
    "state_only",
]
