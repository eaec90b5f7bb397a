"""Delta log actions as immutable values.

Field names are the protocol's names in snake_case; every field the protocol makes optional defaults to
``None`` so that a call names only what it means. The JSON spelling lives in :mod:`deltalog.core.codec`;
these classes know nothing about bytes.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class DeletionVector:
    """A deletion-vector descriptor; its :attr:`unique_id` is the second half of a file's replay key."""

    storage_type: str
    path_or_inline_dv: str
    size_in_bytes: int
    cardinality: int
    offset: int | None = None

    @property
    def unique_id(self) -> str:
        return dv_unique_id(self.storage_type, self.path_or_inline_dv, self.offset)


def dv_unique_id(storage_type: str, path_or_inline_dv: str, offset: int | None) -> str:
    """The protocol's DV identity: storage type and path, plus ``@offset`` when an offset is present."""
    base = f"{storage_type}{path_or_inline_dv}"
    return base if offset is None else f"{base}@{offset}"


@dataclass(frozen=True)
class Add:
    path: str
    partition_values: Mapping[str, str | None]
    size: int
    modification_time: int
    data_change: bool
    stats: str | None = None
    tags: Mapping[str, str | None] | None = None
    deletion_vector: DeletionVector | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None
    clustering_provider: str | None = None

    def remove(self, deletion_timestamp: int | None = None, data_change: bool = True) -> Remove:
        """The remove Delta Spark writes for this live file (see :func:`remove_for`)."""
        return remove_for(self, deletion_timestamp=deletion_timestamp, data_change=data_change)


@dataclass(frozen=True)
class Remove:
    path: str
    deletion_timestamp: int | None = None
    data_change: bool = True
    extended_file_metadata: bool | None = None
    partition_values: Mapping[str, str | None] | None = None
    size: int | None = None
    stats: str | None = None
    tags: Mapping[str, str | None] | None = None
    deletion_vector: DeletionVector | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None


def remove_for(add: Add, deletion_timestamp: int | None = None, data_change: bool = True) -> Remove:
    """Build the remove for a live file the way Delta Spark does.

    Copying partition values, size, stats, tags, DV and row-tracking fields (with
    ``extendedFileMetadata=true``) matters: conflict messages, change data feed and VACUUM read them from
    the remove, not from the long-gone add.
    """
    import time

    return Remove(
        path=add.path,
        deletion_timestamp=int(time.time() * 1000) if deletion_timestamp is None else deletion_timestamp,
        data_change=data_change,
        extended_file_metadata=True,
        partition_values=add.partition_values,
        size=add.size,
        stats=add.stats,
        tags=add.tags,
        deletion_vector=add.deletion_vector,
        base_row_id=add.base_row_id,
        default_row_commit_version=add.default_row_commit_version,
    )


@dataclass(frozen=True)
class Format:
    provider: str = "parquet"
    options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Metadata:
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    name: str | None = None
    description: str | None = None
    format: Format = field(default_factory=Format)
    schema_string: str | None = None
    partition_columns: tuple[str, ...] = ()
    configuration: Mapping[str, str] = field(default_factory=dict)
    created_time: int | None = None


@dataclass(frozen=True)
class Protocol:
    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] | None = None
    writer_features: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Txn:
    app_id: str
    version: int
    last_updated: int | None = None


@dataclass(frozen=True)
class CommitInfo:
    """Free-form commit provenance; known fields are typed, everything else is kept in ``other``."""

    timestamp: int | None = None
    in_commit_timestamp: int | None = None
    operation: str | None = None
    operation_parameters: Mapping[str, Any] | None = None
    read_version: int | None = None
    isolation_level: str | None = None
    is_blind_append: bool | None = None
    operation_metrics: Mapping[str, Any] | None = None
    engine_info: str | None = None
    txn_id: str | None = None
    user_metadata: str | None = None
    other: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Cdc:
    path: str
    partition_values: Mapping[str, str | None]
    size: int
    data_change: bool = False
    tags: Mapping[str, str | None] | None = None


@dataclass(frozen=True)
class DomainMetadata:
    domain: str
    configuration: str
    removed: bool = False


@dataclass(frozen=True)
class CheckpointMetadata:
    """Only valid inside V2 checkpoints; read, never committed."""

    version: int
    tags: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Sidecar:
    """Only valid inside V2 checkpoints; read, never committed."""

    path: str
    size_in_bytes: int
    modification_time: int
    tags: Mapping[str, str] | None = None


Action = Add | Remove | Metadata | Protocol | Txn | CommitInfo | Cdc | DomainMetadata | CheckpointMetadata | Sidecar

__all__ = [
    "Action",
    "Add",
    "Cdc",
    "CheckpointMetadata",
    "CommitInfo",
    "DeletionVector",
    "DomainMetadata",
    "Format",
    "Metadata",
    "Protocol",
    "Remove",
    "Sidecar",
    "Txn",
    "dv_unique_id",
    "remove_for",
]
