"""A store over any fsspec file system, for reading through URLs (``memory://``, ``file://``, ...).

fsspec's generic ``pipe_file(mode="create")`` checks and then writes, which is not atomic across
processes, so this store reports ``atomic_put_if_absent=False`` unless the file system is known to be
process-local (``memory``), where a lock makes check-and-write atomic. Cloud stores with real conditional
writes have their own classes.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, TypeVar, cast

from deltalog.errors import FileAlreadyExistsError
from deltalog.storage.base import Capabilities, FileInfo, LogStore, confined, refuse_commit_overwrite, split_dir
from deltalog.storage.retry import DEFAULT_BUDGET, RetryBudget, mapped, not_a_file, with_retries

_MEMORY_LOCK = threading.Lock()
T = TypeVar("T")


def _mtime_ms(info: dict[str, Any]) -> int:
    for key in ("mtime", "LastModified", "last_modified", "created"):
        v = info.get(key)
        if v is None:
            continue
        if hasattr(v, "timestamp"):
            return int(v.timestamp() * 1000)
        try:
            return int(float(v) * 1000)
        except (TypeError, ValueError):
            continue
    return 0


class FsspecLogStore(LogStore):
    """A table on any fsspec file system; failures other than "absent" are :class:`StorageError`\\ s."""

    def __init__(
        self, fs: Any, root: str, display_root: str | None = None, retry: RetryBudget = DEFAULT_BUDGET
    ) -> None:
        self._fs = fs
        self._root = root.rstrip("/")
        self._display = display_root or root
        protocols = {fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)
        self._memory = "memory" in protocols
        #: a local file system can hold FIFOs and devices, which must be refused before they are opened
        self._local = bool(protocols & {"file", "local"})
        self.retry = retry

    @property
    def root(self) -> str:
        return self._display

    @property
    def fs(self) -> Any:
        return self._fs

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(atomic_put_if_absent=self._memory)

    def _abs(self, path: str) -> str:
        return f"{self._root}/{confined(path)}" if path else self._root

    def _guarded(self, op: str, path: str, call: Callable[[], T]) -> T:
        where = f"{self._display}/{path}".rstrip("/")
        return with_retries(f"{op} {where}", lambda: mapped(op, where, path, call), self.retry)

    def _regular(self, path: str) -> str:
        """The full path of ``path``, refused unless it is a regular file (local file systems only)."""
        full = self._abs(path)
        if self._local:
            kind = self._fs.info(full).get("type")
            if kind != "file":
                raise not_a_file(
                    f"{self._display}/{path}", path, "directory" if kind == "directory" else "special file"
                )
        return full

    def read(self, path: str) -> bytes:
        return cast(bytes, self._guarded("read", path, lambda: self._fs.cat_file(self._regular(path))))

    def open(self, path: str) -> BinaryIO:
        return cast(BinaryIO, self._guarded("open", path, lambda: self._fs.open(self._regular(path), "rb")))

    def exists(self, path: str) -> bool:
        return bool(self._guarded("exists", path, lambda: self._fs.exists(self._abs(path))))

    def list_from(self, path: str) -> Iterator[FileInfo]:
        directory, start = split_dir(path)

        def ls() -> list[dict[str, Any]]:
            try:
                return cast(list[dict[str, Any]], self._fs.ls(self._abs(directory), detail=True))
            except FileNotFoundError:
                return []

        entries = self._guarded("list", directory, ls)
        out = []
        for e in entries:
            if e.get("type") != "file":
                continue
            name = e["name"].rstrip("/").rsplit("/", 1)[-1]
            if name >= start:
                out.append(FileInfo(name, int(e.get("size") or 0), _mtime_ms(e)))
        out.sort(key=lambda f: f.name.encode())
        return iter(out)

    def walk(self, path: str = "", skip: Callable[[str], bool] | None = None) -> Iterator[FileInfo]:
        """Files under ``path`` with store-relative names; see :meth:`LogStore.walk`.

        fsspec's top-down ``walk`` lists one directory per call and lets pruned names be dropped from
        the directory dict before it descends, which is what keeps ``_delta_log`` unlisted.
        """
        top = self._abs(path.strip("/"))
        base = self._fs._strip_protocol(self._root).rstrip("/")
        steps = self._fs.walk(top, detail=True, topdown=True)
        where = f"{self._display}/{path}".rstrip("/")
        while True:
            # one step at a time, typed but not retried: a generator that raised cannot go on
            step = mapped("walk", where, path, lambda: next(steps, None))
            if step is None:
                return
            directory, dirs, files = step
            here = str(directory).rstrip("/")
            rel_dir = here[len(base) + 1 :] if here.startswith(base + "/") else ""
            if skip is not None:
                for name in list(dirs):
                    if skip(f"{rel_dir}/{name}" if rel_dir else name):
                        del dirs[name]
            for name, info in sorted(files.items()):
                if not name or info.get("type") == "directory":
                    continue
                rel = f"{rel_dir}/{name}" if rel_dir else name
                yield FileInfo(rel, int(info.get("size") or 0), _mtime_ms(info))

    def put_if_absent(self, path: str, data: bytes) -> None:
        mapped("put_if_absent", f"{self._display}/{path}", path, lambda: self._put_if_absent(path, data))

    def _put_if_absent(self, path: str, data: bytes) -> None:
        full = self._abs(path)
        if self._memory:
            with _MEMORY_LOCK:
                if self._fs.exists(full):
                    raise FileAlreadyExistsError(f"{path} already exists", path=path)
                self._fs.pipe_file(full, data)
            return
        try:
            self._fs.pipe_file(full, data, mode="create")
        except FileExistsError:
            raise FileAlreadyExistsError(f"{path} already exists", path=path) from None

    def put(self, path: str, data: bytes) -> None:
        refuse_commit_overwrite(path)
        mapped("put", f"{self._display}/{path}", path, lambda: self._fs.pipe_file(self._abs(path), data))

    def open_write(self, path: str) -> BinaryIO:
        """A new file to stream into (large data files); object stores show it whole once closed."""
        full = self._abs(path)

        def create() -> BinaryIO:
            if self._local or self._memory:
                self._fs.makedirs(full.rsplit("/", 1)[0], exist_ok=True)
            return cast(BinaryIO, self._fs.open(full, "wb"))

        return self._guarded("open_write", path, create)

    def delete(self, path: str) -> None:
        def rm() -> None:
            with contextlib.suppress(FileNotFoundError):
                self._fs.rm_file(self._abs(path))

        self._guarded("delete", path, rm)

    def __repr__(self) -> str:
        return f"FsspecLogStore({self._display!r})"


__all__ = ["FsspecLogStore"]
