"""Amazon S3 (and S3-compatible stores) through s3fs, with a real put-if-absent.

Why this class exists: on S3 the only safe way for two writers to race for ``<v>.json`` is a conditional PUT,
``If-None-Match: *``; the loser gets ``412 PreconditionFailed`` and the winner's bytes stay. s3fs sends that
header for ``pipe_file(path, data, mode="create")``, including for zero bytes (its ``open(path, "xb")`` does
not: a zero-byte file goes through ``touch()`` unconditionally, s3fs#973, so that path is never used here).

Errors become :class:`~deltalog.errors.StorageError` with ``retryable`` set the way a commit loop needs it:
``409 ConditionalRequestConflict`` (a concurrent conditional write is in flight), 5xx, throttling, timeouts and
dropped connections may succeed on retry; bad credentials and a missing bucket never will, and their message
says what to fix. Secret values are scrubbed from every message.

Listing uses ListObjectsV2 with ``StartAfter``, so listing from version N costs what lies after N, not the
length of the log.

Requests: a read is one ``GetObject`` (s3fs's ``cat_file`` sends a ``HeadObject`` first, for the size, and a
missing file costs it a HEAD and a LIST; a GET answers both questions). ``read_many`` keeps up to
``deltalog_max_concurrency`` GETs in flight on s3fs's event loop (its connection pool, 10 by default in
botocore, is raised to match), and ``delete_many`` sends one ``DeleteObjects`` per 1,000 keys. Every request
is recorded on the ``deltalog.storage.requests`` logger (:mod:`deltalog.storage.requests`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, BinaryIO, cast

import botocore.exceptions
import botocore.session
import s3fs

from deltalog.errors import BulkDeleteError, FileAlreadyExistsError, StorageError
from deltalog.storage.base import Capabilities, FileInfo, refuse_commit_overwrite, split_dir
from deltalog.storage.bucket_paths import BucketPaths, Child, start_after, walk_tree
from deltalog.storage.bulk import chunked
from deltalog.storage.cloud_errors import access_denied, cause_of, mtime_ms, no_container, request_failed, where
from deltalog.storage.options import scrub
from deltalog.storage.requests import instrument_botocore

log = logging.getLogger(__name__)

_AUTH_CODES = {
    "AccessDenied",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "InvalidClientTokenId",
    "ExpiredToken",
    "InvalidToken",
    "TokenRefreshRequired",
    "AllAccessDisabled",
}
_RETRY_CODES = {
    "ConditionalRequestConflict",
    "SlowDown",
    "Throttling",
    "ThrottlingException",
    "RequestTimeout",
    "RequestTimeTooSkewed",
    "ServiceUnavailable",
    "InternalError",
    "OperationAborted",
}
_RETRY_EXCEPTIONS: tuple[type[BaseException], ...] = (
    botocore.exceptions.ConnectionError,  # EndpointConnectionError, ConnectTimeoutError, ...
    botocore.exceptions.HTTPClientError,  # ReadTimeoutError, ...
    botocore.exceptions.ResponseStreamingError,
    botocore.exceptions.IncompleteReadError,
    TimeoutError,
    asyncio.TimeoutError,
    ConnectionError,
)
try:  # aiohttp is how aiobotocore talks; its errors surface when botocore does not wrap them
    import aiohttp

    _RETRY_EXCEPTIONS += (aiohttp.ClientError,)
except ImportError:  # pragma: no cover - aiobotocore always brings aiohttp
    pass


@functools.cache
def conditional_put_supported() -> str | None:
    """``None`` when s3fs and botocore can send ``If-None-Match: *``; otherwise what to upgrade.

    s3fs drops keyword arguments its botocore's model does not know, so an old botocore would turn every
    conditional put into a blind overwrite without a word. This check refuses that silently unsafe setup.
    """
    if "mode" not in inspect.signature(s3fs.S3FileSystem._pipe_file).parameters:
        return f"s3fs {s3fs.__version__} has no exclusive pipe_file(mode='create'); install s3fs >= 2024.12"
    model = botocore.session.get_session().get_service_model("s3")
    shape = model.operation_model("PutObject").input_shape
    if shape is None or "IfNoneMatch" not in shape.members:
        return f"botocore {botocore.__version__} cannot send If-None-Match on PutObject; install botocore >= 1.35.21"
    return None


def _client_error(exc: BaseException) -> botocore.exceptions.ClientError | None:
    """The botocore ClientError behind ``exc`` (s3fs re-raises it as an OSError with it as the cause)."""
    found = cause_of(exc, lambda e: isinstance(e, botocore.exceptions.ClientError))
    return cast(botocore.exceptions.ClientError | None, found)


#: keys per DeleteObjects request (S3's limit)
DELETE_BATCH = 1000


def batch_failures(answer: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(key, code, message) of each key a ``DeleteObjects`` answer (HTTP 200) says it did not delete.

    ``NoSuchKey`` is not a failure: the key is gone, which is what was asked.
    """
    out = []
    for err in answer.get("Errors") or ():
        code = str(err.get("Code") or "")
        if code != "NoSuchKey":
            out.append((str(err.get("Key") or ""), code, str(err.get("Message") or "")))
    return out


