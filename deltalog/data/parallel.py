"""Read many files at once, hand out their batches in file order, and hold only a bounded number in memory.

Why not ``ThreadPoolExecutor.map``: it runs every task to completion and keeps every result, so a scan of a
large table would hold the table. Here at most ``workers`` files are in flight, each with a queue of at most
``depth`` batches; a worker that gets ahead of the consumer waits. Batches come out in file order (file 0's,
then file 1's, ...), so a scan's output does not depend on timing.

Workers are daemon threads that check a stop flag while they wait: a consumer that stops early (closes the
reader, or drops it) ends the iteration, which stops the workers, and a reader never consumed cannot keep the
interpreter from exiting. A failure in a file is raised, as it was raised, when the consumer reaches that file.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

#: how long a waiting thread sleeps between looks at the stop flag
_POLL_S = 0.05


def default_workers() -> int:
    """Threads for reading files: parquet decoding releases the GIL, so a few per core, at most 8."""
    return max(2, min(8, 2 * (os.cpu_count() or 1)))


@dataclass(frozen=True)
class _Failed:
    error: BaseException


_DONE = object()


def _put(q: queue.Queue[object], item: object, stop: threading.Event) -> bool:
    """Put ``item``, waiting while the queue is full; False when told to stop first."""
    while not stop.is_set():
        try:
            q.put(item, timeout=_POLL_S)
            return True
        except queue.Full:
            continue
    return False


_Job = tuple[Callable[[], Iterator[Any]], "queue.Queue[object]"]


def _work(tasks: queue.Queue[_Job | None], stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            job = tasks.get(timeout=_POLL_S)
        except queue.Empty:
            continue
        if job is None:
            return
        produce, out = job
        try:
            for item in produce():
                if not _put(out, item, stop):
                    return
        except BaseException as exc:  # handed to the consumer, who raises it in order
            _put(out, _Failed(exc), stop)
            continue
        _put(out, _DONE, stop)


def ordered(producers: Sequence[Callable[[], Iterator[T]]], workers: int | None = None, depth: int = 2) -> Iterator[T]:
    """The items of every producer, producer by producer, produced ``workers`` at a time in parallel."""
    if not producers:
        return
    n = max(1, min(workers or default_workers(), len(producers)))
    stop = threading.Event()
    tasks: queue.Queue[_Job | None] = queue.Queue()
    threads = [threading.Thread(target=_work, args=(tasks, stop), daemon=True, name="deltalog-scan") for _ in range(n)]
    pending: deque[queue.Queue[object]] = deque()
    upcoming = iter(producers)

    def schedule() -> None:
        produce = next(upcoming, None)
        if produce is not None:
            out: queue.Queue[object] = queue.Queue(maxsize=max(1, depth))
            pending.append(out)
            tasks.put((produce, out))

    for thread in threads:
        thread.start()
    try:
        for _ in range(n):
            schedule()
        while pending:
            item = pending[0].get()
            if item is _DONE:
                pending.popleft()
                schedule()
            elif isinstance(item, _Failed):
                raise item.error
            else:
                yield item  # type: ignore[misc]
    finally:
        stop.set()
        for _ in threads:
            tasks.put(None)


__all__ = ["default_workers", "ordered"]
