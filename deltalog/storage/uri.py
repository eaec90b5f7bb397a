"""From a user's table location to a store: plain paths and ``file://`` go to the local store, ``s3://`` and
``s3a://`` to :class:`~deltalog.storage.s3.S3LogStore`, ``abfs://``, ``abfss://`` and ``az://`` to
:class:`~deltalog.storage.azure.AzureLogStore`, ``gs://`` and ``gcs://`` to
:class:`~deltalog.storage.gcs.GcsLogStore`, anything else fsspec knows to the generic fsspec store.

``storage_options`` take fsspec names or deltalake names (see :mod:`deltalog.storage.options`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from deltalog.errors import InvalidArgumentError
from deltalog.storage.base import LogStore
from deltalog.storage.local import LocalLogStore

if TYPE_CHECKING:
    from deltalog.storage.options import StoreOptions

log = logging.getLogger(__name__)

S3_SCHEMES = ("s3", "s3a")
AZURE_SCHEMES = ("abfs", "abfss", "az")
GCS_SCHEMES = ("gs", "gcs")


def _redact(uri: str) -> str:
    parts = urlsplit(uri)
    if parts.password or parts.username:
        netloc = parts.hostname or ""
        if parts.port:
            netloc += f":{parts.port}"
        return parts._replace(netloc=netloc).geturl()
    return uri


def _missing_extra(scheme: str, extra: str, exc: ImportError) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"{scheme}:// tables need the {exc.name or 'cloud'} package: pip install 'deltalog[{extra}]'"
    )


def _parse_options(kind: str, storage_options: dict[str, Any] | None) -> StoreOptions:
    """:func:`deltalog.storage.options.parse_options`, imported here: local tables never need it."""
    from deltalog.storage.options import parse_options

    return parse_options(kind, storage_options)


def _obstore_store(
    kind: str, bucket: str, prefix: str, display: str, opts: StoreOptions, sdk_store: Callable[[], LogStore] | None
) -> LogStore | None:
    """The obstore store for an S3 or Azure table, or ``None`` for the fsspec one.

    obstore serves the table when the options do not ask for fsspec, it is installed and every option has an
    object_store equivalent. Asked for by name (``deltalog_backend=obstore``), a missing package or an option
    it cannot honour is an error rather than a quiet change of client.
    """
    asked = opts.backend == "obstore"
    if opts.backend == "fsspec":
        return None
    try:
        import obstore  # noqa: F401
    except ImportError:
        if asked:
            raise InvalidArgumentError(
                f"{display} asks for the obstore backend (deltalog_backend), which is not installed: "
                f"pip install 'deltalog[{kind}]' (it brings obstore)"
            ) from None
        return None
    from deltalog.storage.obstore_options import obstore_config
    from deltalog.storage.obstore_store import ObstoreLogStore

    config = obstore_config(kind, opts.fs_kwargs)
    if isinstance(config, str):
        if asked:
            raise InvalidArgumentError(f"the obstore backend cannot serve {display}: {config}")
        log.debug("%s goes through the fsspec backend: %s", display, config)
        return None
    return ObstoreLogStore(
        kind,
        bucket,
        prefix,
        display,
        config,
        secrets=opts.secrets,
        allow_unsafe_commits=opts.allow_unsafe_commits,
        max_concurrency=opts.max_concurrency,
        sdk_store=sdk_store,
    )


def _bucket_store(loc: str, scheme: str, kind: str, storage_options: dict[str, Any] | None) -> LogStore:
    """An S3 (``kind`` "s3") or GCS ("gcs") store: a bucket, a key prefix, the translated options."""
    parts = urlsplit(loc)
    if not parts.netloc:
        raise InvalidArgumentError(f"{scheme}:// location {loc!r} names no bucket (expected {scheme}://bucket/path)")
    opts = _parse_options(kind, storage_options)
    if kind == "s3":
        chosen = _obstore_store(kind, parts.netloc, unquote(parts.path), f"{scheme}://{parts.netloc}", opts, None)
        if chosen is not None:
            return chosen
    try:
        if kind == "s3":
            from deltalog.storage.s3 import S3LogStore as Store
        else:
            from deltalog.storage.gcs import GcsLogStore as Store  # type: ignore[assignment]
    except ImportError as exc:
        if kind == "gcs":
            how = "a package that is not installed: pip install 'deltalog[gcs]'"
            raise InvalidArgumentError(f"{scheme}:// tables need {how}") from None
        raise _missing_extra(scheme, kind, exc) from None
    return Store(
        parts.netloc,
        unquote(parts.path),
        opts.fs_kwargs,
        scheme=scheme,
        secrets=opts.secrets,
        allow_unsafe_commits=opts.allow_unsafe_commits,
        max_concurrency=opts.max_concurrency,
    )


def _azure_store(loc: str, scheme: str, storage_options: dict[str, Any] | None) -> LogStore:
    parts = urlsplit(loc)
    container, _, host = parts.netloc.partition("@")
    if not container:
        raise InvalidArgumentError(
            f"{scheme}:// location {loc!r} names no container (expected {scheme}://container/path)"
        )
    opts = _parse_options("azure", storage_options)
    kwargs = dict(opts.fs_kwargs)
    if host and "connection_string" not in kwargs:
        kwargs.setdefault("account_name", host.split(".", 1)[0])  # container@account.dfs.core.windows.net
    prefix = unquote(parts.path).strip("/")
    display = f"{scheme}://{parts.netloc}" + (f"/{prefix}" if prefix else "")

    def sdk_store() -> LogStore:
        try:
            from deltalog.storage.azure import AzureLogStore
        except ImportError as exc:
            raise _missing_extra(scheme, "azure", exc) from None
        return AzureLogStore(
            container,
            prefix,
            kwargs,
            display_root=display,
            secrets=opts.secrets,
            allow_unsafe_commits=opts.allow_unsafe_commits,
            max_concurrency=opts.max_concurrency,
        )

    with_account = replace(opts, fs_kwargs=kwargs)
    chosen = _obstore_store("azure", container, prefix, f"{scheme}://{parts.netloc}", with_account, sdk_store)
    return chosen if chosen is not None else sdk_store()


#: schemes served by a deltalog extra (``pip install 'deltalog[gcs]'``) rather than by a package of their own
_EXTRAS = {"gs": "gcs", "gcs": "gcs"}


def _open_fsspec(fsspec: Any, loc: str, scheme: str, kwargs: dict[str, Any]) -> tuple[Any, str]:
    """fsspec's file system for ``loc``; a scheme it does not know, or whose package is missing, is one
    :class:`InvalidArgumentError` naming what to install, never fsspec's ``ValueError``/``ImportError``."""
    shown = _redact(loc)
    try:
        return fsspec.core.url_to_fs(loc, **kwargs)  # type: ignore[no-any-return]
    except ImportError as exc:
        extra = _EXTRAS.get(scheme)
        how = f"pip install 'deltalog[{extra}]'" if extra else str(exc).rstrip(".")
        raise InvalidArgumentError(f"{scheme}:// tables need a package that is not installed: {how}") from None
    except ValueError as exc:
        if "not known" not in str(exc):
            raise InvalidArgumentError(f"cannot open {shown}: {exc}") from None
        raise InvalidArgumentError(
            f"unknown scheme {scheme}:// in {shown}: use a path, file://, s3://, abfss://, gs:// or another "
            "scheme fsspec knows"
        ) from None
    except OSError as exc:  # e.g. hdfs:// without a JVM: the file system cannot start (first line: the cause)
        raise InvalidArgumentError(f"cannot open {shown}: {str(exc).strip().splitlines()[0]}") from None


