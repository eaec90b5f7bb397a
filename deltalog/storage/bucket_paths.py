"""What the object stores share: a bucket (S3) or container (Azure), a key prefix, and a display root.

Keys are ``<prefix>/<store-relative path>``; the fsspec path is ``<bucket>/<key>``. The display root is the
URI with credentials removed, because it appears in messages and logs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

from fsspec.asyn import sync
from fsspec.exceptions import FSTimeoutError

from deltalog.errors import DeltaLogError, StorageError
from deltalog.storage.base import Capabilities, FileInfo, LogStore, confined
from deltalog.storage.bulk import DEFAULT_CONCURRENCY, fan_out, settle
from deltalog.storage.cloud_errors import no_container, where
from deltalog.storage.options import secrets_of
from deltalog.storage.redaction import redact_in_logs
from deltalog.storage.retry import DEFAULT_BUDGET, RetryBudget, missing, remaining, with_retries

#: calls that can be repeated without changing the outcome (a conditional put cannot: the committer resolves it)
_IDEMPOTENT = frozenset({"read", "open", "exists", "list", "walk", "delete", "put"})


class BucketPaths(LogStore):
    """Path plumbing and the uniform properties of a conditional-write object store."""

    _display: str
    _fs: Any
    #: ``s3``, ``azure`` or ``gcs``: which cloud's wording the shared messages use
    _kind: str = "s3"
    #: the client's exceptions that mean "no such object" (the contract's NotFoundError)
    _not_found: tuple[type[BaseException], ...] = (FileNotFoundError,)
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
        """The bytes of the store-relative ``path`` in one request (per store); the client's "not found" when
        absent (:meth:`_guard` makes it the contract's)."""
        raise NotImplementedError

    def _loop(self) -> Any:
        """The event loop the store's coroutines run on (the fsspec client's own loop)."""
        return self._fs.loop

    def _run(self, op: str, path: str, coro: Callable[..., Any], *args: Any) -> Any:
        """``coro(*args)`` run to completion on :meth:`_loop` from synchronous code, through :meth:`_guard`."""
        return self._guard(op, path, lambda: self._sync(op, path, coro, *args))

    def _sync(self, op: str, path: str, coro: Callable[..., Any], *args: Any) -> Any:
        """``coro(*args)`` on :meth:`_loop`, cancelled when the deadline of the call it serves passes
        (:func:`deltalog.storage.retry.remaining`; the budget's whole deadline outside a retried call): the
        client's own retries never outlast it."""
        left = remaining()
        timeout = self.retry.deadline_s if left is None else left
        at = where(op, self._display, path)
        if timeout <= 0:
            raise StorageError(f"{at}: no time left before the deadline", path=path, retryable=True)
        try:
            return sync(self._loop(), coro, *args, timeout=timeout)
        except FSTimeoutError as exc:
            raise StorageError(
                f"{at}: no answer within {timeout:.1f}s (the store did not respond; deltalog gave up at its "
                f"{self.retry.deadline_s:.0f}s deadline)",
                path=path,
                retryable=True,
            ) from exc

    def read(self, path: str) -> bytes:
        confined(path)
        return cast(bytes, self._run("read", path, self._get, path))

    def read_many(self, paths: Sequence[str]) -> list[bytes]:
        """Every file's bytes in order, up to ``deltalog_max_concurrency`` requests in flight on the client's
        event loop; see :func:`deltalog.storage.bulk.read_many`."""
        for p in paths:
            confined(p)
        calls = [functools.partial(self._get, p) for p in paths]
        try:
            self._connect()
            results = sync(self._loop(), fan_out, calls, self._concurrency, timeout=self.retry.deadline_s)
        except Exception:  # the loop itself failed, or the deadline passed: each read on its own says why, typed
            results = [RuntimeError()] * len(paths)
        return settle(paths, results, self.read)

    def _error(self, op: str, path: str, exc: BaseException) -> StorageError:
        """The typed error for a failure of the client (per store: which codes mean what)."""
        raise NotImplementedError

    def _container_missing(self, op: str, exc: BaseException) -> bool:
        """Whether a "not found" from the client means the bucket or container, not the object (per store)."""
        return False

    def _guard_once(self, op: str, path: str, call: Callable[[], Any]) -> Any:
        """``call`` with the client's exceptions turned into the contract's: NotFoundError for an absent
        object, :class:`~deltalog.errors.StorageError` for everything else (a missing bucket included)."""
        try:
            self._connect()
            return call()
        except self._not_found as exc:
            if self._container_missing(op, exc):
                raise no_container(self._kind, self._bucket_name, where(op, self._display, path), path) from exc
            raise missing(path, f"{self._display}/{path}") from exc
        except DeltaLogError:  # already typed (a refused path, an error of ours)
            raise
        except Exception as exc:
            raise self._error(op, path, exc) from exc

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


def start_after(prefix: str, start: str) -> str | None:
    """The exclusive listing offset that lists names ``>= start`` under ``prefix`` (its last character one lower);
    the few names between it and ``start`` are dropped by the caller. ``None``: list from the beginning."""
    if not start or ord(start[-1]) == 0:
        return None
    return prefix + start[:-1] + chr(ord(start[-1]) - 1)


#: one direct child of a listed directory: (bare name, size, mtime ms, is a directory)
Child = tuple[str, int, int, bool]


def walk_tree(
    list_dir: Callable[[str], Iterable[Child]], path: str, skip: Callable[[str], bool] | None
) -> Iterator[FileInfo]:
    """Files under ``path`` with store-relative names, one delimited listing per directory (see
    :meth:`deltalog.storage.base.LogStore.walk`): a directory ``skip`` prunes is never listed at all, which is
    what keeps VACUUM from listing ``_delta_log``. ``list_dir(rel_dir)`` lists one directory."""
    pending = [path.strip("/")]
    while pending:
        rel_dir = pending.pop()
        subdirs: list[str] = []
        for raw, size, mtime, is_dir in list_dir(rel_dir):
            name = raw.rstrip("/") if is_dir else raw
            if not name or name.endswith("/"):
                continue  # the directory itself, or a "directory marker" object: not a file
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if not is_dir:
                yield FileInfo(rel, size, mtime)
            elif skip is None or not skip(rel):
                subdirs.append(rel)
        pending.extend(reversed(sorted(subdirs)))


__all__ = ["BucketPaths", "Child", "start_after", "walk_tree"]
