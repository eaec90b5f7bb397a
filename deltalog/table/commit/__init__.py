"""Committing a version: a transaction, and the stages its commit goes through, each a value the next takes.

::

    Transaction          what was read (a Snapshot, or a NewTable: read version -1) and what is staged
       │ commit()
       ▼
    Prepared             every rule and feature check run, the kind held to, commitInfo, the conflict summary
       │                 (prepare.py; read_state.py answers what was read, read_set.py what the reads were)
       ▼
    Attempts             the bytes of the attempt at each version: in-commit timestamps, row ids (attempts.py)
       │
       ▼
    loop                 put-if-absent; a version taken: read the winners, check each for conflicts, try the
       │                 next version with new bytes (loop.py) ─▶ Landed: the version written, its listing
       ▼
    Acknowledged         the listing after the write proves it reachable; an orphan is withdrawn
       │                 (acknowledgment.py; anchor.py: when the listing before an attempt may be skipped)
       ▼
    Committed            the result, and the commits after the read version, handed once to whoever started
                         the transaction (the facade's post-commit policy) (committed.py)

No stage calls back into the transaction: each gets what it needs in the value before it. Everything outside
this package imports from here (the names below), never from its modules, which are its own business; they load
on first use, since reading a table needs none of them (``tests/unit/test_import_surface.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deltalog.table.commit.anchor import Anchor, Young
    from deltalog.table.commit.committed import NOT_LANDED, CommitResult, Committed, skipped
    from deltalog.table.commit.declared_intents import IntentHandle, expired_intents, list_intents
    from deltalog.table.commit.loop import RetryPolicy
    from deltalog.table.commit.new_table import NewTable
    from deltalog.table.commit.transaction import Transaction

_NAMES = {
    "Anchor": "anchor",
    "Young": "anchor",
    "CommitResult": "committed",
    "Committed": "committed",
    "NOT_LANDED": "committed",
    "skipped": "committed",
    "IntentHandle": "declared_intents",
    "expired_intents": "declared_intents",
    "list_intents": "declared_intents",
    "RetryPolicy": "loop",
    "NewTable": "new_table",
    "Transaction": "transaction",
}

if not TYPE_CHECKING:  # a checker that saw a module __getattr__ would take any name as Any

    def __getattr__(name: str) -> Any:
        """The package's names, each imported from its module when first asked for (PEP 562)."""
        module = _NAMES.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value


__all__ = [
    "NOT_LANDED",
    "Anchor",
    "CommitResult",
    "Committed",
    "IntentHandle",
    "NewTable",
    "RetryPolicy",
    "Transaction",
    "Young",
    "expired_intents",
    "list_intents",
    "skipped",
]
