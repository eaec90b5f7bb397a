"""When a writer may commit without listing first: the anchor of the one-request path.

The anchor is a version and a time on the writer's clock before which that version existed: the writer's own
last commit (the clock just before it was sent) or the tip of a listing (the store's stamp less the margin,
:func:`deltalog.core.log.reachability.listed_anchor_ms`). :func:`deltalog.core.log.reachability.young` says how long
it vouches for the log; the facade keeps one per table and asks it before each transaction.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from deltalog.core.log.reachability import listed_anchor_ms
from deltalog.errors import PropertyError

if TYPE_CHECKING:
    from deltalog.table.commit.loop import Young
    from deltalog.table.snapshot import Snapshot


class Anchor:
    """One table's anchor, shared by the threads of one ``DeltaLog``; the newest (version, ms) wins."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._at: tuple[int, int] | None = None

    def forget(self) -> None:
        """The cached state did not hold (the log was rebuilt): nothing seen before vouches for it now."""
        with self._lock:
            self._at = None

    def listed(self, snap: Snapshot) -> None:
        """A listing showed ``snap``'s tip commit: its stamp anchors a version this writer did not commit."""
        tip = snap.segment.commits[-1] if snap.segment.commits else None
        if tip is None or tip.version != snap.version:
            return
        ms = listed_anchor_ms(tip.mtime)
        if ms is not None:
            with self._lock:
                if self._at is None or self._at[0] < snap.version:
                    self._at = (snap.version, ms)

    def committed(self, version: int, sent_ms: int) -> None:
        """This writer's commit of ``version`` landed; it was sent at ``sent_ms`` on the writer's clock."""
        with self._lock:
            if self._at is None or self._at < (version, sent_ms):
                self._at = (version, sent_ms)

    def young(self, snap: Snapshot | None, now_ms: int) -> Young | None:
        """The one-request path for a transaction on ``snap``, when ``snap`` descends from the anchor and the
        anchor is still young; None sends the commit through the listing path."""
        # imported here, as the facade did: neither is on ``import deltalog``'s path
        from deltalog.core.features.properties import log_retention_ms
        from deltalog.table.commit.loop import Young

        with self._lock:
            at = self._at
        if snap is None or at is None or snap.version < at[0]:
            return None
        try:
            retention = log_retention_ms(snap.configuration)
        except PropertyError:
            return None  # a retention that does not parse vouches for nothing; the commit lists (and can repair it)
        young = Young(at[1], retention)
        return young if young.holds(now_ms) else None


__all__ = ["Anchor"]
