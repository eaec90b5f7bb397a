"""Run one function over many inputs in a few long-lived worker processes, with a time limit per input.

A hung table must become a reported outcome, not a hung run: the parent waits for each input at most
``timeout`` seconds, then kills that worker (and only it), reports :data:`TIMED_OUT` for the input and starts
a fresh worker for the rest. Workers are started with ``spawn`` (no forked copies of pyarrow's or duckdb's
threads) and live for many inputs, so imports and per-process setup are paid once per worker.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import time
from collections.abc import Callable, Iterable
from multiprocessing.connection import Connection, wait
from typing import Any

TIMED_OUT = "timeout"


def _serve(fn: Callable[[Any], Any], conn: Connection) -> None:
    while True:
        item = conn.recv()
        if item is None:
            return
        try:
            out = fn(item)
        except Exception as exc:  # reported as this input's result; the worker serves the next one
            out = f"worker error: {type(exc).__name__}: {exc}"
        conn.send(out)


class _Worker:
    def __init__(self, ctx: Any, fn: Callable[[Any], Any]) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(fn, child), daemon=True)
        self.process.start()
        child.close()
        self.index: int | None = None
        self.deadline = 0.0

    def give(self, index: int, item: Any, timeout: float) -> None:
        self.index, self.deadline = index, time.monotonic() + timeout
        self.conn.send(item)

    def stop(self) -> None:
        with contextlib.suppress(OSError):  # a worker that died has no pipe left to hear it
            self.conn.send(None)
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()

    def kill(self) -> None:
        self.process.kill()
        self.process.join()
        self.conn.close()


def run_all(
    fn: Callable[[Any], Any],
    items: Iterable[Any],
    *,
    workers: int,
    timeout: float,
    on_result: Callable[[int, Any], None] | None = None,
) -> list[Any]:
    """``[fn(item) for item in items]``, computed by ``workers`` processes; an input that takes longer than
    ``timeout`` seconds (or whose worker dies) yields ``TIMED_OUT`` (or ``"worker died: <exit code>"``).

    ``fn`` must be a module-level function (it is pickled by reference); ``on_result(index, result)`` is
    called in the parent as each result arrives.
    """
    todo = list(enumerate(items))
    results: list[Any] = [None] * len(todo)
    if not todo:
        return results
    ctx = mp.get_context("spawn")
    pending = list(reversed(todo))
    pool = [_Worker(ctx, fn) for _ in range(max(1, min(workers, len(todo))))]

    def finish(index: int, result: Any) -> None:
        results[index] = result
        if on_result is not None:
            on_result(index, result)

    try:
        for w in pool:
            if pending:
                w.give(*pending.pop(), timeout)
        while any(w.index is not None for w in pool):
            busy = [w for w in pool if w.index is not None]
            ready = wait([w.conn for w in busy], timeout=max(0.0, min(w.deadline for w in busy) - time.monotonic()))
            for slot, w in enumerate(pool):
                index = w.index
                if index is None:
                    continue
                if w.conn in ready:
                    try:
                        result = w.conn.recv()
                    except (EOFError, OSError):
                        w.process.join()
                        result = f"worker died: exit code {w.process.exitcode}"
                        w.kill()
                        pool[slot] = w = _Worker(ctx, fn)
                elif time.monotonic() >= w.deadline:
                    result = TIMED_OUT
                    w.kill()
                    pool[slot] = w = _Worker(ctx, fn)
                else:
                    continue
                w.index = None
                finish(index, result)
                if pending:
                    w.give(*pending.pop(), timeout)
    finally:
        for w in pool:
            w.stop()
    return results


__all__ = ["TIMED_OUT", "run_all"]
