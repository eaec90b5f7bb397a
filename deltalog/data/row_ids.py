"""Rows that keep their row ids when they move to new files: the materialized row-tracking columns.

PROTOCOL "Row Tracking": a row's id is the value of the materialized row-id column where the file has one and
it is not null, else the file's ``baseRowId`` plus the row's physical position; its commit version likewise
comes from the materialized commit-version column, else the file's ``defaultRowCommitVersion``. A writer that
copies rows into a new file (UPDATE, MERGE, OPTIMIZE) on a table with row tracking enabled keeps them by writing
both columns, under the names the table's configuration gives (``delta.rowTracking.materialized*ColumnName``):
a copied row keeps both values, an updated row keeps its id and takes the commit's version (its commit-version
column is NULL, so the new file's ``defaultRowCommitVersion`` applies), a new row gets both from its new file.

Reading a file for that: :func:`~deltalog.data.read.read_batches` with a spec
:func:`~deltalog.data.read.with_row_tracking` (:meth:`Materialized.names`), whose rows carry their stable ids
and commit versions under those names; writing: a :class:`~deltalog.data.target.WriteTarget` whose
``row_tracking`` is :meth:`Materialized.names`, fed batches that carry the two columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa

from deltalog.core.actions import Protocol
from deltalog.core.features import row_tracking
from deltalog.errors import UnsupportedFeatureError


@dataclass(frozen=True)
class Materialized:
    """The stored names of a table's two materialized row-tracking columns."""

    row_id: str
    commit_version: str

    @property
    def names(self) -> tuple[str, str]:
        return self.row_id, self.commit_version


def materialized(protocol: Protocol, configuration: Mapping[str, str]) -> Materialized | None:
    """The materialized columns copied rows must carry: those of a table with row tracking enabled (and not
    suspended); None elsewhere (where row tracking is only supported, rewritten rows take fresh ids)."""
    if not row_tracking.enabled(protocol, configuration) or row_tracking.suspended(configuration):
        return None
    row_id = configuration.get(row_tracking.MATERIALIZED_ROW_ID)
    version = configuration.get(row_tracking.MATERIALIZED_COMMIT_VERSION)
    if not row_id or not version:
        raise UnsupportedFeatureError(
            f"row tracking is enabled but {row_tracking.MATERIALIZED_ROW_ID} or "
            f"{row_tracking.MATERIALIZED_COMMIT_VERSION} is missing from the table's configuration",
            feature=row_tracking.FEATURE,
        )
    return Materialized(str(row_id), str(version))


def kept_columns(protocol: Protocol, configuration: Mapping[str, str]) -> tuple[str, str] | None:
    """The names (:meth:`Materialized.names`) a rewrite's data files carry so that copied rows keep their ids
    (a :class:`~deltalog.data.target.WriteTarget`'s ``row_tracking``), or None where copies get fresh ids."""
    columns = materialized(protocol, configuration)
    return None if columns is None else columns.names


def stable_ids(batch: pa.RecordBatch, columns: Materialized) -> tuple[pa.Array, pa.Array]:
    """The row ids and row commit versions of ``batch``'s rows, read with a spec
    :func:`~deltalog.data.read.with_row_tracking` (which refuses a file whose ids cannot be known)."""
    return batch.column(columns.row_id), batch.column(columns.commit_version)


def carrying(
    batch: pa.RecordBatch, columns: Materialized, ids: pa.Array | None, versions: pa.Array | None
) -> pa.RecordBatch:
    """``batch`` with the two materialized columns set (None: NULL, the new file's values then apply)."""
    n = batch.num_rows
    for name, values in ((columns.row_id, ids), (columns.commit_version, versions)):
        value = pa.nulls(n, pa.int64()) if values is None else values.cast(pa.int64())
        i = batch.schema.get_field_index(name)
        if i >= 0:
            batch = batch.set_column(i, pa.field(name, pa.int64()), value)
        else:
            batch = batch.append_column(pa.field(name, pa.int64()), value)
    return batch


__all__ = ["Materialized", "carrying", "kept_columns", "materialized", "stable_ids"]
