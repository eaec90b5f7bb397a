"""Answers the counting proxy withholds, so that "which requests did the client send without waiting?" becomes
a count instead of a timing.

Timing alone cannot tell a dependent request from an independent one sent late: a client that needs 0.3 ms of
CPU to send each of a thousand reads sends the last one after the first answer is back at 25 ms per request,
and the interval chain (:func:`benchmarks.proxy.serial_round_trips`) counts it as a second round trip although
it never waited for anything. Withholding answers takes time out of the question:

- :class:`Hold` (tests): the answers of the next ``count`` matching requests wait until all of them arrived.
- :class:`Rounds` (the benchmark's dependency pass): every answer waits until the client has sent nothing for
  ``quiet_s``; then all waiting requests are answered together, as one round. A request sent before any
  answer it could need is in the same round as the requests sent with it; one sent after an answer is in a
  later round. The number of rounds a call spans is the depth of its requests' dependencies: the serial round
  trips no client speed or machine load can change (a pause longer than ``quiet_s`` inside a burst would
  split it, which is why ``quiet_s`` is far above any send gap of a working client).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

#: (method, target) -> whether a request is one of those held
Match = Callable[[str, str], bool]


@dataclass
class Hold:
    """Answers withheld until ``count`` matching requests have arrived (or ``timeout_s`` since the first)."""

    count: int
    match: Match
    timeout_s: float
    opened: asyncio.Event
    arrived: int = 0

    async def wait(self, method: str, target: str) -> None:
        if self.arrived >= self.count or not self.match(method, target):
            return
        self.arrived += 1
        if self.arrived >= self.count:
            self.opened.set()
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.opened.wait(), self.timeout_s)


class Rounds:
    """Every request waits for the round it joined to close: ``quiet_s`` after the last request arrived, and
    not before every request of the earlier rounds has its answer (a request that waited for only some of
    them is then still in the next round, not one further)."""

    def __init__(self, quiet_s: float) -> None:
        self.quiet_s = quiet_s
        self.number = 0
        self._open = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None
        self._waiting = 0  # requests in the open round
        self._unanswered = 0  # requests of closed rounds not yet answered

    async def join(self) -> int:
        """Wait for this request's round to close; returns the round's number (0, 1, ... in order). The
        caller calls :meth:`answered` once the answer is on its way."""
        self._arm()
        self._waiting += 1
        number, opened = self.number, self._open
        await opened.wait()
        return number

    def answered(self) -> None:
        self._unanswered -= 1

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(self.quiet_s, self._due)

    def _due(self) -> None:
        if self._unanswered > 0:
            self._arm()  # answers of an earlier round are still on their way
        else:
            self._close()

    def _close(self) -> None:
        self._timer = None
        self._unanswered += self._waiting
        self._waiting = 0
        self._open.set()
        self._open = asyncio.Event()
        self.number += 1

    def stop(self) -> None:
        """Release every waiting request (the pass is over)."""
        if self._timer is not None:
            self._timer.cancel()
        self._close()


__all__ = ["Hold", "Match", "Rounds"]
