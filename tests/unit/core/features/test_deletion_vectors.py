"""Deletion vectors at the log level (issue 14 Build 2): descriptor shape, accurate numRecords, DVs that never
shrink, new DVs only while enabled, removes that carry the live DV, and conflict keys by canonical path."""

from __future__ import annotations

import uuid

import orjson
import pytest

from deltalog.core import actions as A
from deltalog.core.features import deletion_vectors as DV
from deltalog.core.files.facts import known_files
from deltalog.core.files.pathkeys import z85_encode
from deltalog.errors import InvalidCommitError, UnsupportedFeatureError

DVS = A.Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))
ON = {DV.ENABLED: "true"}
UUID_Z85 = z85_encode(uuid.UUID("d2c639aa-8816-431a-aaf6-d3fe2512ff61").bytes)


def u(cardinality: int = 2, prefix: str = "ab", offset: int | None = 1) -> A.DeletionVector:
    return A.DeletionVector("u", prefix + UUID_Z85, 40, cardinality, offset)


def inline(cardinality: int = 3, size: int = 40) -> A.DeletionVector:
    return A.DeletionVector("i", z85_encode(bytes(range(40))), size, cardinality)


def add(path: str = "f.parquet", n: int | None = 10, dv: A.DeletionVector | None = None) -> A.Add:
    stats = orjson.dumps({"numRecords": n}).decode() if n is not None else None
    return A.Add(path, {}, 100, 1, True, stats=stats, deletion_vector=dv)


def remove(path: str = "f.parquet", dv: A.DeletionVector | None = None) -> A.Remove:
    return A.Remove(path, 5, True, deletion_vector=dv)


def test_valid_descriptors() -> None:
    for dv in (
        u(),
        u(prefix=""),
        u(offset=None),
        inline(),
        inline(size=37),
        A.DeletionVector("p", "s3://b/t/dv.bin", 9, 1, 4),
    ):
        DV.check_descriptor(dv, "f.parquet")


@pytest.mark.parametrize(
    ("dv", "message"),
    [
        (A.DeletionVector("x", UUID_Z85, 40, 1), "storageType"),
        (A.DeletionVector("u", "", 40, 1), "pathOrInlineDv"),
        (A.DeletionVector("u", "short", 40, 1), "shorter"),
        (A.DeletionVector("u", "ab" + "~" * 20, 40, 1), "Z85"),
        (A.DeletionVector("u", UUID_Z85, 0, 1), "sizeInBytes"),
        (A.DeletionVector("u", UUID_Z85, 40, 0), "cardinality"),
        (A.DeletionVector("u", UUID_Z85, 40, True), "cardinality"),  # type: ignore[arg-type]
        (A.DeletionVector("u", UUID_Z85, 40, 1, -1), "offset"),
        (A.DeletionVector("i", z85_encode(bytes(8)), 8, 1, 0), "no offset"),
        (A.DeletionVector("i", "abcd", 8, 1), "Z85"),
        (A.DeletionVector("i", z85_encode(bytes(8)), 30, 1), "inline bytes"),
        (A.DeletionVector("p", "relative/dv.bin", 9, 1), "absolute"),
    ],
)
def test_malformed_descriptors(dv: A.DeletionVector, message: str) -> None:
    with pytest.raises(InvalidCommitError, match=message) as info:
        DV.check_descriptor(dv, "f.parquet")
    assert "f.parquet" in str(info.value) and info.value.rule == "deletion-vector"


def test_a_dv_delete_grows_the_vector_and_removes_the_live_one() -> None:
    live = known_files([add(dv=u(2))])
    DV.check_commit([remove(dv=u(2)), add(dv=inline(3))], DVS, ON, live)
    DV.check_commit([remove(dv=u(2)), add(dv=inline(2))], DVS, ON, live)  # equal: never smaller
    first = known_files([add()])
    DV.check_commit([remove(), add(dv=u(1))], DVS, ON, first)  # the first DV of a file


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        ([remove(dv=u(2)), add(dv=inline(1))], "shrinks"),
        ([remove(dv=u(2)), add()], "shrinks"),  # dropping the DV would bring deleted rows back
        ([add(dv=inline(3))], "without removing"),
        ([remove(dv=inline(9)), add(dv=inline(3))], "without removing"),
        ([remove()], "not the file's current one"),
        ([remove(dv=u(2)), add(n=None, dv=inline(3))], "numRecords"),
        ([remove(dv=u(2)), add(n=2, dv=inline(3))], "deletes 3 rows of a file with 2"),
        ([remove(dv=u(2)), add(n=11, dv=inline(3))], "differs from the file's 10"),
        ([remove(dv=u(2)), add(dv=inline(3)), add(dv=inline(4))], "at most one"),
    ],
)
def test_dv_rule_violations(actions: list[A.Action], message: str) -> None:
    live = known_files([add(dv=u(2))])
    with pytest.raises(InvalidCommitError, match=message) as info:
        DV.check_commit(actions, DVS, ON, live)
    assert "f.parquet" in str(info.value)


def test_new_dvs_only_while_enabled() -> None:
    live = known_files([add(dv=u(2))])
    with pytest.raises(InvalidCommitError, match="enableDeletionVectors"):
        DV.check_commit([remove(dv=u(2)), add(dv=inline(3))], DVS, {}, live)
    with pytest.raises(InvalidCommitError, match="enableDeletionVectors"):
        DV.check_commit([add("new.parquet", dv=inline(1))], DVS, {DV.ENABLED: "false"})
    # existing DVs stay writable while disabled: re-committing (path, DV) or removing it
    DV.check_commit([add(dv=u(2))], DVS, {}, live)
    DV.check_commit([remove(dv=u(2))], DVS, {}, live)
    with pytest.raises(UnsupportedFeatureError, match="does not support") as info:
        DV.check_commit([add("new.parquet", dv=inline(1))], A.Protocol(1, 2), ON)
    assert info.value.feature == "deletionVectors"


def test_paths_match_however_they_are_spelled() -> None:
    live = known_files([add("a%20b/f.parquet", dv=u(2))], root="/data/t")
    DV.check_commit([remove("/data/t/a b/f.parquet", dv=u(2)), add("a%20b/f.parquet", dv=inline(3))], DVS, ON, live)
    assert (
        DV.conflict_key(remove("a%20b/f.parquet", dv=u(2)))
        == DV.conflict_key(add("a b/./f.parquet"))
        == "a b/f.parquet"
    )
    assert DV.conflict_key(add("file:/data/t/x.parquet"), "/data/t") == "x.parquet"


def test_enablement_helpers() -> None:
    assert DV.supported(DVS) and not DV.supported(A.Protocol(1, 7, None, ("appendOnly",)))
    assert DV.new_dvs_allowed(DVS, ON) and not DV.new_dvs_allowed(DVS, {})
