"""Planning VACUUM: which files under the table root no retained version can need.

Pure: it sees the listed files (store-relative names as the store spells them, sizes, modification times)
and what the log references, and answers with a :class:`VacuumPlan`. The rules are Delta Spark's
``VacuumCommand``:

* A file is protected when a live add, or a tombstone newer than the tombstone horizon, names it, or
  names a deletion vector stored in it. Log paths are URI references: each is decoded exactly once,
  normalised as Hadoop's ``Path`` does (``//``, ``.``, ``..``, a trailing slash) and resolved against the
  table root before it is compared with a listed name (``x=A%252FA/f`` in the log is the object
  ``x=A%2FA/f``; ``file:///root//a.parquet`` is ``a.parquet``). Comparing raw strings is how engines
  deleted live files (delta-io/delta-rs #1896, #3577). See :mod:`deltalog.core.files.pathkeys`.
* Nothing outside the root is ever a candidate: a listed name that climbs out of it is dropped, and a
  reference to a file outside it (an absolute path, a shallow clone's source) protects nothing inside.
* Hidden trees are never listed or deleted: names starting with ``_`` or ``.``, except ``_change_data``,
  ``_delta_index`` and ``<partition column>=...`` directories; ``metadata`` (Iceberg's, under
  UniForm) is hidden too. ``_delta_log`` is always hidden.
* An unprotected file is deleted only when its modification time is older than the retention, so a
  writer's files that are not committed yet survive.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

# Z85 and DV file naming live in pathkeys; re-exported here for the callers that found them here first.
from deltalog.core.files.pathkeys import (
    UUID_Z85_LEN,
    Z85_ALPHABET,
    climbs_out,
    dv_file_key,
    escapes_root,
    relative_key,
    z85_decode,
)
from deltalog.errors import PathOutsideRootError

_NOT_HIDDEN_PREFIXES = ("_change_data", "_delta_index")


def is_hidden(name: str, partition_columns: Collection[str] = ()) -> bool:
    """Whether one path segment is hidden from VACUUM (Delta Spark ``DeltaTableUtils.isHiddenDirectory``)."""
    if name == "metadata":
        return True
    if not name.startswith(("_", ".")):
        return False
    if name.startswith(_NOT_HIDDEN_PREFIXES):
        return False
    return not any(name.startswith(f"{c}=") for c in partition_columns)


def is_hidden_path(path: str, partition_columns: Collection[str] = ()) -> bool:
    """Whether any segment of a store-relative path is hidden; ``_delta_log`` always is."""
    parts = path.split("/")
    if parts[0] == "_delta_log":
        return True
    return any(is_hidden(p, partition_columns) for p in parts if p)


def is_inside(key: str) -> bool:
    """Whether a resolved key (:func:`dv_file_key`, :func:`~deltalog.core.files.pathkeys.canonical_path`) names a
    file under the table root, as opposed to an absolute path elsewhere or one that climbs out through ``..``."""
    return not escapes_root(key)


@dataclass(frozen=True)
class FileRef:
    """One file action's claim on storage: its path and its deletion vector, as the log spells them."""

    path: str
    dv_storage_type: str | None = None
    dv_path_or_inline: str | None = None


def inside_files(ref: FileRef, root: str, aliases: tuple[str, ...] = (), strict: bool = False) -> list[str]:
    """Store-relative names of the data file and the deletion-vector file ``ref`` names under the root.

    A file outside the root (an absolute path elsewhere: a shallow clone's source) is left out: it is not the
    table's to probe or delete. ``strict`` (RESTORE probing the files it re-adds) refuses, with
    :class:`~deltalog.errors.PathOutsideRootError` naming it, a reference that climbs out of the root through
    ``..``: no writer produces one, and following it would probe a file the table does not own.
    ``aliases`` are other spellings of the root (a local root reached through a symbolic link, resolved).
    """
    out: list[str] = []
    paths = [ref.path]
    if ref.dv_storage_type == "p" and ref.dv_path_or_inline:
        paths.append(ref.dv_path_or_inline)
    for path in paths:
        key = relative_key(path, root, aliases)
        if key is not None:
            out.append(key)
        elif strict and climbs_out(path):
            raise PathOutsideRootError(f"{path} resolves outside the table root {root}", path=path)
    if ref.dv_storage_type == "u":
        dv = dv_file_key(ref.dv_storage_type, ref.dv_path_or_inline, root)
        if dv is not None and is_inside(dv):
            out.append(dv)
        elif dv is not None and strict:
            raise PathOutsideRootError(
                f"deletion vector {ref.dv_path_or_inline!r} of {ref.path} resolves outside the table root {root}",
                path=dv,
            )
    return out


def protected_keys(refs: Iterable[FileRef], root: str, aliases: tuple[str, ...] = ()) -> set[str]:
    """Keys (relative to ``root``) of every data and DV file the references name under the root.

    An absolute path written through an alias of the root names a file the listing shows under ``root``.
    """
    keys: set[str] = set()
    for ref in refs:
        keys.update(inside_files(ref, root, aliases))
    return keys


@dataclass(frozen=True)
class ListedFile:
    """A file found under the root: store-relative ``path`` exactly as the store names it."""

    path: str
    size: int
    mtime: int


@dataclass(frozen=True)
class VacuumPlan:
    """What VACUUM deletes. ``tombstone_cutoff_ms``: removes deleted at or after it still protect files."""

    now_ms: int
    retention_ms: int
    cutoff_ms: int
    tombstone_cutoff_ms: int
    deletions: tuple[ListedFile, ...]
    scanned: int  # files listed outside hidden trees
    protected: int  # listed files a live add, a retained tombstone, or one of their DVs names
    too_recent: int  # unreferenced files kept because they are not older than the retention

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.deletions)


def plan_vacuum(
    listed: Iterable[ListedFile],
    protected: Collection[str],
    now_ms: int,
    retention_ms: int,
    partition_columns: Collection[str] = (),
) -> VacuumPlan:
    """The files to delete: outside hidden trees, not in ``protected``, modified before now - retention.

    The tombstone horizon is the same now - retention (Delta Spark's ``deleteBeforeTimestamp``); the
    caller selects tombstones with it. Deletions come sorted by path so a run is reproducible.
    """
    cutoff = now_ms - retention_ms
    keep = set(protected)
    out: list[ListedFile] = []
    scanned = hit = recent = 0
    for f in listed:
        if escapes_root(f.path) or is_hidden_path(f.path, partition_columns):
            continue
        scanned += 1
        if f.path in keep:
            hit += 1
        elif f.mtime >= cutoff:
            recent += 1
        else:
            out.append(f)
    out.sort(key=lambda f: f.path)
    return VacuumPlan(now_ms, retention_ms, cutoff, cutoff, tuple(out), scanned, hit, recent)


__all__ = [
    "UUID_Z85_LEN",
    "Z85_ALPHABET",
    "FileRef",
    "ListedFile",
    "VacuumPlan",
    "dv_file_key",
    "inside_files",
    "is_hidden",
    "is_hidden_path",
    "is_inside",
    "plan_vacuum",
    "protected_keys",
    "z85_decode",
]
