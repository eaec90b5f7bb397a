"""deltalog: a Delta Lake transaction-log engine.

Everything but the errors (all of ``deltalog.errors.__all__``, re-exported here) and the action types is
imported on first use (PEP 562): ``DeltaLog`` and
``Snapshot`` bring the read path (pyarrow), the writing side (``Transaction``, ``CommitResult``,
``RetryPolicy``, ``write``) the committer, conflict checks and the data writer. ``import deltalog`` is paid
by every reader and by every run of the ``deltalog`` command, ``--version`` included, so it stays small
(see ``tests/unit/test_import_surface.py``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from deltalog import actions, errors
from deltalog._version import __version__
from deltalog.errors import *  # noqa: F403  every public error, as errors.__all__ lists them (the one list)

if TYPE_CHECKING:  # what a type checker sees of the lazy names below (``write`` would otherwise be Any)
    from deltalog.log import DeltaLog
    from deltalog.table.commit import CommitResult, RetryPolicy, Transaction
    from deltalog.table.history import HistoryEntry
    from deltalog.table.snapshot import Snapshot
    from deltalog.writing.write import write

logging.getLogger(__name__).addHandler(logging.NullHandler())

_LAZY = {
    "DeltaLog": "deltalog.log",
    "Snapshot": "deltalog.table.snapshot",
    "CommitResult": "deltalog.table.commit",
    "Transaction": "deltalog.table.commit",
    "RetryPolicy": "deltalog.table.commit",
    "HistoryEntry": "deltalog.table.history",
    "write": "deltalog.writing.write",
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
    "CommitResult",
    "DeltaLog",
    "HistoryEntry",
    "RetryPolicy",
    "Snapshot",
    "Transaction",
    "__version__",
    "actions",
    "errors",
    "write",
]
__all__ += errors.__all__
