"""Action reconciliation: the one place that decides what a run of add and remove actions leaves live.

Both parsers hand over every add and remove they read, as Arrow rows with their positions in the log
(:class:`~deltalog.core.state.FileActions`), and this module alone applies the protocol's rules to them
("Action Reconciliation", with the choices :mod:`deltalog.core.state.replay` states):

* Per file key, ``(canonical path, deletion vector id)`` (:func:`~deltalog.core.state.files.key_column`),
  the action at the highest position wins, within a commit too: an add is live, a remove a tombstone.
* Base rows (a checkpoint's, or an older snapshot's) whose key any action of the run names are masked
  out, in one vectorised step; the base stays an Arrow table and is never copied.
* Winners keep the order of their winning lines, after the base rows: the row order a checkpoint is
  written in, the same whichever parser read the run.
* ``partitionValues`` are given one shape everywhere
  (:func:`~deltalog.core.state.files.conform_partition_values`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.core.state import BaseState, FileActions, ReplayedState, StatsAt
from deltalog.core.state.columns import as_numpy, bool_array
from deltalog.core.state.files import FileState, conform_partition_values, key_column
from deltalog.core.state.small import version_partition_keys

#: a key column: the path column itself when paths are their own keys (chunks and all), else built
Keys: TypeAlias = pa.Array | pa.ChunkedArray


def _flat(keys: Keys) -> list[pa.Array]:
    return keys.chunks if isinstance(keys, pa.ChunkedArray) else [keys]


def _newest(actions: FileActions, root: str | None) -> tuple[pa.Table, pa.Table, Keys, np.ndarray]:
    """The winning adds and removes (in position order), the keys of every action (duplicates allowed),
    and the positions of the winning adds."""
    adds, removes = actions.adds, actions.removes
    add_keys = key_column(adds, root)
    if not removes.num_rows and pc.count_distinct(add_keys).as_py() == len(add_keys):
        return adds, removes, add_keys, actions.add_positions  # the common run: appends of new files
    keys, add_won, remove_won = _winners(actions, add_keys, root)
    if not add_won.all():
        adds = adds.filter(bool_array(add_won))
    if not remove_won.all():
        removes = removes.filter(bool_array(remove_won))
    return adds, removes, keys, actions.add_positions[add_won]


def _winners(actions: FileActions, add_keys: Keys, root: str | None) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """The keys of every action (adds first), and which adds and which removes are the newest of their key."""
    parts = _flat(add_keys) + _flat(key_column(actions.removes, root))
    keys = pa.concat_arrays(parts) if parts else pa.nulls(0, pa.string())
    # The highest position per key: dictionary codes of the keys, then numpy's ufunc.at applies every
    # (code, position) pair (Arrow's group_by would import pandas).
    codes = as_numpy(keys.dictionary_encode().indices).astype("int64")
    positions = np.concatenate([actions.add_positions, actions.remove_positions])
    best = np.full(int(codes.max()) + 1 if len(codes) else 0, -1, dtype="int64")
    np.maximum.at(best, codes, positions)
    won = best[codes] == positions
    n = actions.adds.num_rows
    return keys, won[:n], won[n:]


def winning_positions(actions: FileActions, root: str | None) -> frozenset[int]:
    """The log positions of the actions that win their file key: what a run of commits leaves of its adds
    and removes (a log compaction file holds exactly these, :mod:`deltalog.core.state.compact`)."""
    _, add_won, remove_won = _winners(actions, key_column(actions.adds, root), root)
    won = np.concatenate([actions.add_positions[add_won], actions.remove_positions[remove_won]])
    return frozenset(int(p) for p in won)


def _base_mask(base: BaseState, touched: Keys, root: str | None) -> pa.Array | None:
    """Which base rows survive: valid adds whose key no later action touched."""
    mask = base.adds_valid
    if len(touched) and base.adds.num_rows:
        untouched = pc.invert(pc.is_in(key_column(base.adds, root), value_set=touched))
        if not pc.all(untouched).as_py():
            mask = untouched if mask is None else pc.and_(mask, untouched)
    return mask


def reconcile(
    base: BaseState, state: ReplayedState, actions: FileActions, root: str | None, stats_at: StatsAt | None = None
) -> FileState:
    """The file state of ``state``'s version: ``base`` with the run's ``actions`` reconciled onto it.

    ``stats_at`` is the parser's loader of the winning adds' ``stats`` when it left them unread.
    """
    tail, tail_removes, touched, won_at = _newest(actions, root)
    keys = version_partition_keys(state)
    base_removes = base.removes
    tail_stats: Callable[[], pa.Array] | None = stats_at(won_at) if stats_at is not None else None
    return FileState(
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


__all__ = ["reconcile", "winning_positions"]
