"""Schema evolution of a data commit: the data's new top-level columns added to the table in the same commit, as
Spark's ``mergeSchema`` does (``deltalog.write(schema_mode="merge")``, ``DeltaLog.merge(schema_mode="merge")``),
or the data's schema replacing the table's in an overwrite (``schema_mode="overwrite"``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import orjson
import pyarrow as pa

from deltalog.arrow.schema import delta_field
from deltalog.core import actions as A
from deltalog.core.features import clustering, column_mapping
from deltalog.core.schema import check_partition_columns, parse_schema, top_level_fields
from deltalog.errors import SchemaMismatchError, UnsupportedFeatureError
from deltalog.table.snapshot import Snapshot


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


__all__ = ["merged_metadata", "overwritten_metadata", "schema_of"]
