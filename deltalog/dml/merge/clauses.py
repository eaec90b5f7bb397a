"""The clauses of a MERGE as its caller wrote them, checked against Delta Spark's rules before anything is bound.

Three kinds, each tried in the order written: ``WHEN MATCHED`` (update or delete) for a target row the merge
condition pairs with a source row, ``WHEN NOT MATCHED`` (insert) for a source row no target row pairs with,
``WHEN NOT MATCHED BY SOURCE`` (update or delete) for a target row no source row pairs with. The first clause
of its kind whose condition holds applies; a condition that is NULL does not hold. Only the last clause of a
kind may omit its condition (Delta Spark refuses an earlier unconditional clause: the ones after it could never
apply). ``*_all`` clauses (``UPDATE SET *``, ``INSERT *``) take every column of the table from the source
column of the same name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deltalog.errors import InvalidArgumentError

MATCHED = "matched"
NOT_MATCHED = "not_matched"
NOT_MATCHED_BY_SOURCE = "not_matched_by_source"
KINDS = (MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE)
UPDATE = "update"
DELETE = "delete"
INSERT = "insert"
#: how Delta Spark's commitInfo names a clause kind (operationParameters) and writes it in messages
SHOWN = {MATCHED: "WHEN MATCHED", NOT_MATCHED: "WHEN NOT MATCHED", NOT_MATCHED_BY_SOURCE: "WHEN NOT MATCHED BY SOURCE"}
_ACTIONS = {MATCHED: (UPDATE, DELETE), NOT_MATCHED: (INSERT,), NOT_MATCHED_BY_SOURCE: (UPDATE, DELETE)}


@dataclass(frozen=True)
class Clause:
    """One ``WHEN`` clause: its kind and action, an optional condition (Spark SQL text, a pyarrow Expression, or
    a tree), and the assignments (target column -> Spark SQL value) of an update or insert; ``star`` for
    ``UPDATE SET *`` / ``INSERT *`` (assignments then come from the source's columns by name)."""

    kind: str
    action: str
    condition: Any = None
    assignments: tuple[tuple[str, Any], ...] = ()
    star: bool = False
    #: how messages name the statement when it is no MERGE clause (an UPDATE is one target-only update clause)
    label: str = ""

    @property
    def shown(self) -> str:
        """How messages name the clause: ``WHEN MATCHED ... UPDATE``."""
        return self.label or f"{SHOWN[self.kind]} {self.action.upper()}{' *' if self.star else ''}"


def clause(
    kind: str, action: str, condition: Any = None, updates: Mapping[str, Any] | None = None, star: bool = False
) -> Clause:
    """A clause from the builder's arguments, its assignments checked for shape (names and values)."""
    if kind not in KINDS or action not in _ACTIONS[kind]:
        raise InvalidArgumentError(f"a {SHOWN.get(kind, kind)} clause cannot {action}")
    pairs: tuple[tuple[str, Any], ...] = ()
    if action in (UPDATE, INSERT) and not star:
        if not isinstance(updates, Mapping) or not updates:
            raise InvalidArgumentError(
                f"{SHOWN[kind]} {action.upper()} needs updates={{column: expression, ...}}; "
                f"use the *_all clause to take every column from the source"
            )
        for name, value in updates.items():
            if not isinstance(name, str) or not name:
                raise InvalidArgumentError(f"{SHOWN[kind]} {action.upper()}: a column name is a string, not {name!r}")
            if value is None:
                value = "NULL"
            pairs = (*pairs, (name, value))
    elif updates:
        raise InvalidArgumentError(f"{SHOWN[kind]} {action.upper()} takes no updates")
    return Clause(kind, action, condition, pairs, star)


def check_order(clauses: Sequence[Clause]) -> None:
    """Delta Spark's rules on a merge's clauses: at least one, and within each kind only the last one may omit
    its condition (an earlier unconditional clause would leave the later ones no row)."""
    if not clauses:
        raise InvalidArgumentError("a MERGE needs at least one WHEN clause (when_matched_*, when_not_matched_*, ...)")
    for kind in KINDS:
        mine = [c for c in clauses if c.kind == kind]
        for c in mine[:-1]:
            if c.condition is None:
                raise InvalidArgumentError(
                    f"{c.shown} has no condition but is not the last {SHOWN[kind]} clause: when a MERGE has more "
                    f"than one {SHOWN[kind]} clause, only the last one may omit its condition"
                )


__all__ = [
    "DELETE",
    "INSERT",
    "KINDS",
    "MATCHED",
    "NOT_MATCHED",
    "NOT_MATCHED_BY_SOURCE",
    "SHOWN",
    "UPDATE",
    "Clause",
    "check_order",
    "clause",
]
