"""One table's latest snapshot as a long-lived reader and writer keeps it: cached, refreshed, advanced by its own
commits, and the anchor that lets its next commit skip the listing.

The facade (:class:`~deltalog.log.DeltaLog`) holds one; so does every transaction it starts on the cached
snapshot without listing, which refreshes through it on its first read (:meth:`Latest.for_transaction`), so no
transaction calls up into the facade. Thread-safe: the threads of one ``DeltaLog`` share it.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from deltalog.table import refresh
from deltalog.table.commit import Anchor, Young
from deltalog.table.context import TableContext
from deltalog.table.snapshot import Snapshot

if TYPE_CHECKING:
    from deltalog.table.commit import Committed

log = logging.getLogger(__name__)


class Latest:
    """The latest snapshot of the table at ``context`` as this process last saw it, and its anchor."""

    def __init__(self, context: TableContext) -> None:
        self.context = context
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        #: when a transaction may skip its listing (this process's last commit, or the tip it last listed)
        self.anchor = Anchor()

    @property
    def cached(self) -> Snapshot | None:
        """The snapshot kept, as it is (no listing): None before the first load."""
        with self._lock:
            return self._snapshot

    def refresh(self, lazy: bool = False) -> Snapshot:
        """The latest snapshot (:func:`deltalog.table.refresh.refresh`), kept; ``lazy`` defers a load's files."""
        outcome = refresh.refresh(self.context, self.cached, lazy)
        if not isinstance(outcome, refresh.Unchanged):
            rebuilt = isinstance(outcome, refresh.Rebuild) and not outcome.from_checkpoint
            if rebuilt:
                self.anchor.forget()
            self.remember(outcome.snapshot, replace=rebuilt)
        return outcome.snapshot

    def remember(self, snap: Snapshot, replace: bool = False) -> None:
        """Keep ``snap`` unless a newer one is kept; ``replace`` keeps a fresh load whatever its version."""
        with self._lock:
            if replace or self._snapshot is None or snap.version >= self._snapshot.version:
                self._snapshot = snap
        self.anchor.listed(snap)

    def young(self, snap: Snapshot | None) -> Young | None:
        """Whether a transaction on ``snap`` may take the one-request path now (:meth:`Anchor.young`)."""
        return self.anchor.young(snap, self.context.now_ms())

    def for_transaction(self) -> tuple[Snapshot, Young | None]:
        """A transaction's snapshot when it reads: refreshed (its files deferred), with its young window."""
        snap = self.refresh(lazy=True)
        return snap, self.young(snap)

    def committed(self, committed: Committed) -> None:
        """Advance the kept snapshot by the winners and our commit (bounded, see
        :func:`deltalog.table.refresh.advance`) when the commit directly follows what it read, and the anchor
        to our commit. Never raises: the commit has landed, and a cache that did not advance refreshes later."""
        result, read, commits = committed.result, committed.read, list(committed.commits)
        version = result.version or 0
        if not isinstance(read, Snapshot):
            return
        try:
            if [c.version for c in commits] == list(range(read.version + 1, version + 1)):
                self.remember(refresh.advance(self.context, read, commits).snapshot)
                if committed.sent_ms is not None:
                    self.anchor.committed(version, committed.sent_ms)
        except Exception:
            log.exception("could not advance the cached snapshot after version %s", result.version)


__all__ = ["Latest"]
