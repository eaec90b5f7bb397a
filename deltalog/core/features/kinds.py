"""The kinds of operation table features put obligations on, and the kind a commit is.

A feature asks different things of different writers (:mod:`deltalog.core.features`' vocabulary): row tracking
numbers the rows of new files, change data feed wants change files only when rows are copied, CHECK constraints
concern new rows, and a checkpoint or a vacuum adds no rows at all. So obligations are stated per kind, and a
commit's kind is read from what it does (:func:`commit_kind`) unless its writer names it (a restore).

Every feature module states its obligations as :data:`Rule` functions of a kind and the table's
:class:`~deltalog.core.features.configuration.TableConfiguration`, returning an :class:`Obligation`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from deltalog.core.actions import Add, Remove
from deltalog.core.features.configuration import TableConfiguration

# ------------------------------------------------------------------------------------------------ kinds
APPEND = "append"  # new rows in new files, nothing removed
DELETE = "delete"  # whole files removed with dataChange=true
OVERWRITE = "overwrite"  # whole files removed and new rows added (partition replaceWhere, full overwrite)
REWRITE = "rewrite"  # files removed and some of their rows copied into new files (update, merge, delete)
REARRANGE = "rearrange"  # dataChange=false: the same rows in other files (compaction, OPTIMIZE)
#: a rearrangement whose data writer stored every copied row's id and commit version in the table's materialized
#: row-tracking columns (deltalog's OPTIMIZE and REORG PURGE); named by the caller, as RESTORE is
REARRANGE_KEEPING_IDS = "rearrange_keeping_ids"
DV_DELETE = "dv_delete"  # remove(path, old DV) + add(path, new DV)
METADATA = "metadata"  # metaData, protocol or domain changes only
RESTORE = "restore"
CHECKPOINT = "checkpoint"
CLEANUP = "cleanup"
VACUUM = "vacuum"
WRITE = "write"  # a commit of undeclared kind: every commit kind's obligations

COMMITS = (APPEND, DELETE, OVERWRITE, REWRITE, REARRANGE, REARRANGE_KEEPING_IDS, DV_DELETE, METADATA, RESTORE)
MAINTENANCE = (CHECKPOINT, CLEANUP, VACUUM)
OPERATIONS = (*COMMITS, *MAINTENANCE, WRITE)
NEW_ROWS = frozenset({APPEND, OVERWRITE, REWRITE})
COPIES_ROWS = frozenset({REWRITE, REARRANGE, REARRANGE_KEEPING_IDS})
ADDS_FILES = frozenset({APPEND, OVERWRITE, REWRITE, REARRANGE, REARRANGE_KEEPING_IDS, DV_DELETE, RESTORE})
REMOVES_FILES = frozenset({DELETE, OVERWRITE, REWRITE, REARRANGE, REARRANGE_KEEPING_IDS, DV_DELETE, RESTORE})
REMOVES_DATA = frozenset({DELETE, OVERWRITE, REWRITE, DV_DELETE})


# ------------------------------------------------------------------------------------------------ obligations
@dataclass(frozen=True)
class Obligation:
    """What a feature asks of one kind: nothing, the check of a feature ``module`` (met only where the path
    runs it), or a refusal (``refused``) with its reason."""

    reason: str = ""
    module: str | None = None
    refused: bool = False


NONE = Obligation()

#: a feature's obligations: (kind, the table) -> what the feature asks of that kind on that table
Rule = Callable[[str, TableConfiguration], Obligation]


def refuse(reason: str) -> Obligation:
    """An obligation deltalog cannot meet."""
    return Obligation(reason, refused=True)


def nothing(kind: str, table: TableConfiguration) -> Obligation:
    """The rule of a feature that asks nothing of any kind."""
    return NONE


def on(kinds: Collection[str], obligation: Obligation) -> Rule:
    """A rule that depends on the kind only: ``obligation`` for ``kinds``, nothing for the others."""
    chosen = frozenset(kinds)
    return lambda kind, table: obligation if kind in chosen else NONE


def always_refused(reason: str) -> Rule:
    """The rule of a feature deltalog refuses whatever the operation."""
    return lambda kind, table: refuse(reason)


# ------------------------------------------------------------------------------------------------ a commit's kind
#: operation names (``commitInfo.operation``) whose removes and adds replace whole files with new rows; any
#: other name that removes and adds with ``dataChange=true`` may copy rows from what it removes (a rewrite)
OVERWRITES = frozenset(
    {
        "WRITE",
        "STREAMING UPDATE",
        "TRUNCATE",
        "CREATE TABLE AS SELECT",
        "REPLACE TABLE",
        "REPLACE TABLE AS SELECT",
        "CREATE OR REPLACE TABLE",
        "CREATE OR REPLACE TABLE AS SELECT",
    }
)


def commit_kind(actions: Collection[Any], operation: str | None = None, *, new_dvs: bool = True) -> str:
    """The kind of a commit of ``actions`` named ``operation`` (``commitInfo.operation``).

    The log alone cannot tell an overwrite from a rewrite that copies rows, so the name decides between them
    (a name deltalog does not know counts as a rewrite, which is held to more). A remove and an add of the same
    path with a new DV (and no other add) copies no rows: it is a DV delete (row tracking keeps the file's ids)
    where the table allows new DVs (``new_dvs``); elsewhere the deletion-vector checks refuse it as an invalid
    commit, so it is named like any other commit here.
    """
    if operation == "RESTORE":
        return RESTORE
    adds = [a for a in actions if isinstance(a, Add)]
    removes = [a for a in actions if isinstance(a, Remove)]
    if not adds and not removes:
        return METADATA
    if not any(a.data_change for a in adds) and not any(r.data_change for r in removes):
        return REARRANGE
    if not removes:
        return APPEND
    if not adds:
        return DELETE
    if operation in OVERWRITES:
        return OVERWRITE
    removed = {r.path for r in removes}
    if new_dvs and all(a.deletion_vector is not None and a.path in removed for a in adds):
        return DV_DELETE
    return REWRITE