def store_for(location: str | os.PathLike[str], storage_options: dict[str, Any] | None = None) -> LogStore:
    """The store for a table location: a path, ``file://`` URL, ``s3://``/``abfss://``-style URI, or any fsspec URL."""
    loc = os.fspath(location)
    scheme = urlsplit(loc).scheme.lower() if "://" in loc or loc.startswith("file:") else ""
    if scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt"):
        if scheme == "file":
            loc = unquote(urlsplit(loc).path)
        return LocalLogStore(loc)
    if scheme in S3_SCHEMES:
        return _bucket_store(loc, scheme, "s3", storage_options)
    if scheme in AZURE_SCHEMES:
        return _azure_store(loc, scheme, storage_options)
    if scheme in GCS_SCHEMES:
        return _bucket_store(loc, scheme, "gcs", storage_options)
    import fsspec

    from deltalog.storage.fsspec_store import FsspecLogStore
    from deltalog.storage.redaction import redact_in_logs

    opts = _parse_options(scheme, storage_options)
    redact_in_logs(opts.secrets)
    fs, path = _open_fsspec(fsspec, loc, scheme, opts.fs_kwargs)
    store = FsspecLogStore(fs, path, display_root=_redact(loc))
    if opts.allow_unsafe_commits:
        # Read by deltalog.table.commit_loop through unsafe_commits_allowed(): the user accepted one writer at a time.
        store.allow_unsafe_commits = True  # type: ignore[attr-defined]
    return store


__all__ = ["AZURE_SCHEMES", "GCS_SCHEMES", "S3_SCHEMES", "store_for"]
