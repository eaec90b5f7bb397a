"""The rules, one module per concern; importing this package registers all of them (see ``report.RULES``)."""

from . import (
    checkpoints,
    checksums,
    column_mapping,
    commit_structure,
    data_change,
    deletion_vectors,
    domains,
    ict,
    log_layout,
    partitions,
    protocol,
    row_tracking,
    shapes,
)

__all__ = [
    "checkpoints",
    "checksums",
    "column_mapping",
    "commit_structure",
    "data_change",
    "deletion_vectors",
    "domains",
    "ict",
    "log_layout",
    "partitions",
    "protocol",
    "row_tracking",
    "shapes",
]
