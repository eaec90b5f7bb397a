"""Every store failure as a typed error, and a small retry budget for the calls that are safe to repeat.

Why here and not in each caller: a read path (loading a snapshot, reading a checkpoint, VACUUM's listing)
has no retry loop of its own, and each caller that met a raw ``OSError``, ``TimeoutError`` or a client
library's exception had to guess what it meant. So every store answers with
:class:`~deltalog.errors.NotFoundError` (the contract's "absent": :func:`missing`), a result, or another
:class:`~deltalog.errors.StorageError` whose ``retryable`` says
whether the same call may succeed later; and the idempotent calls (read, open, exists, list, walk,
delete) are retried a few times when it says so, before the error reaches the caller.

``put_if_absent`` is never retried here: whether a failed conditional write landed is the committer's
question (it reads the version back), and a blind retry could report someone else's commit as ours.

Every call retried here has a deadline (:attr:`RetryBudget.deadline_s`) for the whole of it: its attempts, the
waits between them, and whatever the client does inside each attempt (its own retries and backoff). A client's
retry policy multiplied by ours once kept ``snapshot()`` on a dead Azure endpoint waiting for minutes (issue 23):
no attempt starts once the deadline is near, and a store whose requests run on an event loop bounds each attempt
by what is left (:func:`remaining`), so a dead endpoint is a typed, retryable error in bounded time.
"""

from __future__ import annotations

import errno
import logging
import random
import stat
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TypeVar

from deltalog.errors import DeltaLogError, NotFoundError, StorageError

log = logging.getLogger(__name__)

T = TypeVar("T")

#: errno values that say "the medium or the network hiccuped", not "this will never work"
_TRANSIENT_ERRNOS = frozenset(
    getattr(errno, name)
    for name in (
        "EAGAIN",
        "EINTR",
        "ETIMEDOUT",
        "ECONNRESET",
        "ECONNABORTED",
        "ECONNREFUSED",
        "ENETDOWN",
        "ENETUNREACH",
        "ENETRESET",
        "EHOSTUNREACH",
        "EHOSTDOWN",
        "ESTALE",
        "EBUSY",
    )
    if hasattr(errno, name)
)


@dataclass(frozen=True)
class RetryBudget:
    """How often a retryable failure of an idempotent call is tried again, and how long to wait in between.

    The budget is small on purpose: the cloud clients retry inside each call already, so this covers what
    reaches us through them (and local network file systems), without turning an outage into minutes of
    waiting. ``deadline_s`` bounds the whole call, attempts and waits and the client's own retries together
    (module docstring); object_store gives one request 30 s, so 60 s leaves a slow large read its time.
    ``sleep`` is replaceable so tests need not wait.
    """

    attempts: int = 3
    base_s: float = 0.05
    max_s: float = 0.5
    deadline_s: float = 60.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def delay(self, attempt: int) -> float:
        return random.uniform(0.5, 1.0) * min(self.max_s, self.base_s * (2.0**attempt))


DEFAULT_BUDGET = RetryBudget()


#: the monotonic time by which the innermost :func:`with_retries` call must end (None: outside any)
_DEADLINE: ContextVar[float | None] = ContextVar("deltalog_storage_deadline", default=None)


def remaining() -> float | None:
    """Seconds left before the deadline of the :func:`with_retries` call this runs inside (None: outside one).

    What a store bounds one attempt's request by when it can (a coroutine on an event loop can be cancelled).
    """
    deadline = _DEADLINE.get()
    return None if deadline is None else deadline - time.monotonic()


def with_retries(what: str, call: Callable[[], T], budget: RetryBudget = DEFAULT_BUDGET) -> T:
    """``call()``, tried again while it raises a retryable :class:`StorageError`, the budget lasts and the
    deadline is not near; a call nested in another keeps the outer deadline if it is sooner."""
    start = time.monotonic()
    deadline = start + budget.deadline_s
    outer = _DEADLINE.get()
    token = _DEADLINE.set(deadline if outer is None else min(deadline, outer))
    try:
        for attempt in range(max(1, budget.attempts)):
            try:
                return call()
            except StorageError as exc:
                if not exc.retryable or attempt + 1 >= budget.attempts:
                    raise
                wait = budget.delay(attempt)
                left = remaining()
                if left is not None and left <= wait:
                    elapsed = time.monotonic() - start
                    log.warning("%s failed (%s) after %.1fs; no time left to retry", what, exc, elapsed)
                    raise
                log.warning("%s failed (%s); retrying (%d of %d)", what, exc, attempt + 2, budget.attempts)
                budget.sleep(wait)
        raise AssertionError("unreachable")
    finally:
        _DEADLINE.reset(token)


def is_transient_os_error(exc: BaseException) -> bool:
    """Whether an ``OSError`` (or a timeout) may pass if the same call is made again."""
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    return isinstance(exc, OSError) and exc.errno in _TRANSIENT_ERRNOS


def file_kind(mode: int) -> str:
    """A word for a non-regular file type, for messages that say what was found instead of a file."""
    for test, word in (
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "named pipe (FIFO)"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISLNK, "symbolic link"),
    ):
        if test(mode):
            return word
    return "special file"


def not_a_file(where: str, path: str, kind: str) -> StorageError:
    """A non-regular file where a file is expected: never retried, and never opened (a FIFO would block)."""
    return StorageError(f"{where} is a {kind}, not a regular file", path=path, retryable=False)


def os_error(op: str, where: str, path: str, exc: BaseException) -> StorageError:
    """A typed error for an ``OSError``/timeout of ``op`` on ``path`` (``where`` is how messages name it)."""
    if isinstance(exc, IsADirectoryError):
        return not_a_file(where, path, "directory")
    if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
        return StorageError(f"{where} is a symbolic link that loops ({op}): {exc.strerror}", path=path)
    reason = (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)) or type(exc).__name__
    return StorageError(f"{op} {where} failed: {reason}", path=path, retryable=is_transient_os_error(exc))


def missing(path: str, where: str | None = None) -> NotFoundError:
    """The contract's "absent" for ``path`` (store-relative); ``where`` is how messages name it."""
    return NotFoundError(f"{where or path}: no such file", path=path)


def mapped(op: str, where: str, path: str, call: Callable[[], T]) -> T:
    """``call()`` with every failure turned into a :class:`StorageError` (:func:`missing` for an absent file).

    For stores whose client raises ``OSError``s and timeouts (the local disk, generic fsspec file systems).
    Errors deltalog already typed pass through unchanged.
    """
    try:
        return call()
    except DeltaLogError:
        raise
    except (FileNotFoundError, NotADirectoryError):  # NotADirectory: a file where a parent directory should be
        raise missing(path, where) from None
    except Exception as exc:
        raise os_error(op, where, path, exc) from exc


__all__ = [
    "DEFAULT_BUDGET",
    "RetryBudget",
    "file_kind",
    "is_transient_os_error",
    "mapped",
    "missing",
    "not_a_file",
    "os_error",
    "remaining",
    "with_retries",
]
