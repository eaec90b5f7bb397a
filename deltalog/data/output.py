"""New data files, streamed into the table's store.

A data file can be larger than a writer wants to hold, so it is streamed: through the store's
``open_write`` (local files, S3 multipart uploads, Azure block blobs, any fsspec file system), so that
credentials, root confinement and error typing stay the store's. A store that does not stream (``open_write``
gives ``None``: a fault-injecting wrapper, a store of the caller's) gets the whole file through ``put`` when it
is closed: correct, with the file held in memory until then.

Failures leave here as :class:`~deltalog.errors.StorageError` naming the file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

import pyarrow as pa

from deltalog.errors import DeltaLogError, StorageError
from deltalog.storage.base import LogStore


@contextlib.contextmanager
def write_failures(store: LogStore, key: str) -> Iterator[None]:
    """Turn what writing ``key`` raised into a :class:`StorageError` naming it."""
    try:
        yield
    except DeltaLogError:
        raise
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise StorageError(f"{store.root}/{key}: writing failed: {type(exc).__name__}: {exc}", path=key) from exc


class Output:
    """One new file being written: an Arrow output stream, its size so far, and how to finish it."""

    def __init__(self, store: LogStore, key: str) -> None:
        self.store = store
        self.key = key
        with write_failures(store, key):
            self._handle = store.open_write(key)
            if self._handle is not None:
                self.stream: pa.NativeFile = pa.PythonFile(self._handle, mode="w")
            else:
                self.stream = pa.BufferOutputStream()

    def tell(self) -> int:
        """Bytes written so far."""
        with write_failures(self.store, self.key):
            return int(self.stream.tell())

    def close(self) -> int:
        """Finish the file (the object appears on object stores now); its size in bytes."""
        with write_failures(self.store, self.key):
            size = int(self.stream.tell())
            if self._handle is None:
                data = self.stream.getvalue().to_pybytes()
                self.store.put(self.key, data)
                return len(data)
            self.stream.close()
            return size

    def discard(self) -> None:
        """Abandon the file: close what is open, delete what may have been written. Never raises."""
        with contextlib.suppress(Exception):
            if self._handle is not None and not self.stream.closed:
                self.stream.close()
        with contextlib.suppress(Exception):  # a failed flush above can leave the store's handle open
            if self._handle is not None:
                self._handle.close()
        delete_files(self.store, [self.key])


def delete_files(store: LogStore, keys: Iterable[str]) -> list[str]:
    """Delete data files a failed write left (best effort); the keys that could not be deleted."""
    left = []
    for key in keys:
        try:
            store.delete(key)
        except Exception:  # cleanup must not hide the error that made it necessary
            left.append(key)
    return left


__all__ = ["Output", "delete_files", "write_failures"]
