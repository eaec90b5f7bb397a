"""The identity of a data file in replay: its path decoded once, made relative to the table root.

The log stores RFC-2396 URI references. The same file can be written as ``part%20a.parquet`` by one writer
and, rarely, as an absolute ``file:/table/part%20a.parquet`` by another; both must reconcile to one key.
Decoding exactly once is what keeps ``%2520`` (a directory named with ``%20``) distinct from ``%20``.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

_NEEDS_WORK = ("%", ":", "/")


def needs_canonicalizing(path: str) -> bool:
    """Cheap test: a path with no escape, no scheme and no leading slash is already its own key."""
    return "%" in path or ":" in path or path.startswith("/")


def canonical_path(path: str, root: str | None = None) -> str:
    """The replay key for ``path``: decoded once; ``file:`` URIs and absolute paths under ``root`` made relative.

    ``root`` is the table root as an absolute local path (``/data/t``) or a URI (``s3://b/t``).
    """
    if "://" in path or path.startswith("file:"):
        parts = urlsplit(path)
        decoded_path = unquote(parts.path)
        absolute = decoded_path if parts.scheme == "file" else f"{parts.scheme}://{parts.netloc}{decoded_path}"
    else:
        absolute = unquote(path)
    if root is not None:
        r = root.rstrip("/")
        if r.startswith("file:"):
            r = unquote(urlsplit(r).path).rstrip("/")
        if absolute.startswith(r + "/"):
            return absolute[len(r) + 1 :]
    return absolute


def file_key(path: str, dv_id: str | None, root: str | None = None) -> str:
    """One string per (path, deletion vector): the reconciliation key."""
    p = canonical_path(path, root) if needs_canonicalizing(path) else path
    return p if not dv_id else f"{p}\x00{dv_id}"


__all__ = ["canonical_path", "file_key", "needs_canonicalizing"]
