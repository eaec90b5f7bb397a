"""A latency-injecting, request-counting HTTP/1.1 reverse proxy in front of a local object-store server.

Why: on an object store the request count and the chain of round trips decide the time, and a moto or
Azurite server on 127.0.0.1 answers in a millisecond, which hides both. Clients are pointed at the proxy
(the ``endpoint_url`` / connection string / ``AWS_ENDPOINT_URL`` they would give the server); the proxy
forwards every request byte for byte to the server ``latency_ms`` after it arrived (as a network round trip
would), and records it (:class:`Request`).

What is recorded, per request: method, target (path and query as sent), status, and five times on the
``time.monotonic()`` clock, which on Linux is CLOCK_MONOTONIC and so comparable with the clock of any other
process on the machine (the benchmark children report their timed window on it):

- ``start``: the request's first byte reached the machine, as the kernel dated it (:mod:`benchmarks.arrival`:
  not when the proxy's busy thread got to it, so a burst of a thousand requests is dated as the client sent it);
- ``released``: its body has been read and the injected wait is over;
- ``sent``: it goes to the server (after :data:`UPSTREAM_LIMIT`, below, let it);
- ``answered``: the server's whole response has been read;
- ``end``: the whole response is handed to the client's socket (right after: the request is recorded first,
  so a client that has its answer always finds the request in :meth:`LatencyProxy.records`).

**Serial round trips.** Requests are the closed intervals ``[start, end]``. Request B *may depend on* request A
when B started at or after A ended (``B.start >= A.end``): only then can the client have seen A's answer
before it sent B. Requests in flight together (overlapping intervals) never chain. The serial round trips of
a set of requests are the length of its longest chain ``R1, R2, ..., Rk`` with ``R(j+1).start >= Rj.end`` for
every j: the most round trips the client can have waited for one after another. Intervals ordered by "ends
before the other starts" form an interval order, in which the longest chain is the largest set of pairwise
non-overlapping intervals; :func:`serial_round_trips` finds it greedily (earliest end first), exactly. Each
request lasts at least the injected latency, so two requests sent at once overlap whenever the client sends
the second less than ``latency_ms`` after the first; a client that keeps at most P requests in flight makes N
independent reads into about N / P serial round trips, which is the point of measuring it.

The proxy's own cost is measured, not assumed: :meth:`LatencyProxy.cpu_s` is the CPU time of its event-loop
thread (the parent process is otherwise idle while a benchmark child runs), and each request's ``overhead_s``
is the time the proxy itself added: reading the body, oversleeping the wait, and passing the answer on (the
wait for a server connection, ``queued_s``, is reported apart).

**Withholding answers** (:mod:`benchmarks.withhold`): the interval chain also counts a client's own sending
time (a thousand reads that take the client 0.1 s to send chain at 25 ms per request although none waited for
another). :meth:`LatencyProxy.hold` (tests) keeps the answers of the next ``n`` matching requests until all
have arrived; :meth:`LatencyProxy.answer_in_rounds` (the benchmark's dependency pass) answers everything in
rounds, each closed when the client has gone quiet, so the rounds a call spans are its requests' dependency
depth, a count that no machine speed changes.

Transparency: the request head and body go to the server unchanged (the ``Host`` header included, which
S3 signatures cover), except that an ``Expect: 100-continue`` is answered by the proxy itself (it has to read
the body before the wait) and dropped from what it forwards. The response goes back unchanged. Each client
connection gets its own server connection, opened on its first request and reopened when the server closes
it, so keep-alive behaves as without the proxy. At most :data:`UPSTREAM_LIMIT` requests are at the server
at once: werkzeug (moto's server) listens with a backlog of 128, and a burst of a thousand connections (what
``deltalake`` sends) would overflow it and cost one-second SYN retries that no real store imposes. Requests
waiting for that limit are still in flight at the proxy, so the counts and chains are unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from benchmarks.arrival import ArrivalConnection, kernel_dates_arrivals, listening_socket
from benchmarks.http_framing import Answer, parse_head, read_body, read_response, without_expect
from benchmarks.withhold import Hold, Match, Rounds

log = logging.getLogger(__name__)

#: Requests at the server at once (see the module docstring); below werkzeug's listen backlog of 128.
UPSTREAM_LIMIT = 100
STREAM_LIMIT = 1 << 20  # longest request or status line + headers accepted
BACKLOG = 4096


@dataclass(frozen=True)
class Request:
    """One request as the proxy saw it; times are ``time.monotonic()`` seconds (see the module docstring)."""

    method: str
    target: str
    status: int
    start: float
    released: float
    sent: float
    answered: float
    end: float
    bytes_in: int = 0  # request body
    bytes_out: int = 0  # response body
    round: int = -1  # the round its answer was released in (:meth:`LatencyProxy.answer_in_rounds`), else -1

    @property
    def server_s(self) -> float:
        return self.answered - self.sent

    @property
    def queued_s(self) -> float:
        """Time waiting for a server connection under :data:`UPSTREAM_LIMIT` (the server would queue it too)."""
        return self.sent - self.released

    def overhead_s(self, latency_s: float) -> float:
        """What the proxy added: its time before forwarding beyond the injected latency, and after the answer."""
        return (self.released - self.start - latency_s) + (self.end - self.answered)


def serial_round_trips(requests: list[Request]) -> int:
    """The longest chain of requests each starting at or after the previous one ended (module docstring)."""
    count = 0
    last_end = float("-inf")
    for r in sorted(requests, key=lambda r: r.end):
        if r.start >= last_end:
            count += 1
            last_end = r.end
    return count


# ---------------------------------------------------------------------------------------------- the proxy
class LatencyProxy:
    """The proxy, running an asyncio loop in a thread of this process; a context manager.

    ``upstream`` is the server's ``http://host:port``; ``latency_ms`` can be changed between measurements.
    """

    def __init__(self, upstream: str, latency_ms: float = 0.0, port: int = 0) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname or not parts.port:
            raise ValueError(f"upstream must be http://host:port, not {upstream!r}")
        self._up_host, self._up_port = parts.hostname, parts.port
        self.latency_ms = latency_ms
        self._port = port
        self._records: list[Request] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._listener: socket.socket | None = None
        self._acceptor: asyncio.Task[None] | None = None
        self._limit: asyncio.Semaphore | None = None
        self._hold: Hold | None = None
        self._rounds: Rounds | None = None
        #: every server connection's writer and every client connection: closed at shutdown whatever state its
        #: task is in (one cancelled before it ran never reaches its own ``finally``)
        self._writers: weakref.WeakSet[asyncio.StreamWriter] = weakref.WeakSet()
        self._clients: weakref.WeakSet[ArrivalConnection] = weakref.WeakSet()
        self._tasks: set[asyncio.Task[None]] = set()

    def hold(self, count: int, match: Match, timeout_s: float = 30.0) -> None:
        """Withhold the answers of the next ``count`` requests for which ``match(method, target)`` is true
        until all of them have arrived (or ``timeout_s`` passed since the first: never a hang)."""
        self._on_loop(lambda: setattr(self, "_hold", Hold(count, match, timeout_s, asyncio.Event())))

    def answer_in_rounds(self, quiet_s: float | None) -> None:
        """From now on answer in rounds (:class:`benchmarks.withhold.Rounds`): each request's answer waits
        until no request has arrived for ``quiet_s``; its :attr:`Request.round` says which round it was in.
        ``None`` ends that (waiting requests are answered at once)."""

        def switch() -> None:
            if self._rounds is not None:
                self._rounds.stop()
            self._rounds = Rounds(quiet_s) if quiet_s is not None else None

        self._on_loop(switch)

    def occupy(self, seconds: float) -> None:
        """Keep the proxy's thread busy for ``seconds`` from now, returning once it is (tests: requests that
        arrive meanwhile wait in the kernel, as they do when the proxy is slow)."""

        def schedule() -> None:  # runs before the loop next polls its sockets
            asyncio.get_running_loop().call_soon(time.sleep, seconds)

        self._on_loop(schedule)

    def _on_loop(self, change: Callable[[], None]) -> None:
        """Run ``change`` in the proxy's loop thread and wait for it (state the handlers read is theirs)."""
        assert self._loop is not None
        done = threading.Event()

        def run() -> None:
            change()
            done.set()

        self._loop.call_soon_threadsafe(run)
        done.wait(timeout=30)

    # -------------------------------------------------------------------------------- lifecycle
    def start(self) -> LatencyProxy:
        ready = threading.Event()
        failure: list[BaseException] = []
        loop = asyncio.new_event_loop()
        self._loop = loop

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                self._limit = asyncio.Semaphore(UPSTREAM_LIMIT)
                self._listener = listening_socket("127.0.0.1", self._port, BACKLOG)
                self._acceptor = loop.create_task(self._accept_all(self._listener))
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                self._shutdown(loop)

        self._thread = threading.Thread(target=run, name="latency-proxy", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]
        assert self._listener is not None
        self._port = int(self._listener.getsockname()[1])
        if not kernel_dates_arrivals():  # the listener asked for the dates; wait until the kernel gives them
            log.warning("the kernel does not date arriving packets: requests are dated when the proxy reads them")
        return self

    def _shutdown(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._listener is not None:
            self._listener.close()
        tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in tasks:
            t.cancel()
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        for w in list(self._writers):
            w.close()
        for c in list(self._clients):
            c.close()
        loop.run_until_complete(asyncio.sleep(0))  # let the transports finish closing before the loop does
        loop.close()

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)

    def __enter__(self) -> LatencyProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -------------------------------------------------------------------------------- what it saw
    @property
    def port(self) -> int:
        return self._port

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def records(self) -> list[Request]:
        return list(self._records)

    def clear(self) -> None:
        self._records.clear()

    def cpu_s(self) -> float:
        """CPU seconds the proxy's loop thread has used so far (asked inside that thread)."""
        assert self._loop is not None

        async def ask() -> float:
            return time.thread_time()

        return asyncio.run_coroutine_threadsafe(ask(), self._loop).result(timeout=30)

    # -------------------------------------------------------------------------------- serving
    async def _accept_all(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                sock, _ = await loop.sock_accept(listener)
            except asyncio.CancelledError:
                return  # the proxy is stopping
            except OSError as exc:
                log.debug("proxy accept failed: %s", exc)
                continue
            conn = ArrivalConnection(sock, loop, STREAM_LIMIT)
            self._clients.add(conn)  # known before its handler task first runs
            task = loop.create_task(self._serve(conn))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _serve(self, conn: ArrivalConnection) -> None:
        upstream: list[Any] = []  # [reader, writer] of this client's server connection, when open
        try:
            while await self._one(conn, upstream):
                pass
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError) as exc:
            log.debug("proxy connection ended: %s", exc)
        except asyncio.CancelledError:
            pass  # the proxy is stopping: a cancelled handler would be logged by asyncio as an error
        finally:
            conn.close()
            for w in upstream[1:]:
                w.close()
                with contextlib.suppress(Exception):
                    await w.wait_closed()

    async def _one(self, conn: ArrivalConnection, upstream: list[Any]) -> bool:
        """Relay one request; False when the client connection is done."""
        try:
            raw = await conn.reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False
        start = conn.arrival()  # when its first byte reached the machine, not when this thread got to it
        head = parse_head(raw)
        if len(head.first) != 3:
            raise ConnectionError(f"not an HTTP request line: {head.first!r}")
        method, target, version = head.first
        received = len(raw)
        if head.header(b"expect") == b"100-continue":
            await conn.send(version + b" 100 Continue\r\n\r\n")
            raw = without_expect(head)
        body = await read_body(conn.reader, head)
        conn.consumed(received + len(body))
        if self._hold is not None:
            await self._hold.wait(method.decode(), target.decode("latin-1"))
        rounds = self._rounds
        round_no = await rounds.join() if rounds is not None else -1
        wait = start + self.latency_ms / 1000.0 - time.monotonic()  # the latency counts from the arrival
        if wait > 0:
            await asyncio.sleep(wait)
        released = time.monotonic()
        assert self._limit is not None
        try:
            async with self._limit:
                sent = time.monotonic()
                response = await self._exchange(raw + body, method, upstream)
                answered = time.monotonic()
        except BaseException:
            if rounds is not None:
                rounds.answered()  # no answer will come: the round must not wait for it
            raise
        if response is None:
            data, status, closes, out = b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n", 502, True, 0
        else:
            data, status, closes, out = response
        if closes and upstream:
            upstream[1].close()
            upstream.clear()
        end = time.monotonic()
        times = (start, released, sent, answered, end)
        self._records.append(
            Request(method.decode(), target.decode("latin-1"), status, *times, len(body), out, round_no)
        )
        if rounds is not None:
            rounds.answered()
        await conn.send(data)  # after the record: a client holding its answer always finds its request recorded
        return not (closes or head.closes(version))

    async def _exchange(self, request: bytes, method: bytes, upstream: list[Any]) -> Answer | None:
        """Send to the server and read its answer, on a new connection if the kept one was closed meanwhile."""
        for attempt in (0, 1):
            reused = bool(upstream)
            if not upstream:
                try:
                    reader, writer = await asyncio.open_connection(self._up_host, self._up_port, limit=STREAM_LIMIT)
                except OSError as exc:
                    log.warning("proxy: cannot reach %s:%s: %s", self._up_host, self._up_port, exc)
                    return None
                self._writers.add(writer)
                upstream[:] = [reader, writer]
            reader, writer = upstream
            try:
                writer.write(request)
                await writer.drain()
                answer = await read_response(reader, method)
            except (ConnectionError, asyncio.IncompleteReadError):
                answer = None
                if not reused or attempt:
                    raise
            if answer is not None:
                return answer
            writer.close()  # the kept connection was closed by the server before it read this request
            upstream.clear()
            if not reused:
                return None
        return None


__all__ = ["UPSTREAM_LIMIT", "LatencyProxy", "Request", "serial_round_trips"]
