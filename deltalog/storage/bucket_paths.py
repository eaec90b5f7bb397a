"""What the object stores share: a bucket (S3) or container (Azure), a key prefix, and a display root.

Keys are ``<prefix>/<store-relative path>``; the fsspec path is ``<bucket>/<key>``. The display root is the
URI with credentials removed, because it appears in messages and logs.
"""

from __future__ import annotations

from typing import Any

from deltalog.storage.base import Capabilities


class BucketPaths:
    """Path plumbing and the uniform properties of a conditional-write object store."""

    _display: str
    _fs: Any
    _prefix: str
    _bucket_name: str

    @property
    def root(self) -> str:
        return self._display

    @property
    def fs(self) -> Any:
        return self._fs

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(atomic_put_if_absent=True)

    def _key(self, path: str) -> str:
        path = path.strip("/")
        if not self._prefix:
            return path
        return f"{self._prefix}/{path}" if path else self._prefix

    def _dir_prefix(self, directory: str) -> str:
        key = self._key(directory)
        return f"{key}/" if key else ""

    def _full(self, path: str) -> str:
        return f"{self._bucket_name}/{self._key(path)}"


__all__ = ["BucketPaths"]
