"""The identity of a data file in replay: its path decoded once, made relative to the table root; and the
file a deletion vector lives in.

The log stores RFC-2396 URI references. The same file can be written as ``part%20a.parquet`` by one writer
and, rarely, as an absolute ``file:/table/part%20a.parquet`` by another; both must reconcile to one key.
Decoding exactly once is what keeps ``%2520`` (a directory named with ``%20``) distinct from ``%20``.

Deletion-vector descriptors name their files in Z85 (ZeroMQ RFC 32): VACUUM, RESTORE and the data plane
must agree on which file that is, so the codec and the naming rule live here, once.
"""

from __future__ import annotations

import uuid
from urllib.parse import unquote, urlsplit

from deltalog.errors import CorruptLogError

Z85_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_INDEX = {c: i for i, c in enumerate(Z85_ALPHABET)}
#: the part of a ``u`` descriptor that encodes the UUID; anything before it is a directory prefix
UUID_Z85_LEN = 20

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


def z85_decode(text: str) -> bytes:
    """Decode ZeroMQ Z85 (RFC 32), which the protocol uses for DV identifiers and inline bitmaps.

    Every 5 characters are one base-85 big-endian number, i.e. 4 bytes; the length must be a multiple of 5.
    """
    if len(text) % 5:
        raise ValueError(f"Z85 text length {len(text)} is not a multiple of 5")
    out = bytearray()
    for i in range(0, len(text), 5):
        value = 0
        for c in text[i : i + 5]:
            digit = _Z85_INDEX.get(c)
            if digit is None:
                raise ValueError(f"{c!r} is not a Z85 character")
            value = value * 85 + digit
        if value > 0xFFFFFFFF:
            raise ValueError(f"Z85 group {text[i : i + 5]!r} exceeds 32 bits")
        out += value.to_bytes(4, "big")
    return bytes(out)


def z85_encode(data: bytes) -> str:
    """Z85 text for ``data``, zero-padded to a multiple of 4 bytes as Delta does for inline bitmaps.

    The descriptor's ``sizeInBytes`` keeps the true length, so a reader drops the padding again.
    """
    padded = bytes(data) + b"\0" * (-len(data) % 4)
    out = []
    for i in range(0, len(padded), 4):
        value = int.from_bytes(padded[i : i + 4], "big")
        group = []
        for _ in range(5):
            value, digit = divmod(value, 85)
            group.append(Z85_ALPHABET[digit])
        out.append("".join(reversed(group)))
    return "".join(out)


def dv_file_name(dv_uuid: uuid.UUID) -> str:
    """The file name a ``u`` descriptor's UUID stands for (PROTOCOL "Derived Fields": ``absolutePath``)."""
    return f"deletion_vector_{dv_uuid}.bin"


def dv_file_key(storage_type: str | None, path_or_inline: str | None, root: str) -> str | None:
    """The file a deletion vector lives in, as a replay-style key (relative when under ``root``).

    ``u``: ``<prefix>/deletion_vector_<uuid>.bin`` with the UUID decoded from the last 20 Z85 characters
    and the prefix (possibly empty) taken literally. ``p``: the absolute URI, decoded once. ``i`` (inline)
    and unknown types have no file: None. A malformed ``u`` descriptor is a :class:`CorruptLogError`,
    because guessing its file would let VACUUM delete the real one.
    """
    if not path_or_inline or storage_type not in ("u", "p"):
        return None
    if storage_type == "p":
        return canonical_path(path_or_inline, root)
    if len(path_or_inline) < UUID_Z85_LEN:
        raise CorruptLogError(f"deletion vector descriptor {path_or_inline!r} is shorter than a Z85 UUID")
    prefix, encoded = path_or_inline[:-UUID_Z85_LEN], path_or_inline[-UUID_Z85_LEN:]
    try:
        dv_uuid = uuid.UUID(bytes=z85_decode(encoded))
    except ValueError as exc:
        raise CorruptLogError(f"deletion vector descriptor {path_or_inline!r}: {exc}") from None
    name = dv_file_name(dv_uuid)
    prefix = prefix.strip("/")
    return f"{prefix}/{name}" if prefix else name


__all__ = [
    "UUID_Z85_LEN",
    "Z85_ALPHABET",
    "canonical_path",
    "dv_file_key",
    "dv_file_name",
    "file_key",
    "needs_canonicalizing",
    "z85_decode",
    "z85_encode",
]
