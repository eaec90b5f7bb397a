"""Client connections of the counting proxy whose bytes carry the time they reached the machine.

Why: the proxy dates each request to decide which requests the client can have sent after seeing another's
answer (:func:`benchmarks.proxy.serial_round_trips`). Dated by the proxy's own thread, a request that arrives
while that thread is busy (a thousand GETs sent at once, each costing the pure-Python proxy a fraction of a
millisecond) gets a later time than the one it was sent at, and can seem to start after answers it never
waited for: the chain then measures the proxy, not the client. The kernel can date every received packet
itself (``SO_TIMESTAMPNS`` on Linux, inherited by accepted sockets from the listening one, so even bytes that
wait in the accept queue are dated when they came). A connection here reads with ``recvmsg`` to get those
dates and feeds an :class:`asyncio.StreamReader`, remembering which byte offsets arrived when, so the proxy
asks "when did the byte that starts this request arrive?".

Where the kernel gives no date (another platform), a chunk is dated when the event loop reads it, as before.
Times are converted to the ``time.monotonic()`` clock the rest of the proxy and the benchmark children use.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import socket
import struct
import sys
import time

#: ``SO_TIMESTAMPNS`` (Python's socket module does not name it); Linux only
_TIMESTAMPNS = 35 if sys.platform == "linux" else None
_STAMP = struct.Struct("qq")
_ANC_SIZE = socket.CMSG_SPACE(_STAMP.size)
_CHUNK = 1 << 16


def listening_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A non-blocking listening TCP socket whose accepted connections get kernel receive times."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if _TIMESTAMPNS is not None:
            with contextlib.suppress(OSError):  # a kernel without it: dated on reading instead
                sock.setsockopt(socket.SOL_SOCKET, _TIMESTAMPNS, 1)
        sock.bind((host, port))
        sock.listen(backlog)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def kernel_dates_arrivals(timeout_s: float = 5.0) -> bool:
    """Wait until the kernel dates packets when they arrive; False if it does not within ``timeout_s``.

    Linux turns receive timestamps on for the whole machine when the first socket asks for them, but it does so
    from a work queue: until that work has run, a packet is dated when it is read, which is the very error the
    dates are there to avoid. On a loaded machine the work can lag by seconds, so a proxy that starts right after
    the last one stopped (the switch goes off again with the last socket) would date its first requests late.
    A datagram sent to ourselves and read a few milliseconds later tells which dating is in effect."""
    if _TIMESTAMPNS is None:
        return False
    deadline = time.monotonic() + timeout_s
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        try:
            rx.setsockopt(socket.SOL_SOCKET, _TIMESTAMPNS, 1)
        except OSError:
            return False
        rx.bind(("127.0.0.1", 0))
        rx.settimeout(1.0)
        while time.monotonic() < deadline:
            tx.sendto(b".", rx.getsockname())
            time.sleep(0.005)  # the datagram waits in the queue: dated on reading, it would look 5 ms younger
            try:
                _data, ancillary, _flags, _addr = rx.recvmsg(16, _ANC_SIZE)
            except TimeoutError:
                continue
            stamp = _kernel_stamp(ancillary)
            if stamp is not None and time.time() - stamp >= 0.004:
                return True
    return False


def _kernel_stamp(ancillary: list[tuple[int, int, bytes]]) -> float | None:
    """The kernel's receive time (``time.time()`` seconds) in a ``recvmsg`` answer's ancillary data, if any."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == _TIMESTAMPNS and len(data) >= _STAMP.size:
            sec, nsec = _STAMP.unpack_from(data)
            return float(sec + nsec / 1e9)
    return None


def _monotonic_of(ancillary: list[tuple[int, int, bytes]], now_real: float, now_mono: float) -> float:
    stamp = _kernel_stamp(ancillary)
    if stamp is None:
        return now_mono
    return min(now_mono, now_mono - (now_real - stamp))  # never later than now: the clocks are read microseconds apart


class ArrivalConnection:
    """An accepted client socket read into :attr:`reader`, with the arrival time of every byte range kept
    until :meth:`consumed` says the proxy is past it."""

    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop, limit: int) -> None:
        self.sock = sock
        self.reader = asyncio.StreamReader(limit=limit, loop=loop)
        self._loop = loop
        self._received = 0  # bytes read from the socket so far
        self._offset = 0  # bytes the proxy has consumed (whole requests)
        self._chunks: collections.deque[tuple[int, float]] = collections.deque()  # (end offset, arrival)
        self._closed = False
        sock.setblocking(False)
        loop.add_reader(sock.fileno(), self._readable)

    def _readable(self) -> None:
        now_real, now_mono = time.time(), time.monotonic()
        while True:
            try:
                data, ancillary, _flags, _addr = self.sock.recvmsg(_CHUNK, _ANC_SIZE)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                self._stop_reading()
                self.reader.set_exception(ConnectionError(str(exc)))
                return
            if not data:
                self._stop_reading()
                self.reader.feed_eof()
                return
            self._received += len(data)
            self._chunks.append((self._received, _monotonic_of(ancillary, now_real, now_mono)))
            self.reader.feed_data(data)

    def arrival(self) -> float:
        """When the first byte not yet consumed (the start of the request being read) reached the machine."""
        for end, at in self._chunks:
            if end > self._offset:
                return at
        return time.monotonic()

    def consumed(self, n: int) -> None:
        """The proxy is done with the next ``n`` bytes (one request, head and body as received)."""
        self._offset += n
        while self._chunks and self._chunks[0][0] <= self._offset:
            self._chunks.popleft()

    async def send(self, data: bytes) -> None:
        await self._loop.sock_sendall(self.sock, data)

    def _stop_reading(self) -> None:
        if not self._closed:
            self._loop.remove_reader(self.sock.fileno())

    def close(self) -> None:
        if not self._closed:
            self._stop_reading()
            self._closed = True
            self.sock.close()


__all__ = ["ArrivalConnection", "kernel_dates_arrivals", "listening_socket"]
