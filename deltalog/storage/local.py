"""Local-disk store: put-if-absent is a fully written temp file linked into place.

``os.link`` fails when the target exists and leaves it intact, so the loser of a race gets
:class:`FileAlreadyExistsError` and the winner's bytes are never touched. ``os.rename``/``os.replace``
would silently overwrite and are never used for log files.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
from collections.abc import Callable, Iterator
from functools import partial
from typing import BinaryIO, TypeVar

from deltalog.errors import FileAlreadyExistsError, StorageError
from deltalog.storage.base import Capabilities, FileInfo, LogStore, confined, refuse_commit_overwrite, split_dir
from deltalog.storage.retry import (
    DEFAULT_BUDGET,
    RetryBudget,
    file_kind,
    mapped,
    missing,
    not_a_file,
    os_error,
    with_retries,
)

log = logging.getLogger(__name__)

T = TypeVar("T")
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


def _scan(directory: str) -> list[os.DirEntry[str]]:
    """The entries of ``directory``; none when it is missing (or is a file)."""
    try:
        return list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _entry_info(e: os.DirEntry[str], name: str) -> FileInfo | None:
    """A listing entry as a FileInfo: None for directories (and links to them) and for names gone meanwhile.

    ``stat`` follows links, so a link to a file lists with the file's size. A link that cannot be followed
    because it loops is listed from its own ``lstat`` (size 0): reading it then says what it is.
    """
    try:
        st = e.stat()
    except FileNotFoundError:  # deleted since the scan, or a dangling link: not there
        return None
    except OSError:
        try:
            st = e.stat(follow_symlinks=False)
        except FileNotFoundError:
            return None
        return FileInfo(name, 0, st.st_mtime_ns // 1_000_000)
    if stat.S_ISDIR(st.st_mode):
        return None
    return FileInfo(name, st.st_size if stat.S_ISREG(st.st_mode) else 0, st.st_mtime_ns // 1_000_000)


class LocalLogStore(LogStore):
    """A table on a POSIX file system."""

    def __init__(self, root: str, retry: RetryBudget = DEFAULT_BUDGET) -> None:
        self._root = os.path.abspath(root)
        self.retry = retry

    @property
    def root(self) -> str:
        return self._root

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(atomic_put_if_absent=True, local=True)

    def _abs(self, path: str) -> str:
        return os.path.join(self._root, *confined(path).split("/"))

    def _where(self, path: str) -> str:
        return os.path.join(self._root, path) if path else self._root

    def _guarded(self, op: str, path: str, call: Callable[[], T]) -> T:
        """``call`` with OSErrors typed (:func:`~deltalog.storage.retry.mapped`) and transient ones retried."""
        return with_retries(f"{op} {self._where(path)}", lambda: mapped(op, self._where(path), path, call), self.retry)

    def _open_file(self, path: str) -> tuple[int, os.stat_result]:
        """A descriptor of the regular file ``path`` and its ``fstat``; anything else is refused before a byte is
        read.

        ``O_NONBLOCK`` makes opening a FIFO return at once instead of waiting for a writer forever; the
        ``fstat`` then tells a FIFO, a directory or a device from a file. On a regular file the flag
        changes nothing.
        """
        fd = os.open(self._abs(path), _READ_FLAGS)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise not_a_file(self._where(path), path, file_kind(st.st_mode))
        except BaseException:
            os.close(fd)
            raise
        return fd, st

    def read(self, path: str) -> bytes:
        """The whole file, through the bare system calls: a load reads a thousand small commits, and the
        buffered file object costs more than the copy out of the page cache."""
        try:
            return self._read(path)  # the hot path, without the wrappers: a load reads every commit
        except FileNotFoundError:
            raise missing(path, self._where(path)) from None
        except OSError:
            return self._guarded("read", path, lambda: self._read(path))  # typed, and retried when transient

    def _read(self, path: str) -> bytes:
        fd, st = self._open_file(path)
        try:
            size = st.st_size
            data = os.read(fd, size + 1)
            if len(data) <= size:
                return data  # a regular file's read is short only at its end
            chunks = [data]
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def open(self, path: str) -> BinaryIO:
        return self._guarded("open", path, lambda: os.fdopen(self._open_file(path)[0], "rb"))

    def exists(self, path: str) -> bool:
        """Whether a file (anything but a directory) has this name; a symbolic link that loops is an error."""

        def probe() -> bool:
            try:
                return not stat.S_ISDIR(os.stat(self._abs(path)).st_mode)
            except (FileNotFoundError, NotADirectoryError):
                return False

        return self._guarded("exists", path, probe)

    def list_from(self, path: str) -> Iterator[FileInfo]:
        return iter(self.list_range(path, None))

    def list_range(self, path: str, stop: str | None) -> list[FileInfo]:
        """Like :meth:`list_from`, but only names ``< stop`` too
        (:meth:`~deltalog.storage.base.LogStore.list_range`).

        The directory scan is one call whatever the range; the per-file ``stat`` is what a long log costs,
        so names outside the range are dropped before it. Entries that are not directories but not regular
        files either (a FIFO, a symbolic link that loops) are listed, so that reading one fails with an
        error naming it instead of the name silently not being there.
        """
        directory, start = split_dir(path)
        full = self._abs(directory) if directory else self._root
        entries = self._guarded("list", directory, lambda: _scan(full))
        out = []
        for e in entries:
            if e.name < start or (stop is not None and e.name >= stop):
                continue
            info = _entry_info(e, e.name)
            if info is not None:
                out.append(info)
        out.sort(key=lambda f: f.name.encode())
        return out

    def walk(self, path: str = "", skip: Callable[[str], bool] | None = None) -> Iterator[FileInfo]:
        """Files under ``path`` with store-relative names; see :meth:`LogStore.walk`.

        ``os.scandir`` without following links: a symlinked directory is neither entered nor listed,
        so nothing outside the root can ever be offered for deletion.
        """
        start = path.strip("/")
        pending = [start]
        while pending:
            rel_dir = pending.pop()
            full = self._abs(rel_dir) if rel_dir else self._root
            entries = self._guarded("walk", rel_dir, partial(_scan, full))
            subdirs = []
            for e in sorted(entries, key=lambda entry: entry.name):
                rel = f"{rel_dir}/{e.name}" if rel_dir else e.name
                if e.is_dir(follow_symlinks=False):
                    if skip is None or not skip(rel):
                        subdirs.append(rel)
                    continue
                info = _entry_info(e, rel)
                if info is not None:
                    yield info
            pending.extend(reversed(subdirs))

    def _write_temp(self, final: str, data: bytes) -> str:
        directory, name = os.path.split(final)
        os.makedirs(directory, exist_ok=True)
        import uuid  # writers only: not a cost of ``import deltalog``

        tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        finally:
            os.close(fd)
        return tmp

    def put_if_absent(self, path: str, data: bytes) -> None:
        final = self._abs(path)
        try:
            tmp = self._write_temp(final, data)
        except OSError as exc:
            raise StorageError(f"cannot write a temporary file for {path}: {exc}", path=path) from exc
        try:
            os.link(tmp, final)
        except FileExistsError:
            raise FileAlreadyExistsError(f"{path} already exists", path=path) from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise StorageError(f"cannot create {path}: {exc}", path=path) from exc
            # No hard links here (some FUSE and SMB mounts): O_EXCL create is still exclusive.
            self._exclusive_create(final, path, data)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        self._fsync_dir(os.path.dirname(final))

    def _exclusive_create(self, final: str, path: str, data: bytes) -> None:
        log.warning("hard links unsupported under %s; using O_EXCL create for %s", self._root, path)
        try:
            fd = os.open(final, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise FileAlreadyExistsError(f"{path} already exists", path=path) from None
        try:
            os.write(fd, data)
            os.fsync(fd)
        except OSError as exc:
            raise os_error("put_if_absent", self._where(path), path, exc) from exc
        finally:
            os.close(fd)

    def put(self, path: str, data: bytes) -> None:
        refuse_commit_overwrite(path)
        final = self._abs(path)
        try:
            tmp = self._write_temp(final, data)
            # The temp file keeps readers from seeing a torn write.
            os.replace(tmp, final)  # overwrite-ok: the _last_checkpoint hint; put() refuses commits above
        except OSError as exc:
            raise os_error("put", self._where(path), path, exc) from exc
        self._fsync_dir(os.path.dirname(final))

    def open_write(self, path: str) -> BinaryIO:
        """A new file to stream into (large data files), created exclusively; it becomes a table file only
        when a commit names it, so a torn one is an orphan for VACUUM, never a wrong answer."""
        final = self._abs(path)

        def create() -> BinaryIO:
            os.makedirs(os.path.dirname(final), exist_ok=True)
            return open(final, "xb")

        return self._guarded("open_write", path, create)

    def delete(self, path: str) -> None:
        def unlink() -> None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._abs(path))

        self._guarded("delete", path, unlink)

    @staticmethod
    def _fsync_dir(directory: str) -> None:
        try:
            fd = os.open(directory, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)

    def __repr__(self) -> str:
        return f"LocalLogStore({self._root!r})"


__all__ = ["LocalLogStore"]
