"""When a writer may commit without listing first: the anchor of the one-request path, and the window it opens.

The anchor is a version and a time on the writer's clock before which that version existed: the writer's own
last commit (the clock just before it was sent) or the tip of a listing (the store's stamp less the margin,
:func:`deltalog.core.log.reachability.listed_anchor_ms`). :func:`deltalog.core.log.reachability.young` says how
long it vouches for the log; the table's latest-snapshot keeper (:mod:`deltalog.table.latest`) holds one per
table and asks it before each transaction. What a transaction carries of it is :class:`Young`: the loop skips
the listing before an attempt while it holds, and the acknowledgment still lists after every write
(:mod:`deltalog.table.commit.acknowledgment`), so these pieces of reachability sit together here.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from deltalog.core.features.properties import log_retention_ms
from deltalog.core.log.reachability import listed_anchor_ms, young
from deltalog.errors import PropertyError

if TYPE_CHECKING:
    from deltalog.table.snapshot import Snapshot


@dataclass(frozen=True)
class Young:
    """When the commit may skip listings: ``anchor_ms`` is the writer's clock before it sent the commit the
    read version descends from, ``retention_ms`` the table's ``delta.logRetentionDuration``."""

    anchor_ms: int
    retention_ms: int

    def holds(self, now_ms: int) -> bool:
        return young(self.anchor_ms, now_ms, self.retention_ms)


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
        with self._lock:
            at = self._at
        if snap is None or at is None or snap.version < at[0]:
            return None
        try:
            retention = log_retention_ms(snap.configuration)
        except PropertyError:
            return None  # a retention that does not parse vouches for nothing; the commit lists (and can repair it)
        window = Young(at[1], retention)
        return window if window.holds(now_ms) else None


__all__ = ["Anchor", "Young"]
