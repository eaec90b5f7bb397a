"""Writer-feature gating per operation: which features block an append, a rewrite, a checkpoint, a vacuum...

The duties themselves (what each feature obliges each operation to do) are the table in
:mod:`deltalog.core.duty_table`; this module applies it. A feature blocks an operation when its duty is refused,
or names a rule module the caller's path does not call (the ``implemented`` argument; the defaults list what
today's commit and maintenance paths do). A commit is gated by what it does, which :func:`commit_operation`
reads from its actions and its name.

Maintenance follows PROTOCOL "VACUUM Protocol Check" (VACUUM checks the *write* protocol) and the rule that
RESTORE is a write (delta-write-rules.md section 10): checkpoint, log cleanup and vacuum run wherever every
writer feature is known and adds no duty deltalog leaves unmet; unknown and proposal-only features refuse them
by name. The operation names and the table are re-exported here, where callers have always found them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from deltalog.core.actions import Add, Protocol, Remove
from deltalog.core.duty_table import (
    ALL_MODULES,
    APPEND,
    CHECKPOINT,
    CLEANUP,
    COMMITS,
    DEFAULT_IMPLEMENTED,
    DELETE,
    DV_DELETE,
    MAINTENANCE,
    METADATA,
    NONE,
    OPERATIONS,
    OVERWRITE,
    REARRANGE,
    REARRANGE_KEEPING_IDS,
    RESTORE,
    REWRITE,
    RULES,
    VACUUM,
    WRITE,
    Duty,
    Table,
    duty,
)
from deltalog.core.features import MAX_WRITER_VERSION, check_readable, supported_features
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError

_VERBS = {WRITE: "write", METADATA: "change metadata", CLEANUP: "clean up the log", DV_DELETE: "delete with DVs"}


@dataclass(frozen=True)
class Blocker:
    """One feature that blocks one operation, and why."""

    feature: str
    operation: str
    reason: str


# ------------------------------------------------------------------------------------------------ commits
#: operation names (``commitInfo.operation``) whose removes and adds replace whole files with new rows; any
#: other name that removes and adds with ``dataChange=true`` may copy rows from what it removes (a rewrite)
_OVERWRITES = frozenset(
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


def commit_operation(actions: Collection[Any], operation: str | None = None, *, new_dvs: bool = True) -> str:
    """The gate's operation for a commit of ``actions`` named ``operation`` (``commitInfo.operation``).

    The log alone cannot tell an overwrite from a rewrite that copies rows, so the name decides between them
    (a name deltalog does not know counts as a rewrite, which blocks more). A remove and an add of the same
    path with a new DV (and no other add) copies no rows: it is a DV delete, gated as one (row tracking keeps
    the file's ids) where the table allows new DVs (``new_dvs``); elsewhere the deletion-vector rules refuse it
    as an invalid commit, so it is named like any other commit here.
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
    if operation in _OVERWRITES:
        return OVERWRITE
    removed = {r.path for r in removes}
    if new_dvs and all(a.deletion_vector is not None and a.path in removed for a in adds):
        return DV_DELETE
    return REWRITE


def blockers(
    operation: str,
    protocol: Protocol,
    configuration: Mapping[str, str],
    schema: Any,
    *,
    implemented: Collection[str] = DEFAULT_IMPLEMENTED,
) -> tuple[Blocker, ...]:
    """Every writer feature of the table that blocks ``operation``, sorted by name.

    A feature blocks when its duty is refused, or names a module not in ``implemented``. Protocol-level
    problems (writer version, a DV delete on a table without DVs) come first, under a pseudo-feature name.
    """
    if operation not in OPERATIONS:
        raise InvalidArgumentError(f"unknown operation {operation!r}; one of {', '.join(OPERATIONS)}")
    w = protocol.min_writer_version
    if w > MAX_WRITER_VERSION:
        return (Blocker(f"writerVersion={w}", operation, f"deltalog writes up to version {MAX_WRITER_VERSION}"),)
    table = Table(protocol, configuration, schema)
    features = supported_features(protocol)
    out: list[Blocker] = []
    if operation == DV_DELETE:
        if "deletionVectors" not in features:
            out.append(Blocker("deletionVectors", operation, "the table does not support deletion vectors"))
        elif not table.flag("delta.enableDeletionVectors"):
            out.append(
                Blocker(
                    "deletionVectors",
                    operation,
                    "delta.enableDeletionVectors is not true, so no new deletion vector may be written",
                )
            )
    for name in sorted(features):
        d = duty(name, operation, table)
        if d.refused:
            out.append(Blocker(name, operation, d.reason))
        elif d.module is not None and d.module not in implemented:
            out.append(Blocker(name, operation, f"{d.reason} (deltalog's {d.module} rules are not applied here)"))
    return tuple(out)


def check_operation(
    operation: str,
    protocol: Protocol,
    configuration: Mapping[str, str],
    schema: Any,
    source: str,
    *,
    implemented: Collection[str] = DEFAULT_IMPLEMENTED,
) -> None:
    """Refuse ``operation`` when the table cannot be read or a writer feature blocks it, naming the feature and
    ``source`` (the file the protocol came from); see :func:`blockers`."""
    check_readable(protocol, source)
    found = blockers(operation, protocol, configuration, schema, implemented=implemented)
    if found:
        b = found[0]
        verb = _VERBS.get(operation, operation)
        raise UnsupportedFeatureError(
            f"cannot {verb}: the table uses writer feature {b.feature!r}, which deltalog does not implement for "
            f"this operation: {b.reason} (protocol in {source})",
            feature=b.feature,
            path=source,
        )


def check_writable(protocol: Protocol, configuration: Mapping[str, str], schema: Any, source: str) -> None:
    """Refuse to write a table whose protocol asks for writer behaviour this engine does not implement.

    A commit of undeclared kind: every commit operation's duties must be met (:data:`WRITE`). Callers that
    know their operation (an append, a checkpoint) ask :func:`check_operation` instead, which blocks less.
    Reading stays allowed: the refusal is about obligations on new commits (generated values, change data
    files, row ids).
    """
    check_operation(WRITE, protocol, configuration, schema, source)


__all__ = [
    "check_writable",
    "ALL_MODULES",
    "APPEND",
    "CHECKPOINT",
    "CLEANUP",
    "COMMITS",
    "DEFAULT_IMPLEMENTED",
    "DELETE",
    "DV_DELETE",
    "MAINTENANCE",
    "METADATA",
    "OPERATIONS",
    "OVERWRITE",
    "REARRANGE",
    "REARRANGE_KEEPING_IDS",
    "RESTORE",
    "REWRITE",
    "RULES",
    "VACUUM",
    "WRITE",
    "Blocker",
    "Duty",
    "Table",
    "blockers",
    "check_operation",
    "commit_operation",
    "NONE",
    "duty",
]
