"""What an overwrite takes out and lets in: the schema a ``mergeSchema`` write commits, the files or rows a
``replace_where`` (or a whole-table overwrite) removes, and the check that every written row lies inside it.

Both writers use these (:func:`deltalog.write` for Arrow data, the Spark sink for DataFrames), so an overwrite
means the same whichever wrote it: a predicate on partition columns only removes whole files and records its
partitions as read (a concurrent append into them is a conflict); any other predicate removes the matching
rows of the files holding any, by deletion vectors where the table enables them, else by rewriting those files
(:mod:`deltalog.dml.removal`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import pyarrow as pa

from deltalog.arrow.schema import delta_field
from deltalog.core import actions as A
from deltalog.core import clustering, column_mapping, deletion_vectors
from deltalog.core.cdf import enabled as change_data_feed
from deltalog.core.schema import check_partition_columns, parse_schema, top_level_fields
from deltalog.data.predicate import RowFilter, row_filter
from deltalog.dml.delete import check_removable, describe
from deltalog.dml.matching import find_matches
from deltalog.dml.removal import Removal, Rewriter, by_rewriting, with_deletion_vectors
from deltalog.errors import InvalidArgumentError, SchemaMismatchError, UnsupportedFeatureError
from deltalog.storage.base import LogStore
from deltalog.table.snapshot import Snapshot
from deltalog.table.transaction import Transaction


# ---------------------------------------------------------------------------------------------- the schema
def schema_of(schema: pa.Schema) -> dict[str, Any]:
    """The Delta schema of new columns from the data (types mapped by :func:`~deltalog.arrow.schema.delta_type`),
    a type Delta cannot hold refused naming its column."""
    fields = []
    for f in schema:
        try:
            fields.append(delta_field(f))
        except UnsupportedFeatureError as exc:
            raise UnsupportedFeatureError(f"column {f.name}: {exc}", feature=exc.feature) from None
    return {"type": "struct", "fields": fields}


def merged_metadata(snap: Snapshot, data: pa.Schema) -> A.Metadata | None:
    """The table's metadata with the data's new top-level columns appended (nullable: existing files have no
    values for them), as Spark's ``mergeSchema`` does; None when the data brings none. New nested fields and
    type changes are not merged: the data-file writer refuses them, naming the column."""
    existing = {f["name"].lower() for f in top_level_fields(snap.schema_json)}
    new = [f.with_nullable(True) for f in data if f.name.lower() not in existing]
    if not new:
        return None
    schema = dict(snap.schema_json)
    schema["fields"] = [*top_level_fields(snap.schema_json), *schema_of(pa.schema(new))["fields"]]
    metadata = dataclasses.replace(snap.metadata, schema_string=orjson.dumps(schema).decode())
    return column_mapping.mapped_metadata(snap.metadata, metadata, snap.protocol)


def overwritten_metadata(snap: Snapshot, data: pa.Schema, partition_by: Sequence[str] | None) -> A.Metadata:
    """The metadata of an overwrite that replaces the schema (deltalake's ``schema_mode="overwrite"``, Spark's
    ``overwriteSchema``): the data's columns, ``partition_by`` or else the table's partitioning, the table's id,
    properties and name kept. Refused by name: a partition column the data lacks when no ``partition_by`` says
    the partitioning changes, a clustering column the new schema loses. Under column mapping a column of the
    same path and type keeps its id and physical name (Spark's reuse); the others get new ones, and the mode
    cannot change (the table keeps its properties)."""
    schema = schema_of(data)
    names = {f["name"].lower(): f["name"] for f in schema["fields"]}
    if partition_by is None:
        lost = [c for c in snap.partition_columns if c.lower() not in names]
        if lost:
            raise SchemaMismatchError(
                f"schema_mode='overwrite' would drop partition column {lost[0]!r} (the data has "
                f"{list(names.values())}): pass partition_by to repartition the table",
                column=lost[0],
            )
        parts = [names[c.lower()] for c in snap.partition_columns]
    else:
        parts = list(partition_by)
    unknown = [c for c in parts if c not in names.values()]
    if unknown:
        raise SchemaMismatchError(f"partition column {unknown[0]!r} is not a column of the data", column=unknown[0])
    check_partition_columns(schema, parts)
    if snap.column_mapping_mode != "none":
        schema = column_mapping.reuse_pairs(schema, snap.schema_json)
    metadata = dataclasses.replace(
        snap.metadata, schema_string=orjson.dumps(schema).decode(), partition_columns=tuple(parts)
    )
    metadata = column_mapping.mapped_metadata(snap.metadata, metadata, snap.protocol)
    if clustering.clustered(snap.protocol):
        columns = clustering.columns_of(snap.domain_metadata.values())
        new_schema = parse_schema(metadata.schema_string)
        clustering.check_change(snap.protocol, parts, new_schema, columns, snap.column_mapping_mode)
    return metadata


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
    deletion vectors or rewrites) and the writer its new rows go through: ``rewriter_for(changes)`` makes it,
    ``changes`` saying whether it writes change files for the rows it copies. ``where`` is ``replace_where``
    (None: the whole table) in any filter form; ``tz`` the session time zone its text is read in."""
    check_removable(snap, "an overwrite")
    chosen = None if where is None else row_filter(where, snap.schema_json, snap.partition_columns, tz)
    if chosen is None or _partition_only(chosen):
        return whole_files(txn, snap, chosen, now_ms), chosen, rewriter_for(False)
    txn.read(chosen)
    matches = find_matches(store, list(snap.add_actions()), describe(snap), chosen)
    if deletion_vectors.new_dvs_allowed(snap.protocol, snap.configuration):
        return with_deletion_vectors(store, matches.files, now_ms), chosen, rewriter_for(False)
    copies = any(not m.all_gone for m in matches.files)
    rewriter = rewriter_for(copies and change_data_feed(snap.protocol, snap.configuration))
    try:
        return by_rewriting(rewriter, describe(snap), matches.files, chosen, now_ms), chosen, rewriter
    except BaseException:
        rewriter.abort()
        raise


__all__ = ["check_inside", "merged_metadata", "overwritten_metadata", "replaced", "schema_of", "whole_files"]
