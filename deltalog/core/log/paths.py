"""Names of the files in ``_delta_log``, parsed strictly.

Strict parsing (exactly 20 version digits, 10-digit part numbers with ``1 <= part <= parts``, a 36-char
UUID) is what keeps a stray temp file or a Hadoop ``.crc`` from ever being mistaken for a version.
Anything that does not match is :data:`None`: listed, then ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

LOG_DIR = "_delta_log"
LAST_CHECKPOINT = "_last_checkpoint"
SIDECAR_DIR = "_sidecars"


class Kind(str, Enum):
    COMMIT = "commit"
    CHECKPOINT = "checkpoint"  # classic single file: v.checkpoint.parquet
    MULTIPART = "multipart"  # v.checkpoint.p.n.parquet
    UUID_CHECKPOINT = "uuid_checkpoint"  # v.checkpoint.<uuid>.json|parquet (always V2)
    COMPACTION = "compaction"  # x.y.compacted.json
    CRC = "crc"


@dataclass(frozen=True)
class LogPath:
    """A parsed log file name with the listing facts that segment choice needs."""

    name: str
    kind: Kind
    version: int
    size: int = 0
    mtime: int = 0  # milliseconds
    part: int | None = None
    parts: int | None = None
    end_version: int | None = None  # compactions
    fmt: str | None = None  # "json" | "parquet" for UUID checkpoints

    @property
    def is_checkpoint(self) -> bool:
        return self.kind in (Kind.CHECKPOINT, Kind.MULTIPART, Kind.UUID_CHECKPOINT)


_V = r"([0-9]{20})"
_UUID = r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
_COMMIT = re.compile(_V + r"\.json")
_CHECKPOINT = re.compile(_V + r"\.checkpoint\.parquet")
_MULTIPART = re.compile(_V + r"\.checkpoint\.([0-9]{10})\.([0-9]{10})\.parquet")
_UUID_CP = re.compile(_V + r"\.checkpoint\." + _UUID + r"\.(json|parquet)")
_COMPACTION = re.compile(_V + r"\." + _V + r"\.compacted\.json")
_CRC = re.compile(_V + r"\.crc")


def commit_name(version: int) -> str:
    return f"{version:020d}.json"


def checkpoint_name(version: int) -> str:
    return f"{version:020d}.checkpoint.parquet"


def multipart_name(version: int, part: int, parts: int) -> str:
    return f"{version:020d}.checkpoint.{part:010d}.{parts:010d}.parquet"


def compaction_name(start: int, end: int) -> str:
    """The log compaction file of commits ``start..end`` (PROTOCOL "Log Compaction Files": ``end > start``)."""
    return f"{start:020d}.{end:020d}.compacted.json"


def crc_name(version: int) -> str:
    return f"{version:020d}.crc"


def version_prefix(version: int) -> str:
    """The listing prefix for ``version`` and later: Spark's ``%020d.`` (the dot keeps 1 apart from 10)."""
    return f"{version:020d}."


def parse(name: str, size: int = 0, mtime: int = 0) -> LogPath | None:
    """Parse a bare file name from ``_delta_log``; ``None`` for anything that is not a log file."""
    if not ("0" <= name[:1] <= "9"):
        return None
    m = _COMMIT.fullmatch(name)
    if m:
        return LogPath(name, Kind.COMMIT, int(m[1]), size, mtime)
    m = _CHECKPOINT.fullmatch(name)
    if m:
        return LogPath(name, Kind.CHECKPOINT, int(m[1]), size, mtime, fmt="parquet")
    m = _MULTIPART.fullmatch(name)
    if m:
        part, parts = int(m[2]), int(m[3])
        if 1 <= part <= parts and parts > 1:
            return LogPath(name, Kind.MULTIPART, int(m[1]), size, mtime, part=part, parts=parts, fmt="parquet")
        return None
    m = _UUID_CP.fullmatch(name)
    if m:
        return LogPath(name, Kind.UUID_CHECKPOINT, int(m[1]), size, mtime, fmt=m[3])
    m = _COMPACTION.fullmatch(name)
    if m:
        start, end = int(m[1]), int(m[2])
        if end > start:
            return LogPath(name, Kind.COMPACTION, start, size, mtime, end_version=end)
        return None
    m = _CRC.fullmatch(name)
    if m:
        return LogPath(name, Kind.CRC, int(m[1]), size, mtime)
    return None


class Listed(Protocol):
    """One entry of a directory listing, as a store reports it (storage's ``FileInfo`` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def size(self) -> int: ...

    @property
    def mtime(self) -> int: ...


def log_files(listed: Iterable[Listed]) -> list[LogPath]:
    """The log files of a ``_delta_log`` listing, parsed, in listing order; every other name is skipped."""
    out = []
    for info in listed:
        p = parse(info.name, info.size, info.mtime)
        if p is not None:
            out.append(p)
    return out


__all__ = [
    "LAST_CHECKPOINT",
    "Listed",
    "LOG_DIR",
    "SIDECAR_DIR",
    "Kind",
    "LogPath",
    "checkpoint_name",
    "commit_name",
    "compaction_name",
    "crc_name",
    "log_files",
    "multipart_name",
    "parse",
    "version_prefix",
]
