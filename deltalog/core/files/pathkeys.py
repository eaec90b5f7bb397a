"""The identity of a file named in the log: its path parsed, decoded once and normalised like Hadoop's ``Path``.

The log stores RFC-2396 URI references, relative ones resolved against the table root. One file can be
spelled many ways: ``part%20a.parquet``, ``file:/table/part%20a.parquet``, ``file:///table//part a.parquet``,
``/table/./part a.parquet``, ``/table/sub/../part a.parquet``. Delta Spark turns each into a Hadoop ``Path``
(double slashes collapsed, a trailing slash dropped, ``.`` and ``..`` segments removed) and qualifies it with
the table's file system before it compares it with a listed file or relativises it against the root. Any
engine that compares the raw strings instead sees an unreferenced file where the log names a live one, and
VACUUM deletes it. Everything here is one reading of a path, shared by replay, conflicts, VACUUM and RESTORE.

Decoding happens exactly once, which is what keeps ``%2520`` (a directory named with ``%20``) distinct from
``%20``. Dot segments are removed after decoding, as the local file system does with the decoded name.

Deletion-vector descriptors name their files in Z85 (ZeroMQ RFC 32): VACUUM, RESTORE and the data plane
must agree on which file that is, so the codec and the naming rule live here, once.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

from deltalog.core.actions import DeletionVector, dv_unique_id
from deltalog.errors import CorruptLogError

Z85_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_INDEX = {c: i for i, c in enumerate(Z85_ALPHABET)}
#: the part of a ``u`` descriptor that encodes the UUID; anything before it is a directory prefix
UUID_Z85_LEN = 20

#: a URI scheme followed by ``//`` (an authority), or ``file:`` in any of its forms; anything else is relative
_URI = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):(//)?")
#: schemes that name one file system: a path under one of them is under the root of another
_FAMILY = {"s3a": "s3", "s3n": "s3", "abfss": "abfs", "az": "abfs", "wasb": "abfs", "wasbs": "abfs", "gcs": "gs"}
_LOCAL = {"", "file", "local"}
_LOCAL_HOSTS = {"", "localhost"}


@dataclass(frozen=True)
class Location:
    """A path as Hadoop's ``Path`` reads it: lowercase scheme (``""`` for none), authority, decoded path.

    ``path`` is normalised: no empty or ``.`` segments, ``..`` resolved (kept only at the start of a relative
    path), no trailing slash. It is absolute (``/...``) or relative to the table root.
    """

    scheme: str
    authority: str
    path: str

    @property
    def is_relative(self) -> bool:
        return not self.scheme and not self.path.startswith("/")

    @property
    def is_local(self) -> bool:
        return self.scheme in _LOCAL and self.authority in _LOCAL_HOSTS

    def __str__(self) -> str:
        if self.is_local:
            return self.path
        return f"{self.scheme}://{self.authority}{self.path}"


def normalize_segments(path: str) -> str:
    """``path`` with ``//``, ``.`` segments, ``..`` segments and a trailing slash resolved (Hadoop ``Path``).

    ``..`` above an absolute path's top stays at ``/``, as the file system resolves it; above a relative
    path it is kept, so a path that climbs out of the table root still says so.
    """
    absolute = path.startswith("/")
    out: list[str] = []
    for seg in path.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            if out and out[-1] != "..":
                out.pop()
            elif not absolute:
                out.append("..")
            continue
        out.append(seg)
    joined = "/".join(out)
    return "/" + joined if absolute else joined


def parse_location(text: str) -> Location:
    """Parse one path from the log (or a table root): scheme and authority split off, the rest decoded once.

    A scheme is only recognised before ``//`` or as ``file:``: a relative name holding a colon (a
    partition value such as ``ts=10:00``) is a relative path, never an unknown file system.
    """
    m = _URI.match(text)
    if m is not None and (m[2] or m[1].lower() == "file"):
        scheme = m[1].lower()
        rest = text[m.end() :]
        authority = ""
        if m[2]:
            slash = rest.find("/")
            authority, rest = (rest, "") if slash < 0 else (rest[:slash], rest[slash:])
        path = normalize_segments(unquote(rest))
        return Location(scheme, authority, path if path.startswith("/") else "/" + path)
    return Location("", "", normalize_segments(unquote(text)))


@lru_cache(maxsize=64)
def parse_root(root: str) -> Location:
    """A table root as a :class:`Location` (cached: every path of a replay is resolved against the same one).

    A store's root is already decoded (``/data/t``, ``s3://bucket/prefix``); only a ``file:`` URI root is
    a URI to decode.
    """
    m = _URI.match(root)
    if m is not None and (m[2] or m[1].lower() == "file"):
        return parse_location(root)
    return Location("", "", normalize_segments(root if root.startswith("/") else "/" + root))


def _same_file_system(a: Location, b: Location) -> bool:
    if a.is_local or b.is_local:
        return a.is_local and b.is_local
    if _FAMILY.get(a.scheme, a.scheme) != _FAMILY.get(b.scheme, b.scheme):
        return False
    if _FAMILY.get(a.scheme, a.scheme) == "abfs":  # container@account.dfs.core.windows.net, or just container
        ca, _, ha = a.authority.lower().partition("@")
        cb, _, hb = b.authority.lower().partition("@")
        return ca == cb and (not ha or not hb or ha.split(".", 1)[0] == hb.split(".", 1)[0])
    return a.authority.lower() == b.authority.lower()


def resolve(path: str, root: str) -> Location:
    """``path`` resolved against the table root: absolute, on the root's file system when it names none."""
    loc = parse_location(path)
    base = parse_root(root)
    if loc.is_relative:
        return Location(base.scheme, base.authority, normalize_segments(f"{base.path}/{loc.path}"))
    if not loc.scheme:  # an absolute path without a scheme is qualified with the table's file system
        return Location(base.scheme, base.authority, loc.path)
    return loc


