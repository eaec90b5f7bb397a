"""The storage contract: bytes and names, never actions.

Paths given to a store are relative to the table root and use ``/`` (``_delta_log/00000000000000000007.json``).
Every store must provide atomic visibility (a file is whole or absent), mutual exclusion on
``put_if_absent``, and listings that show a file once its write returned.

The optional abilities are declared in :class:`LogStore` with defaults built on the required calls, so a store
(subclassing ``LogStore``) overrides only those it does better: ``open_write(path)`` streams a new file (data
files larger than memory should hold; the default, ``None``, has callers ``put`` the whole file:
:mod:`deltalog.data.output`), ``read_many(paths)`` and ``delete_many(paths)`` read or delete many files in as few
round trips as the store allows (default: one call per path), ``list_range(path, stop)`` ends a listing early
(default: the whole listing, cut). :attr:`Capabilities.read_concurrency` / :attr:`Capabilities.delete_batch`
say what a store does (callers branch on those, never on classes). A store subclass that overrides a plain
call to record or alter it (``read``, ``delete``, ``list_from``) overrides the matching bulk call too when it
must see every request: the bulk calls are the class's own, whatever it inherits.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO, Protocol, runtime_checkable

from deltalog.errors import InvalidArgumentError, PathOutsideRootError

_COMMIT = re.compile(r"(^|/)_delta_log/\d{20}\.json$")


def refuse_commit_overwrite(path: str) -> None:
    """``put`` overwrites; a commit file must only ever be created with ``put_if_absent``.

    Every store's ``put`` calls this first, so no caller, now or later, can replace a committed version
    by mistake: overwriting is for the files that are meant to change (``_last_checkpoint``, intent
    heartbeats, a torn checkpoint being rewritten).
    """
    if _COMMIT.search(path):
        raise InvalidArgumentError(f"{path} is a commit: commits are created with put_if_absent, never overwritten")


def confined(path: str) -> str:
    """``path``, unless it has a ``..`` segment: then :class:`~deltalog.errors.PathOutsideRootError`.

    Every store resolves names through this, so no caller (VACUUM, cleanup, RESTORE's probe, a reader
    following a log path) can read, probe or delete outside the root, whatever a log or a listing says.
    Callers pass normalised names (:mod:`deltalog.core.pathkeys`), so a ``..`` left in one is refused
    whether or not it would climb out. On an object store ``..`` is not special, but the HTTP layers in
    between may normalise it away, so every store refuses it alike.
    """
    if ".." in path and ".." in path.replace("\\", "/").split("/"):
        raise PathOutsideRootError(f"{path} leaves the table root: a store only reaches files under it", path=path)
    return path


@dataclass(frozen=True)
class FileInfo:
    """One listed file: ``name`` is bare within the listed directory (store-relative from ``walk``), ``size``
    in bytes, ``mtime`` in ms."""

    name: str
    size: int
    mtime: int


@dataclass(frozen=True)
class Capabilities:
    """What a store can promise; ``atomic_put_if_absent`` False means concurrent writers are unsafe.

    ``read_concurrency``: how many reads ``read_many`` keeps in flight (1: one after another, as on a local
    disk, where the page cache answers faster than a thread pool starts). ``delete_batch``: how many keys
    one bulk-delete request takes (1: a request per key).
    """

    atomic_put_if_absent: bool
    local: bool = False
    read_concurrency: int = 1
    delete_batch: int = 1


@runtime_checkable
class LogStore(Protocol):
    """What the engine needs from storage."""

    @property
    def root(self) -> str:
        """The table root, as a display string with credentials removed."""
        ...

    @property
    def capabilities(self) -> Capabilities: ...

    def read(self, path: str) -> bytes:
        """The whole file; :class:`FileNotFoundError` when it does not exist."""
        ...

    def open(self, path: str) -> BinaryIO:
        """A seekable binary stream, for parquet readers that fetch footers and row groups."""
        ...

    def list_from(self, path: str) -> Iterator[FileInfo]:
        """Files of ``path``'s directory whose names are ``>=`` its last segment, sorted by name.

        A missing directory lists as empty. Subdirectories are not listed.
        """
        ...

    def put_if_absent(self, path: str, data: bytes) -> None:
        """Create ``path`` atomically; :class:`~deltalog.errors.FileAlreadyExistsError` when it exists."""
        ...

    def put(self, path: str, data: bytes) -> None:
        """Create or overwrite ``path`` (``_last_checkpoint``, intents, a torn checkpoint); a commit file is
        refused (:func:`refuse_commit_overwrite`)."""
        ...

    def delete(self, path: str) -> None:
        """Delete ``path``; deleting a missing file is not an error."""
        ...

    def exists(self, path: str) -> bool: ...

    def walk(self, path: str = "", skip: Callable[[str], bool] | None = None) -> Iterator[FileInfo]:
        """Every file under the directory ``path`` (the root by default), recursively, in no set order.

        Unlike :meth:`list_from`, each :class:`FileInfo` ``name`` is the file's store-relative path
        (``p=1/part-0.parquet``), ready for :meth:`delete`. ``skip(dir_path)`` (store-relative) returning
        True prunes that directory without listing it: VACUUM never needs ``_delta_log`` or other hidden
        trees, and on an object store each pruned directory is listing calls saved. Symbolic links to
        directories are not followed, so a walk never leaves the root. A missing ``path`` walks as empty.
        """
        ...

    # the optional abilities: defaults on the calls above, for a store to override with something better

    def open_write(self, path: str) -> BinaryIO | None:
        """A stream that creates ``path`` when closed (a multipart upload, a temp file renamed), or ``None``:
        this store does not stream, and the caller writes the whole file with :meth:`put`."""
        return None

    def read_many(self, paths: Sequence[str]) -> list[bytes]:
        """The files' bytes, in the order of ``paths``; :class:`~deltalog.errors.NotFoundError` naming the first
        missing one, else the store's :class:`~deltalog.errors.StorageError` for the first path that failed.
        Default: one :meth:`read` after another, every path refused first if one leaves the root."""
        for p in paths:
            confined(p)
        return [self.read(p) for p in paths]

    def delete_many(self, paths: Sequence[str]) -> None:
        """Delete every path (a missing one counts as deleted), in order, in batches of at most
        :attr:`Capabilities.delete_batch`: a failure leaves the earlier paths deleted and the later ones
        untouched (cleanup deletes the oldest log files first and relies on that); a batch whose answer names
        keys it could not delete raises :class:`~deltalog.errors.BulkDeleteError` naming them. Default: one
        :meth:`delete` after another, every path refused first if one leaves the root."""
        for p in paths:
            confined(p)
        for p in paths:
            self.delete(p)

    def list_range(self, path: str, stop: str | None) -> list[FileInfo]:
        """:meth:`list_from` ``path``, keeping only names ``< stop`` (all of them when ``stop`` is None).

        Why: time travel to an old version needs the log around that version, not everything after it. A
        store that can end a listing early (local: no ``stat`` past ``stop``; S3: no further pages) overrides
        this; the default lists from ``path`` and drops the tail, which is correct, only no cheaper.
        """
        files = list(self.list_from(path))
        if stop is None:
            return files
        end = stop.encode()
        return [f for f in files if f.name.encode() < end]


def split_dir(path: str) -> tuple[str, str]:
    """(directory, last segment) of a store-relative path."""
    head, _, tail = path.rpartition("/")
    return head, tail


__all__ = ["Capabilities", "FileInfo", "LogStore", "confined", "split_dir"]
