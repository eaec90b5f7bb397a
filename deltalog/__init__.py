"""deltalog: a Delta Lake transaction-log engine.

Everything but the errors and the action types is imported on first use (PEP 562): ``DeltaLog`` and
``Snapshot`` bring the read path (pyarrow), the writing side (``Transaction``, ``CommitResult``,
``RetryPolicy``, ``write``) the committer, conflict checks and the data writer. ``import deltalog`` is paid
by every reader and by every run of the ``deltalog`` command, ``--version`` included, so it stays small
(see ``tests/unit/test_import_surface.py``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from deltalog import actions
from deltalog._version import __version__
from deltalog.errors import (
    AccessDeniedError,
    CheckpointError,
    CommitNotReachableError,
    CommitStateUnknownError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentModificationError,
    ConcurrentTransactionError,
    CorruptDataError,
    CorruptLogError,
    DeltaLogError,
    DuplicateMatchError,
    ExpressionValueError,
    FileAlreadyExistsError,
    InvalidArgumentError,
    InvalidCommitError,
    InvalidExpressionError,
    MaxCommitAttemptsError,
    MetadataChangedError,
    NotFoundError,
    PathOutsideRootError,
    PropertyError,
    ProtocolChangedError,
    ProtocolError,
    SchemaError,
    StorageError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedExpressionError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)

if TYPE_CHECKING:  # what a type checker sees of the lazy names below (``write`` would otherwise be Any)
    from deltalog.dml.write import write
    from deltalog.log import DeltaLog
    from deltalog.table.commit_loop import RetryPolicy
    from deltalog.table.history import HistoryEntry
    from deltalog.table.snapshot import Snapshot
    from deltalog.table.transaction import CommitResult, Transaction

logging.getLogger(__name__).addHandler(logging.NullHandler())

_LAZY = {
    "DeltaLog": "deltalog.log",
    "Snapshot": "deltalog.table.snapshot",
    "CommitResult": "deltalog.table.transaction",
    "Transaction": "deltalog.table.transaction",
    "RetryPolicy": "deltalog.table.commit_loop",
    "HistoryEntry": "deltalog.table.history",
    "write": "deltalog.dml.write",
}


if not TYPE_CHECKING:  # a checker that saw a module __getattr__ would take any name (a typo too) as Any

    def __getattr__(name: str) -> Any:
        """The table API, the writing API and history entries, imported when first named (PEP 562)."""
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AccessDeniedError",
    "CommitResult",
    "RetryPolicy",
    "Transaction",
    "__version__",
    "InvalidCommitError",
    "CheckpointError",
    "CommitNotReachableError",
    "CommitStateUnknownError",
    "ConcurrentAppendError",
    "ConcurrentDeleteDeleteError",
    "ConcurrentDeleteReadError",
    "ConcurrentModificationError",
    "ConcurrentTransactionError",
    "CorruptDataError",
    "CorruptLogError",
    "DeltaLog",
    "DeltaLogError",
    "DuplicateMatchError",
    "ExpressionValueError",
    "FileAlreadyExistsError",
    "HistoryEntry",
    "InvalidArgumentError",
    "InvalidExpressionError",
    "MaxCommitAttemptsError",
    "MetadataChangedError",
    "NotFoundError",
    "PathOutsideRootError",
    "PropertyError",
    "ProtocolChangedError",
    "ProtocolError",
    "SchemaError",
    "Snapshot",
    "StorageError",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "UnsupportedExpressionError",
    "UnsupportedFeatureError",
    "VersionNotFoundError",
    "actions",
    "write",
]
