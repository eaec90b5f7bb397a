"""Fault rules for :class:`deltalog.storage.faults.FaultyStore`: which call fails, how, and when.

Kept apart from the wrapper so a rule is a plain value a test can build, print and compare: a frozen
dataclass matched by operation, path (glob or predicate) and call count, or a seeded probability.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal, TypeVar, get_args

from deltalog.errors import StorageError

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
