"""Public home of the action types; they live in the pure core."""

from deltalog.core.actions import (
    Action,
    Add,
    Cdc,
    CheckpointMetadata,
    CommitInfo,
    DeletionVector,
    DomainMetadata,
    Format,
    Metadata,
    Protocol,
    Remove,
    Sidecar,
    Txn,
    dv_unique_id,
    remove_for,
)

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