def _code_status(exc: BaseException) -> tuple[str, int]:
    ce = _client_error(exc)
    if ce is None:
        return "", 0
    err = ce.response.get("Error", {}) or {}
    meta = ce.response.get("ResponseMetadata", {}) or {}
    return str(err.get("Code", "")), int(meta.get("HTTPStatusCode") or 0)


class S3LogStore(BucketPaths):
    """A table under ``s3://bucket/prefix``; paths given to it are relative to that prefix."""

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        fs_kwargs: Mapping[str, Any] | None = None,
        *,
        scheme: str = "s3",
        secrets: tuple[str, ...] = (),
        fs: Any = None,
        allow_unsafe_commits: bool = False,
        max_concurrency: int | None = None,
    ) -> None:
        problem = conditional_put_supported()
        if problem is not None:
            raise StorageError(f"cannot write safely to {scheme}://{bucket}: {problem}")
        self._bucket = bucket
        kwargs = self._setup(bucket, prefix, f"{scheme}://{bucket}", fs_kwargs, secrets, max_concurrency, "s3")
        config = dict(kwargs.get("config_kwargs") or {})
        config.setdefault("max_pool_connections", self._concurrency)  # botocore's 10 would cap read_many
        kwargs["config_kwargs"] = config
        self._fs = fs if fs is not None else s3fs.S3FileSystem(**kwargs)
        self.allow_unsafe_commits = allow_unsafe_commits

    # ------------------------------------------------------------------------------------------ errors
    def _error(self, op: str, path: str, exc: BaseException) -> StorageError:
        """A StorageError for a failed ``op``: what failed, whether a retry may help, and what to fix."""
        code, status = _code_status(exc)
        at = where(op, self._display, path)
        if code == "NoSuchBucket":
            return no_container("s3", self._bucket, at, path)
        if code in _AUTH_CODES or status in (401, 403):
            return access_denied("s3", code or status, at, self._display, path, self._secrets)
        if isinstance(exc, botocore.exceptions.NoCredentialsError):
            msg = (
                f"no AWS credentials found for {at}: pass storage_options AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY (or key/secret), or configure an AWS profile or instance role"
            )
            return StorageError(msg, path=path)
        retryable = (
            code in _RETRY_CODES
            or status == 409
            or status == 429
            or status >= 500
            or (not code and isinstance(exc, _RETRY_EXCEPTIONS))
        )
        label = f"{code} (HTTP {status})" if code else type(exc).__name__
        return request_failed(at, label, str(exc) or type(exc).__name__, path, self._secrets, retryable)

    def _connect(self) -> None:
        """Open s3fs's client (``fs.s3`` does, once) and record its requests, the first one included."""
        instrument_botocore(self._fs.s3)

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(atomic_put_if_absent=True, read_concurrency=self._concurrency, delete_batch=DELETE_BATCH)

    def _container_missing(self, op: str, exc: BaseException) -> bool:
        return _code_status(exc)[0] == "NoSuchBucket"

    # ------------------------------------------------------------------------------------------ reads
    async def _get(self, path: str) -> bytes:
        """One GetObject: the body, or FileNotFoundError (s3fs turns NoSuchKey into it)."""
        answer = await self._fs._call_s3("get_object", Bucket=self._bucket, Key=self._key(path))
        body = answer["Body"]
        try:
            return cast(bytes, await body.read())
        finally:
            body.close()

    def open(self, path: str) -> BinaryIO:
        return cast(BinaryIO, self._guard("open", path, lambda: self._open_file(path)))

    def exists(self, path: str) -> bool:
        def head() -> bool:
            try:
                self._fs.call_s3("head_object", Bucket=self._bucket, Key=self._key(path))
            except FileNotFoundError:
                return False
            return True

        return bool(self._guard("exists", path, head))

    def _pages(self, op: str, path: str, **kwargs: Any) -> Iterator[dict[str, Any]]:
        token: str | None = None
        while True:
            args = {"Bucket": self._bucket, **kwargs, **({"ContinuationToken": token} if token else {})}
            page = self._guard(op, path, functools.partial(self._fs.call_s3, "list_objects_v2", **args))
            yield page
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return

    def list_from(self, path: str) -> Iterator[FileInfo]:
        """Direct children of ``path``'s directory named ``>= start``: one ListObjectsV2 page per 1000 keys.

        ``StartAfter`` is exclusive, so it is set just below ``start`` (its last character decremented); the
        few keys between that and ``start`` are dropped here.
        """
        return iter(self.list_range(path, None))

    def list_range(self, path: str, stop: str | None) -> list[FileInfo]:
        """:meth:`list_from`, ending at the first name ``>= stop``: keys come in order, so no later page is fetched."""
        directory, start = split_dir(path)
        prefix = self._dir_prefix(directory)
        kwargs: dict[str, Any] = {"Prefix": prefix, "Delimiter": "/"}
        after = start_after(prefix, start)
        if after is not None:
            kwargs["StartAfter"] = after
        end = stop.encode() if stop is not None else None
        out: list[FileInfo] = []
        for page in self._pages("list", path, **kwargs):
            for obj in page.get("Contents") or ():
                name = obj["Key"][len(prefix) :]
                if end is not None and name.encode() >= end:
                    out.sort(key=lambda f: f.name.encode())
                    return out
                if not name or "/" in name or name.encode() < start.encode():
                    continue
                out.append(FileInfo(name, int(obj.get("Size") or 0), mtime_ms(obj.get("LastModified"))))
        out.sort(key=lambda f: f.name.encode())
        return out

    def walk(self, path: str = "", skip: Callable[[str], bool] | None = None) -> Iterator[FileInfo]:
        """Files under ``path`` with store-relative names; see :meth:`LogStore.walk`.

        One delimited listing per directory, so a pruned directory (``_delta_log``) is never listed at all.
        """

        def list_dir(rel_dir: str) -> Iterator[Child]:
            prefix = self._dir_prefix(rel_dir)
            for page in self._pages("walk", rel_dir, Prefix=prefix, Delimiter="/"):
                for obj in page.get("Contents") or ():
                    yield obj["Key"][len(prefix) :], int(obj.get("Size") or 0), mtime_ms(obj.get("LastModified")), False
                for common in page.get("CommonPrefixes") or ():
                    yield common["Prefix"][len(prefix) :], 0, 0, True

        return walk_tree(list_dir, path, skip)

    # ------------------------------------------------------------------------------------------ writes
    def put_if_absent(self, path: str, data: bytes) -> None:
        """``PutObject`` with ``If-None-Match: *``; 412 means another writer has the name."""
        full = self._full(path)
        try:
            self._fs.pipe_file(full, data, mode="create")
        except FileExistsError:
            raise FileAlreadyExistsError(f"{self._display}/{path} already exists", path=path) from None
        except Exception as exc:
            code, status = _code_status(exc)
            if code == "PreconditionFailed" or status == 412:
                raise FileAlreadyExistsError(f"{self._display}/{path} already exists", path=path) from None
            raise self._error("put_if_absent", path, exc) from exc

    def put(self, path: str, data: bytes) -> None:
        refuse_commit_overwrite(path)
        self._guard("put", path, lambda: self._fs.pipe_file(self._full(path), data))

    def delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._guard(
                "delete", path, lambda: self._fs.call_s3("delete_object", Bucket=self._bucket, Key=self._key(path))
            )

    def delete_many(self, paths: Sequence[str]) -> None:
        """One ``DeleteObjects`` (quiet mode) per 1,000 keys, batches in order; see
        :func:`deltalog.storage.bulk.delete_many`. Keys a batch names as failed are tried again within the
        retry budget when their error may pass (throttling, internal errors), else reported."""
        by_key = {self._key(p): p for p in paths}  # every name confined before the first request
        for batch in chunked(list(by_key), DELETE_BATCH):
            pending = list(batch)
            for attempt in range(max(1, self.retry.attempts)):
                failures = batch_failures(self._delete_objects(pending, by_key[pending[0]]))
                if not failures:
                    break
                retryable = all(code in _RETRY_CODES for _, code, _ in failures)
                if not retryable or attempt + 1 >= self.retry.attempts:
                    raise self._batch_error(failures, by_key, retryable)
                pending = [key for key, _, _ in failures]
                self.retry.sleep(self.retry.delay(attempt))

    def _delete_objects(self, keys: list[str], first: str) -> dict[str, Any]:
        request = {"Objects": [{"Key": k} for k in keys], "Quiet": True}
        call = functools.partial(self._fs.call_s3, "delete_objects", Bucket=self._bucket, Delete=request)
        return cast(dict[str, Any], self._guard("delete", first, call))

    def _batch_error(
        self, failures: list[tuple[str, str, str]], by_key: dict[str, str], retryable: bool
    ) -> BulkDeleteError:
        failed = tuple(by_key.get(key, key) for key, _, _ in failures)
        shown = "; ".join(f"{by_key.get(k, k)}: {code} {msg}".strip() for k, code, msg in failures[:5])
        more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
        msg = f"delete in {self._display} left {len(failures)} file(s): {shown}{more}"
        return BulkDeleteError(scrub(msg, self._secrets), failed=failed, retryable=retryable)

    def __repr__(self) -> str:
        return f"S3LogStore({self._display!r})"


__all__ = ["DELETE_BATCH", "S3LogStore", "batch_failures", "conditional_put_supported"]
