"""Strict parsing of ``_delta_log`` file names: a stray name must never look like a version."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltalog.core.log.paths import (
    Kind,
    LogPath,
    checkpoint_name,
    commit_name,
    crc_name,
    multipart_name,
    parse,
    version_prefix,
)

SETTINGS = settings(max_examples=200, deadline=None, database=None)
versions = st.integers(min_value=0, max_value=10**20 - 1)
UUID = "3a0d65cd-4056-49b8-937b-95f9e3ee90e5"


def test_commit() -> None:
    p = parse("00000000000000000007.json", size=12, mtime=34)
    assert p == LogPath("00000000000000000007.json", Kind.COMMIT, 7, 12, 34)
    assert not p.is_checkpoint


def test_classic_checkpoint() -> None:
    p = parse("00000000000000000010.checkpoint.parquet", 5)
    assert p is not None
    assert (p.kind, p.version, p.size, p.fmt) == (Kind.CHECKPOINT, 10, 5, "parquet")
    assert p.is_checkpoint


def test_multipart_checkpoint() -> None:
    p = parse("00000000000000000010.checkpoint.0000000002.0000000003.parquet")
    assert p is not None
    assert (p.kind, p.version, p.part, p.parts) == (Kind.MULTIPART, 10, 2, 3)
    assert p.is_checkpoint


@pytest.mark.parametrize("ext", ["json", "parquet"])
def test_uuid_checkpoint(ext: str) -> None:
    p = parse(f"00000000000000000002.checkpoint.{UUID}.{ext}")
    assert p is not None
    assert (p.kind, p.version, p.fmt) == (Kind.UUID_CHECKPOINT, 2, ext)
    assert p.is_checkpoint


def test_compaction() -> None:
    p = parse("00000000000000000004.00000000000000000009.compacted.json")
    assert p is not None
    assert (p.kind, p.version, p.end_version) == (Kind.COMPACTION, 4, 9)
    assert not p.is_checkpoint


def test_crc() -> None:
    p = parse("00000000000000000003.crc")
    assert p is not None and (p.kind, p.version) == (Kind.CRC, 3)


@pytest.mark.parametrize(
    "name",
    [
        # 19 and 21 digits
        "0000000000000000001.json",
        "000000000000000000001.json",
        "0000000000000000001.checkpoint.parquet",
        "000000000000000000001.checkpoint.parquet",
        "0000000000000000001.crc",
        "000000000000000000001.crc",
        # part numbers: part > parts, part 0, a single "part", wrong digit counts
        "00000000000000000010.checkpoint.0000000003.0000000002.parquet",
        "00000000000000000010.checkpoint.0000000000.0000000002.parquet",
        "00000000000000000010.checkpoint.0000000001.0000000001.parquet",
        "00000000000000000010.checkpoint.000000001.0000000002.parquet",
        "00000000000000000010.checkpoint.0000000001.00000000002.parquet",
        # compaction must cover a range x < y
        "00000000000000000004.00000000000000000004.compacted.json",
        "00000000000000000009.00000000000000000004.compacted.json",
        "0000000000000000004.00000000000000000009.compacted.json",
        # temp files of every writer, Hadoop checksums, odd suffixes
        ".00000000000000000001.json.crc",
        ".00000000000000000001.json.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.tmp",
        "00000000000000000001.json.tmp",
        "00000000000000000001.json.3a0d65cd.tmp",
        "00000000000000000001.checkpoint.parquet.tmp",
        f"_commit_{UUID}.json.tmp",
        "_commit_abc.json.tmp",
        "_last_checkpoint",
        "_sidecars",
        "00000000000000000001.JSON",
        "00000000000000000001.json ",
        " 00000000000000000001.json",
        "00000000000000000001json",
        "00000000000000000001.checkpoint.not-a-uuid.parquet",
        f"00000000000000000001.checkpoint.{UUID}.avro",
        f"00000000000000000001.checkpoint.{UUID[:-1]}.json",
        "+0000000000000000001.json",
        "-0000000000000000001.json",
        "foo.txt",
        "",
    ],
)
def test_rejects(name: str) -> None:
    assert parse(name) is None


@pytest.mark.parametrize(
    "name",
    [
        # Non-ASCII decimal digits (Arabic-Indic, Devanagari, fullwidth) are not version digits: Delta
        # versions are ASCII, and a stray file so named must be ignored, not read as a huge version.
        "\u0660" * 19 + "\u0661.json",
        "\u0966" * 20 + ".json",
        "\uff10" * 19 + "\uff11.json",
        "\u0660" * 20 + ".checkpoint.parquet",
        "00000000000000000010.checkpoint.\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0661"
        ".0000000002.parquet",
    ],
)
def test_rejects_non_ascii_digits(name: str) -> None:
    assert parse(name) is None


@SETTINGS
@given(versions)
def test_builders_round_trip(v: int) -> None:
    c = parse(commit_name(v))
    assert c is not None and (c.kind, c.version) == (Kind.COMMIT, v)
    cp = parse(checkpoint_name(v))
    assert cp is not None and (cp.kind, cp.version) == (Kind.CHECKPOINT, v)
    crc = parse(crc_name(v))
    assert crc is not None and (crc.kind, crc.version) == (Kind.CRC, v)
    assert commit_name(v).startswith(version_prefix(v))
    assert len(version_prefix(v)) == 21 and version_prefix(v).endswith(".")


@SETTINGS
@given(versions, st.integers(2, 50).flatmap(lambda n: st.tuples(st.integers(1, n), st.just(n))))
def test_multipart_round_trip(v: int, part_parts: tuple[int, int]) -> None:
    part, parts = part_parts
    p = parse(multipart_name(v, part, parts))
    assert p is not None and (p.kind, p.version, p.part, p.parts) == (Kind.MULTIPART, v, part, parts)


@SETTINGS
@given(versions, st.integers(1, 10**6))
def test_commit_names_sort_by_version(a: int, b: int) -> None:
    bb = min(a + b, 10**20 - 1)
    assert (commit_name(a) < commit_name(bb)) == (a < bb)
    # the listing prefix of a version sorts at or before every file of that version and after older ones
    assert version_prefix(a) <= checkpoint_name(a)
    if a < bb:
        assert commit_name(a) < version_prefix(bb)


@SETTINGS
@given(
    st.one_of(
        st.text("0123456789.", max_size=30),
        st.lists(
            st.sampled_from(
                [
                    "00000000000000000001",
                    "0000000002",
                    ".",
                    "json",
                    "checkpoint",
                    "parquet",
                    "crc",
                    "compacted",
                    "tmp",
                    "_",
                    "-",
                    UUID,
                    "1",
                ]
            ),
            max_size=8,
        ).map("".join),
    )
)
def test_parse_never_raises(name: str) -> None:
    p = parse(name)
    if p is not None:
        assert name[:20].isascii() and name[:20].isdigit()
        assert p.version == int(name[:20])
