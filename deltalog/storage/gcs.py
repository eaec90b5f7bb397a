"""Google Cloud Storage through gcsfs, with a real put-if-absent: ``ifGenerationMatch=0``.

Why this class exists: GCS creates an object only if none exists when the upload carries
``ifGenerationMatch=0``; the loser gets ``412 Precondition Failed`` and the winner's bytes stay. gcsfs sends it
for ``pipe_file(path, data, mode="create")`` (a simple upload, for 0 bytes too) and raises
:class:`FileExistsError`, which becomes :class:`~deltalog.errors.FileAlreadyExistsError`. Without this class a
``gs://`` table went to the generic fsspec store, which cannot promise exclusion.

gcsfs's default file system class (``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT``) asks a gRPC control API for every
bucket's type first; the plain JSON-API class is used instead, so an emulator or a restricted network is not
held up for a minute per bucket.

Listing uses the JSON API's ``startOffset``/``endOffset`` with a ``/`` delimiter, so a listing from version N
(to a stop) costs what lies in between. ``read_many`` keeps up to ``deltalog_max_concurrency`` GETs in flight
on gcsfs's event loop. Errors become :class:`~deltalog.errors.StorageError`: 429/5xx and dropped connections
are retryable, 401/403 say which credentials to check, a missing bucket says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any, BinaryIO, cast

import aiohttp
from gcsfs.core import GCSFileSystem
from gcsfs.retry import HttpError

from deltalog.errors import FileAlreadyExistsError, StorageError
from deltalog.storage.base import Capabilities, FileInfo, refuse_commit_overwrite, split_dir
from deltalog.storage.bucket_paths import BucketPaths, Child, walk_tree
from deltalog.storage.cloud_errors import access_denied, cause_of, mtime_ms, request_failed, where
from deltalog.storage.requests import Timed

_RETRY_EXCEPTIONS = (aiohttp.ClientError, asyncio.TimeoutError, TimeoutError, ConnectionError)


def _status(exc: BaseException) -> int:
    found = cause_of(exc, lambda e: isinstance(e, HttpError))
    return int(getattr(found, "code", 0) or 0)


class GcsLogStore(BucketPaths):
    """A table under ``gs://bucket/prefix`` (or ``gcs://``); paths are relative to that prefix."""

    _kind = "gcs"

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        fs_kwargs: Mapping[str, Any] | None = None,
        *,
        scheme: str = "gs",
        secrets: tuple[str, ...] = (),
        fs: Any = None,
        allow_unsafe_commits: bool = False,
        max_concurrency: int | None = None,
    ) -> None:
        self._bucket = bucket
        kwargs = self._setup(bucket, prefix, f"{scheme}://{bucket}", fs_kwargs, secrets, max_concurrency, "gcs")
        self._fs = fs if fs is not None else GCSFileSystem(**kwargs)
        self.allow_unsafe_commits = allow_unsafe_commits

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(atomic_put_if_absent=True, read_concurrency=self._concurrency)

    # ------------------------------------------------------------------------------------------ errors
    def _error(self, op: str, path: str, exc: BaseException) -> StorageError:
        status = _status(exc)
        at = where(op, self._display, path)
        if status in (401, 403):
            return access_denied("gcs", status, at, self._display, path, self._secrets)
        retryable = status in (408, 429) or status >= 500 or (not status and isinstance(exc, _RETRY_EXCEPTIONS))
        label = f"HTTP {status}" if status else type(exc).__name__
        return request_failed(at, label, str(exc) or type(exc).__name__, path, self._secrets, retryable)

    def _container_missing(self, op: str, exc: BaseException) -> bool:
        return "bucket" in str(exc).lower() and op in ("list", "walk", "put")

    # ------------------------------------------------------------------------------------------ reads
    async def _get(self, path: str) -> bytes:
        full = self._full(path)
        with Timed("GET", f"/{full}") as t:
            data = cast(bytes, await self._fs._cat_file(full))
            t.status = 200
        return data

    def open(self, path: str) -> BinaryIO:
        return cast(BinaryIO, self._guard("open", path, lambda: self._open_file(path)))

    def exists(self, path: str) -> bool:
        def probe() -> bool:
            try:
                return bool(self._fs.info(self._full(path)).get("type") == "file")
            except FileNotFoundError:
                return False

        return bool(self._guard("exists", path, probe))

    # ------------------------------------------------------------------------------------------ listing
    def _pages(self, op: str, path: str, **params: Any) -> Iterator[dict[str, Any]]:
        token: str | None = None
        while True:
            query = {**params, **({"pageToken": token} if token else {})}
            call = functools.partial(self._fs.call, "GET", "b/{}/o", self._bucket, json_out=True, **query)
            with Timed("GET", f"/b/{self._bucket}/o", "list"):
                page = self._guard(op, path, call)
            yield page
            token = page.get("nextPageToken")
            if not token:
                return

    def list_from(self, path: str) -> Iterator[FileInfo]:
        return iter(self.list_range(path, None))

    def list_range(self, path: str, stop: str | None) -> list[FileInfo]:
        """Direct children of ``path``'s directory named ``>= start`` and ``< stop``: ``startOffset`` and
        ``endOffset`` bound the listing on the server."""
        directory, start = split_dir(path)
        prefix = self._dir_prefix(directory)
        params: dict[str, Any] = {"prefix": prefix, "delimiter": "/", "startOffset": prefix + start}
        if stop is not None:
            params["endOffset"] = prefix + stop
        low, high = start.encode(), stop.encode() if stop is not None else None
        out = []
        for page in self._pages("list", path, **params):
            for obj in page.get("items") or ():
                name = obj["name"][len(prefix) :]
                if name and "/" not in name and name.encode() >= low and (high is None or name.encode() < high):
                    out.append(FileInfo(name, int(obj.get("size") or 0), mtime_ms(obj.get("updated"))))
        return sorted(out, key=lambda f: f.name.encode())

    def walk(self, path: str = "", skip: Callable[[str], bool] | None = None) -> Iterator[FileInfo]:
        """Files under ``path`` with store-relative names: one delimited listing per directory (a pruned
        directory is never listed)."""

        def list_dir(rel_dir: str) -> Iterator[Child]:
            prefix = self._dir_prefix(rel_dir)
            for page in self._pages("walk", rel_dir, prefix=prefix, delimiter="/"):
                for obj in page.get("items") or ():
                    yield obj["name"][len(prefix) :], int(obj.get("size") or 0), mtime_ms(obj.get("updated")), False
                for common in page.get("prefixes") or ():
                    yield common[len(prefix) :], 0, 0, True

        return walk_tree(list_dir, path, skip)

    # ------------------------------------------------------------------------------------------ writes
    def put_if_absent(self, path: str, data: bytes) -> None:
        """A simple upload with ``ifGenerationMatch=0``: 412 means another writer has the name."""
        full = self._full(path)
        try:
            with Timed("POST", f"/upload/storage/v1/b/{self._bucket}/o", "put_if_absent"):
                self._fs.pipe_file(full, data, mode="create")
        except FileExistsError:
            raise FileAlreadyExistsError(f"{self._display}/{path} already exists", path=path) from None
        except Exception as exc:
            if _status(exc) == 412:
                raise FileAlreadyExistsError(f"{self._display}/{path} already exists", path=path) from None
            raise self._error("put_if_absent", path, exc) from exc

    def put(self, path: str, data: bytes) -> None:
        refuse_commit_overwrite(path)
        self._guard("put", path, lambda: self._fs.pipe_file(self._full(path), data))

    def delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._guard("delete", path, lambda: self._fs.rm_file(self._full(path)))

    def __repr__(self) -> str:
        return f"GcsLogStore({self._display!r})"


__all__ = ["GcsLogStore"]
