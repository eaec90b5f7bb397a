"""deltalog: a Delta Lake transaction-log engine."""

from __future__ import annotations

import logging

from deltalog import actions
from deltalog._version import __version__
from deltalog.committer import RetryPolicy
from deltalog.errors import (
    CheckpointError,
    CommitStateUnknownError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentModificationError,
    ConcurrentTransactionError,
    CorruptLogError,
    DeltaLogError,
    FileAlreadyExistsError,
    InvalidArgumentError,
    InvalidCommitError,
    MaxCommitAttemptsError,
    MetadataChangedError,
    ProtocolChangedError,
    ProtocolError,
    StorageError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from deltalog.log import DeltaLog, HistoryEntry
from deltalog.snapshot import Snapshot
from deltalog.transaction import CommitResult, Transaction

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "CommitResult",
    "RetryPolicy",
    "Transaction",
    "__version__",
    "InvalidCommitError",
    "CheckpointError",
    "CommitStateUnknownError",
    "ConcurrentAppendError",
    "ConcurrentDeleteDeleteError",
    "ConcurrentDeleteReadError",
    "ConcurrentModificationError",
    "ConcurrentTransactionError",
    "CorruptLogError",
    "DeltaLog",
    "DeltaLogError",
    "FileAlreadyExistsError",
    "HistoryEntry",
    "InvalidArgumentError",
    "MaxCommitAttemptsError",
    "MetadataChangedError",
    "ProtocolChangedError",
    "ProtocolError",
    "Snapshot",
    "StorageError",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "UnsupportedFeatureError",
    "VersionNotFoundError",
    "actions",
]
