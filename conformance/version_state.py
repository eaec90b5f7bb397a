"""What one table version is, in a form two reads can be compared with, and which files on disk it needs.

Maintenance (a checkpoint, log cleanup, vacuum) must not change any version it keeps: the write runner
captures every version before and compares after. ``dataChange`` is left out of the comparison: a
checkpoint may store live adds with ``dataChange=false`` (Delta Spark does), which no reader relies on.
Stats are compared parsed, so a checkpoint that re-serialises them (key order, spacing) still matches.

Deletion-vector file names are decoded here, from PROTOCOL.md "Deletion Vector Descriptor Schema", not
with deltalog's own code: a bug there would otherwise hide the very deletion it causes.
"""

from __future__ import annotations

import os
import urllib.parse
import uuid
from dataclasses import dataclass
from typing import Any

import orjson

from deltalog import DeltaLog

Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_INDEX = {c: i for i, c in enumerate(Z85)}


@dataclass(frozen=True)
class VersionState:
    """One version as a reader sees it: protocol, metadata, live files, app transactions and domains."""

    version: int
    protocol: Any
    metadata: Any
    files: tuple[tuple[Any, ...], ...]  # one normalised row per live file, sorted
    txns: tuple[tuple[str, Any], ...]
    domains: tuple[tuple[str, Any], ...]
    references: frozenset[str]  # data and DV files this version reads, relative to the root (or absolute)

    @property
    def checkpoints_keep_json_stats(self) -> bool:
        """``delta.checkpoint.writeStatsAsJson`` (default true): when false, a checkpoint keeps stats only as
        ``stats_parsed``, which may hold fewer of them (or none, with ``writeStatsAsStruct=false`` too)."""
        conf = getattr(self.metadata, "configuration", None) or {}
        return str(conf.get("delta.checkpoint.writeStatsAsJson", "true")).strip().lower() != "false"

    def differences(self, other: VersionState) -> list[str]:
        """What differs between two captures of the same version, one line per aspect. Where the table lets
        checkpoints drop JSON stats, ``other`` may know fewer statistics, never different ones."""
        out = []
        for aspect in ("version", "protocol", "metadata", "txns", "domains"):
            if getattr(self, aspect) != getattr(other, aspect):
                out.append(f"{aspect}: {getattr(self, aspect)!r} became {getattr(other, aspect)!r}")
        mine, theirs = self.files, other.files
        if not self.checkpoints_keep_json_stats:
            by_key = {row[:-1]: row[-1] for row in mine}
            theirs = tuple(
                row if not _within(row[-1], by_key.get(row[:-1])) else (*row[:-1], by_key[row[:-1]]) for row in theirs
            )
        if mine != theirs:
            gone = sorted(set(mine) - set(theirs), key=repr)
            new = sorted(set(theirs) - set(mine), key=repr)
            out.append(f"files: {len(gone)} gone or changed (first {gone[:1]!r}), {len(new)} new ({new[:1]!r})")
        return out


def _within(fewer: bytes | None, more: bytes | None) -> bool:
    """Whether stats JSON ``fewer`` states nothing ``more`` does not (every value it has is the same there)."""
    if fewer is None:
        return True
    if more is None:
        return False
    try:
        return _subset(orjson.loads(fewer), orjson.loads(more))
    except orjson.JSONDecodeError:
        return fewer == more


def _subset(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return all(k in b and _subset(v, b[k]) for k, v in a.items())
    return bool(a == b)


def z85_decode(text: str) -> bytes:
    """Z85 (ZeroMQ RFC 32) to bytes: every 5 characters are one big-endian 32-bit word."""
    if len(text) % 5:
        raise ValueError(f"Z85 text of length {len(text)} is not a multiple of 5")
    out = bytearray()
    for start in range(0, len(text), 5):
        word = 0
        for c in text[start : start + 5]:
            word = word * 85 + _Z85_INDEX[c]
        out += word.to_bytes(4, "big")
    return bytes(out)


def dv_file(dv: dict[str, Any]) -> str | None:
    """The file a deletion vector descriptor points at (relative to the root, or absolute); ``None`` inline."""
    kind, where = dv.get("storage_type"), dv.get("path_or_inline_dv") or ""
    if kind == "u":
        prefix, encoded = where[:-20], where[-20:]
        name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
        return f"{prefix}/{name}" if prefix else name
    if kind == "p":
        return _local(where)
    return None


def _local(path: str) -> str:
    """A log path (a URI reference) as a path on disk: relative stays relative, ``file:`` URIs lose the scheme."""
    parsed = urllib.parse.urlparse(path)
    return urllib.parse.unquote(parsed.path if parsed.scheme == "file" else path)


def _stats(text: str | None) -> Any:
    if not text:
        return None
    try:
        return orjson.dumps(orjson.loads(text), option=orjson.OPT_SORT_KEYS)
    except orjson.JSONDecodeError:
        return text


def _pairs(value: Any) -> tuple[tuple[Any, Any], ...] | None:
    return None if value is None else tuple(sorted(dict(value).items()))


def capture(log: DeltaLog, version: int) -> VersionState:
    """Read ``version`` through the public snapshot API (raises what the snapshot raises)."""
    snap = log.snapshot(version=version)
    rows, refs = [], set()
    for row in snap.files(stats=True).to_pylist():
        dv = row["deletion_vector"]
        rows.append(
            (
                row["path"],
                _pairs(row["partition_values"]),
                row["size"],
                row["modification_time"],
                None if dv is None else tuple(sorted(dv.items())),
                _pairs(row["tags"]),
                row["base_row_id"],
                row["default_row_commit_version"],
                row["clustering_provider"],
                _stats(row["stats"]),
            )
        )
        refs.add(_local(row["path"]))
        if dv is not None and (dv_path := dv_file(dv)) is not None:
            refs.add(dv_path)
    return VersionState(
        version=snap.version,
        protocol=snap.protocol,
        metadata=snap.metadata,
        files=tuple(sorted(rows, key=repr)),
        txns=tuple(sorted(snap.txns.items())),
        domains=tuple(sorted(snap.domain_metadata.items())),
        references=frozenset(refs),
    )


def existing(root: str, paths: frozenset[str]) -> frozenset[str]:
    """The ``paths`` (relative to ``root`` or absolute) that are files on disk."""
    return frozenset(p for p in paths if os.path.isfile(p if os.path.isabs(p) else os.path.join(root, p)))


__all__ = ["VersionState", "capture", "dv_file", "existing", "z85_decode"]
