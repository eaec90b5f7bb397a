"""What the feature rules need to know of a data file: its statistics as numbers, and its path's last add.

Several features' checks read the same few facts. Row tracking numbers rows by the *physical* record count
(PROTOCOL "Row Tracking"), deletion vectors need that count to be present and accurate (PROTOCOL "Writer
Requirement for Deletion Vectors", "Per-file Statistics"), clustering needs per-column statistics (PROTOCOL
"Clustered Table"), and re-committed adds and removes copy fields from the path's *last committed add*
(PROTOCOL "Add File and Remove File": one logical file per (path, DV id); "Row Tracking > Writer
Requirements"). Parsing them once here keeps the rules from disagreeing about what a stats string says.

Statistics of a file being committed are the committer's responsibility, so a malformed string there is an
:class:`~deltalog.errors.InvalidCommitError` naming the file. Statistics of a file already in the log were
written by some engine and are read leniently: what cannot be read counts as absent.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from deltalog.core import actions as A
from deltalog.core.files.pathkeys import canonical_path, needs_canonicalizing
from deltalog.errors import InvalidCommitError

_EMPTY: Mapping[str, Any] = {}


@dataclass(frozen=True)
class FileStats:
    """The parsed ``stats`` of one file. Column maps are keyed as the log keys them (physical names)."""

    num_records: int | None
    tight_bounds: bool | None = None
    min_values: Mapping[str, Any] = field(default_factory=dict)
    max_values: Mapping[str, Any] = field(default_factory=dict)
    null_count: Mapping[str, Any] = field(default_factory=dict)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else _EMPTY


def parse_stats(stats: str | None, path: str) -> FileStats | None:
    """The stats of a file about to be committed; None when it has none.

    Refused (naming ``path``): text that is not a JSON object, a ``numRecords`` that is not a non-negative
    integer, column maps that are not objects. A reader would otherwise skip or misread the file.
    """
    if stats is None:
        return None
    try:
        doc = orjson.loads(stats)
    except orjson.JSONDecodeError as exc:
        raise InvalidCommitError(f"{path}: stats are not valid JSON ({exc})", rule="stats") from None
    if not isinstance(doc, dict):
        raise InvalidCommitError(f"{path}: stats must be a JSON object, not {stats[:40]!r}", rule="stats")
    n = doc.get("numRecords")
    if n is not None and _count(n) is None:
        raise InvalidCommitError(f"{path}: stats numRecords={n!r} is not a non-negative integer", rule="stats")
    for key in ("minValues", "maxValues", "nullCount"):
        if doc.get(key) is not None and not isinstance(doc[key], dict):
            raise InvalidCommitError(f"{path}: stats {key} must be a JSON object", rule="stats")
    tight = doc.get("tightBounds")
    return FileStats(
        num_records=n,
        tight_bounds=tight if isinstance(tight, bool) else None,
        min_values=_map(doc.get("minValues")),
        max_values=_map(doc.get("maxValues")),
        null_count=_map(doc.get("nullCount")),
    )


def read_stats(stats: str | None) -> FileStats | None:
    """The stats of a file already in the log, read leniently: unreadable stats count as none."""
    try:
        return parse_stats(stats, "")
    except InvalidCommitError:
        return None


def num_records(add: A.Add) -> int | None:
    """The physical record count of a file about to be committed (None without one); see :func:`parse_stats`."""
    parsed = parse_stats(add.stats, add.path)
    return parsed.num_records if parsed is not None else None


# ------------------------------------------------------------------------------------------------ known files


@dataclass(frozen=True)
class KnownFile:
    """What a commit needs of a path's last committed add: its DV, record count and row-tracking fields."""

    path: str
    deletion_vector: A.DeletionVector | None = None
    num_records: int | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None

    @property
    def dv_id(self) -> str | None:
        return self.deletion_vector.unique_id if self.deletion_vector is not None else None


def known_file(add: A.Add) -> KnownFile:
    parsed = read_stats(add.stats)
    return KnownFile(
        add.path,
        add.deletion_vector,
        parsed.num_records if parsed is not None else None,
        add.base_row_id,
        add.default_row_commit_version,
    )


def path_key(path: str, root: str | None = None) -> str:
    """One spelling per file (:func:`~deltalog.core.files.pathkeys.canonical_path`), as replay and conflicts use."""
    return canonical_path(path, root) if root is not None or needs_canonicalizing(path) else path


@dataclass(frozen=True)
class KnownFiles:
    """The last committed add of each path a commit touches, looked up by canonical path.

    The caller builds it from its read snapshot (live adds), plus, for a restore, the target version's adds:
    only the paths the commit names are needed, never the whole table.
    """

    by_key: Mapping[str, KnownFile] = field(default_factory=dict)
    root: str | None = None

    def get(self, path: str) -> KnownFile | None:
        return self.by_key.get(path_key(path, self.root))

    def __iter__(self) -> Iterator[KnownFile]:
        return iter(self.by_key.values())


def known_files(adds: Iterable[A.Add], root: str | None = None) -> KnownFiles:
    return KnownFiles({path_key(a.path, root): known_file(a) for a in adds}, root)


NO_FILES = KnownFiles()

__all__ = [
    "NO_FILES",
    "FileStats",
    "KnownFile",
    "KnownFiles",
    "known_file",
    "known_files",
    "num_records",
    "parse_stats",
    "path_key",
    "read_stats",
]
