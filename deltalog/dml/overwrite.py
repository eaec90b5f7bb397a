"""What an overwrite takes out and lets in: the files or rows a ``replace_where`` (or a whole-table overwrite)
removes, and the check that every written row lies inside it (the schema a ``mergeSchema`` write commits is
:mod:`deltalog.dml.evolution`'s).

Both writers use these (:func:`deltalog.write` for Arrow data, the Spark sink for DataFrames), so an overwrite
means the same whichever wrote it: a predicate on partition columns only removes whole files and records its
partitions as read (a concurrent append into them is a conflict); any other predicate removes the matching
rows of the files holding any, by deletion vectors where the table enables them, else by rewriting those files
(:mod:`deltalog.dml.removal`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from deltalog.core.features import deletion_vectors
from deltalog.core.features.cdf import enabled as change_data_feed
from deltalog.core.schema import top_level_fields
from deltalog.data.predicate import RowFilter, row_filter
from deltalog.data.row_ids import kept_columns
from deltalog.dml.delete import check_removable, describe
from deltalog.dml.matching import find_matches
from deltalog.dml.removal import Removal, Rewriter, by_rewriting, with_deletion_vectors
from deltalog.errors import InvalidArgumentError
from deltalog.storage.base import LogStore
from deltalog.table.commit import Transaction
from deltalog.table.snapshot import Snapshot


# ---------------------------------------------------------------------------------------------- replace_where
def _partition_only(where: RowFilter) -> bool:
    """Whether ``where`` decides whole files: it reads partition columns only (an Expression pyarrow evaluates
    must be read back as a tree first)."""
    return where.exact_partition and where.partition is not None and (where.arrow is None or where.tree is not None)


def _matching_names(batch: pa.RecordBatch, schema: Mapping[str, Any]) -> pa.RecordBatch:
    """``batch`` with its columns named as the table names them (Spark matches names regardless of case)."""
    names = {f["name"].lower(): f["name"] for f in top_level_fields(schema)}
    renamed = [names.get(n.lower(), n) for n in batch.schema.names]
    return batch if renamed == batch.schema.names else batch.rename_columns(renamed)


def check_inside(batch: pa.RecordBatch, where: RowFilter, schema: Mapping[str, Any], seen: int) -> None:
    """Every row an overwrite writes must lie inside ``replace_where``: otherwise the table would hold rows the
    replaced range did not ask for (Delta Spark: "Written data does not conform to partial table overwrite").
    ``schema`` is the table's (Delta JSON); ``seen`` counts the rows of the data before ``batch``."""
    hits = where.positions(_matching_names(batch, schema))
    if len(hits) == batch.num_rows:
        return
    inside = set(hits.tolist())
    first = next(i for i in range(batch.num_rows) if i not in inside)
    raise InvalidArgumentError(
        f"row {seen + first} of the data does not satisfy replace_where ({where.text}): an overwrite of part of "
        "the table may only write rows inside it; nothing was committed"
    )


def whole_files(txn: Transaction, snap: Snapshot, where: Any, now_ms: int) -> Removal:
    """Removes of every live file, or of the files of the partitions ``where`` (a RowFilter, or any filter form,
    on partition columns only) selects, read as an overwrite reads them (a concurrent append into those
    partitions is a conflict)."""
    txn.read(where)
    removal = Removal()
    for add in snap.add_actions(where, exact=True):
        removal.actions.append(add.remove(now_ms, True))
        removal.touched.append(add)
        removal.removed_files += 1
        removal.removed_bytes += add.size
    return removal


def replaced(
    store: LogStore,
    txn: Transaction,
    snap: Snapshot,
    where: Any,
    rewriter_for: Any,
    now_ms: int,
    tz: str | None = None,
) -> tuple[Removal, RowFilter | None, Rewriter]:
    """What an overwrite removes (every file, the files of matching partitions, or the matching rows by
    deletion vectors or rewrites) and the writer its new rows go through: ``rewriter_for(changes, tracking)``
    makes it, ``changes`` saying whether it writes change files for the rows it copies, ``tracking`` the
    materialized row-tracking columns its data files carry (a rewrite on a table with row tracking enabled: the
    copies keep their row ids, new rows get fresh ones; else None). ``where`` is ``replace_where`` (None: the
    whole table) in any filter form; ``tz`` the session time zone its text is read in."""
    check_removable(snap, "an overwrite")
    chosen = None if where is None else row_filter(where, snap.schema_json, snap.partition_columns, tz)
    if chosen is None or _partition_only(chosen):
        return whole_files(txn, snap, chosen, now_ms), chosen, rewriter_for(False, None)
    txn.read(chosen)
    matches = find_matches(store, list(snap.add_actions()), describe(snap), chosen)
    if deletion_vectors.new_dvs_allowed(snap.protocol, snap.configuration):
        return with_deletion_vectors(store, matches.files, now_ms), chosen, rewriter_for(False, None)
    copies = any(not m.all_gone for m in matches.files)
    tracking = kept_columns(snap.protocol, snap.configuration) if copies else None
    rewriter = rewriter_for(copies and change_data_feed(snap.protocol, snap.configuration), tracking)
    try:
        return by_rewriting(rewriter, describe(snap), matches.files, chosen, now_ms), chosen, rewriter
    except BaseException:
        rewriter.abort()
        raise


__all__ = ["check_inside", "replaced", "whole_files"]
