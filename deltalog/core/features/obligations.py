"""The obligations of table features per kind of operation, and the check that refuses an operation whose
obligations deltalog does not meet.

Each feature module states what its feature asks of each kind (its ``OBLIGATIONS``, see
:mod:`deltalog.core.features` for the words); :data:`OBLIGATIONS` gathers them, so supporting a new feature is a
module of its own and a line here. A feature blocks an operation when its obligation is a refusal, or names a
feature module whose checks the caller's path does not run (the ``implemented`` argument; the defaults list
what today's commit and maintenance paths run). A commit's kind is read from what it does
(:func:`~deltalog.core.features.kinds.commit_kind`).

Maintenance follows PROTOCOL "VACUUM Protocol Check" (VACUUM checks the *write* protocol) and the rule that
RESTORE is a write (delta-write-rules.md section 10): checkpoint, log cleanup and vacuum run wherever every
writer feature is known and adds no obligation deltalog leaves unmet; unknown and proposal-only features refuse
them by name. The kinds are re-exported here, where callers have always found them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from deltalog.core.actions import Protocol
from deltalog.core.features import (
    append_only,
    cdf,
    checkpoints,
    clustering,
    column_mapping,
    constraints,
    deletion_vectors,
    honoured,
    ict,
    refused,
    row_tracking,
)
from deltalog.core.features.configuration import TableConfiguration
from deltalog.core.features.kinds import (
    APPEND,
    CHECKPOINT,
    CLEANUP,
    COMMITS,
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
    VACUUM,
    WRITE,
    Obligation,
    Rule,
    commit_kind,
    refuse,
)
from deltalog.core.features.protocol import MAX_WRITER_VERSION, check_readable
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError

#: every writer feature deltalog knows, with its obligations per kind (from its feature module)
OBLIGATIONS: Mapping[str, Rule] = {
    **append_only.OBLIGATIONS,
    **constraints.OBLIGATIONS,
    **cdf.OBLIGATIONS,
    **column_mapping.OBLIGATIONS,
    **deletion_vectors.OBLIGATIONS,
    **ict.OBLIGATIONS,
    **row_tracking.OBLIGATIONS,
    **clustering.OBLIGATIONS,
    **checkpoints.OBLIGATIONS,
    **honoured.OBLIGATIONS,
    **refused.OBLIGATIONS,
}

#: the feature modules whose checks deltalog's paths run today: every commit runs append-only, the row rules,
#: change data feed, column mapping, clustering and deletion vectors (:mod:`deltalog.core.features.commit_checks`)
#: and, per attempt, in-commit timestamps and row tracking (:mod:`deltalog.table.commit.attempts`); the checkpoint
#: writer meets V2 checkpoints (``checkpoint``) and log cleanup checkpoint protection
#: (``checkpoint_protection``, which also gates a checkpoint on its own version's protocol). Wiring a feature
#: module into a path adds its name.
DEFAULT_IMPLEMENTED: frozenset[str] = frozenset(
    {
        "append_only",
        "checkpoint",
        "checkpoint_protection",
        "cdf",
        "clustering",
        "column_mapping",
        "constraints",
        "deletion_vectors",
        "ict",
        "row_tracking",
    }
)
#: every feature module, for callers (and tests) whose path runs them all
ALL_MODULES: frozenset[str] = DEFAULT_IMPLEMENTED

_VERBS = {WRITE: "write", METADATA: "change metadata", CLEANUP: "clean up the log", DV_DELETE: "delete with DVs"}


@dataclass(frozen=True)
class Blocker:
    """One feature that blocks one operation, and why."""

    feature: str
    operation: str
    reason: str


def obligation(feature: str, kind: str, table: TableConfiguration) -> Obligation:
    """What ``feature`` asks of ``kind`` on ``table``; a feature deltalog does not know is refused. ``WRITE`` (a
    commit of undeclared kind) owes what any commit kind owes: the first refusal, else the first check."""
    rule = OBLIGATIONS.get(feature)
    if rule is None:
        return refuse("is unknown to deltalog, so it may add obligations deltalog cannot meet")
    if kind == WRITE:
        owed = [rule(k, table) for k in COMMITS]
        return next((o for o in owed if o.refused), next((o for o in owed if o.module), NONE))
    return rule(kind, table)


def blockers(
    operation: str,
    protocol: Protocol,
    configuration: Mapping[str, str],
    schema: Any,
    *,
    implemented: Collection[str] = DEFAULT_IMPLEMENTED,
) -> tuple[Blocker, ...]:
    """Every writer feature of the table that blocks ``operation``, sorted by name.

    A feature blocks when its obligation is a refusal, or names a feature module not in ``implemented``. Protocol-level
    problems (writer version, a DV delete on a table without DVs) come first, under a pseudo-feature name.
    """
    if operation not in OPERATIONS:
        raise InvalidArgumentError(f"unknown operation {operation!r}; one of {', '.join(OPERATIONS)}")
    w = protocol.min_writer_version
    if w > MAX_WRITER_VERSION:
        return (Blocker(f"writerVersion={w}", operation, f"deltalog writes up to version {MAX_WRITER_VERSION}"),)
    table = TableConfiguration.of_parts(protocol, configuration, schema)
    features = table.supported
    out: list[Blocker] = []
    if operation == DV_DELETE:
        if "deletionVectors" not in features:
            out.append(Blocker("deletionVectors", operation, "the table does not support deletion vectors"))
        elif not table.properties.enable_deletion_vectors:
            out.append(
                Blocker(
                    "deletionVectors",
                    operation,
                    "delta.enableDeletionVectors is not true, so no new deletion vector may be written",
                )
            )
    for name in sorted(features):
        owed = obligation(name, operation, table)
        if owed.refused:
            out.append(Blocker(name, operation, owed.reason))
        elif owed.module is not None and owed.module not in implemented:
            out.append(Blocker(name, operation, f"{owed.reason} (deltalog's {owed.module} checks are not run here)"))
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

    A commit of undeclared kind: every commit kind's obligations must be met (:data:`WRITE`). Callers that
    know their operation (an append, a checkpoint) ask :func:`check_operation` instead, which blocks less.
    Reading stays allowed: the refusal is about obligations on new commits (generated values, change data
    files, row ids).
    """
    check_operation(WRITE, protocol, configuration, schema, source)


__all__ = [
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
    "NONE",
    "OBLIGATIONS",
    "OPERATIONS",
    "OVERWRITE",
    "REARRANGE",
    "REARRANGE_KEEPING_IDS",
    "RESTORE",
    "REWRITE",
    "VACUUM",
    "WRITE",
    "Blocker",
    "Obligation",
    "blockers",
    "check_operation",
    "check_writable",
    "commit_kind",
    "obligation",
]
