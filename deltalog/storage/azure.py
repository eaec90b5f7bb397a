"""Azure Blob Storage (and ADLS Gen2 accounts through their blob endpoint) through adlfs, with a real put-if-absent.

Why this class exists: the safe commit on Azure is a conditional create, ``upload_blob(overwrite=False)``, which
the SDK sends as ``If-None-Match: *``; the loser gets ``409 BlobAlreadyExists`` and the winner's bytes stay.
adlfs does that for ``pipe_file(path, data, overwrite=False)`` and raises :class:`FileExistsError`. Two of
adlfs's calls look similar and are not: ``open(path, "wb", overwrite=False)`` silently overwrote, and ``mv``
is copy-then-delete; neither is used here. Spark's AzureLogStore (rename without overwrite on ABFS) is atomic
on the server too, so both kinds of writer exclude each other.

Listing: Azure's List Blobs has no ``StartAfter`` that servers honour, only a name prefix, so listing from a
version uses decimal version blocks (:mod:`deltalog.storage.prefix_listing`): the cost follows what lies after
the start, not the length of the log.

Requests: a read is one GET (``download_blob``); ``read_many`` keeps up to ``deltalog_max_concurrency`` of them
in flight on adlfs's event loop; ``delete_many`` sends one blob batch per 256 deletes and checks each
sub-response (a blob already gone counts as deleted). ``list_range`` lists only the decimal block that holds
both ends of a version range. The calls deltalog makes are recorded on the ``deltalog.storage.requests``
logger (:mod:`deltalog.storage.requests`).

Retries: the SDK's own policy waits 15 s, then 18 s, then 24 s before its three retries of a request, which
deltalog's attempts multiplied into minutes on an endpoint that refuses connections (issue 23). The store's
client gets a short policy instead (:data:`SDK_RETRY`: two retries about 2 s and 4 s apart, like the 3 retries
within 30 s obstore's client is given), and every call stays within the deadline of
:mod:`deltalog.storage.retry`.

Errors become :class:`~deltalog.errors.StorageError` with ``retryable`` set as for S3: throttling (429/503),
5xx, timeouts and connection failures may pass on retry; authentication failures and a missing container will
not, and the message says what to fix. Secret values are scrubbed from every message.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, BinaryIO, cast

import adlfs
from azure.core import exceptions as az
from azure.storage.blob import ExponentialRetry
from azure.storage.blob.aio import BlobServiceClient as AsyncBlobServiceClient
from azure.storage.blob.aio import ExponentialRetry as AsyncExponentialRetry

from deltalog.errors import BulkDeleteError, FileAlreadyExistsError, StorageError
from deltalog.storage.base import Capabilities, FileInfo, refuse_commit_overwrite, split_dir
from deltalog.storage.bucket_paths import BucketPaths, Child, walk_tree
from deltalog.storage.bulk import chunked
from deltalog.storage.cloud_errors import access_denied, cause_of, no_container, request_failed, where
from deltalog.storage.options import scrub
from deltalog.storage.prefix_listing import list_from_by_prefix, range_prefix, version_of
from deltalog.storage.requests import azure_hooks

log = logging.getLogger(__name__)

_AUTH_CODES = {
    "AuthenticationFailed",
    "AuthorizationFailure",
    "AuthorizationPermissionMismatch",
    "InsufficientAccountPermissions",
    "InvalidAuthenticationInfo",
    "AccountIsDisabled",
}
_RETRY_CODES = {"ServerBusy", "OperationTimedOut", "InternalError", "ServiceUnavailable"}
_RETRY_EXCEPTIONS = (
    az.ServiceRequestError,  # the request never got an answer: connection refused, reset, timed out
    az.ServiceResponseError,  # the answer was lost or cut off
    az.IncompleteReadError,
    TimeoutError,
    ConnectionError,
)


def _azure_error(exc: BaseException) -> BaseException:
    """The azure-core error behind ``exc`` (adlfs re-raises some of them as OSErrors with a cause)."""
    return cause_of(exc, lambda e: isinstance(e, az.AzureError)) or exc


#: sub-requests per blob batch (Azure's limit)
DELETE_BATCH = 256

#: the SDK's retries of one request: two more tries after about 2 s and 4 s (``initial_backoff`` plus
#: ``increment_base`` to the retry's number, give or take the jitter), where its default waits 15 s, 18 s, 24 s
SDK_RETRY: dict[str, Any] = {"retry_total": 2, "initial_backoff": 0.5, "increment_base": 2, "random_jitter_range": 0.5}


def with_short_retries(fs: Any) -> Any:
    """``fs`` (an adlfs file system) with its service client remade with :data:`SDK_RETRY`.

    adlfs builds its client without a way to pass a retry policy; the client it built says where it points
    (``url``, with a SAS token when there is one) and with which ``credential``, which is all a client needs, so
    the same client is made again with the short policy (once per file system: fsspec shares instances).
    """
    if getattr(fs, "deltalog_short_retries", False):
        return fs
    service = fs.service_client
    fs.service_client = AsyncBlobServiceClient(
        service.url, credential=service.credential, retry_policy=AsyncExponentialRetry(**SDK_RETRY)
    )
    fs.deltalog_short_retries = True
    return fs


def _code(exc: BaseException) -> str:
    code = getattr(exc, "error_code", None)
    return str(getattr(code, "value", code) or "")


class AzureLogStore(BucketPaths):
    """A table under ``abfs[s]://container/prefix`` (or ``az://``); paths are relative to that prefix."""

    _kind = "azure"
    _not_found = (FileNotFoundError, az.ResourceNotFoundError)

    def __init__(
        self,
        container: str,
        prefix: str = "",
        fs_kwargs: Mapping[str, Any] | None = None,
        *,
        display_root: str | None = None,
        secrets: tuple[str, ...] = (),
        fs: Any = None,
        allow_unsafe_commits: bool = False,
        max_concurrency: int | None = None,
    ) -> None:
        self._batch_client: Any = None
        self._container = container
        kwargs = self._setup(container, prefix, f"abfs://{container}", fs_kwargs, secrets, max_concurrency, "azure")
        if display_root is not None:
            self._display = display_root
        try:
            self._fs = fs if fs is not None else with_short_retries(adlfs.AzureBlobFileSystem(**kwargs))
        except Exception as exc:  # a malformed connection string, a missing account name, ...
            msg = f"cannot connect to {self._display}: {type(exc).__name__}: {exc}"
            raise StorageError(scrub(msg, self._secrets)) from None
        self.allow_unsafe_commits = allow_unsafe_commits

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(atomic_put_if_absent=True, read_concurrency=self._concurrency, delete_batch=DELETE_BATCH)

    # ------------------------------------------------------------------------------------------ errors
    def _error(self, op: str, path: str, exc: BaseException) -> StorageError:
        """A StorageError for a failed ``op``: what failed, whether a retry may help, and what to fix."""
        cause = _azure_error(exc)
        code = _code(cause)
        status = int(getattr(cause, "status_code", 0) or 0)
        at = where(op, self._display, path)
        if code == "ContainerNotFound":
            return no_container("azure", self._container, at, path)
        if code in _AUTH_CODES or status in (401, 403) or isinstance(cause, az.ClientAuthenticationError):
            return access_denied("azure", code or status, at, self._display, path, self._secrets)
        retryable = (
            code in _RETRY_CODES or status in (408, 429) or status >= 500 or isinstance(cause, _RETRY_EXCEPTIONS)
        )
        label = f"{code} (HTTP {status})" if code else type(cause).__name__
        return request_failed(at, label, str(cause) or type(cause).__name__, path, self._secrets, retryable)

    def _container_missing(self, op: str, exc: BaseException) -> bool:
        return _code(_azure_error(exc)) == "ContainerNotFound"

    # ------------------------------------------------------------------------------------------ listing
    async def _children(self, name_prefix: str) -> list[tuple[str, int, int, bool]]:
        """(blob name, size, mtime ms, is a "directory") for direct children whose names start with the prefix."""
        out = []
        async with self._fs.service_client.get_container_client(self._container) as cc:
            async for item in cc.walk_blobs(name_starts_with=name_prefix, delimiter="/", **azure_hooks()):
                size = getattr(item, "size", None)
                if size is None:  # a BlobPrefix: a virtual directory
                    out.append((item.name, 0, 0, True))
                    continue
                modified = getattr(item, "last_modified", None)
                mtime = int(modified.timestamp() * 1000) if modified is not None else 0
                out.append((item.name, int(size), mtime, False))
        return out

    def _list(self, op: str, path: str, name_prefix: str) -> list[tuple[str, int, int, bool]]:
        return cast(
            list[tuple[str, int, int, bool]],
            self._run(op, path, self._children, name_prefix),
        )

    def list_from(self, path: str) -> Iterator[FileInfo]:
        directory, start = split_dir(path)
        prefix = self._dir_prefix(directory)

        def children(name_prefix: str) -> list[FileInfo]:
            found = []
            for name, size, mtime, is_dir in self._list("list", path, prefix + name_prefix):
                bare = name[len(prefix) :]
                if not is_dir and bare and "/" not in bare:
                    found.append(FileInfo(bare, size, mtime))
            return found

        files, _ = list_from_by_prefix(children, start)
        return iter(files)

    def list_range(self, path: str, stop: str | None) -> list[FileInfo]:
        """:meth:`list_from` of the versions named ``< stop``: one listing of the smallest decimal block holding
        both ends (versions 5..10: the block 0..99), so travelling to an old version never lists the log after
        it. Without a version-shaped start and stop, the listing from ``start`` is cut at ``stop``."""
        directory, start = split_dir(path)
        block = range_prefix(start, stop)
        if block is None or stop is None:
            end = stop.encode() if stop is not None else None
            return [f for f in self.list_from(path) if end is None or f.name.encode() < end]
        prefix = self._dir_prefix(directory)
        low, high = start.encode(), stop.encode()
        out = []
        for name, size, mtime, is_dir in self._list("list", path, prefix + block):
            bare = name[len(prefix) :]
            if not is_dir and "/" not in bare and version_of(bare) is not None and low <= bare.encode() < high:
                out.append(FileInfo(bare, size, mtime))
        return sorted(out, key=lambda f: f.name.encode())

    def walk(self, path: str = "", skip: Callable[[str], bool] | None = None) -> Iterator[FileInfo]:
        """Files under ``path`` with store-relative names; see :meth:`LogStore.walk`.

        One delimited listing per directory, so a pruned directory (``_delta_log``) is never listed.
        """

        def list_dir(rel_dir: str) -> list[Child]:
            prefix = self._dir_prefix(rel_dir)
            return [
                (name[len(prefix) :], size, mtime, is_dir)
                for name, size, mtime, is_dir in self._list("walk", rel_dir, prefix)
            ]

        return walk_tree(list_dir, path, skip)

    # ------------------------------------------------------------------------------------------ reads
    async def _get(self, path: str) -> bytes:
        """One GET (two for an empty blob: the ranged GET answers 416 and the SDK asks again without a range)."""
        async with self._fs.service_client.get_container_client(self._container) as cc:
            stream = await cc.download_blob(self._key(path), **azure_hooks())
            return cast(bytes, await stream.readall())

    def open(self, path: str) -> BinaryIO:
        return cast(BinaryIO, self._guard("open", path, lambda: self._open_file(path)))

    async def _head(self, key: str) -> bool:
        async with self._fs.service_client.get_blob_client(self._container, key) as bc:
            try:
                await bc.get_blob_properties(**azure_hooks())
            except az.ResourceNotFoundError as exc:
                if _code(exc) == "ContainerNotFound":
                    raise
                return False
        return True

    def exists(self, path: str) -> bool:
        return bool(self._run("exists", path, self._head, self._key(path)))

    # ------------------------------------------------------------------------------------------ writes
    def put_if_absent(self, path: str, data: bytes) -> None:
        """``upload_blob(overwrite=False)``: ``If-None-Match: *``; "exists" means another writer has the name."""
        full = self._full(path)
        try:
            self._fs.pipe_file(full, data, overwrite=False, **azure_hooks())
        except (FileExistsError, az.ResourceExistsError):
            raise FileAlreadyExistsError(f"{self._display}/{path} already exists", path=path) from None
        except Exception as exc:
            raise self._error("put_if_absent", path, exc) from exc

    def put(self, path: str, data: bytes) -> None:
        refuse_commit_overwrite(path)
        self._guard("put", path, lambda: self._fs.pipe_file(self._full(path), data, overwrite=True, **azure_hooks()))

    async def _delete(self, key: str) -> None:
        async with self._fs.service_client.get_container_client(self._container) as cc:
            await cc.delete_blob(key, **azure_hooks())

    def delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._run("delete", path, self._delete, self._key(path))

    def _batch(self, keys: list[str]) -> list[tuple[str, int, str]]:
        """One blob batch deleting ``keys``: (key, status, error code) of each sub-request.

        Through the SDK's synchronous client: its asynchronous ``delete_blobs`` builds a batch body that Azurite
        answers with one 400 InvalidInput (azure-sdk-for-python#27562) while Azure accepts both, and both
        clients send the same single request.
        """
        if self._batch_client is None:
            from azure.storage.blob import ContainerClient

            service = self._fs.service_client
            credential = service.credential
            if callable(getattr(credential, "get_token", None)):  # an async token credential: adlfs's sync twin
                credential = getattr(self._fs, "sync_credential", None) or credential
            self._batch_client = ContainerClient(
                service.url, self._container, credential=credential, retry_policy=ExponentialRetry(**SDK_RETRY)
            )
        answers = self._batch_client.delete_blobs(*keys, raise_on_any_failure=False, **azure_hooks())
        return [
            (k, int(a.status_code), str(a.headers.get("x-ms-error-code") or ""))
            for k, a in zip(keys, answers, strict=False)
        ]

    def delete_many(self, paths: Sequence[str]) -> None:
        """One blob batch per 256 deletes, batches in order; see :func:`deltalog.storage.bulk.delete_many`.
        A sub-request answering 404 counts as deleted; any other failure is a
        :class:`~deltalog.errors.BulkDeleteError` naming the files."""
        by_key = {self._key(p): p for p in paths}  # every name confined before the first request
        for batch in chunked(list(by_key), DELETE_BATCH):
            if len(batch) == 1:  # Azurite answers a batch of one with 400 InvalidInput; a delete is one request too
                self.delete(by_key[batch[0]])
                continue
            answers = self._guard("delete", by_key[batch[0]], functools.partial(self._batch, list(batch)))
            failures = [(k, status, code) for k, status, code in answers if status not in (200, 202, 404)]
            if failures:
                raise self._batch_error(failures, by_key)

    def _batch_error(self, failures: list[tuple[str, int, str]], by_key: dict[str, str]) -> BulkDeleteError:
        failed = tuple(by_key.get(k, k) for k, _, _ in failures)
        shown = "; ".join(f"{by_key.get(k, k)}: {code or 'HTTP'} ({status})" for k, status, code in failures[:5])
        more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
        retryable = all(status in (408, 429) or status >= 500 for _, status, _ in failures)
        msg = f"delete in {self._display} left {len(failures)} file(s): {shown}{more}"
        return BulkDeleteError(scrub(msg, self._secrets), failed=failed, retryable=retryable)

    def __repr__(self) -> str:
        return f"AzureLogStore({self._display!r})"


__all__ = ["DELETE_BATCH", "SDK_RETRY", "AzureLogStore", "with_short_retries"]
