"""From a path the log names to bytes: the table's store for files under its root, the file system otherwise.

Log paths are URI references, decoded exactly once (:func:`~deltalog.core.files.pathkeys.canonical_path`); a path
under the table root becomes a store key so that credentials, retries and fault injection are the store's.
An absolute path elsewhere (shallow clones, ``p`` deletion vectors) is opened directly: local paths with
``open``, other URIs through fsspec with its default credentials.

Every failure leaves here typed and naming the file: a missing file is a :class:`CorruptDataError` (the
log names a file the table does not have; retrying cannot help), any other I/O failure a
:class:`StorageError`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import BinaryIO

from deltalog.core.files.pathkeys import canonical_path
from deltalog.errors import CorruptDataError, DeltaLogError, StorageError
from deltalog.storage.base import LogStore


def is_absolute(where: str) -> bool:
    """Whether a resolved path lies outside the store (an absolute local path or a URI)."""
    return where.startswith("/") or "://" in where


def resolve(store: LogStore, log_path: str) -> str:
    """The store key of a log path under the table root, or the decoded absolute path of one elsewhere."""
    return canonical_path(log_path, store.root)


def native_path(store: LogStore, where: str) -> str | None:
    """A local file system path for ``where`` when there is one, so readers can use native, parallel I/O."""
    if where.startswith("/"):
        return where
    if is_absolute(where) or not store.capabilities.local:
        return None
    return os.path.join(store.root, *where.split("/"))


def _open(store: LogStore, where: str) -> BinaryIO:
    if not is_absolute(where):
        return store.open(where)
    if where.startswith("/"):
        return open(where, "rb")
    import fsspec

    handle: BinaryIO = fsspec.open(where, "rb").open()
    return handle


def typed_failure(exc: BaseException, shown: str) -> DeltaLogError | None:
    """What reading ``shown`` raising ``exc`` means, as deltalog's error naming the file (its cause set as
    ``raise ... from`` would); None when ``exc`` passes as it is (already typed, or not an I/O failure)."""
    if isinstance(exc, DeltaLogError) and not isinstance(exc, FileNotFoundError):
        return None
    if isinstance(exc, FileNotFoundError):  # the store's NotFoundError, or the builtin from a path outside the table
        error: DeltaLogError = CorruptDataError(f"{shown}: the file does not exist", path=shown)
        error.__suppress_context__ = True
        return error
    if isinstance(exc, (OSError, ValueError, ImportError)):
        error = StorageError(f"{shown}: {type(exc).__name__}: {exc}", path=shown)
        error.__cause__ = exc
        return error
    return None


@contextlib.contextmanager
def failures_named(shown: str) -> Iterator[None]:
    """Turn what reading ``shown`` raised into deltalog's errors, naming the file."""
    try:
        yield
    except BaseException as exc:
        typed = typed_failure(exc, shown)
        if typed is None:
            raise
        raise typed  # noqa: B904 -- the cause is set by typed_failure, as ``from`` would


def open_input(store: LogStore, where: str, shown: str) -> BinaryIO:
    """A seekable binary stream of a resolved path; errors typed (see :func:`failures_named`)."""
    with failures_named(shown):
        return _open(store, where)


def read_range(store: LogStore, where: str, offset: int, length: int, shown: str) -> bytes:
    """Up to ``length`` bytes at ``offset`` (fewer only where the file ends)."""
    with failures_named(shown), _open(store, where) as fh:
        fh.seek(offset)
        chunks = []
        remaining = length
        while remaining > 0:
            chunk = fh.read(remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)


__all__ = [
    "failures_named",
    "is_absolute",
    "native_path",
    "open_input",
    "read_range",
    "resolve",
    "typed_failure",
]
