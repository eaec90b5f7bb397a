"""A store that answers a few files from bytes already fetched, and asks the store it wraps for the rest.

Why: a load of the latest version on an object store reads ``_last_checkpoint``, then lists the log from the
version it names, then reads that checkpoint. The checkpoint's name follows from the hint, so its GET can fly
together with the LIST, one round trip instead of two. The loader fetches it alongside the listing, and when
the listing confirms that very file (same name, same size) hands the checkpoint reader this view of the store,
so the reader opens it from memory and every other read (sidecars, commits, a file list read again later)
still goes to the store.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Mapping
from typing import Any, BinaryIO

from deltalog.storage.base import Capabilities, FileInfo, LogStore


class PrefetchedStore(LogStore):
    """``store``, except that ``read`` and ``open`` of a path in ``files`` answer from its bytes (``read_many``
    too: the protocol's default reads through :meth:`read`)."""

    def __init__(self, store: LogStore, files: Mapping[str, bytes]) -> None:
        self._store = store
        self._files = dict(files)

    @property
    def inner(self) -> LogStore:
        """The wrapped store."""
        return self._store

    @property
    def root(self) -> str:
        return self._store.root

    @property
    def capabilities(self) -> Capabilities:
        return self._store.capabilities

    def read(self, path: str) -> bytes:
        data = self._files.get(path)
        return self._store.read(path) if data is None else data

    def open(self, path: str) -> BinaryIO:
        data = self._files.get(path)
        return self._store.open(path) if data is None else io.BytesIO(data)

    def list_from(self, path: str) -> Iterator[FileInfo]:
        return self._store.list_from(path)

    def list_range(self, path: str, stop: str | None) -> list[FileInfo]:
        return self._store.list_range(path, stop)

    def open_write(self, path: str) -> BinaryIO | None:
        return self._store.open_write(path)

    def put_if_absent(self, path: str, data: bytes) -> None:
        self._store.put_if_absent(path, data)

    def put(self, path: str, data: bytes) -> None:
        self._store.put(path, data)

    def delete(self, path: str) -> None:
        self._files.pop(path, None)
        self._store.delete(path)

    def exists(self, path: str) -> bool:
        return self._store.exists(path)

    def walk(self, path: str = "", skip: Callable[[str], bool] | None = None) -> Iterator[FileInfo]:
        return self._store.walk(path, skip)

    def __getattr__(self, name: str) -> Any:  # anything else a store offers (retry, fs, ...)
        return getattr(self._store, name)

    def __repr__(self) -> str:
        return f"PrefetchedStore({self._store!r}, {sorted(self._files)})"


__all__ = ["PrefetchedStore"]
