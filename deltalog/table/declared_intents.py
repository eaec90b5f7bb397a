"""Declared-intent files with IO: publish, heartbeat, list, remove, and the early check a transaction runs.

``_delta_log/_intents/<txnId>.json`` is created with ``put_if_absent`` and rewritten with ``put`` by a daemon
heartbeat thread every ``heartbeat_s`` seconds, which refreshes the file's modification time on the store.
No log reader looks there: deltalog lists ``_delta_log`` without subdirectories, and Delta Spark and delta-rs
only parse versioned names. The policy (what intents bind, priority, liveness) is in
:mod:`deltalog.core.declared_intents`.

"Now" on the store is learned from our own intent file: its modification time is the store's clock at our
last heartbeat, and the time elapsed since then is measured with a monotonic clock. So no two machines'
wall clocks are ever compared. Tools with no intent of their own (``deltalog intents``, cleanup) use the
local clock, and cleanup adds :data:`~deltalog.core.declared_intents.CLEANUP_MARGIN_MS` to absorb the skew.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from deltalog.core import declared_intents as core
from deltalog.core.conflicts import ReadPredicate, TxnSummary, check_winner
from deltalog.core.declared_intents import INTENTS_DIR, IntentRecord, ObservedIntent
from deltalog.errors import DeltaLogError, NotFoundError
from deltalog.storage.base import LogStore
from deltalog.table.commit_loop import Committer, RetryPolicy

log = logging.getLogger(__name__)


def intent_path(txn_id: str) -> str:
    return f"{INTENTS_DIR}/{txn_id}.json"


def owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def list_intents(store: LogStore) -> list[ObservedIntent]:
    """Every intent file, parsed where possible, with the store's modification time; sorted by path."""
    out = []
    for info in store.walk(INTENTS_DIR):
        name = info.name.rsplit("/", 1)[-1]
        if not name.endswith(".json") or name.startswith("."):
            continue
        try:
            data = store.read(info.name)
        except NotFoundError:
            continue  # removed by its owner while we listed
        record: IntentRecord | None
        try:
            record, error = core.decode(data), None
        except core.IntentDecodeError as exc:
            record, error = None, str(exc)
        out.append(ObservedIntent(info.name, name[: -len(".json")], info.mtime, record, error))
    return sorted(out, key=lambda o: o.path)


class IntentHandle:
    """Our published intent: its heartbeat thread, and the store clock learned from its file.

    ``monotonic`` (seconds) is injectable so tests can move "now" without sleeping.
    """

    def __init__(
        self,
        store: LogStore,
        record: IntentRecord,
        heartbeat_s: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.record = record
        self.path = intent_path(record.txn_id)
        self.heartbeat_s = heartbeat_s
        self.monotonic = monotonic
        self._data = core.encode(record)
        self._lock = threading.Lock()
        self._last_put: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.beats = 0

    def publish(self) -> None:
        with self._lock:
            self.store.put_if_absent(self.path, self._data)
            self._last_put = self.monotonic()

    def beat(self) -> None:
        """Rewrite the file, refreshing its modification time on the store."""
        with self._lock:
            self.store.put(self.path, self._data)
            self._last_put = self.monotonic()
            self.beats += 1

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"deltalog-intent-{self.record.txn_id}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            try:
                self.beat()
            except (DeltaLogError, OSError) as exc:  # keep beating: the next one may succeed before the timeout
                log.warning("heartbeat of intent %s failed: %s", self.path, exc)

    def stop(self) -> None:
        """Stop the heartbeat and leave the file (a crash looks like this: the intent expires)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def remove(self) -> None:
        self.stop()
        self.store.delete(self.path)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def observe(self) -> tuple[list[ObservedIntent], int]:
        """All intents, and the store's now (ms) extrapolated from our own file's modification time."""
        if self._stop.is_set():
            raise DeltaLogError(f"intent {self.path} was released (commit, abort or stop): nothing to check")
        for _ in range(2):
            with self._lock:
                listed = list_intents(self.store)
                mine = next((o for o in listed if o.path == self.path), None)
                if mine is not None and self._last_put is not None:
                    elapsed_ms = int((self.monotonic() - self._last_put) * 1000)
                    return listed, mine.mtime_ms + max(elapsed_ms, 0)
            log.warning("intent %s vanished from the store; publishing it again", self.path)
            self.beat()
        raise DeltaLogError(f"intent {self.path} cannot be kept on the store")


def declare(
    store: LogStore,
    txn_id: str,
    read_version: int,
    predicates: Sequence[ReadPredicate],
    files: Sequence[str],
    now_ms: int,
    timeout_s: float = core.DEFAULT_TIMEOUT_S,
    *,
    operation: str = "WRITE",
    is_compaction: bool = False,
    heartbeat_s: float = core.DEFAULT_HEARTBEAT_S,
    monotonic: Callable[[], float] = time.monotonic,
    start: bool = True,
) -> IntentHandle:
    """Publish an intent and start its heartbeat (``start=False`` leaves the heartbeat to the caller)."""
    if heartbeat_s <= 0 or timeout_s <= heartbeat_s:
        raise ValueError(f"need 0 < heartbeat_s < timeout_s, got {heartbeat_s} and {timeout_s}")
    record = IntentRecord(
        txn_id=txn_id,
        read_version=read_version,
        predicates=core.predicate_specs(predicates),
        files=tuple(sorted(files)),
        operation=operation,
        owner=owner(),
        declared_at=now_ms,
        is_compaction=is_compaction,
        timeout_ms=int(timeout_s * 1000),
        heartbeat_ms=int(heartbeat_s * 1000),
    )
    handle = IntentHandle(store, record, heartbeat_s, monotonic)
    handle.publish()
    if start:
        handle.start()
    return handle


def check_early(
    store: LogStore,
    summary: TxnSummary,
    checked_through: int,
    check_protocol: Callable[[Any], None] | None,
    handle: IntentHandle | None,
    partition_types: Mapping[str, Any],
) -> int:
    """Raise the typed conflict error a commit would raise; return the last version checked.

    (a) every commit after ``checked_through`` is checked against ``summary`` as the commit loop checks
    winners; (b) with a published intent, a live overlapping intent of higher priority stops us too.
    """
    committer = Committer(store, RetryPolicy())
    for winner in committer.winners_after(checked_through):
        if winner.txn_id is not None and winner.txn_id == summary.txn_id:
            continue
        check_winner(summary, winner, check_protocol)
        checked_through = winner.version
    if handle is not None:
        listed, store_now = handle.observe()
        blocker = core.blocking_intent(handle.record, listed, partition_types, store_now)
        if blocker is not None:
            raise core.early_error(handle.record, blocker)
    return checked_through


def expired_intents(store: LogStore, now_ms: int, margin_ms: int = core.CLEANUP_MARGIN_MS) -> list[ObservedIntent]:
    """Intents whose file is older than their timeout plus ``margin_ms`` by ``now_ms`` (the local clock)."""
    default = int(core.DEFAULT_TIMEOUT_S * 1000)
    return [o for o in list_intents(store) if not core.is_live(o.mtime_ms, now_ms, o.timeout_ms(default) + margin_ms)]


__all__ = ["IntentHandle", "check_early", "declare", "expired_intents", "intent_path", "list_intents", "owner"]
