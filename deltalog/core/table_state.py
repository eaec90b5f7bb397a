"""Protocol, metadata, txns and domain metadata: the small part of a version's state, applied in log order.

Both replay paths (and a snapshot that defers its files) take these actions through one class, so the
newest protocol and metadata, the txn per app id and the live domains mean the same everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deltalog.core import actions as A
from deltalog.core.codec import ActionDecodeError, from_dict
from deltalog.core.jsonlines import objects
from deltalog.errors import CorruptLogError

if TYPE_CHECKING:
    from deltalog.core.replay import BaseState, CommitData

#: the non-file actions that make up table state (commitInfo, cdc, sidecars and unknown actions do not)
STATE_KEYS = frozenset({"metaData", "protocol", "txn", "domainMetadata"})


class TableState:
    """Protocol, metadata, txns and domains applied in log order, as the exact replay does."""

    def __init__(self, base: BaseState) -> None:
        self.protocol = base.protocol
        self.protocol_source = base.source if base.protocol else None
        self.metadata = base.metadata
        self.metadata_source = base.source if base.metadata else None
        self.txns = dict(base.txns)
        self.domains = dict(base.domains)
        self.partition_sets = {tuple(base.metadata.partition_columns)} if base.metadata else set()

    def take(self, action: A.Action, source: str) -> None:
        if isinstance(action, A.Metadata):
            self.metadata, self.metadata_source = action, source
            self.partition_sets.add(tuple(action.partition_columns))
        elif isinstance(action, A.Protocol):
            self.protocol, self.protocol_source = action, source
        elif isinstance(action, A.Txn):
            self.txns[action.app_id] = action
        elif isinstance(action, A.DomainMetadata):
            if action.removed:
                self.domains.pop(action.domain, None)
            else:
                self.domains[action.domain] = action

    def apply(self, commit: CommitData) -> None:
        """Take every non-file action of ``commit`` (the bulk path, for the few commits that hold any)."""
        for _, obj in objects(commit.data, commit.path):
            for key, body in obj.items():
                if key in STATE_KEYS:
                    try:
                        action = from_dict(key, body)
                    except ActionDecodeError as exc:
                        raise CorruptLogError(f"{commit.path}: invalid {key} action: {exc}", path=commit.path) from None
                    self.take(action, commit.path)


__all__ = ["STATE_KEYS", "TableState"]
