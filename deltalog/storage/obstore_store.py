"""S3 and Azure Blob through ``obstore`` (Python bindings of Rust ``object_store``, the client under delta-rs).

Why a second client: a request through s3fs/aiobotocore or the Azure SDK costs about 1.5-2 ms of Python CPU,
one through obstore about 0.7 ms, and its requests run on Rust threads. A load of 1,000 commits is 1,000 GETs:
with the heavier client the CPU alone spreads them over many serial round trips; with this one they leave
nearly together (docs/storage.md "Backends" has the measurements). Chosen by
:func:`deltalog.storage.uri.store_for` when obstore is installed (the ``[s3]`` and ``[azure]`` extras bring it), unless
the ``deltalog_backend`` option or ``DELTALOG_STORE_BACKEND`` says ``fsspec``.

What each call sends (the contract of :mod:`deltalog.storage.base`):

- ``read``: one GET (no HEAD); ``read_many``: one GET per file, up to ``deltalog_max_concurrency`` in flight.
- ``put_if_absent``: a PUT with ``mode="create"``: ``If-None-Match: *`` on both clouds; S3's 412 and Azure's
  409 become :class:`~deltalog.errors.FileAlreadyExistsError`. ``put``: a plain PUT (overwrite).
- S3 listings: ListObjectsV2 with ``start-after`` (obstore's ``offset``), ended at ``stop``; ``walk``: one
  delimited listing per directory. ``delete_many``: one DeleteObjects per 1,000 keys, batches in order.
- Azure listings, ``delete`` and ``delete_many`` go through the Azure SDK store
  (:class:`~deltalog.storage.azure.AzureLogStore`): object_store lists Azure by whole path segments only,
  so the aligned version-block prefixes (:mod:`deltalog.storage.prefix_listing`) that keep a refresh at one or
  two LISTs need the SDK; and its blob batch stops at the first failed sub-request (a blob already gone
  included) without naming the rest, where the SDK's batch answers for every blob.

Requests are recorded on ``deltalog.storage.requests`` one per call deltalog makes (obstore has no request
hook): method, ``/<bucket>/<key>``, a status inferred from the outcome (200, 404, 409/412, or the status the
error names), the duration. A listing records one entry per chunk of up to 1,000 keys (an S3 page); object_store's
own retries are not seen. ``open`` (a HEAD, then ranged GETs) and ``open_write`` (a multipart upload) are
recorded as one entry each.

Retries: object_store retries 5xx, 429 and connection failures itself (here at most 3 times within 30 s), and
the idempotent calls get deltalog's small budget on top (:mod:`deltalog.storage.retry`), as the other stores do.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from typing import Any, BinaryIO, cast
from urllib.parse import urlsplit

import obstore
from fsspec.asyn import get_loop

from deltalog.errors import FileAlreadyExistsError, StorageError
from deltalog.storage.base import Capabilities, FileInfo, LogStore, refuse_commit_overwrite, split_dir
from deltalog.storage.bucket_paths import BucketPaths, Child, start_after, walk_tree
from deltalog.storage.bulk import chunked
from deltalog.storage.cloud_errors import mtime_ms
from deltalog.storage.obstore_errors import is_already_exists, no_container_code, status_of, typed_error
from deltalog.storage.obstore_options import ObstoreConfig
from deltalog.storage.requests import Timed, enabled
from deltalog.storage.retry import missing

#: keys per DeleteObjects request (S3's limit)
S3_DELETE_BATCH = 1000
#: GETs in flight in ``read_many`` unless ``deltalog_max_concurrency`` says otherwise (docs/storage.md "Backends")
DEFAULT_READS_IN_FLIGHT = 1000
_RETRY = {
    "max_retries": 3,
    "retry_timeout": timedelta(seconds=30),
    "backoff": {"init_backoff": timedelta(milliseconds=50), "max_backoff": timedelta(seconds=2), "base": 2},
}


class _Recorded:
    """One request record around a call; the status is inferred from how the call ended."""

    def __init__(self, method: str, target: str, operation: str = "") -> None:
        self._timed = Timed(method, target, operation) if enabled() else None

    def __enter__(self) -> _Recorded:
        if self._timed is not None:
            self._timed.__enter__()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._timed is None:
            return
        if exc is None:
            self._timed.status = 200
        elif isinstance(exc, FileNotFoundError):
            self._timed.status = 404
        else:
            self._timed.status = status_of(exc) or (409 if is_already_exists(exc) else 0)
        self._timed.__exit__(exc_type, exc, tb)


class _Handle(io.RawIOBase):
    """An obstore file handle as a Python binary file, its failures typed by ``on_error``."""

    def __init__(self, handle: Any, on_error: Callable[[BaseException], Exception]) -> None:
        self._handle = handle
        self._on_error = on_error

    def _call(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self._handle, method)(*args)
        except Exception as exc:
            raise self._on_error(exc) from exc


class _Reader(_Handle):
    """obstore's seekable reader (pyarrow and parquet readers take it)."""

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        return bytes(self._call("read", *(() if size is None or size < 0 else (size,))))

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        memoryview(buffer).cast("B")[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return int(self._handle.seek(offset, whence))

    def tell(self) -> int:
        return int(self._handle.tell())

    def close(self) -> None:
        if not self.closed:
            self._handle.close()
        super().close()


class _Writer(_Handle):
    """obstore's multipart writer; the object appears whole when it is closed."""

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        return int(self._call("write", bytes(data)))

    def flush(self) -> None:
        """Nothing to do: parts are uploaded as they fill, and the last one when the file is closed."""

    def close(self) -> None:
        if self.closed:
            return
        try:
            self._call("close")
        finally:
            super().close()


def build_client(kind: str, bucket: str, config: ObstoreConfig) -> Any:
    """The obstore store for ``kind`` (``s3`` or ``azure``) and its bucket or container."""
    from obstore.store import AzureStore, S3Store

    cls = S3Store if kind == "s3" else AzureStore
    return cls(bucket, config=config.config, client_options=config.client_options, retry_config=_RETRY)  # type: ignore[arg-type]


class ObstoreLogStore(BucketPaths):
    """A table on S3 or Azure Blob served by obstore; paths are relative to the table's key prefix."""

    def __init__(
        self,
        kind: str,
        bucket: str,
        prefix: str,
        display: str,
        config: ObstoreConfig,
        *,
        secrets: tuple[str, ...] = (),
        allow_unsafe_commits: bool = False,
        max_concurrency: int | None = None,
        sdk_store: Callable[[], LogStore] | None = None,
    ) -> None:
        self._kind = kind
        self._setup(bucket, prefix, display, None, secrets + config.secrets, max_concurrency, kind)
        self._concurrency = max_concurrency or DEFAULT_READS_IN_FLIGHT
        try:
            self._ob = build_client(kind, bucket, config)
        except Exception as exc:  # a malformed endpoint, an unknown key: the configuration is wrong
            raise StorageError(f"cannot connect to {self._display}: {self._scrub(exc)}") from None
        self._base = _request_base(kind, bucket, config)
        self._sdk_factory = sdk_store
        self._sdk: LogStore | None = None
        self.allow_unsafe_commits = allow_unsafe_commits
        self._fs = None

    def _scrub(self, exc: BaseException) -> str:
        from deltalog.storage.options import scrub

        return scrub(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", self._secrets)

    @property
    def backend(self) -> str:
        """Which client serves the table (``obstore``); the fsspec stores have none."""
        return "obstore"

    @property
    def sdk(self) -> LogStore:
        """The Azure SDK store behind Azure listings and deletes (built on first use)."""
        if self._sdk is None:
            if self._sdk_factory is None:
                raise StorageError(f"{self._display}: Azure listings need the Azure SDK store, which was not given")
            self._sdk = self._sdk_factory()
        return self._sdk

    @property
    def capabilities(self) -> Capabilities:
        batch = S3_DELETE_BATCH if self._kind == "s3" else self.sdk.capabilities.delete_batch
        return Capabilities(atomic_put_if_absent=True, read_concurrency=self._concurrency, delete_batch=batch)

    def _loop(self) -> Any:
        return get_loop()

    def _target(self, key: str, query: str = "") -> str:
        return (f"{self._base}/{key}" if key else self._base or "/") + query

    def _error(self, op: str, path: str, exc: BaseException) -> StorageError:
        return typed_error(self._kind, op, self._display, self._bucket_name, path, exc, self._secrets)

    def _container_missing(self, op: str, exc: BaseException) -> bool:
        return no_container_code(exc)

    # ------------------------------------------------------------------------------------------ reads
    async def _get(self, path: str) -> bytes:
        key = self._key(path)
        with _Recorded("GET", self._target(key)):
            result = await obstore.get_async(self._ob, key)
            data = await result.bytes_async()
        return bytes(data)

    def exists(self, path: str) -> bool:
        key = self._key(path)

        def head() -> bool:
            try:
                with _Recorded("HEAD", self._target(key)):
                    obstore.head(self._ob, key)
            except FileNotFoundError as exc:
                if no_container_code(exc):
                    raise
                return False
            return True

        return bool(self._guard("exists", path, head))

    def _handle(
        self, op: str, path: str, method: str, opener: Callable[[Any, str], Any], wrap: type[_Handle]
    ) -> BinaryIO:
        """An obstore reader or writer of ``path`` as a Python file whose later failures are typed too."""
        key = self._key(path)

        def make() -> BinaryIO:
            with _Recorded(method, self._target(key), op):
                handle = opener(self._ob, key)
            return cast(BinaryIO, wrap(handle, lambda exc: self._error(op, path, exc)))

        return cast(BinaryIO, self._guard(op, path, make))

    def open(self, path: str) -> BinaryIO:
        """A seekable reader (a HEAD for the size, then ranged GETs as the caller reads)."""
        return self._handle("open", path, "GET", obstore.open_reader, _Reader)

    # ------------------------------------------------------------------------------------------ listing
    def list_from(self, path: str) -> Iterator[FileInfo]:
        if self._kind == "azure":
            return self.sdk.list_from(path)
        return iter(self.list_range(path, None))

    def list_range(self, path: str, stop: str | None) -> list[FileInfo]:
        """Direct children of ``path``'s directory named ``>= start`` and ``< stop``, sorted.

        S3: one listing from just below ``start`` (obstore's offset is S3's ``start-after``), read chunk by
        chunk and ended at the first name ``>= stop``. The listing is recursive (object_store cannot combine a
        delimiter with an offset), so files in subdirectories after ``start`` (``_delta_log/_sidecars/``) are
        listed and dropped here. Azure: the SDK store's bounded listing.
        """
        if self._kind == "azure":
            return list(self.sdk.list_range(path, stop))
        directory, start = split_dir(path)
        prefix = self._dir_prefix(directory)
        if not start:  # a whole directory: one delimited listing, never its subtrees
            found = self._children("list", directory)
            return sorted(
                (f for f, is_dir in found if not is_dir and _below(f.name, stop)), key=lambda f: f.name.encode()
            )
        offset = start_after(prefix, start)
        low = start.encode()
        out: list[FileInfo] = []

        def collect() -> None:
            stream = obstore.list(self._ob, prefix.rstrip("/") or None, offset=offset, chunk_size=1000)
            query = f"?list-type=2&prefix={prefix}"
            while True:
                with _Recorded("GET", self._target("", query), "list"):
                    chunk = next(stream, None)
                if chunk is None:
                    return
                for obj in chunk:
                    name = str(obj["path"])[len(prefix) :]
                    if not _below(name, stop):
                        return
                    if name and "/" not in name and name.encode() >= low:
                        out.append(FileInfo(name, int(obj.get("size") or 0), mtime_ms(obj.get("last_modified"))))

        def listed() -> None:
            out.clear()  # a retried listing starts again
            collect()

        self._guard("list", path, listed)
        return sorted(out, key=lambda f: f.name.encode())

    def _children(self, op: str, directory: str) -> list[tuple[FileInfo, bool]]:
        """(file info with a bare name, is a directory) of each direct child of ``directory`` (S3)."""
        prefix = self._dir_prefix(directory)

        def listing() -> list[tuple[FileInfo, bool]]:
            with _Recorded("GET", self._target("", f"?list-type=2&delimiter=/&prefix={prefix}"), op):
                answer = obstore.list_with_delimiter(self._ob, prefix.rstrip("/") or None)
            out = [(FileInfo(str(p)[len(prefix) :], 0, 0), True) for p in answer["common_prefixes"]]
            for obj in answer["objects"]:
                name = str(obj["path"])[len(prefix) :]
                out.append((FileInfo(name, int(obj.get("size") or 0), mtime_ms(obj.get("last_modified"))), False))
            return out

        return cast(list[tuple[FileInfo, bool]], self._guard(op, directory, listing))

    def walk(self, path: str = "", skip: Callable[[str], bool] | None = None) -> Iterator[FileInfo]:
        """Files under ``path``: one delimited listing per directory; a pruned directory is never listed."""
        if self._kind == "azure":
            return self.sdk.walk(path, skip)

        def list_dir(rel_dir: str) -> list[Child]:
            return [(f.name, f.size, f.mtime, is_dir) for f, is_dir in self._children("walk", rel_dir)]

        return walk_tree(list_dir, path, skip)

    # ------------------------------------------------------------------------------------------ writes
    def put_if_absent(self, path: str, data: bytes) -> None:
        """A PUT with ``If-None-Match: *``; "already exists" (412 on S3, 409 on Azure) means another writer won."""
        key = self._key(path)
        try:
            with _Recorded("PUT", self._target(key), "put_if_absent"):
                obstore.put(self._ob, key, data, mode="create")
        except Exception as exc:
            if is_already_exists(exc):
                raise FileAlreadyExistsError(f"{self._display}/{path} already exists", path=path) from None
            if isinstance(exc, FileNotFoundError) and not no_container_code(exc):
                raise missing(path, f"{self._display}/{path}") from exc
            raise self._error("put_if_absent", path, exc) from exc

    def put(self, path: str, data: bytes) -> None:
        refuse_commit_overwrite(path)
        key = self._key(path)

        def send() -> None:
            with _Recorded("PUT", self._target(key), "put"):
                obstore.put(self._ob, key, data)

        self._guard("put", path, send)

    def open_write(self, path: str) -> BinaryIO:
        """A new object to stream into (uploaded in parts); it appears whole when closed."""
        return self._handle("open_write", path, "PUT", obstore.open_writer, _Writer)

    def delete(self, path: str) -> None:
        if self._kind == "azure":
            self.sdk.delete(path)
            return
        key = self._key(path)

        def send() -> None:  # object_store deletes one key with a DeleteObjects of one, too
            with _Recorded("POST", self._target("", "?delete"), "delete_objects"):
                obstore.delete(self._ob, [key])

        with contextlib.suppress(FileNotFoundError):
            self._guard("delete", path, send)

    def delete_many(self, paths: Sequence[str]) -> None:
        """S3: one DeleteObjects per 1,000 keys, batches in order (a key already gone counts as deleted; a batch
        that fails is retried within the budget, then raised naming its first file). Azure: the SDK's blob
        batches (:meth:`AzureLogStore.delete_many`), whose answers name every blob left."""
        if self._kind == "azure":
            self.sdk.delete_many(paths)
            return
        by_key = {self._key(p): p for p in paths}  # every name confined before the first request
        for batch in chunked(list(by_key), S3_DELETE_BATCH):
            keys = list(batch)

            def send(keys: list[str] = keys) -> None:
                with _Recorded("POST", self._target("", "?delete"), "delete_objects"):
                    obstore.delete(self._ob, keys)

            self._guard("delete", by_key[keys[0]], send)

    def __repr__(self) -> str:
        return f"ObstoreLogStore({self._display!r})"


def _request_base(kind: str, bucket: str, config: ObstoreConfig) -> str:
    """The URL path a request's key follows, as the server sees it (for the request records): ``/<bucket>`` on
    S3 in path style, nothing in virtual-hosted style; ``[/<account>]/<container>`` on Azure (Azurite's URLs
    name the account)."""
    if kind == "s3":
        return "" if config.config.get("virtual_hosted_style_request") else f"/{bucket}"
    if config.config.get("use_emulator"):
        return f"/devstoreaccount1/{bucket}"
    return urlsplit(str(config.config.get("endpoint") or "")).path.rstrip("/") + f"/{bucket}"


def _below(name: str, stop: str | None) -> bool:
    return stop is None or name.encode() < stop.encode()


__all__ = ["DEFAULT_READS_IN_FLIGHT", "S3_DELETE_BATCH", "ObstoreLogStore", "build_client"]
