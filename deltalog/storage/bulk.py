"""Many reads or deletes at once: in as few round trips as the store allows, whatever the store.

Why: on an object store a load that reads a thousand commits one after another waits a thousand round trips;
the same reads in flight together wait a handful. And S3 deletes up to 1,000 keys per ``DeleteObjects``
request, Azure 256 per blob batch, where one request per file made VACUUM of a thousand files take seconds.
Stores that can do better override ``read_many``/``delete_many`` (declared in
:class:`~deltalog.storage.base.LogStore`, with one call per path as the default) and say so in their
:class:`~deltalog.storage.base.Capabilities`, so callers never branch on classes.

The helpers below are shared by the async object stores: a bounded fan-out on their event loop, and the
rule that turns a failed read inside a fan-out into the store's own typed error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, TypeVar

from deltalog.storage.base import LogStore

T = TypeVar("T")

#: reads in flight at once on an object store, unless ``deltalog_max_concurrency`` says otherwise
DEFAULT_CONCURRENCY = 64


def read_many(store: LogStore, paths: Sequence[str]) -> list[bytes]:
    """:meth:`LogStore.read_many <deltalog.storage.base.LogStore.read_many>`, with no request for no paths."""
    return store.read_many(paths) if paths else []


def delete_many(store: LogStore, paths: Sequence[str]) -> None:
    """:meth:`LogStore.delete_many <deltalog.storage.base.LogStore.delete_many>`, with no request for no paths."""
    if paths:
        store.delete_many(paths)


def chunked(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """``items`` in consecutive slices of at most ``size``."""
    for i in range(0, len(items), max(1, size)):
        yield items[i : i + size]


async def fan_out(calls: Sequence[Callable[[], Awaitable[T]]], limit: int) -> list[T | Exception]:
    """Run every call with at most ``limit`` in flight; each result, or the exception it raised, in order.

    Exceptions are returned, not raised, so one failed read neither cancels the others nor hides which
    path failed first: :func:`settle` decides.
    """
    gate = asyncio.Semaphore(max(1, limit))

    async def one(call: Callable[[], Awaitable[T]]) -> T | Exception:
        async with gate:
            try:
                return await call()
            except Exception as exc:
                return exc

    return list(await asyncio.gather(*(one(c) for c in calls)))


def settle(paths: Sequence[str], results: Sequence[Any], read_one: Callable[[str], bytes]) -> list[bytes]:
    """The bytes of a fan-out, in order; a path whose read failed is read again through ``read_one``.

    ``read_one`` is the store's own ``read``: typed errors, the retry budget for transient failures, and
    :class:`~deltalog.errors.NotFoundError` for a missing file. So a fan-out fails exactly as a loop of
    ``read`` would, at the first path (in order) that fails for good, and a transient failure inside it costs
    one more request, not the whole batch.
    """
    out: list[bytes] = []
    for path, result in zip(paths, results, strict=True):
        out.append(read_one(path) if isinstance(result, BaseException) else result)
    return out


__all__ = ["DEFAULT_CONCURRENCY", "chunked", "delete_many", "fan_out", "read_many", "settle"]
