"""What a table or version should produce, derived from the manifest (and, for errors, from the file layout).

The reference reader's error *texts* are its own; only the fact that it refused counts. Which deltalog
error class a refusal must map to comes from the table's feature tags and from the commit files present.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from deltalog.errors import CorruptLogError, DeltaLogError, UnsupportedFeatureError, VersionNotFoundError

UNSUPPORTED_TAGS = frozenset(
    {
        "unsupported-reader-feature",
        "unknown-reader-feature",
        "unsupported-reader-version",
        "catalog-managed",
        "invalid-protocol",
    }
)
CORRUPT_TAGS = frozenset({"version-gap", "missing-protocol", "missing-metadata", "invalid-table"})

_COMMIT = re.compile(r"(\d{20})\.json")
_CHECKPOINT = re.compile(r"(\d{20})\.checkpoint(\.\d{10}\.\d{10}|\.[0-9a-fA-F-]{36})?\.(parquet|json)")


@dataclass(frozen=True)
class Layout:
    commits: frozenset[int]
    checkpoints: frozenset[int]


def layout(table_dir: str) -> Layout:
    names = os.listdir(os.path.join(table_dir, "_delta_log"))
    commits = {int(m[1]) for n in names if (m := _COMMIT.fullmatch(n))}
    cps = {int(m[1]) for n in names if (m := _CHECKPOINT.fullmatch(n))}
    return Layout(frozenset(commits), frozenset(cps))


def table_error_class(tags: list[str]) -> type[DeltaLogError]:
    """The class a refused table must raise: unsupported features first, then corruption."""
    if UNSUPPORTED_TAGS.intersection(tags):
        return UnsupportedFeatureError
    return CorruptLogError


def version_error_class(tags: list[str], lay: Layout, version: int) -> type[DeltaLogError]:
    """The class for a version the reference could not load.

    A version whose commits (after the newest checkpoint at or below it) are not all present is either
    expired (nothing older survives: :class:`VersionNotFoundError`) or has a gap (:class:`CorruptLogError`).
    Otherwise the version fails for the table's own reason.
    """
    cp = max((c for c in lay.checkpoints if c <= version), default=None)
    start = 0 if cp is None else cp + 1
    missing = [v for v in range(start, version + 1) if v not in lay.commits]
    if missing:
        if cp is None and not any(c <= missing[0] for c in lay.commits):
            return VersionNotFoundError
        return CorruptLogError
    return table_error_class(tags)


def expected_state(entry: dict[str, Any], version: str) -> dict[str, Any]:
    if version == "latest":
        return entry["expected"]["latest"]
    return entry["expected"]["versions"][version]


__all__ = [
    "CORRUPT_TAGS",
    "UNSUPPORTED_TAGS",
    "Layout",
    "expected_state",
    "layout",
    "table_error_class",
    "version_error_class",
]
