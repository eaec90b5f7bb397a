"""Append-only tables: no commit removes data.

PROTOCOL "Append-only Tables": where the protocol supports ``appendOnly`` (writer version 2 and up, or listed)
and ``delta.appendOnly=true``, writers must not remove files with ``dataChange=true`` (nor update or delete
rows); ``dataChange=false`` rearrangements (compaction) are allowed. Delta Spark honours the property alone, as
deltalog's check does, which is the stricter reading.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from deltalog.core import actions as A
from deltalog.core.features import properties
from deltalog.core.features.configuration import TableConfiguration
from deltalog.core.features.kinds import NONE, REMOVES_DATA, Obligation, Rule
from deltalog.errors import InvalidCommitError

FEATURE = "appendOnly"
PROPERTY = "delta.appendOnly"


def check_commit(actions: Sequence[A.Action], configuration: Mapping[str, str]) -> None:
    """Refuse a remove with ``dataChange=true`` on an append-only table, naming the file."""
    if not properties.get_bool(configuration, PROPERTY):
        return
    for a in actions:
        if isinstance(a, A.Remove) and a.data_change:
            raise InvalidCommitError(
                f"table is append-only ({PROPERTY}=true): cannot remove {a.path} with dataChange=true",
                rule="append-only",
            )


def obligation(kind: str, table: TableConfiguration) -> Obligation:
    """Kinds that remove data are checked (:func:`check_commit`) while the table is append-only."""
    if kind in REMOVES_DATA and table.properties.append_only:
        return Obligation(f"{PROPERTY}=true forbids removing data", "append_only")
    return NONE


OBLIGATIONS: Mapping[str, Rule] = {FEATURE: obligation}

__all__ = ["FEATURE", "OBLIGATIONS", "PROPERTY", "check_commit", "obligation"]
