"""The files of a ``_delta_log`` directory, recognised by name (PROTOCOL.md "File Types").

Only the top level of ``_delta_log`` holds versions: commits ``<v>.json``, checkpoints (classic
``<v>.checkpoint.parquet``, multi-part ``<v>.checkpoint.<o>.<p>.parquet``, UUID-named
``<v>.checkpoint.<uuid>.{json,parquet}``), log compactions ``<x>.<y>.compacted.json``, version checksums
``<v>.crc`` and ``_last_checkpoint``. Everything else (``_sidecars/``, ``_staged_commits/``, temporary
files) is left to the rules that need it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

COMMIT = re.compile(r"^(\d{20})\.json$")
CLASSIC = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
MULTI_PART = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
UUID_NAMED = re.compile(
    r"^(\d{20})\.checkpoint\.([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.(json|parquet)$"
)
COMPACTION = re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")
CRC = re.compile(r"^(\d{20})\.crc$")


@dataclass(frozen=True)
class CheckpointLayout:
    """One checkpoint of a version: ``kind`` is ``classic``, ``multi-part`` or ``uuid``; ``files`` in part order."""

    version: int
    kind: str
    files: tuple[str, ...]
    parts: int | None = None  # the declared part count of a multi-part checkpoint
    part_numbers: tuple[int, ...] = ()  # the part numbers present, in file order

    @property
    def complete(self) -> bool:
        return self.parts is None or set(range(1, self.parts + 1)) <= set(self.part_numbers)

    @property
    def name(self) -> str:
        return self.files[0] if len(self.files) == 1 else f"{self.files[0]} (+{len(self.files) - 1} parts)"


@dataclass
class LogListing:
    root: Path
    commits: dict[int, str] = field(default_factory=dict)
    checkpoints: dict[int, list[CheckpointLayout]] = field(default_factory=dict)
    compactions: list[tuple[int, int, str]] = field(default_factory=list)
    crcs: dict[int, str] = field(default_factory=dict)
    has_last_checkpoint: bool = False

    @property
    def log_dir(self) -> Path:
        return self.root / "_delta_log"

    @property
    def latest(self) -> int | None:
        versions = list(self.commits) + list(self.checkpoints)
        return max(versions) if versions else None

    def path(self, name: str) -> Path:
        return self.log_dir / name

    def mtime_ms(self, name: str) -> int | None:
        try:
            return os.stat(self.path(name)).st_mtime_ns // 1_000_000
        except OSError:
            return None


def list_log(root: Path) -> LogListing:
    listing = LogListing(root)
    try:
        names = sorted(os.listdir(listing.log_dir))
    except FileNotFoundError:
        return listing
    multi: dict[tuple[int, int], dict[int, str]] = {}
    for name in names:
        if m := COMMIT.match(name):
            listing.commits[int(m[1])] = name
        elif m := CLASSIC.match(name):
            listing.checkpoints.setdefault(int(m[1]), []).append(CheckpointLayout(int(m[1]), "classic", (name,)))
        elif m := MULTI_PART.match(name):
            multi.setdefault((int(m[1]), int(m[3])), {})[int(m[2])] = name
        elif m := UUID_NAMED.match(name):
            listing.checkpoints.setdefault(int(m[1]), []).append(CheckpointLayout(int(m[1]), "uuid", (name,)))
        elif m := COMPACTION.match(name):
            listing.compactions.append((int(m[1]), int(m[2]), name))
        elif m := CRC.match(name):
            listing.crcs[int(m[1])] = name
        elif name == "_last_checkpoint":
            listing.has_last_checkpoint = True
    for (version, parts), by_part in sorted(multi.items()):
        files = tuple(by_part[o] for o in sorted(by_part))
        layout = CheckpointLayout(version, "multi-part", files, parts, tuple(sorted(by_part)))
        listing.checkpoints.setdefault(version, []).append(layout)
    return listing
