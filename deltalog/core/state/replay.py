"""Replay: the state of one version from a base state and the commits after it.

Forward replay, as the protocol states it: the base state (a checkpoint, or an older snapshot) comes first,
then each commit in version order, actions in file order. One of two parsers reads the commits, the exact
one (:mod:`.parse_exact`, orjson, every input) or the bulk one (:mod:`.parse_bulk`, Arrow's JSON reader,
long runs, handing over to the exact one whatever it cannot read exactly), and both feed the one
reconciler (:mod:`.reconcile`). The semantics, where the protocol ("Action Reconciliation") leaves a
choice:

* Each line is read as one JSON object and each of its keys as an action, in order; a key whose value is
  ``null`` is no action (Delta Spark reads such a ``SingleAction`` field as absent). Unknown actions
  (``cdc``, ``checkpointMetadata``, ``sidecar``, any other) and unknown fields are ignored; a known action
  that does not decode (an add or remove too, superseded or not), a non-object line, malformed JSON or an
  empty commit is a :class:`~deltalog.errors.CorruptLogError` naming the file and line. A JSON key given
  twice: the last one counts.
* File actions are keyed by path (percent-decoded once, made relative to the root) and deletion-vector
  unique id; the newest action per key wins, within a commit too (an add then a remove of one file in one
  commit leaves a tombstone), and a winning row keeps its own fields as written, except:
* ``partitionValues`` holds exactly the table's partition keys at this version (physical names under
  column mapping), in ``partitionColumns`` order: a key that is not one of them (another case, a logical
  name under column mapping) is dropped, a partition key the action left out is null, ``""`` stays ``""``
  and a missing map (a remove may omit it) stays null
  (:func:`deltalog.core.state.files.conform_partition_values`); checkpoint rows are put in the same shape.
* Live files and tombstones come base rows first (in base order), then the commits' winners in the order
  of their winning lines. ``stats`` and ``tags`` are kept as written; a JSON value that is not a string
  where a string belongs (``stats``, a map value) becomes its JSON text.
* protocol, metaData, txn (per app id) and domainMetadata (per domain, ``removed`` deletes) are applied in
  log order, wherever they stand in a commit; ``commitInfo`` is the last one of the last commit
  (:func:`deltalog.core.log.jsonlines.last_commit_info`).
"""

from __future__ import annotations

from collections.abc import Sequence

from deltalog.core.state import BaseState, CommitData, Parsed, ReplayResult, parse_bulk, parse_exact
from deltalog.core.state.reconcile import reconcile
from deltalog.core.state.small import SmallState


def parse(base: BaseState, commits: Sequence[CommitData]) -> Parsed:
    """``commits`` read by the bulk parser when the run is long and it can read it exactly, else the exact one."""
    size = sum(len(c.data) for c in commits)
    if size >= parse_bulk.MIN_BYTES:
        # Stats are most of a commit's bytes: left unparsed, they are parsed again from the same bytes when
        # asked for. Holding the bytes for that is bounded; beyond the bound, they are parsed now.
        parsed = parse_bulk.parse(base, commits, stats=size > parse_bulk.DEFER_STATS_BYTES)
        if parsed is not None:
            return parsed
    return parse_exact.parse(base, commits)


def replay(base: BaseState, commits: Sequence[CommitData], root: str | None) -> ReplayResult:
    """Apply ``commits`` (ascending, contiguous, all after ``base.version``) to ``base``."""
    parsed = parse(base, commits)
    return ReplayResult(parsed.state, reconcile(base, parsed.state, parsed.actions, root, parsed.stats_at))


def state_only(base: BaseState, commits: Sequence[CommitData]) -> ReplayResult:
    """Protocol, metadata, txns, domains and commitInfo after ``commits``, without the file actions.

    What a blind append needs, at the cost of parsing a few small commits: the file list, the expensive
    part of a large table, is left to be loaded when something asks for it. Every commit is still parsed
    in full, so malformed JSON is reported here as it would be by :func:`replay`.
    """
    state = SmallState(base)
    for commit in commits:
        commit.check_not_empty()
        state.apply(commit)
    return ReplayResult(state.freeze(commits), None)


__all__ = ["parse", "replay", "state_only"]
