"""What the object stores share: a bucket (S3) or container (Azure), a key prefix, and a display root.

Keys are ``<prefix>/<store-relative path>``; the fsspec path is ``<bucket>/<key>``. The display root is the
URI with credentials removed, because it appears in messages and logs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, cast

from fsspec.asyn import sync

from deltalog.storage.base import Capabilities, confined
from deltalog.storage.bulk import DEFAULT_CONCURRENCY, fan_out, settle
from deltalog.storage.options import secrets_of
from deltalog.storage.redaction import redact_in_logs
from deltalog.storage.retry import DEFAULT_BUDGET, RetryBudget, with_retries

#: calls that can be repeated without changing the outcome (a conditional put cannot: the committer resolves it)
_IDEMPOTENT = frozenset({"read", "open", "exists", "list", "walk", "delete", "put"})


class BucketPaths:
    """Path plumbing and the uniform properties of a conditional-write object store."""

    _display: str
    _fs: Any
    _prefix: str
    _bucket_name: str
    _secrets: tuple[str, ...] = ()
    #: requests ``read_many`` keeps in flight
    _concurrency: int = DEFAULT_CONCURRENCY
    #: the retry budget of idempotent calls (on top of the client's own retries)
    retry: RetryBudget = DEFAULT_BUDGET
    #: only consulted by stores without atomic put-if-absent; kept for a uniform interface
    allow_unsafe_commits: bool = False

    def _setup(
        self,
        bucket: str,
        prefix: str,
        display: str,
        fs_kwargs: Mapping[str, Any] | None,
        secrets: tuple[str, ...],
        max_concurrency: int | None,
        client: str,
    ) -> dict[str, Any]:
        """Set what every object store has; the client's keyword arguments (listings cache off) are returned.

        The secrets among the options are registered with the log redaction first, before the client exists:
        the clients log requests with their headers at DEBUG.
        """
        self._bucket_name = bucket
        self._prefix = prefix.strip("/")
        self._display = display + (f"/{self._prefix}" if self._prefix else "")
        self._concurrency = max_concurrency or DEFAULT_CONCURRENCY
        kwargs = dict(fs_kwargs or {})
        self._secrets = tuple(secrets) + secrets_of(kwargs)
        redact_in_logs(self._secrets, client)
        kwargs.setdefault("use_listings_cache", False)
        return kwargs

    def _connect(self) -> None:
        """Anything to do before the first request of a call (S3: record the client's requests)."""

    async def _get(self, path: str) -> bytes:
        """The bytes of the store-relative ``path`` in one request (per store); FileNotFoundError when absent."""
        raise NotImplementedError

    def read(self, path: str) -> bytes:
        confined(path)
        return cast(bytes, self._guard("read", path, lambda: sync(self._fs.loop, self._get, path)))

    def read_many(self, paths: list[str]) -> list[bytes]:
        """Every file's bytes in order, up to ``deltalog_max_concurrency`` requests in flight on the client's
        event loop; see :func:`deltalog.storage.bulk.read_many`."""
        for p in paths:
            confined(p)
        calls = [functools.partial(self._get, p) for p in paths]
        try:
            self._connect()
            results = sync(self._fs.loop, fan_out, calls, self._concurrency)
        except Exception:  # the loop itself failed: each read on its own says why, typed
            results = [RuntimeError()] * len(paths)
        return settle(paths, results, self.read)

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
