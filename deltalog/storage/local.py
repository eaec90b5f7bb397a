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
from typing import BinaryIO

from deltalog.errors import FileAlreadyExistsError, StorageError
from deltalog.storage.base import Capabilities, FileInfo, refuse_commit_overwrite, split_dir

log = logging.getLogger(__name__)


class LocalLogStore:
    """A table on a POSIX file system."""

    def __init__(self, root: str) -> None:
        self._root = os.path.abspath(root)

    @property
    def root(self) -> str:
        return self._root

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(atomic_put_if_absent=True, local=True)

    def _abs(self, path: str) -> str:
        return os.path.join(self._root, *path.split("/"))

    def _open_regular(self, path: str) -> tuple[int, os.stat_result]:
        """A descriptor of ``path`` if it is a regular file; a :class:`StorageError` naming it otherwise.

        Opened non-blocking, so a FIFO in a log file's place cannot stall the reader, and checked with
        ``fstat`` on the descriptor itself (no race with a rename): a directory, a FIFO, a device or a
        symbolic-link loop where the log expects a file is an error, never a hang or a raw ``OSError``.
        """
        flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(self._abs(path), flags)
        except (FileNotFoundError, NotADirectoryError):
            raise FileNotFoundError(path) from None
        except OSError as exc:
            raise StorageError(f"{path} cannot be opened as a file: {exc.strerror or exc}", path=path) from None
        try:
            st = os.fstat(fd)
        except OSError as exc:
            os.close(fd)
            raise StorageError(f"{path} cannot be read: {exc.strerror or exc}", path=path) from None
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise StorageError(f"{path} is not a regular file ({_kind(st.st_mode)})", path=path)
        return fd, st

    def read(self, path: str) -> bytes:
        """The whole file, through the bare system calls: a load reads a thousand small commits, and the
        buffered file object costs more than the copy out of the page cache."""
        fd, st = self._open_regular(path)
        try:
            size = st.st_size
            data = os.read(fd, size + 1)
            if len(data) <= size:
                return data  # a regular file's read is short only at its end
            chunks = [data]
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        except OSError as exc:
            raise StorageError(f"{path} cannot be read: {exc.strerror or exc}", path=path) from None
        finally:
            os.close(fd)

    def open(self, path: str) -> BinaryIO:
        fd, _ = self._open_regular(path)
        os.set_blocking(fd, True)  # a regular file reads the same either way; keep the stream ordinary
        # The checked descriptor, under the file's name (parquet readers reopen local files by name).
        return open(self._abs(path), "rb", opener=lambda _name, _flags: fd)

    def exists(self, path: str) -> bool:
        return os.path.exists(self._abs(path))

    def list_from(self, path: str) -> Iterator[FileInfo]:
        return iter(self.list_range(path, None))

    def list_range(self, path: str, stop: str | None) -> list[FileInfo]:
        """Like :meth:`list_from`, but only names ``< stop`` too; see :func:`~deltalog.storage.base.list_between`.

        The directory scan is one call whatever the range; the per-file ``stat`` is what a long log costs,
        so names outside the range are dropped before it.
        """
        directory, start = split_dir(path)
        full = self._abs(directory) if directory else self._root
        try:
            entries = list(os.scandir(full))
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        for e in entries:
            if e.name < start or (stop is not None and e.name >= stop):
                continue
            try:
                if not e.is_file():
                    continue
                st = e.stat()
            except OSError:  # deleted between scandir and stat, or a link that leads nowhere (a loop): no file
                continue
            out.append(FileInfo(e.name, st.st_size, st.st_mtime_ns // 1_000_000))
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
            try:
                entries = sorted(os.scandir(full), key=lambda e: e.name)
            except (FileNotFoundError, NotADirectoryError):
                continue
            subdirs = []
            for e in entries:
                rel = f"{rel_dir}/{e.name}" if rel_dir else e.name
                try:
                    if e.is_dir(follow_symlinks=False):
                        if skip is None or not skip(rel):
                            subdirs.append(rel)
                        continue
                    if e.is_symlink() and os.path.isdir(e.path):
                        continue
                    st = e.stat()
                except FileNotFoundError:  # deleted while walking
                    continue
                yield FileInfo(rel, st.st_size, st.st_mtime_ns // 1_000_000)
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
        finally:
            os.close(fd)

    def put(self, path: str, data: bytes) -> None:
        refuse_commit_overwrite(path)
        final = self._abs(path)
        tmp = self._write_temp(final, data)
        # Overwrite is the point here (never a commit: refused above); the temp file keeps readers from
        # seeing a torn write.
        os.replace(tmp, final)
        self._fsync_dir(os.path.dirname(final))

    def delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._abs(path))

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


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


__all__ = ["LocalLogStore"]
