"""Functions the worker-pool tests run in spawned processes: importable without pyarrow or duckdb, so a worker
starts in a fraction of a second."""

from __future__ import annotations

import os
import threading

#: set by nobody: a worker waiting on it hangs until the pool kills it at its timeout
_NEVER = threading.Event()


def answer_or_hang(value: int) -> int:
    """``value`` at once, or (for a negative one) a worker that never answers: the hung input the pool must time
    out. The wait is bounded (10 minutes) so an orphaned worker cannot outlive a broken test run forever."""
    if value < 0:
        _NEVER.wait(timeout=600)
    return value


def die(code: int) -> None:
    os._exit(code)


def boom(_: object) -> None:
    raise KeyError("boom")
