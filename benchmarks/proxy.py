"""A latency-injecting, request-counting HTTP/1.1 reverse proxy in front of a local object-store server.

Why: on an object store the request count and the chain of round trips decide the time, and a moto or
Azurite server on 127.0.0.1 answers in a millisecond, which hides both. Clients are pointed at the proxy
(the ``endpoint_url`` / connection string / ``AWS_ENDPOINT_URL`` they would give the server); the proxy
forwards every request byte for byte to the server, holds each one ``latency_ms`` before forwarding it (as a
network round trip would), and records it (:class:`Request`).

What is recorded, per request: method, target (path and query as sent), status, and five times on the
``time.monotonic()`` clock, which on Linux is CLOCK_MONOTONIC and so comparable with the clock of any other
process on the machine (the benchmark children report their timed window on it):

- ``start``: the request's head has arrived at the proxy;
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

**Holding answers** (:meth:`LatencyProxy.hold`, for tests): the proxy can keep the answers of the next ``n``
requests that match a predicate until all ``n`` have arrived. A client that sends them all without waiting
for any answer then makes them one round trip, exactly, whatever the machine's speed; a client that waits
(a bounded pool) cannot complete them until a safety timeout releases them, and its chain shows it. So "these
reads leave together" becomes a count, not a timing.

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
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

#: Requests at the server at once (see the module docstring); below werkzeug's listen backlog of 128.
UPSTREAM_LIMIT = 100
STREAM_LIMIT = 1 << 20  # longest request or status line + headers accepted
BACKLOG = 4096
_NO_BODY_STATUS = (204, 304)


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


# ---------------------------------------------------------------------------------------------- HTTP framing
@dataclass(frozen=True)
class _Head:
    raw: bytes  # as received, ending in CRLF CRLF
    first: list[bytes]  # request line or status line, split on spaces (at most 3 parts)
    headers: dict[bytes, bytes]  # lower-cased names; the last value wins

    def header(self, name: bytes) -> bytes:
        return self.headers.get(name, b"").strip().lower()

    @property
    def chunked(self) -> bool:
        return b"chunked" in self.header(b"transfer-encoding")

    @property
    def length(self) -> int | None:
        value = self.header(b"content-length")
        return int(value) if value.isdigit() else None

    def closes(self, version: bytes) -> bool:
        conn = self.header(b"connection")
        return b"close" in conn or (version == b"HTTP/1.0" and b"keep-alive" not in conn)


def _parse_head(raw: bytes) -> _Head:
    lines = raw[:-4].split(b"\r\n")
    headers: dict[bytes, bytes] = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    return _Head(raw, lines[0].split(b" ", 2), headers)


def _without_expect(head: _Head) -> bytes:
    lines = head.raw[:-4].split(b"\r\n")
    kept = [lines[0]] + [ln for ln in lines[1:] if ln.partition(b":")[0].strip().lower() != b"expect"]
    return b"\r\n".join(kept) + b"\r\n\r\n"


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    """A chunked body as received (sizes, data and trailers): it is forwarded as it came."""
    parts: list[bytes] = []
    while True:
        size_line = await reader.readuntil(b"\r\n")
        parts.append(size_line)
        size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while True:  # trailers, up to the empty line
                line = await reader.readuntil(b"\r\n")
                parts.append(line)
                if line == b"\r\n":
                    return b"".join(parts)
        parts.append(await reader.readexactly(size + 2))


async def _read_body(reader: asyncio.StreamReader, head: _Head) -> bytes:
    if head.chunked:
        return await _read_chunked(reader)
    length = head.length
    return await reader.readexactly(length) if length else b""


#: (raw response, status, whether the connection closes after it, body bytes)
_Answer = tuple[bytes, int, bool, int]


async def _read_response(reader: asyncio.StreamReader, method: bytes) -> _Answer | None:
    """(raw response, status, connection closes after it, body bytes); None if the server closed at once."""
    interim: list[bytes] = []
    while True:
        try:
            raw = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            if not exc.partial and not interim:
                return None
            raise
        head = _parse_head(raw)
        status = int(head.first[1]) if len(head.first) > 1 and head.first[1].isdigit() else 0
        if 100 <= status < 200 and status != 101:
            interim.append(raw)  # an unsolicited 1xx: passed on, the final answer follows
            continue
        break
    closes = head.closes(head.first[0])
    if method == b"HEAD" or status in _NO_BODY_STATUS or 100 <= status < 200:
        body = b""
    elif head.chunked:
        body = await _read_chunked(reader)
    elif head.length is not None:
        body = await reader.readexactly(head.length)
    else:  # no framing: the body runs to the end of the connection
        body = await reader.read()
        closes = True
    return b"".join(interim) + raw + body, status, closes, len(body)


@dataclass
class _Hold:
    """Answers withheld until ``count`` matching requests have arrived (:meth:`LatencyProxy.hold`)."""

    count: int
    match: Any
    timeout_s: float
    opened: asyncio.Event
    arrived: int = 0


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
        self._server: asyncio.Server | None = None
        self._limit: asyncio.Semaphore | None = None
        self._hold: _Hold | None = None
        #: every connection's writer, client side and server side: closed at shutdown whatever state its task
        #: is in (one cancelled before it ran never reaches its own ``finally``)
        self._writers: weakref.WeakSet[asyncio.StreamWriter] = weakref.WeakSet()

    def hold(self, count: int, match: Any, timeout_s: float = 30.0) -> None:
        """Withhold the answers of the next ``count`` requests for which ``match(method, target)`` is true
        until all of them have arrived (or ``timeout_s`` passed since the first: never a hang)."""
        assert self._loop is not None
        done = threading.Event()

        def arm() -> None:
            self._hold = _Hold(count, match, timeout_s, asyncio.Event())
            done.set()

        self._loop.call_soon_threadsafe(arm)
        done.wait(timeout=30)

    async def _held(self, method: str, target: str) -> None:
        hold = self._hold
        if hold is None or hold.arrived >= hold.count or not hold.match(method, target):
            return
        hold.arrived += 1
        if hold.arrived >= hold.count:
            hold.opened.set()
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(hold.opened.wait(), hold.timeout_s)

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
                self._server = loop.run_until_complete(
                    asyncio.start_server(self._accept, "127.0.0.1", self._port, limit=STREAM_LIMIT, backlog=BACKLOG)
                )
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
        assert self._server is not None
        self._port = int(self._server.sockets[0].getsockname()[1])
        return self

    def _shutdown(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._server is not None:
            self._server.close()
        tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in tasks:
            t.cancel()
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        for w in list(self._writers):
            w.close()
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
    def _accept(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> Any:
        """Called as a connection is accepted: the writer is known before its handler task first runs."""
        self._writers.add(cwriter)
        return self._serve(creader, cwriter)

    async def _serve(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        upstream: list[Any] = []  # [reader, writer] of this client's server connection, when open
        try:
            while await self._one(creader, cwriter, upstream):
                pass
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError) as exc:
            log.debug("proxy connection ended: %s", exc)
        except asyncio.CancelledError:
            pass  # the proxy is stopping: a cancelled handler would be logged by asyncio as an error
        finally:
            for w in (cwriter, *upstream[1:]):
                w.close()
                with contextlib.suppress(Exception):
                    await w.wait_closed()

    async def _one(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter, upstream: list[Any]) -> bool:
        """Relay one request; False when the client connection is done."""
        try:
            raw = await creader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False
        start = time.monotonic()
        head = _parse_head(raw)
        if len(head.first) != 3:
            raise ConnectionError(f"not an HTTP request line: {head.first!r}")
        method, target, version = head.first
        if head.header(b"expect") == b"100-continue":
            cwriter.write(version + b" 100 Continue\r\n\r\n")
            raw = _without_expect(head)
        body = await _read_body(creader, head)
        await self._held(method.decode(), target.decode("latin-1"))
        if self.latency_ms > 0:
            await asyncio.sleep(self.latency_ms / 1000.0)
        released = time.monotonic()
        assert self._limit is not None
        async with self._limit:
            sent = time.monotonic()
            response = await self._exchange(raw + body, method, upstream)
            answered = time.monotonic()
        if response is None:
            data, status, closes, out = b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n", 502, True, 0
        else:
            data, status, closes, out = response
        if closes and upstream:
            upstream[1].close()
            upstream.clear()
        end = time.monotonic()
        times = (start, released, sent, answered, end)
        self._records.append(Request(method.decode(), target.decode("latin-1"), status, *times, len(body), out))
        cwriter.write(data)  # after the record: a client holding its answer always finds its request recorded
        await cwriter.drain()
        return not (closes or head.closes(version))

    async def _exchange(self, request: bytes, method: bytes, upstream: list[Any]) -> _Answer | None:
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
                answer = await _read_response(reader, method)
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
