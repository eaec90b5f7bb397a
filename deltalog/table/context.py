"""What every operation on one table needs besides the core: its store, its location and its clock.

Why a value and not the :class:`~deltalog.log.DeltaLog`: listing, loading, committing and maintenance use
nothing else of the facade, and taking the facade made every one of them a spoke that called back into
the hub. A context is cheap to make (a compaction job makes one per table) and safe to share.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from deltalog.core.engine_safety import EngineRisk
from deltalog.storage.base import LogStore
from deltalog.storage.typed import typed

log = logging.getLogger(__name__)


class WarnOnce:
    """A sink that logs the first engine risk it is given and drops the rest, and each refused log
    compaction file once.

    One warning per table handle is what an operator needs to act; a long-lived writer that reads the
    offending commits again on every refresh must not repeat it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._warned = False
        self._refused: set[str] = set()

    @property
    def warned(self) -> bool:
        return self._warned

    def engine_risk(self, risk: EngineRisk | None, location: str) -> None:
        if risk is None:
            return
        with self._lock:
            if self._warned:
                return
            self._warned = True
        log.warning("%s", risk.message(location))

    def compaction_refused(self, name: str, why: str, location: str) -> None:
        """Log, the first time only, that log compaction file ``name`` is not used and its commits are read.

        Once per file: every load of the table meets the same file again, and one line tells the operator
        which file to look at (it is never needed: deleting it changes nothing a reader sees).
        """
        with self._lock:
            if name in self._refused:
                return
            self._refused.add(name)
        log.warning("%s: log compaction file %s is not used, its commits are read instead: %s", location, name, why)


@dataclass(frozen=True)
class TableContext:
    """A table's store, its location (for messages) and the clock its retention and timestamps use.

    The store is held wrapped (:func:`deltalog.storage.typed.typed`): this is where the table layer's reads
    and writes enter storage, so whatever a caller's store raises reaches the layers above as a
    :class:`~deltalog.errors.DeltaLogError`, never as a builtin ``TimeoutError`` or ``OSError``.
    """

    store: LogStore
    location: str
    clock: Callable[[], float] = time.time
    #: where engine risks and refused compaction files found while reading the log are reported, once per context
    warnings: WarnOnce = field(default_factory=WarnOnce, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "store", typed(self.store))

    @classmethod
    def of(cls, store: LogStore, clock: Callable[[], float] = time.time) -> TableContext:
        """A context named by the store's own root."""
        return cls(store, store.root, clock)

    def now_ms(self) -> int:
        """The clock in epoch milliseconds: what retention, intents and tombstones are judged by."""
        return int(self.clock() * 1000)

    def warn_engine_risk(self, risk: EngineRisk | None) -> None:
        """Log, once for this context, that an engine which cannot share this store safely committed here."""
        self.warnings.engine_risk(risk, self.location)

    def warn_compaction_refused(self, name: str, why: str) -> None:
        """Log, once per file for this context, that a log compaction file is read around (its commits instead)."""
        self.warnings.compaction_refused(name, why, self.location)


__all__ = ["TableContext", "WarnOnce"]
