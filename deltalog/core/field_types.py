"""The JSON types of action fields, checked when reading a log line and before committing an action.

A ``txn`` whose version is the string ``"7"`` or an add whose size is ``"100"`` is a damaged action: read,
it would compare wrongly (a str against an int); committed, it would damage other engines' replay.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from deltalog.core import actions as A

_INT = (int,)
_STR = (str,)
_BOOL = (bool,)
_MAP = (dict, Mapping)
_SEQ = (tuple, list)

FIELD_TYPES: dict[type, dict[str, tuple[type, ...]]] = {
    A.Add: {
        "path": _STR,
        "partition_values": _MAP,
        "size": _INT,
        "modification_time": _INT,
        "data_change": _BOOL,
        "stats": _STR,
        "tags": _MAP,
        "base_row_id": _INT,
        "default_row_commit_version": _INT,
        "clustering_provider": _STR,
    },
    A.Remove: {
        "path": _STR,
        "deletion_timestamp": _INT,
        "data_change": _BOOL,
        "extended_file_metadata": _BOOL,
        "partition_values": _MAP,
        "size": _INT,
        "stats": _STR,
        "tags": _MAP,
        "base_row_id": _INT,
        "default_row_commit_version": _INT,
    },
    A.Metadata: {
        "id": _STR,
        "name": _STR,
        "description": _STR,
        "schema_string": _STR,
        "partition_columns": _SEQ,
        "configuration": _MAP,
        "created_time": _INT,
    },
    A.Protocol: {
        "min_reader_version": _INT,
        "min_writer_version": _INT,
        "reader_features": _SEQ,
        "writer_features": _SEQ,
    },
    A.Txn: {"app_id": _STR, "version": _INT, "last_updated": _INT},
    A.DomainMetadata: {"domain": _STR, "configuration": _STR, "removed": _BOOL},
    A.Cdc: {"path": _STR, "partition_values": _MAP, "size": _INT, "data_change": _BOOL, "tags": _MAP},
    A.DeletionVector: {
        "storage_type": _STR,
        "path_or_inline_dv": _STR,
        "size_in_bytes": _INT,
        "cardinality": _INT,
        "offset": _INT,
    },
    A.Sidecar: {"path": _STR, "size_in_bytes": _INT, "modification_time": _INT},
    A.CheckpointMetadata: {"version": _INT},
}


def type_errors(action: Any) -> list[str]:
    """Fields of ``action`` (and its deletion vector) whose value has the wrong JSON type."""
    spec = FIELD_TYPES.get(type(action))
    if spec is None:
        return []
    out = []
    for f in dataclasses.fields(action):
        expected = spec.get(f.name)
        value = getattr(action, f.name)
        if expected is None or value is None:
            continue
        if (expected is _INT and isinstance(value, bool)) or not isinstance(value, expected):
            out.append(f"{f.name}={value!r} is not {'an integer' if expected is _INT else expected[0].__name__}")
        elif expected is _SEQ and isinstance(value, _SEQ) and not all(isinstance(x, str) for x in value):
            out.append(f"{f.name}={value!r} must hold strings")
    dv = getattr(action, "deletion_vector", None)
    if isinstance(dv, A.DeletionVector):
        out.extend(f"deletionVector.{e}" for e in type_errors(dv))
    return out


__all__ = ["FIELD_TYPES", "type_errors"]
