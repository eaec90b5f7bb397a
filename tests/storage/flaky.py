"""A fault-injecting wrapper around a real fsspec file system, for failures a test server cannot be made to give.

Everything is delegated to the real file system (memory, s3fs against moto, adlfs against Azurite); only the
first ``failures`` calls of one method raise the error the test chose, the way a dropped connection or a
read timeout surfaces from the client library.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class FlakyFs:
    """``inner`` with its first ``failures`` calls of ``op`` raising ``error()``; ``calls`` counts calls of ``op``.

    An ``op`` that is an attribute rather than a method (adlfs's ``service_client``) fails when it is fetched.
    """

    def __init__(self, inner: Any, op: str, failures: int, error: Callable[[], BaseException]) -> None:
        self._inner = inner
        self._op = op
        self.left = failures
        self._error = error
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name != self._op:
            return attr
        if not callable(attr):
            self.calls += 1
            if self.left > 0:
                self.left -= 1
                raise self._error()
            return attr

        def flaky(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.left > 0:
                self.left -= 1
                raise self._error()
            return attr(*args, **kwargs)

        return flaky


__all__ = ["FlakyFs"]
