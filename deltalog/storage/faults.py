"""A fault-injecting :class:`~deltalog.storage.base.LogStore` wrapper, for testing the commit path on any backend.

Why: the failures a commit must survive are the ones a healthy store almost never shows on demand. A PUT whose
response is lost after the object landed, a burst of 503s, a throttled LIST, a process killed between writing its
temp file and linking it into place. :class:`FaultyStore` wraps any store and makes those failures happen exactly
where a test says (by operation, path and call count, or with a seeded probability), and records every call, so a
test can arrange a failure and then assert what the engine did about it::

    store = FaultyStore(LocalLogStore(root), fail_after("put_if_absent", "_delta_log/*1.json", nth=1))
    result = DeltaLog(store, root).start_transaction().commit([...])
    assert [c.outcome for c in store.calls_to("put_if_absent")] == [Outcome.FAILED_AFTER]

The wrapper only adds failures and delays. It never weakens the inner store's guarantees (atomic visibility,
exclusive ``put_if_absent``), so it reports the inner store's capabilities unchanged.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from deltalog.storage.base import Capabilities, FileInfo, LogStore, split_dir
from deltalog.storage.fault_rules import (
    OPS,
    ErrorFactory,
    FaultPlan,
    FaultRule,
    Mode,
    Op,
    Outcome,
    PathMatch,
    SimulatedCrash,
    T,
    connection_reset,
    crash,
    fail_after,
    fail_before,
    server_error,
    slow,
    throttle,
    throttled,
    timeout,
    transient,
)


# ------------------------------------------------------------------------------------------ the store
@dataclass(frozen=True)
class Call:
    """One recorded call: what was asked, how it ended, and which rule (if any) made it so.

    ``error`` names the exception the caller saw (``"FileNotFoundError"``); ``leftover`` is the temp file a
    crash left behind (store-relative); ``delay_s`` is the total injected delay.
    """

    op: str
    path: str
    outcome: Outcome
    rule: str | None = None
    error: str | None = None
    delay_s: float = 0.0
    leftover: str | None = None

    @property
    def injected(self) -> bool:
        return self.outcome in (Outcome.FAILED_BEFORE, Outcome.FAILED_AFTER, Outcome.CRASHED)


class FaultyStore(LogStore):
    """A :class:`LogStore` that delegates to ``inner`` and injects the faults its rules describe.

    ``faults`` are rules and/or plans (flattened in order); ``seed`` drives every probabilistic rule (the single
    plan's seed when not given, else 0). ``sleep`` performs injected delays, so tests pass a no-op or a recorder.
    Safe to share between threads: counters, the random generator and the call log are guarded by a lock, and
    ``on_fire`` hooks run outside it (they may call back into this store).
    """

    def __init__(
        self,
        inner: LogStore,
        *faults: FaultRule | FaultPlan,
        seed: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        plans = [f for f in faults if isinstance(f, FaultPlan)]
        if seed is None:
            seed = plans[0].seed if len(plans) == 1 else 0
        self.inner = inner
        self.sleep = sleep
        self._lock = threading.RLock()
        self._random = random.Random(seed)
        self._rules: list[FaultRule] = []
        self._counts: list[int] = []
        self._calls: list[Call] = []
        self.arm(*faults)

    # ---------------------------------------------------------------------------------- configuration
    def arm(self, *faults: FaultRule | FaultPlan) -> None:
        """Add rules (each starts counting from now), e.g. after the table was created through this store."""
        rules: list[FaultRule] = []
        for f in faults:
            rules.extend(f.rules if isinstance(f, FaultPlan) else (f,))
        with self._lock:
            self._rules.extend(rules)
            self._counts.extend(0 for _ in rules)

    def disarm(self) -> None:
        """Drop every rule: the store behaves like ``inner`` from now on (the call log is kept)."""
        with self._lock:
            self._rules.clear()
            self._counts.clear()

    @property
    def rules(self) -> tuple[FaultRule, ...]:
        with self._lock:
            return tuple(self._rules)

    # ---------------------------------------------------------------------------------- inspection
    @property
    def calls(self) -> list[Call]:
        """Every call so far, in order (a copy)."""
        with self._lock:
            return list(self._calls)

    def calls_to(self, op: Op | None = None, path: PathMatch = "*") -> list[Call]:
        """The recorded calls of ``op`` (any when None) on paths matching ``path`` (a glob or a predicate)."""
        probe = FaultRule(op, path)
        return [c for c in self.calls if probe.matches(c.op, c.path)]

    def injected(self) -> list[Call]:
        """The calls a fault made fail (delays alone do not count)."""
        return [c for c in self.calls if c.injected]

    def clear_calls(self) -> None:
        with self._lock:
            self._calls.clear()

    def _record(self, call: Call) -> None:
        with self._lock:
            self._calls.append(call)

    # ---------------------------------------------------------------------------------- the machinery
    def _firing(self, op: str, path: str) -> tuple[float, FaultRule | None, list[FaultRule]]:
        """(total delay, the failing rule if any, every rule that fired) for this call."""
        delay = 0.0
        failing: FaultRule | None = None
        fired: list[FaultRule] = []
        with self._lock:
            for i, rule in enumerate(self._rules):
                if not rule.matches(op, path):
                    continue
                self._counts[i] += 1
                if not rule.in_window(self._counts[i]):
                    continue
                if rule.probability < 1.0 and self._random.random() >= rule.probability:
                    continue
                fired.append(rule)
                delay += rule.delay_s
                if failing is None and rule.mode is not Mode.DELAY:
                    failing = rule
        return delay, failing, fired

    def _leave_temp(self, path: str, data: bytes) -> str:
        """Write a torn temp file where a local writer keeps it (``.<name>.<uuid>.tmp`` beside the target)."""
        directory, name = split_dir(path)
        tmp_name = f".{name}.{uuid.uuid4().hex}.tmp"
        tmp = f"{directory}/{tmp_name}" if directory else tmp_name
        self.inner.put(tmp, data[: len(data) // 2])
        return tmp

    def _call(self, op: str, path: str, action: Callable[[], T], data: bytes = b"") -> T:
        delay, rule, fired = self._firing(op, path)
        if delay:
            self.sleep(delay)
        for r in fired:
            if r.mode is Mode.DELAY and r.on_fire is not None:
                r.on_fire(op, path)
        label = rule.label if rule is not None else (fired[0].label if fired else None)
        if rule is None:
            return self._delegate(op, path, action, label, delay)
        if rule.mode is Mode.BEFORE:
            if rule.on_fire is not None:
                rule.on_fire(op, path)
            exc = rule.error(op, path)
            self._record(Call(op, path, Outcome.FAILED_BEFORE, label, type(exc).__name__, delay))
            raise exc
        if rule.mode is Mode.CRASH:
            leftover = self._leave_temp(path, data)
            if rule.on_fire is not None:
                rule.on_fire(op, path)
            self._record(Call(op, path, Outcome.CRASHED, label, SimulatedCrash.__name__, delay, leftover))
            raise SimulatedCrash(op, path, leftover)
        # Mode.AFTER: the inner call happens; only when it succeeded is the answer "lost".
        result = self._delegate(op, path, action, label, delay, record_ok=False)
        if rule.on_fire is not None:
            rule.on_fire(op, path)
        close = getattr(result, "close", None) if op == "open" else None
        if callable(close):
            close()  # nobody will read the stream of an open that "failed"
        exc = rule.error(op, path)
        self._record(Call(op, path, Outcome.FAILED_AFTER, label, type(exc).__name__, delay))
        raise exc

    def _delegate(
        self,
        op: str,
        path: str,
        action: Callable[[], T],
        label: str | None,
        delay: float,
        record_ok: bool = True,
    ) -> T:
        try:
            result = action()
        except BaseException as exc:
            self._record(Call(op, path, Outcome.ERROR, None, type(exc).__name__, delay))
            raise
        if record_ok:
            self._record(Call(op, path, Outcome.OK, label, None, delay))
        return result

    # ---------------------------------------------------------------------------------- LogStore
    @property
    def root(self) -> str:
        return self.inner.root

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    def read(self, path: str) -> bytes:
        return self._call("read", path, lambda: self.inner.read(path))

    def open(self, path: str) -> BinaryIO:
        return self._call("open", path, lambda: self.inner.open(path))

    def list_from(self, path: str) -> Iterator[FileInfo]:
        # Materialised inside the call, so a failure of a lazy inner listing is recorded against this call.
        return iter(self._call("list_from", path, lambda: list(self.inner.list_from(path))))

    def walk(self, path: str = "", skip: Callable[[str], bool] | None = None) -> Iterator[FileInfo]:
        return iter(self._call("walk", path, lambda: list(self.inner.walk(path, skip))))

    def put_if_absent(self, path: str, data: bytes) -> None:
        self._call("put_if_absent", path, lambda: self.inner.put_if_absent(path, data), data)

    def put(self, path: str, data: bytes) -> None:
        self._call("put", path, lambda: self.inner.put(path, data), data)

    def delete(self, path: str) -> None:
        self._call("delete", path, lambda: self.inner.delete(path))

    def exists(self, path: str) -> bool:
        return self._call("exists", path, lambda: self.inner.exists(path))

    def __repr__(self) -> str:
        return f"FaultyStore({self.inner!r}, {len(self.rules)} rules)"


__all__ = [
    "OPS",
    "Call",
    "ErrorFactory",
    "FaultPlan",
    "FaultRule",
    "FaultyStore",
    "Mode",
    "Op",
    "Outcome",
    "SimulatedCrash",
    "connection_reset",
    "crash",
    "fail_after",
    "fail_before",
    "server_error",
    "slow",
    "throttle",
    "throttled",
    "timeout",
    "transient",
]
