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

import fnmatch
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, BinaryIO, Literal, TypeVar, get_args

from deltalog.errors import StorageError
from deltalog.storage.base import Capabilities, FileInfo, LogStore, split_dir

T = TypeVar("T")

Op = Literal["read", "open", "list_from", "walk", "put_if_absent", "put", "delete", "exists"]
OPS: frozenset[str] = frozenset(get_args(Op))
#: operations that can leave a temp file behind when the process dies
WRITE_OPS: frozenset[str] = frozenset({"put_if_absent", "put"})

#: builds the exception a fault raises, from the operation and the path of the failed call
ErrorFactory = Callable[[str, str], BaseException]
#: a path matcher: a glob (``fnmatch``, case-sensitive, ``*`` also matches ``/``) or a predicate
PathMatch = str | Callable[[str], bool]


class SimulatedCrash(BaseException):
    """The process "died" here.

    A killed process runs no error handling at all, so this derives from :class:`BaseException`: the engine's
    ``except Exception`` / ``except StorageError`` blocks must not catch it and carry on as a real writer
    could not. The test that arranged the crash catches it and then plays the part of the next process.
    """

    def __init__(self, op: str, path: str, leftover: str | None) -> None:
        super().__init__(f"simulated crash during {op} {path}" + (f"; left {leftover}" if leftover else ""))
        self.op = op
        self.path = path
        self.leftover = leftover


class Mode(str, Enum):
    """What a firing rule does to the call."""

    #: raise without touching the inner store: the request never arrived
    BEFORE = "before"
    #: delegate, then raise: the object landed but the caller never saw the answer (a lost response)
    AFTER = "after"
    #: leave a torn ``.<name>.<uuid>.tmp`` beside the target and raise :class:`SimulatedCrash`; nothing lands
    CRASH = "crash"
    #: only sleep ``delay_s`` (through the store's injectable sleep), then delegate normally
    DELAY = "delay"


class Outcome(str, Enum):
    """How a recorded call ended, as seen by the caller."""

    OK = "ok"  # the inner store answered and no fault applied
    ERROR = "error"  # the inner store itself raised (FileNotFoundError, FileAlreadyExistsError, ...)
    FAILED_BEFORE = "failed_before"  # an injected error; the inner store was not called
    FAILED_AFTER = "failed_after"  # the inner call succeeded, then an injected error was raised
    CRASHED = "crashed"  # a temp file was left and SimulatedCrash raised


# ------------------------------------------------------------------------------------------ error factories
def transient(message: str = "injected transient storage failure") -> ErrorFactory:
    """A retryable :class:`StorageError`: what a store raises for a failure that may go away."""

    def make(op: str, path: str) -> BaseException:
        return StorageError(f"{message} ({op} {path})", path=path, retryable=True)

    return make


def server_error(status: int = 503, reason: str = "Service Unavailable") -> ErrorFactory:
    """A retryable :class:`StorageError` worded like an HTTP 5xx from an object store."""
    return transient(f"HTTP {status} {reason} (injected)")


def throttled() -> ErrorFactory:
    """A retryable :class:`StorageError` worded like S3's 503 SlowDown / Azure's 503 ServerBusy."""
    return transient("HTTP 503 SlowDown: please reduce your request rate (injected throttling)")


def timeout() -> ErrorFactory:
    """A :class:`TimeoutError`, as a socket read timeout surfaces from a client library."""

    def make(op: str, path: str) -> BaseException:
        return TimeoutError(f"injected timeout during {op} {path}")

    return make


def connection_reset() -> ErrorFactory:
    """A :class:`ConnectionResetError` (an :class:`OSError`), as a dropped connection surfaces."""

    def make(op: str, path: str) -> BaseException:
        return ConnectionResetError(f"injected connection reset during {op} {path}")

    return make


