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

Errors become :class:`~deltalog.errors.StorageError` with ``retryable`` set as for S3: throttling (429/503),
5xx, timeouts and connection failures may pass on retry; authentication failures and a missing container will
not, and the message says what to fix. Secret values are scrubbed from every message.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any, BinaryIO, cast

import adlfs
from azure.core import exceptions as az
from fsspec.asyn import sync

from deltalog.errors import DeltaLogError, FileAlreadyExistsError, StorageError
from deltalog.storage.base import FileInfo, refuse_commit_overwrite, split_dir
from deltalog.storage.bucket_paths import BucketPaths
from deltalog.storage.options import scrub, secrets_of
from deltalog.storage.prefix_listing import list_from_by_prefix
from deltalog.storage.redaction import redact_in_logs

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
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            break
        if isinstance(seen, az.AzureError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return exc


def _code(exc: BaseException) -> str:
    code = getattr(exc, "error_code", None)
    return str(getattr(code, "value", code) or "")


class AzureLogStore(BucketPaths):
    """A table under ``abfs[s]://container/prefix`` (or ``az://``); paths are relative to that prefix."""

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
    ) -> None:
        self._container = container
        self._bucket_name = container
        self._prefix = prefix.strip("/")
        self._display = display_root or f"abfs://{container}" + (f"/{self._prefix}" if self._prefix else "")
        kwargs = dict(fs_kwargs or {})
        self._secrets = tuple(secrets) + secrets_of(kwargs)
        redact_in_logs(self._secrets, "azure")  # the SDK's HTTP logging prints URLs and headers
        kwargs.setdefault("use_listings_cache", False)
        try:
            self._fs = fs if fs is not None else adlfs.AzureBlobFileSystem(**kwargs)
        except Exception as exc:  # a malformed connection string, a missing account name, ...
            msg = f"cannot connect to {self._display}: {type(exc).__name__}: {exc}"
            raise StorageError(scrub(msg, self._secrets)) from None
        #: only consulted by stores without atomic put-if-absent; kept for a uniform interface
        self.allow_unsafe_commits = allow_unsafe_commits

    # ------------------------------------------------------------------------------------------ errors
    def _error(self, op: str, path: str, exc: BaseException) -> StorageError:
        """A StorageError for a failed ``op``: what failed, whether a retry may help, and what to fix."""
        cause = _azure_error(exc)
        code = _code(cause)
        status = int(getattr(cause, "status_code", 0) or 0)
        where = f"{op} {self._display}/{path}".rstrip("/")
        if code == "ContainerNotFound":
            msg = f"container {self._container!r} does not exist ({where}): create it, or fix the table URI"
            return StorageError(msg, path=path)
        if code in _AUTH_CODES or status in (401, 403) or isinstance(cause, az.ClientAuthenticationError):
            msg = (
                f"access denied ({code or status}) for {where}: check the credentials (storage_options "
                "account_name/account_key, connection_string or sas_token, or AZURE_STORAGE_ACCOUNT_KEY, "
                f"AZURE_STORAGE_CONNECTION_STRING) and that they may read, write, list and delete under {self._display}"
            )
            return StorageError(msg, path=path)
        retryable = (
            code in _RETRY_CODES or status in (408, 429) or status >= 500 or isinstance(cause, _RETRY_EXCEPTIONS)
        )
        first_line = (str(cause) or type(cause).__name__).splitlines()[0]
        label = f"{code} (HTTP {status})" if code else type(cause).__name__
        msg = f"{where} failed: {label}: {first_line}"
        return StorageError(scrub(msg, self._secrets), path=path, retryable=retryable)

    def _guard_once(self, op: str, path: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except FileNotFoundError as exc:
            if _code(_azure_error(exc)) == "ContainerNotFound":
                raise self._error(op, path, exc) from exc
            raise
        except DeltaLogError:  # already typed (a refused path, an error of ours)
            raise
        except az.ResourceNotFoundError as exc:
            if _code(exc) == "ContainerNotFound":
                raise self._error(op, path, exc) from exc
            raise FileNotFoundError(f"{self._display}/{path}") from exc
        except Exception as exc:
            raise self._error(op, path, exc) from exc

    # ------------------------------------------------------------------------------------------ listing
    async def _children(self, name_prefix: str) -> list[tuple[str, int, int, bool]]:
        """(blob name, size, mtime ms, is a "directory") for direct children whose names start with the prefix."""
        out = []
        async with self._fs.service_client.get_container_client(self._container) as cc:
            async for item in cc.walk_blobs(name_starts_with=name_prefix, delimiter="/"):
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
            self._guard(op, path, lambda: sync(self._fs.loop, self._children, name_prefix)),
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

    def walk(self, path: str = "", skip: Callable[[str], bool] | None = None) -> Iterator[FileInfo]:
        """Files under ``path`` with store-relative names; see :meth:`LogStore.walk`.

        One delimited listing per directory, so a pruned directory (``_delta_log``) is never listed.
        """
        pending = [path.strip("/")]
        while pending:
            rel_dir = pending.pop()
            prefix = self._dir_prefix(rel_dir)
            subdirs = []
            for name, size, mtime, is_dir in self._list("walk", rel_dir, prefix):
                bare = name[len(prefix) :].rstrip("/")
                if not bare:
                    continue
                rel = f"{rel_dir}/{bare}" if rel_dir else bare
                if is_dir:
                    if skip is None or not skip(rel):
                        subdirs.append(rel)
                else:
                    yield FileInfo(rel, size, mtime)
            pending.extend(reversed(sorted(subdirs)))

    # ------------------------------------------------------------------------------------------ reads
    def read(self, path: str) -> bytes:
        return cast(bytes, self._guard("read", path, lambda: self._fs.cat_file(self._full(path))))

    def open(self, path: str) -> BinaryIO:
        return cast(BinaryIO, self._guard("open", path, lambda: self._open_file(path)))

    async def _head(self, key: str) -> bool:
        async with self._fs.service_client.get_blob_client(self._container, key) as bc:
            try:
                await bc.get_blob_properties()
            except az.ResourceNotFoundError as exc:
                if _code(exc) == "ContainerNotFound":
                    raise
                return False
        return True

    def exists(self, path: str) -> bool:
        return bool(self._guard("exists", path, lambda: sync(self._fs.loop, self._head, self._key(path))))

    # ------------------------------------------------------------------------------------------ writes
    def put_if_absent(self, path: str, data: bytes) -> None:
        """``upload_blob(overwrite=False)``: ``If-None-Match: *``; "exists" means another writer has the name."""
        full = self._full(path)
        try:
            self._fs.pipe_file(full, data, overwrite=False)
        except (FileExistsError, az.ResourceExistsError):
            raise FileAlreadyExistsError(f"{self._display}/{path} already exists", path=path) from None
        except Exception as exc:
            raise self._error("put_if_absent", path, exc) from exc

    def put(self, path: str, data: bytes) -> None:
        refuse_commit_overwrite(path)
        self._guard("put", path, lambda: self._fs.pipe_file(self._full(path), data, overwrite=True))

    def delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._guard("delete", path, lambda: self._fs.rm_file(self._full(path)))

    def __repr__(self) -> str:
        return f"AzureLogStore({self._display!r})"


__all__ = ["AzureLogStore"]
