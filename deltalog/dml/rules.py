"""The duties a table's writer features put on a data commit, met by the rule modules of :mod:`deltalog.core`,
and the gate told which were met.

The gate (:mod:`deltalog.core.feature_gate`) says per operation what each feature asks; a duty counts as met
only where the path runs the feature's rule module on what it commits. A data commit built here runs them on
its actions, then declares its operations and the modules applied as the transaction's
:class:`~deltalog.core.feature_gate.CommitKind`, so the commit itself is gated by what it is and does:

* ``deletion_vectors``: descriptors, accurate ``numRecords``, a vector never shrinks, removes name the live
  vector (against the live adds of the touched files);
* ``column_mapping``: new files key partition values and statistics by physical names;
* ``cdf``: a commit that copies rows brings change files declared to cover it; one that does not needs none;
* ``clustering``: new files have statistics for every clustering column;
* ``constraints``: the data writer evaluated every rule on every new row (recorded as ``checked``);
* ``row_tracking``: only where no new row ids are needed (removes and deletion-vector re-adds copy the ids of
  the file's last add); numbering new rows needs the commit loop to renumber on retry, which it does not, so
  appends to such tables stay refused by the gate.

:func:`check_up_front` asks the gate before anything is written, with the modules this path can apply.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deltalog.core import actions as A
from deltalog.core import cdf, clustering, column_mapping, constraints, deletion_vectors, row_tracking
from deltalog.core.feature_gate import DEFAULT_IMPLEMENTED, DELETE, DV_DELETE, CommitKind, check_operation
from deltalog.core.file_facts import known_files, path_key

if TYPE_CHECKING:
    from deltalog import Snapshot

#: the rule modules a data commit of this package applies (row tracking only where it assigns nothing)
APPLIED = DEFAULT_IMPLEMENTED | {"deletion_vectors", "column_mapping", "cdf", "clustering", "constraints"}
#: operations whose commits need no new row ids (whole-file removes, deletion-vector re-adds)
_NO_NEW_ROWS = (DELETE, DV_DELETE)


def _source(snap: Snapshot) -> str:
    return f"{snap.log.location}/_delta_log (version {snap.version})"


def applicable(operations: Sequence[str]) -> frozenset[str]:
    """The modules this package applies to a commit of ``operations``."""
    if all(op in _NO_NEW_ROWS for op in operations):
        return APPLIED | {"row_tracking"}
    return APPLIED


def check_up_front(snap: Snapshot, operations: Sequence[str]) -> None:
    """Refuse, before any file is written, the operations the table's features forbid or ask more of than
    this package does (typed :class:`~deltalog.errors.UnsupportedFeatureError` naming the feature)."""
    implemented = applicable(operations)
    for operation in operations:
        check_operation(
            operation, snap.protocol, snap.configuration, snap.schema_json, _source(snap), implemented=implemented
        )


def apply(
    snap: Snapshot,
    actions: Sequence[A.Action],
    operations: Sequence[str],
    touched: Iterable[A.Add] = (),
    *,
    copies_rows: bool = False,
    schema: Mapping[str, Any] | None = None,
) -> tuple[list[A.Action], CommitKind]:
    """Run the rule modules on ``actions`` (a commit on ``snap``; ``touched``: the live adds of the files it
    removes or re-adds) and the :class:`CommitKind` declaring them; the actions come back with row-tracking
    fields copied where the table tracks rows. ``copies_rows``: new files hold rows copied from removed ones
    (a rewrite), whose change files, on a change-data-feed table, ``actions`` must hold for every change.
    ``schema``: the table's schema after the commit when it changes it (new columns)."""
    protocol, conf = snap.protocol, snap.configuration
    schema = schema if schema is not None else snap.schema_json
    root = snap.log.store.root
    known = known_files(touched, root)
    out = list(actions)
    implemented = set(APPLIED)
    deletion_vectors.check_commit(out, protocol, conf, known)
    removed = {path_key(a.path, root) for a in out if isinstance(a, A.Remove)}
    new_adds = [a for a in out if isinstance(a, A.Add) and path_key(a.path, root) not in removed]
    mode = column_mapping.mode(protocol, conf)
    column_mapping.check_file_keys(new_adds, schema, mode, snap.partition_columns)
    partition_keys = [snap.physical_names.get(c, c) for c in snap.partition_columns]
    cdf.check_commit(out, protocol, conf, partition_keys, copies_rows=copies_rows, covers_all=copies_rows)
    if clustering.clustered(protocol):
        clustering.check_stats(new_adds, clustering.columns_of(snap.domain_metadata.values()))
    constraints.check_commit(out, conf, schema, rows_validated=constraints.CHECKED)
    if row_tracking.assigns(protocol, conf) and "row_tracking" in applicable(operations):
        mark = row_tracking.high_water_mark(snap.domain_metadata.values())
        assignment = row_tracking.assign(out, read_mark=mark, version=snap.version + 1, known=known)
        if assignment.high_water_mark == mark:  # nothing numbered: a retry cannot make these ids collide
            out = list(assignment.actions)
            implemented.add("row_tracking")
    return out, CommitKind(tuple(operations), frozenset(implemented))


__all__ = ["APPLIED", "applicable", "apply", "check_up_front"]
