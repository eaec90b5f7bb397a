"""Deletion vectors at the log level: the descriptors a commit may carry, and how a DV changes a file.

PROTOCOL "Deletion Vectors": supported with ``deletionVectors`` in both feature lists; writers write *new* DVs
only while ``delta.enableDeletionVectors=true``. A descriptor has ``storageType`` ``u`` (``<prefix><20 Z85
characters of a UUID>``), ``i`` (Z85 of the bitmap, no offset) or ``p`` (an absolute path), an optional
``offset``, ``sizeInBytes`` and ``cardinality``. An add with a DV must carry an accurate physical ``numRecords``
("Per-file Statistics"). "Add File and Remove File": a logical file is (path, DV id); at most one add and one
remove per path in a commit; an add of a path live with another DV needs the remove of that (path, DV) in the
same commit. "Action Reconciliation": a remove must name the live (path, DV) to remove the live file.

Delta Spark (facts): ``actions/actions.scala`` ``AddFile.removeRows`` removes the file with its old DV and re-adds
it with the merged, never smaller, DV (cardinality cannot drop); ``ConflictChecker.scala`` compares removes by
path only, so conflict keys are canonical paths (:func:`~deltalog.core.files.pathkeys.canonical_path`), not (path,
DV). The Z85 codec and DV file naming are :mod:`deltalog.core.files.pathkeys`'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from deltalog.core import actions as A
from deltalog.core.features import properties
from deltalog.core.features.configuration import TableConfiguration
from deltalog.core.features.kinds import ADDS_FILES, NONE, REMOVES_FILES, RESTORE, Obligation, Rule
from deltalog.core.features.protocol import supported_features
from deltalog.core.files.facts import NO_FILES, KnownFiles, num_records, path_key
from deltalog.core.files.pathkeys import UUID_Z85_LEN, parse_location, z85_decode
from deltalog.errors import InvalidCommitError, UnsupportedFeatureError

FEATURE = "deletionVectors"
ENABLED = "delta.enableDeletionVectors"
STORAGE_TYPES = ("u", "i", "p")


def supported(protocol: A.Protocol) -> bool:
    return FEATURE in supported_features(protocol)


def new_dvs_allowed(protocol: A.Protocol, configuration: Mapping[str, str]) -> bool:
    return supported(protocol) and properties.get_bool(configuration, ENABLED)


def _bad(path: str, why: str) -> InvalidCommitError:
    return InvalidCommitError(f"{path}: deletion vector {why}", rule="deletion-vector")


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_descriptor(dv: A.DeletionVector, path: str) -> None:
    """The shape of one descriptor, as readers need it: a known storage type, a decodable location, integer
    offset/size/cardinality in range. ``path`` names the data file in messages."""
    kind, where = dv.storage_type, dv.path_or_inline_dv
    if kind not in STORAGE_TYPES:
        raise _bad(path, f"storageType {kind!r} is not one of {', '.join(STORAGE_TYPES)}")
    if not isinstance(where, str) or not where:
        raise _bad(path, "has no pathOrInlineDv")
    if not _count(dv.size_in_bytes) or dv.size_in_bytes <= 0:
        raise _bad(path, f"sizeInBytes {dv.size_in_bytes!r} is not a positive integer")
    if not _count(dv.cardinality) or dv.cardinality <= 0:
        raise _bad(path, f"cardinality {dv.cardinality!r} is not a positive integer")
    if kind == "i":
        if dv.offset is not None:
            raise _bad(path, "is inline and so has no offset")
        try:
            data = z85_decode(where)
        except ValueError as exc:
            raise _bad(path, f"inline bitmap is not Z85 ({exc})") from None
        if not len(data) - 3 <= dv.size_in_bytes <= len(data):
            raise _bad(path, f"sizeInBytes {dv.size_in_bytes} does not match the {len(data)} inline bytes")
        return
    if dv.offset is not None and (not _count(dv.offset) or dv.offset < 0):
        raise _bad(path, f"offset {dv.offset!r} is not a non-negative integer")
    if kind == "u":
        if len(where) < UUID_Z85_LEN:
            raise _bad(path, f"{where!r} is shorter than a Z85-encoded UUID")
        try:
            z85_decode(where[-UUID_Z85_LEN:])
        except ValueError as exc:
            raise _bad(path, f"{where!r} does not end in a Z85-encoded UUID ({exc})") from None
    elif parse_location(where).is_relative:
        raise _bad(path, f"of storage type p must have an absolute path, not {where!r}")


def _dv_id(dv: A.DeletionVector | None) -> str | None:
    return dv.unique_id if dv is not None else None


def check_commit(
    actions: Sequence[A.Action],
    protocol: A.Protocol,
    configuration: Mapping[str, str],
    known: KnownFiles = NO_FILES,
) -> None:
    """The deletion-vector rules for one commit's adds and removes.

    ``known`` holds the live add of each path the commit touches. Refused, naming the file: a DV on a table
    without the feature; a malformed descriptor; an add with a DV but no ``numRecords``, a cardinality above
    it, or a count different from the live file's (the same physical file); a *new* DV (a (path, DV) that
    is not live) while ``delta.enableDeletionVectors`` is not true; a re-add of a live path with another DV
    without the remove of the live (path, DV), or with a smaller DV; a remove of a live path that does not
    name its current DV; two adds or two removes of one path.
    """
    adds: dict[str, A.Add] = {}
    removes: dict[str, A.Remove] = {}
    for a in actions:
        if not isinstance(a, (A.Add, A.Remove)):
            continue
        key = path_key(a.path, known.root)
        seen = adds if isinstance(a, A.Add) else removes
        if key in seen:
            raise InvalidCommitError(
                f"{a.path}: a commit names a path in at most one {type(a).__name__.lower()}", rule="no-duplicate-paths"
            )
        seen[key] = a  # type: ignore[assignment]
        if a.deletion_vector is not None:
            if not supported(protocol):
                raise UnsupportedFeatureError(
                    f"{a.path}: carries a deletion vector, but the table does not support {FEATURE}", feature=FEATURE
                )
            check_descriptor(a.deletion_vector, a.path)
    for key, r in removes.items():
        live = known.get(r.path)
        if live is not None and key not in adds and _dv_id(r.deletion_vector) != live.dv_id:
            raise _bad(
                r.path,
                f"of the remove ({_dv_id(r.deletion_vector)}) is not the file's current one "
                f"({live.dv_id}): the live file would stay",
            )
    for key, a in adds.items():
        _check_add(a, known, removes.get(key), configuration, protocol)


def _check_add(
    add: A.Add, known: KnownFiles, remove: A.Remove | None, configuration: Mapping[str, str], protocol: A.Protocol
) -> None:
    live = known.get(add.path)
    dv = add.deletion_vector
    if dv is not None:
        n = num_records(add)
        if n is None:
            raise _bad(add.path, "needs the file's physical numRecords in the add's stats")
        if dv.cardinality > n:
            raise _bad(add.path, f"deletes {dv.cardinality} rows of a file with {n}")
        if live is not None and live.num_records is not None and n != live.num_records:
            raise _bad(add.path, f"numRecords {n} differs from the file's {live.num_records} (the same file)")
    if live is None or live.dv_id == _dv_id(dv):
        if dv is not None and live is None and not new_dvs_allowed(protocol, configuration):
            raise _bad(add.path, f"is new, and {ENABLED} is not true")
        return
    if remove is None or _dv_id(remove.deletion_vector) != live.dv_id:
        raise _bad(
            add.path,
            f"changes from {live.dv_id} to {_dv_id(dv)} without removing the live (path, DV) in the same commit",
        )
    if dv is not None and not new_dvs_allowed(protocol, configuration):
        raise _bad(add.path, f"is new, and {ENABLED} is not true")
    before = live.deletion_vector.cardinality if live.deletion_vector is not None else 0
    old = before if _count(before) else 0  # another engine's odd value: no floor to compare with
    if dv is None or dv.cardinality < old:
        raise _bad(
            add.path,
            f"shrinks from {old} deleted rows to {dv.cardinality if dv else 0}: deleted rows stay "
            "deleted (merge the old vector into the new one)",
        )


def conflict_key(action: A.Add | A.Remove | A.Cdc, root: str | None = None) -> str:
    """The key concurrent commits are compared by: the canonical path, whatever the DV (as Delta Spark)."""
    return path_key(action.path, root)


def obligation(kind: str, table: TableConfiguration) -> Obligation:
    """While new DVs may be written, commits that add or remove files are checked for them."""
    if table.properties.enable_deletion_vectors and kind in (ADDS_FILES | REMOVES_FILES) - {RESTORE}:
        return Obligation(
            "deletion vectors are on: new DVs are validated and removes carry the file's current DV", "deletion_vectors"
        )
    return NONE


OBLIGATIONS: Mapping[str, Rule] = {FEATURE: obligation}


__all__ = [
    "ENABLED",
    "FEATURE",
    "OBLIGATIONS",
    "STORAGE_TYPES",
    "check_commit",
    "check_descriptor",
    "conflict_key",
    "new_dvs_allowed",
    "supported",
]
