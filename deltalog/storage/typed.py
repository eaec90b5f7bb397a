"""Any store's failures as deltalog's errors: the store the table layer reads and writes through.

Why: above storage, every error is a :class:`~deltalog.errors.DeltaLogError`. The stores deltalog ships keep
that promise themselves (:mod:`deltalog.storage.retry`), but a store a caller brings, or a wrapper around one
(a cache, a metrics layer, deltalog's own :class:`~deltalog.storage.faults.FaultyStore`), may let a builtin
``TimeoutError`` or ``OSError`` through, which then escaped ``snapshot()`` raw (issue 23). So the table's
context holds its store wrapped in :class:`TypedStore` (:class:`deltalog.table.context.TableContext`), the one
place every read and write of the table layer enters storage: what the store raises that is not deltalog's
becomes a :class:`~deltalog.errors.StorageError` naming the call and the file, ``retryable`` when a timeout or
a network errno says it may pass, with the original as ``__cause__``. The contract's own answers pass
unchanged: :class:`FileNotFoundError` (absent) and deltalog's errors; a builtin :class:`FileExistsError` from
``put_if_absent`` is the contract's :class:`~deltalog.errors.FileAlreadyExistsError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, BinaryIO, TypeVar

from deltalog.errors import FileAlreadyExistsError
from deltalog.storage import bulk
from deltalog.storage.base import Capabilities, FileInfo, LogStore
from deltalog.storage.retry import mapped

T = TypeVar("T")

_END = object()


class TypedStore(LogStore):
    """``store``, with everything it raises that is not the contract's turned into deltalog's errors."""

    def __init__(self, store: LogStore) -> None:
        self._store = store

    @property
    def inner(self) -> LogStore:
        """The wrapped store."""
        return self._store

    def _call(self, op: str, path: str, call: Callable[[], T]) -> T:
        return mapped(op, f"{self._store.root}/{path}" if path else self._store.root, path, call)

    def _iterate(self, op: str, path: str, make: Callable[[], Iterator[FileInfo]]) -> Iterator[FileInfo]:
        """A listing whose failures, at its start or while it is consumed, are typed."""
        it = self._call(op, path, lambda: iter(make()))
        while True:
            item = self._call(op, path, lambda: next(it, _END))
            if item is _END:
                return
            yield item  # type: ignore[misc]

    @property
    def root(self) -> str:
        return self._store.root

    @property
    def capabilities(self) -> Capabilities:
        return self._store.capabilities

    def read(self, path: str) -> bytes:
        return self._call("read", path, lambda: self._store.read(path))

    def read_many(self, paths: Sequence[str]) -> list[bytes]:
        return self._call("read", paths[0] if paths else "", lambda: bulk.read_many(self._store, paths))

    def open(self, path: str) -> BinaryIO:
        return self._call("open", path, lambda: self._store.open(path))

    def list_from(self, path: str) -> Iterator[FileInfo]:
        return self._iterate("list", path, lambda: self._store.list_from(path))

    def list_range(self, path: str, stop: str | None) -> list[FileInfo]:
        return self._call("list", path, lambda: self._store.list_range(path, stop))

    def walk(self, path: str = "", skip: Callable[[str], bool] | None = None) -> Iterator[FileInfo]:
        return self._iterate("walk", path, lambda: self._store.walk(path, skip))

    def exists(self, path: str) -> bool:
        return self._call("exists", path, lambda: self._store.exists(path))

    def put_if_absent(self, path: str, data: bytes) -> None:
        def put() -> None:
            try:
                self._store.put_if_absent(path, data)
            except FileExistsError:  # a store that says "taken" in the builtin's words
                raise FileAlreadyExistsError(f"{self._store.root}/{path} already exists", path=path) from None

        self._call("put_if_absent", path, put)

    def put(self, path: str, data: bytes) -> None:
        self._call("put", path, lambda: self._store.put(path, data))

    def delete(self, path: str) -> None:
        self._call("delete", path, lambda: self._store.delete(path))

    def open_write(self, path: str) -> BinaryIO | None:
        return self._call("open_write", path, lambda: self._store.open_write(path))

    def delete_many(self, paths: Sequence[str]) -> None:
        self._call("delete", paths[0] if paths else "", lambda: bulk.delete_many(self._store, paths))

    def __getattr__(self, name: str) -> Any:
        """Anything else a store offers (``retry``, ``fs``, ...), from the wrapped store."""
        if name.startswith("__") or name == "_store":  # unpickling asks before ``_store`` exists
            raise AttributeError(name)
        return getattr(self._store, name)

    def __repr__(self) -> str:
        return repr(self._store)


def typed(store: LogStore) -> LogStore:
    """``store`` as the table layer uses it: wrapped in :class:`TypedStore` once."""
    return store if isinstance(store, TypedStore) else TypedStore(store)


__all__ = ["TypedStore", "typed"]
