"""A read-only pyarrow file system over a table's store, for pyarrow Datasets of tables that are not local.

Why not a pyarrow file system built from the table URI: the store already holds the credentials, the retry
budget and (in tests) fault injection, and a second configuration could disagree with it. Paths are what
:func:`deltalog.data.locate.resolve` returns: store keys for files under the root, absolute paths or URIs for
files elsewhere (opened as :func:`~deltalog.data.locate.open_input` opens them). Sizes come from the log, so
listing a file costs no request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from deltalog.data.locate import open_input
from deltalog.storage.base import LogStore


class StoreHandler(pafs.FileSystemHandler):  # type: ignore[misc]  # pyarrow is untyped: the base is Any
    """Reads through ``store``; every call that would change or list the store is refused."""

    def __init__(self, store: LogStore, sizes: Mapping[str, int] | None = None) -> None:
        self._store = store
        self._sizes = dict(sizes or {})

    @property
    def store(self) -> LogStore:
        return self._store

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StoreHandler) and other.store is self._store

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return id(self._store)

    def get_type_name(self) -> str:
        return "deltalog-store"

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return [pafs.FileInfo(p, pafs.FileType.File, size=self._sizes.get(p)) for p in paths]

    def open_input_file(self, path: str) -> pa.NativeFile:
        return pa.PythonFile(open_input(self._store, path, path), mode="r")

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return self.open_input_file(path)

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise pa.ArrowNotImplementedError("a deltalog table's file system is read-only and cannot list")

    get_file_info_selector = _read_only
    create_dir = _read_only
    delete_dir = _read_only
    delete_dir_contents = _read_only
    delete_root_dir_contents = _read_only
    delete_file = _read_only
    move = _read_only
    copy_file = _read_only
    open_output_stream = _read_only
    open_append_stream = _read_only


def store_filesystem(store: LogStore, sizes: Mapping[str, int] | None = None) -> pafs.FileSystem:
    """A pyarrow file system reading ``store`` (see :class:`StoreHandler`)."""
    return pafs.PyFileSystem(StoreHandler(store, sizes))


__all__ = ["StoreHandler", "store_filesystem"]
