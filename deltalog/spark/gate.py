"""A rendezvous between the caller and the process where Spark commits a write: for orchestration and tests.

The sink's ``commit()`` runs in a Python worker beside Spark's driver, not in the caller's process, so a hook
(``deltalog.spark.write(before_commit=...)``) that must wait for the caller cannot use a ``threading`` event. A
:class:`Gate` listens on a loopback socket; its :attr:`Gate.hook` (pickled into the commit process) connects,
says it has arrived, and waits for the caller to let it go: the job's files are written, its commit not yet
made, while the caller does what must happen in between. Every wait has a deadline, so a commit that never
arrives, or a caller that never opens the gate, fails instead of hanging.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

#: how long either side waits for the other
DEADLINE_S = 300.0


@dataclass(frozen=True)
class GateHook:
    """The commit process's side: connect, arrive, wait to be let go."""

    port: int

    def __call__(self) -> None:
        with socket.create_connection(("127.0.0.1", self.port), timeout=DEADLINE_S) as conn:
            conn.sendall(b"arrived")
            if conn.recv(2) != b"go":
                raise RuntimeError("the gate was closed without letting the commit go")


class Gate:
    """The caller's side: :meth:`arrivals` waits until ``count`` commit processes have arrived; :meth:`open`
    lets them all go (:meth:`close` too, and stops listening)."""

    def __init__(self) -> None:
        self._server = socket.socket()
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(8)
        self._server.settimeout(DEADLINE_S)
        self._waiting: list[socket.socket] = []

    @property
    def hook(self) -> GateHook:
        return GateHook(self._server.getsockname()[1])

    def arrivals(self, count: int = 1, alive: Callable[[], bool] = lambda: True) -> None:
        """Wait for ``count`` arrivals; stop waiting (AssertionError) when ``alive()`` turns false first (the
        writes failed before their commits) or at the deadline."""
        deadline = time.monotonic() + DEADLINE_S
        self._server.settimeout(1.0)  # accept in slices, to notice a write that died before its commit
        while len(self._waiting) < count:
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                if not alive() or time.monotonic() > deadline:
                    raise AssertionError(f"{len(self._waiting)} of {count} commits reached the gate") from None
                continue
            conn.settimeout(DEADLINE_S)
            if conn.recv(7) != b"arrived":
                raise RuntimeError("a gate connection that did not arrive")
            self._waiting.append(conn)

    def open(self) -> None:
        for conn in self._waiting:
            conn.sendall(b"go")
            conn.close()
        self._waiting.clear()

    def close(self) -> None:
        self.open()
        self._server.close()


__all__ = ["DEADLINE_S", "Gate", "GateHook"]
