"""VACUUM planning (deltalog.core.plans.vacuum): Z85, deletion-vector files, hidden paths, path matching.

The UUIDs expected below are the ones in the names of the deletion-vector files that Delta Spark wrote
next to the corpus logs that reference them, so the decoding is checked against an independent writer.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deltalog.core.plans.vacuum import (
    Z85_ALPHABET,
    FileRef,
    ListedFile,
    dv_file_key,
    is_hidden,
    is_hidden_path,
    plan_vacuum,
    protected_keys,
    z85_decode,
)
from deltalog.errors import CorruptLogError

ROOT = "/data/t"
DAY = 86_400_000
NOW = 1_781_524_800_000


def z85_encode(data: bytes) -> str:
    """The inverse, written here from the spec so the round trip checks decode independently."""
    out = []
    for i in range(0, len(data), 4):
        value = int.from_bytes(data[i : i + 4], "big")
        chunk = []
        for _ in range(5):
            value, digit = divmod(value, 85)
            chunk.append(Z85_ALPHABET[digit])
        out.append("".join(reversed(chunk)))
    return "".join(out)


def test_z85_spec_test_vector() -> None:
    # ZeroMQ RFC 32: the 8 bytes below encode as "HelloWorld"
    assert z85_decode("HelloWorld") == bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B])


@pytest.mark.parametrize(
    ("encoded", "expected"),
    [
        ("ITfmIXOK!>U^L:if1E+a", "8aebe228-b96c-4831-b0b6-22882eb9a3d3"),  # dat/deletion_vectors
        ("vBn[lx{q8@P<9BNH/isA", "61d16c75-6994-46b7-a15b-8b538852e50e"),  # delta-rs/table-with-dv-small
        ("^jP?.<zvDfIGb{C.FPij", "d12e7d16-e46d-48c9-8a71-b222c26dfc3b"),  # delta/log-replay-dv-key-cases
    ],
)
def test_z85_decodes_the_uuids_spark_wrote(encoded: str, expected: str) -> None:
    assert str(uuid.UUID(bytes=z85_decode(encoded))) == expected


@given(st.binary(min_size=0, max_size=64).map(lambda b: b[: len(b) - len(b) % 4]))
def test_z85_round_trips(data: bytes) -> None:
    assert z85_decode(z85_encode(data)) == data


@pytest.mark.parametrize("bad", ["abcd", "abc\x00e", "#####", "Hello World"])
def test_z85_rejects_what_is_not_z85(bad: str) -> None:
    with pytest.raises(ValueError):
        z85_decode(bad)


# ---------------------------------------------------------------------------------------------- DV files
def test_uuid_dv_without_and_with_a_prefix() -> None:
    assert dv_file_key("u", "ITfmIXOK!>U^L:if1E+a", ROOT) == "deletion_vector_8aebe228-b96c-4831-b0b6-22882eb9a3d3.bin"
    assert dv_file_key("u", "ab" + "ITfmIXOK!>U^L:if1E+a", ROOT) == (
        "ab/deletion_vector_8aebe228-b96c-4831-b0b6-22882eb9a3d3.bin"
    )


def test_absolute_dv_paths_are_decoded_once_and_made_relative_under_the_root() -> None:
    p = "file:/data/t/folder%26with%25special%20char/test%25dv%25prefix-deletion_vector_67bc892e.bin"
    assert dv_file_key("p", p, ROOT) == "folder&with%special char/test%dv%prefix-deletion_vector_67bc892e.bin"
    assert dv_file_key("p", "s3://other/bucket/dv.bin", ROOT) == "s3://other/bucket/dv.bin"


def test_inline_and_missing_dvs_have_no_file() -> None:
    assert dv_file_key("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", ROOT) is None
    assert dv_file_key(None, None, ROOT) is None
    assert dv_file_key("u", None, ROOT) is None


@pytest.mark.parametrize("bad", ["short", "ab" + "ITfmIXOK!>U^L:if1E+ "])
def test_a_malformed_uuid_dv_is_a_corrupt_log_not_a_guess(bad: str) -> None:
    with pytest.raises(CorruptLogError):
        dv_file_key("u", bad, ROOT)


# ---------------------------------------------------------------------------------------------- hidden
@pytest.mark.parametrize(
    ("name", "partitions", "hidden"),
    [
        ("_delta_log", (), True),
        ("_tmp", (), True),
        (".spark-staging", (), True),
        ("metadata", (), True),  # Iceberg metadata under UniForm
        ("_change_data", (), False),
        ("_delta_index", (), False),
        ("_p=1", ("_p",), False),
        ("_p=1", ("p",), True),
        ("p=1", ("p",), False),
        ("part-0.parquet", (), False),
        (".part-0.parquet.crc", (), True),
    ],
)
def test_hidden_names(name: str, partitions: tuple[str, ...], hidden: bool) -> None:
    assert is_hidden(name, partitions) is hidden


def test_a_path_is_hidden_when_any_segment_is() -> None:
    assert is_hidden_path("_delta_log/00000000000000000000.json")
    assert is_hidden_path("_delta_log", ("_delta_log",))  # never, whatever the partition columns
    assert is_hidden_path("p=1/_temporary/0/part.parquet", ("p",))
    assert not is_hidden_path("_change_data/cdc-0.parquet")
    assert not is_hidden_path("_p=1/q=2/part.parquet", ("_p", "q"))


# ---------------------------------------------------------------------------------------------- references
def test_log_paths_are_decoded_exactly_once_and_resolved_against_the_root() -> None:
    refs = [
        FileRef("x=A%252FA/part-1.parquet"),  # the directory is literally "x=A%2FA"
        FileRef("c2=+%20%253D%25250/part-2.parquet"),
        FileRef("file:/data/t/a%20b.parquet"),
        FileRef("file:///data/t/sub/c.parquet"),
        FileRef("/data/t/d.parquet"),
        FileRef("s3://elsewhere/e.parquet"),  # outside the root: never a deletion candidate anyway
        FileRef("../escape.parquet"),
        FileRef("f.parquet", "u", "ITfmIXOK!>U^L:if1E+a"),
    ]
    assert protected_keys(refs, ROOT) == {
        "x=A%2FA/part-1.parquet",
        "c2=+ %3D%250/part-2.parquet",
        "a b.parquet",
        "sub/c.parquet",
        "d.parquet",
        "f.parquet",
        "deletion_vector_8aebe228-b96c-4831-b0b6-22882eb9a3d3.bin",
    }


# ---------------------------------------------------------------------------------------------- the plan
def test_the_plan_deletes_old_unreferenced_visible_files_only() -> None:
    old = NOW - 30 * DAY
    listed = [
        ListedFile("live.parquet", 10, old),
        ListedFile("gone.parquet", 20, old),
        ListedFile("p=1/gone.parquet", 30, old),
        ListedFile("fresh.parquet", 40, NOW - DAY),
        ListedFile("edge.parquet", 50, NOW - 7 * DAY),  # exactly at the cutoff: not older, kept
        ListedFile("_delta_log/00000000000000000000.json", 1, old),
        ListedFile("_tmp/x.parquet", 1, old),
        ListedFile(".hidden", 1, old),
        ListedFile("_change_data/cdc-0.parquet", 60, old),
    ]
    plan = plan_vacuum(listed, {"live.parquet"}, NOW, 7 * DAY, ("p",))
    assert [f.path for f in plan.deletions] == ["_change_data/cdc-0.parquet", "gone.parquet", "p=1/gone.parquet"]
    assert (plan.scanned, plan.protected, plan.too_recent) == (6, 1, 2)
    assert plan.total_bytes == 110
    assert plan.cutoff_ms == plan.tombstone_cutoff_ms == NOW - 7 * DAY


def test_zero_retention_still_keeps_what_is_referenced() -> None:
    listed = [ListedFile("a.parquet", 1, NOW - 1), ListedFile("b.parquet", 1, NOW - 1)]
    plan = plan_vacuum(listed, {"a.parquet"}, NOW, 0)
    assert [f.path for f in plan.deletions] == ["b.parquet"]