# ------------------------------------------------------------------------------------------ rules
@dataclass(frozen=True)
class FaultRule:
    """One fault: which calls it matches, which of those it fires on, and what it does then.

    A call matches when its operation is ``op`` (one name, a tuple of names, or ``None`` for any) and its
    path matches ``path``. Every matching call advances the rule's own counter, whether or not the rule
    fires, so ``nth=2`` means "the second call this rule matches". The rule fires on the ``nth`` matching call
    only, on the ``first`` k matching calls, or on every matching call; then, when ``probability`` is below 1,
    only when the store's seeded :class:`random.Random` says so.

    When it fires it sleeps ``delay_s`` (any mode), calls ``on_fire(op, path)`` (after the inner call for
    :attr:`Mode.AFTER`, so a test can let another writer act inside the window between "landed" and
    "answered"), and then fails as ``mode`` says with the exception ``error`` builds.
    """

    op: Op | tuple[Op, ...] | None = None
    path: PathMatch = "*"
    mode: Mode = Mode.BEFORE
    error: ErrorFactory = field(default_factory=transient)
    nth: int | None = None
    first: int | None = None
    probability: float = 1.0
    delay_s: float = 0.0
    on_fire: Callable[[str, str], None] | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        ops = self.ops()
        unknown = ops - OPS
        if unknown:
            raise ValueError(f"unknown operations {sorted(unknown)}; expected some of {sorted(OPS)}")
        if self.nth is not None and self.first is not None:
            raise ValueError("give nth or first, not both")
        if self.nth is not None and self.nth < 1:
            raise ValueError(f"nth counts from 1, got {self.nth}")
        if self.first is not None and self.first < 0:
            raise ValueError(f"first must be >= 0, got {self.first}")
        if not 0.0 <= self.probability <= 1.0:
            raise ValueError(f"probability must be within [0, 1], got {self.probability}")
        if self.delay_s < 0:
            raise ValueError(f"delay_s must be >= 0, got {self.delay_s}")
        if self.mode is Mode.CRASH and not ops <= WRITE_OPS:
            raise ValueError(f"a crash leaves a temp file, so it needs op in {sorted(WRITE_OPS)}")

    def ops(self) -> frozenset[str]:
        """The operations this rule matches (all of them when ``op`` is None)."""
        if self.op is None:
            return OPS
        return frozenset((self.op,) if isinstance(self.op, str) else self.op)

    def matches(self, op: str, path: str) -> bool:
        if op not in self.ops():
            return False
        if isinstance(self.path, str):
            return fnmatch.fnmatchcase(path, self.path)
        return bool(self.path(path))

    def in_window(self, index: int) -> bool:
        """Whether the ``index``-th matching call (from 1) is one this rule may fire on."""
        if self.nth is not None:
            return index == self.nth
        if self.first is not None:
            return index <= self.first
        return True

    @property
    def label(self) -> str:
        return self.name or f"{self.mode.value}:{'|'.join(sorted(self.ops()))}"


@dataclass(frozen=True)
class FaultPlan:
    """A set of rules and the seed for their probabilities: a reproducible failure scenario."""

    rules: tuple[FaultRule, ...] = ()
    seed: int = 0


def fail_before(op: Op | tuple[Op, ...] | None = None, path: PathMatch = "*", **kw: Any) -> FaultRule:
    """The request fails and nothing reaches the store (by default a retryable :class:`StorageError`)."""
    return FaultRule(op, path, Mode.BEFORE, **kw)


def fail_after(op: Op | tuple[Op, ...] | None = None, path: PathMatch = "*", **kw: Any) -> FaultRule:
    """The call takes effect, then the caller gets an error: the outcome is unknown to it."""
    return FaultRule(op, path, Mode.AFTER, **kw)


def crash(op: Op | tuple[Op, ...] = "put_if_absent", path: PathMatch = "*", **kw: Any) -> FaultRule:
    """The writer dies after writing a torn temp file and before publishing it."""
    return FaultRule(op, path, Mode.CRASH, **kw)


def slow(op: Op | tuple[Op, ...] | None = None, path: PathMatch = "*", *, delay_s: float, **kw: Any) -> FaultRule:
    """The call succeeds after ``delay_s`` seconds of (injected) sleep."""
    return FaultRule(op, path, Mode.DELAY, delay_s=delay_s, **kw)


def throttle(op: Op | tuple[Op, ...] | None = None, path: PathMatch = "*", **kw: Any) -> FaultRule:
    """The store answers 503 SlowDown (retryable) without doing anything."""
    return FaultRule(op, path, Mode.BEFORE, error=throttled(), **kw)


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


class FaultyStore:
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
]
