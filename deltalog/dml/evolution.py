"""Schema evolution of a data commit: the data's new top-level columns added to the table in the same commit, as
Spark's ``mergeSchema`` does (``deltalog.write(schema_mode="merge")``, ``DeltaLog.merge(schema_mode="merge")``)."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
import pyarrow as pa

from deltalog.arrow.schema import delta_field
from deltalog.core import actions as A
from deltalog.core import column_mapping
from deltalog.core.schema import top_level_fields
from deltalog.errors import UnsupportedFeatureError
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


__all__ = ["merged_metadata", "schema_of"]
