"""From a user's table location to a store: plain paths and ``file://`` go to the local store."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import unquote, urlsplit

from deltalog.storage.base import LogStore
from deltalog.storage.local import LocalLogStore


def _redact(uri: str) -> str:
    parts = urlsplit(uri)
    if parts.password or parts.username:
        netloc = parts.hostname or ""
        if parts.port:
            netloc += f":{parts.port}"
        return parts._replace(netloc=netloc).geturl()
    return uri


def store_for(location: str | os.PathLike[str], storage_options: dict[str, Any] | None = None) -> LogStore:
    """The store for a table location: a path, ``file://`` URL, or any fsspec URL."""
    loc = os.fspath(location)
    scheme = urlsplit(loc).scheme if "://" in loc or loc.startswith("file:") else ""
    if scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt"):
        if scheme == "file":
            loc = unquote(urlsplit(loc).path)
        return LocalLogStore(loc)
    import fsspec

    from deltalog.storage.fsspec_store import FsspecLogStore

    fs, path = fsspec.core.url_to_fs(loc, **(storage_options or {}))
    return FsspecLogStore(fs, path, display_root=_redact(loc))


__all__ = ["store_for"]
