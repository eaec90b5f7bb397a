"""What a data commit owes the table's writer features, asked before any file is written and declared at commit.

The one commit path (:mod:`deltalog.table.commit`, :mod:`deltalog.core.features.commit_checks`) runs every
feature's check on what a transaction commits: deletion-vector shapes and removes naming the live vector, physical
names under column mapping, change files on change-data-feed tables, clustering statistics, row ids and
in-commit timestamps. What only the writer knows it declares there: that the data-file writer evaluated the
table's CHECK constraints, invariants and generated columns on every row (``data_validated="checked"``), and
whether new files copy rows of removed ones (a rewrite, whose ``_change_data`` files then cover every change).
:func:`check_up_front` asks the features' obligations of the write's kinds before anything is written, so a
table whose features forbid the write is refused by name with nothing to clean up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog.core.features.commit_checks import Declarations
from deltalog.core.features.constraints import CHECKED
from deltalog.core.features.identity import Run
from deltalog.core.features.obligations import check_operation

if TYPE_CHECKING:
    from deltalog.table.commit import NewTable
    from deltalog.table.snapshot import Snapshot


def check_up_front(
    snap: Snapshot | NewTable,
    location: str,
    operations: Sequence[str],
    *,
    row_ids_preserved: bool = False,
    identity_preserved: bool = False,
) -> None:
    """Refuse, before any file is written, the operations the table's features forbid (typed
    :class:`~deltalog.errors.UnsupportedFeatureError` naming the feature); ``row_ids_preserved``: the writer
    will keep copied rows' ids in the materialized columns, ``identity_preserved``: their identity values
    (:class:`Declared`)."""
    source = f"{location}/_delta_log (version {snap.version})"
    implemented = Declarations(row_ids_preserved=row_ids_preserved, identity_preserved=identity_preserved).implemented
    for operation in operations:
        check_operation(operation, snap.protocol, snap.configuration, snap.schema_json, source, implemented=implemented)


@dataclass(frozen=True)
class Declared:
    """What a data commit tells the commit path about its rows (keyword arguments of ``Transaction.commit``)."""

    copies_rows: bool = False
    #: the commit's change files hold every change it makes (a rewrite's always do; a merge's when it wrote any)
    cdc_covers_all: bool | None = None
    #: copied and updated rows carry their row ids in the materialized columns (MERGE, UPDATE, rewrites write them)
    row_ids_preserved: bool = False
    #: the identity values the data-file writer generated
    identity_runs: tuple[Run, ...] = ()
    #: rows copied into new files kept their identity values (the data-file writer's copies: :meth:`Rewriter.keep`)
    identity_preserved: bool = False

    def as_kwargs(self) -> dict[str, Any]:
        # The data-file writer evaluated every row rule; a rewrite's change files cover each change it makes.
        covers = self.copies_rows if self.cdc_covers_all is None else self.cdc_covers_all
        return {
            "data_validated": CHECKED,
            "copies_rows": self.copies_rows,
            "cdc_covers_all": covers,
            "row_ids_preserved": self.row_ids_preserved,
            "identity_runs": self.identity_runs,
            "identity_preserved": self.identity_preserved,
        }


__all__ = ["Declared", "check_up_front"]
