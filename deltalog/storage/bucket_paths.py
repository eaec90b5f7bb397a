"""What the object stores share: a bucket (S3) or container (Azure), a key prefix, and a display root.

Keys are ``<prefix>/<store-relative path>``; the fsspec path is ``<bucket>/<key>``. The display root is the
URI with credentials removed, because it appears in messages and logs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deltalog.storage.base import Capabilities, confined
from deltalog.storage.retry import DEFAULT_BUDGET, RetryBudget, with_retries

#: calls that can be repeated without changing the outcome (a conditional put cannot: the committer resolves it)
_IDEMPOTENT = frozenset({"read", "open", "exists", "list", "walk", "delete", "put"})


class BucketPaths:
    """Path plumbing and the uniform properties of a conditional-write object store."""

    _display: str
    _fs: Any
    _prefix: str
    _bucket_name: str
    #: the retry budget of idempotent calls (on top of the client's own retries)
    retry: RetryBudget = DEFAULT_BUDGET

    def _guard_once(self, op: str, path: str, call: Callable[[], Any]) -> Any:
        """``call`` with the client's exceptions turned into :class:`~deltalog.errors.StorageError` (per store)."""
        raise NotImplementedError

    def _guard(self, op: str, path: str, call: Callable[[], Any]) -> Any:
        """:meth:`_guard_once`, tried again within :attr:`retry` when an idempotent call fails retryably."""
        if op not in _IDEMPOTENT:
            return self._guard_once(op, path, call)
        return with_retries(f"{op} {self._display}/{path}", lambda: self._guard_once(op, path, call), self.retry)

    @property
    def root(self) -> str:
        return self._display

    @property
    def fs(self) -> Any:
        return self._fs

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(atomic_put_if_absent=True)

    def _open_file(self, path: str) -> Any:
        """``fs.open`` of ``path`` for reading, refusing a prefix ("directory"): the clients open one happily and
        read it as an empty file, which would look like a torn checkpoint rather than a missing one."""
        handle = self._fs.open(self._full(path), "rb")
        details = getattr(handle, "details", None) or {}
        if details.get("type") == "directory":
            handle.close()
            raise FileNotFoundError(f"{self._display}/{path} is a prefix (a directory), not an object")
        return handle

    def open_write(self, path: str) -> Any:
        """A new object to stream into (large data files, uploaded in parts); it appears whole when closed."""
        return self._guard("open_write", path, lambda: self._fs.open(self._full(path), "wb"))

    def _key(self, path: str) -> str:
        path = confined(path).strip("/")
        if not self._prefix:
            return path
        return f"{self._prefix}/{path}" if path else self._prefix

    def _dir_prefix(self, directory: str) -> str:
        key = self._key(directory)
        return f"{key}/" if key else ""

    def _full(self, path: str) -> str:
        return f"{self._bucket_name}/{self._key(path)}"


__all__ = ["BucketPaths"]