def relative_key(path: str, root: str, aliases: tuple[str, ...] = ()) -> str | None:
    """The store-relative name of the file ``path`` names when it lies under ``root`` (or an alias); else None.

    None means the file is not the table's to touch: another file system, a sibling directory, a path that
    climbs out through ``..``, or the root itself. ``aliases`` are other spellings of the root (the same
    directory reached without a symbolic link).
    """
    loc = parse_location(path)
    if loc.is_relative and loc.path and not loc.path.startswith(".."):
        return loc.path  # the common case: already relative and below the root
    for r in (root, *aliases):
        base = parse_root(r)
        target = resolve(path, r)
        if not _same_file_system(target, base):
            continue
        prefix = base.path.rstrip("/")
        if target.path.startswith(prefix + "/") and len(target.path) > len(prefix) + 1:
            return target.path[len(prefix) + 1 :]
    return None


def needs_canonicalizing(path: str) -> bool:
    """Cheap test: a non-empty path with no escape, scheme, leading slash or dot, ``//``, ``/.`` or trailing
    slash is its own key, whatever the root (the replay's hot path skips everything else for it)."""
    return (
        "%" in path
        or ":" in path
        or path[:1] in ("/", ".")
        or "//" in path
        or "/." in path
        or path[-1:] == "/"
        or not path
    )


def canonical_path(path: str, root: str | None = None) -> str:
    """The replay key for ``path``: decoded once, normalised, and relative to ``root`` when it lies under it.

    ``root`` is the table root as an absolute local path (``/data/t``) or a URI (``s3://b/t``). A path outside
    the root keeps an absolute spelling (a local path, or ``scheme://authority/path``); without a root a
    relative path stays relative, with any leading ``..`` kept.
    """
    if root is None:
        return str(parse_location(path))
    key = relative_key(path, root)
    return key if key is not None else str(resolve(path, root))


def file_key(path: str, dv_id: str | None = None, root: str | None = None) -> str:
    """The identity of a data file named in the log: one string per (canonical path, deletion vector id).

    Every comparison of files goes through here: replay's reconciliation, conflict checks, the commit
    rules, RESTORE, the distributed checkpoint. Without ``dv_id`` it is the identity of the path alone
    (what the conflict checks compare, as Delta Spark does).
    """
    p = canonical_path(path, root) if needs_canonicalizing(path) else path
    return p if not dv_id else f"{p}\x00{dv_id}"


def dv_id_of(dv: DeletionVector | Mapping[str, Any] | None) -> str | None:
    """The unique id of a deletion vector, given as an action's descriptor or as its JSON object."""
    if not dv:
        return None
    if isinstance(dv, DeletionVector):
        return dv.unique_id
    return dv_unique_id(dv.get("storageType") or "", dv.get("pathOrInlineDv") or "", dv.get("offset"))


def climbs_out(path: str) -> bool:
    """Whether a path from the log uses ``..`` segments (after decoding) to leave where it would otherwise be.

    Absolute paths outside the root are legitimate (shallow clones); a ``..`` that leaves the root is not
    something any writer produces.
    """
    return ".." in unquote(path).split("/")


def escapes_root(path: str) -> bool:
    """Whether a store-relative name leaves the root: absolute, empty, or with a ``..`` segment after normalising."""
    if not path or path.startswith("/") or parse_location(path).scheme:
        return True
    norm = normalize_segments(path)
    return not norm or norm == ".." or norm.startswith("../")


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
    and the prefix (possibly empty) taken literally, as Delta Spark joins it to the root (no decoding, but
    ``.``/``..`` segments resolved: a prefix that climbs out gives a key starting with ``..``, which is
    outside). ``p``: the absolute URI, decoded once and normalised. ``i`` (inline) and unknown types have no
    file: None. A malformed ``u`` descriptor is a :class:`CorruptLogError`, because guessing its file would
    let VACUUM delete the real one.
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
    return normalize_segments(f"{prefix.strip('/')}/{dv_file_name(dv_uuid)}".lstrip("/"))


__all__ = [
    "UUID_Z85_LEN",
    "Z85_ALPHABET",
    "dv_file_key",
    "dv_file_name",
    "z85_decode",
    "z85_encode",
    "Location",
    "canonical_path",
    "climbs_out",
    "dv_id_of",
    "escapes_root",
    "file_key",
    "needs_canonicalizing",
    "normalize_segments",
    "parse_location",
    "parse_root",
    "relative_key",
    "resolve",
]
