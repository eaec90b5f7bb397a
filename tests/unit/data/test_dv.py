"""Deletion vectors (deltalog.data.dv): the RoaringBitmapArray codec, DV files, inline DVs, merging, refusals.

Round trips through deltalog's own encoder and decoder would prove nothing about the format, so every encoded
bitmap is also read by :func:`oracle_decode`, written here from the RoaringFormatSpec (array, bitmap and run
containers; the 64-bit portable extension) and PROTOCOL.md's framing, independent of ``pyroaring``.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltalog.actions import DeletionVector
from deltalog.core.files.pathkeys import dv_file_key, z85_decode, z85_encode
from deltalog.data.dv import (
    MAGIC,
    as_rows,
    decode_bitmap,
    dv_file_bytes,
    encode_bitmap,
    inline_deletion_vector,
    merge_deletion_vector,
    read_deletion_vector,
    write_deletion_vector,
    write_deletion_vectors,
)
from deltalog.errors import CorruptDataError, InvalidArgumentError
from deltalog.storage.local import LocalLogStore

SETTINGS = settings(derandomize=True, deadline=None, max_examples=60)


# ---------------------------------------------------------------------------------------------- the oracle
def _roaring32(data: bytes, pos: int) -> tuple[list[int], int, set[str]]:
    """One portable 32-bit Roaring bitmap at ``pos``: its values, the end position, the container kinds seen."""
    (cookie,) = struct.unpack_from("<I", data, pos)
    pos += 4
    if cookie & 0xFFFF == 12347:
        size = (cookie >> 16) + 1
        runs = data[pos : pos + (size + 7) // 8]
        pos += (size + 7) // 8
    else:
        assert cookie == 12346, cookie
        (size,) = struct.unpack_from("<I", data, pos)
        pos += 4
        runs = bytes((size + 7) // 8)
    header = [struct.unpack_from("<HH", data, pos + 4 * i) for i in range(size)]
    pos += 4 * size
    if cookie == 12346 or size >= 4:
        pos += 4 * size  # offsets: the containers follow in order anyway
    values, kinds = [], set()
    for i, (key, card_minus_1) in enumerate(header):
        high = key << 16
        if runs[i // 8] >> (i % 8) & 1:
            (n,) = struct.unpack_from("<H", data, pos)
            pos += 2
            for _ in range(n):
                start, length = struct.unpack_from("<HH", data, pos)
                pos += 4
                values.extend(high + v for v in range(start, start + length + 1))
            kinds.add("run")
        elif card_minus_1 + 1 <= 4096:
            values.extend(high + v for v in struct.unpack_from(f"<{card_minus_1 + 1}H", data, pos))
            pos += 2 * (card_minus_1 + 1)
            kinds.add("array")
        else:
            words = struct.unpack_from("<1024Q", data, pos)
            pos += 8192
            values.extend(high + 64 * w + b for w, word in enumerate(words) for b in range(64) if word >> b & 1)
            kinds.add("bitmap")
    return values, pos, kinds


def oracle_decode(blob: bytes) -> tuple[list[int], set[str]]:
    """RoaringBitmapArray bytes -> row indexes, per PROTOCOL "Deletion Vector Format" (magic, 64-bit portable)."""
    magic, buckets = struct.unpack_from("<IQ", blob)
    assert magic == 1681511377
    pos, out, kinds = 12, [], set()
    for _ in range(buckets):
        (high,) = struct.unpack_from("<I", blob, pos)
        assert high < 1 << 31  # the protocol's extra rule: keys keep their top bit clear
        values, pos, seen = _roaring32(blob, pos + 4)
        out.extend((high << 32) + v for v in values)
        kinds |= seen
    assert pos == len(blob)
    return out, kinds


# ---------------------------------------------------------------------------------------------- Z85
def test_z85_encode_is_the_spec_and_pads_like_delta() -> None:
    assert z85_encode(bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B])) == "HelloWorld"
    assert z85_decode(z85_encode(b"abcde")) == b"abcde\0\0\0"  # padded to 4; sizeInBytes cuts it back


@SETTINGS
@given(st.binary(max_size=64))
def test_z85_round_trips(data: bytes) -> None:
    assert z85_decode(z85_encode(data))[: len(data)] == data


# ---------------------------------------------------------------------------------------------- the codec
ROWS = st.one_of(
    st.sets(st.integers(0, 70_000), max_size=300),
    # runs: long ranges become run containers; dense ones bitmap containers
    st.lists(st.tuples(st.integers(0, 1 << 34), st.integers(1, 9000)), max_size=3).map(
        lambda rs: {a + i for a, n in rs for i in range(n)}
    ),
    # beyond 32 bits, up to the format's top: several buckets
    st.sets(st.integers(0, (1 << 63) - 1), max_size=50),
)


@SETTINGS
@given(ROWS)
def test_bitmaps_round_trip_and_are_in_the_protocol_format(rows: set[int]) -> None:
    blob = encode_bitmap(sorted(rows))
    assert decode_bitmap(blob, "test").tolist() == sorted(rows)
    assert oracle_decode(blob)[0] == sorted(rows)


def test_every_container_kind_is_written_and_read() -> None:
    rows = list(range(10, 100_000)) + list(range(200_000, 260_000, 3)) + [1 << 40, (1 << 63) - 1]
    blob = encode_bitmap(rows)
    values, kinds = oracle_decode(blob)
    assert kinds == {"run", "bitmap", "array"}
    assert values == rows
    assert decode_bitmap(blob, "test").tolist() == rows


def test_the_corpus_bytes_decode() -> None:
    """delta-rs ``table-with-dv-small``'s DV (rows 0 and 9), copied from its file as bytes."""
    blob = bytes.fromhex("d1d339640100000000000000000000003a30000001000000000001001000000000000900")
    assert decode_bitmap(blob, "x").tolist() == [0, 9]


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (b"\x01\x02", "no magic"),
        (struct.pack("<I", MAGIC + 1) + encode_bitmap([1])[4:], "magic number"),
        (struct.pack("<I", MAGIC) + b"\x05" * 20, "not a valid"),
        (encode_bitmap([1, 2, 3])[:-2], "not a valid"),
    ],
)
def test_bad_bitmaps_are_corrupt_data(blob: bytes, message: str) -> None:
    with pytest.raises(CorruptDataError, match=message) as exc:
        decode_bitmap(blob, "dv.bin")
    assert exc.value.path == "dv.bin"


def test_a_bucket_key_with_its_top_bit_set_is_refused() -> None:
    blob = bytearray(encode_bitmap([5]))
    blob[12:16] = struct.pack("<I", 1 << 31)
    with pytest.raises(CorruptDataError, match="top bit"):
        decode_bitmap(bytes(blob), "dv.bin")


@SETTINGS
@given(st.data())
def test_damaged_bitmaps_decode_or_fail_typed(data: st.DataObject) -> None:
    blob = bytearray(encode_bitmap(data.draw(ROWS)))
    for _ in range(data.draw(st.integers(1, 4))):
        blob[data.draw(st.integers(4, len(blob) - 1))] = data.draw(st.integers(0, 255))
    try:
        rows = decode_bitmap(bytes(blob), "dv.bin")
    except CorruptDataError as exc:
        assert exc.path == "dv.bin"
    else:
        assert rows.tolist() == sorted(set(rows.tolist()))


def test_the_protocols_inline_example_is_refused_as_delta_spark_refuses_it() -> None:
    """PROTOCOL "JSON Example 3" holds an older big-endian layout (magic 0x6439D3D0 first); Delta Spark's
    reader rejects its magic number, and so does this one, typed, instead of returning wrong rows."""
    dv = DeletionVector("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 40, 6)
    with pytest.raises(CorruptDataError, match="magic number"):
        read_deletion_vector(LocalLogStore("/nonexistent"), dv)


@pytest.mark.parametrize("bad", [[-1], [1 << 63], [1.5], ["a"]])
def test_rows_that_are_not_row_indexes_are_refused(bad: list[object]) -> None:
    with pytest.raises(InvalidArgumentError):
        as_rows(bad)


def test_rows_come_back_sorted_and_distinct_from_any_integer_source() -> None:
    import pyarrow as pa

    assert as_rows([5, 1, 5]).tolist() == [1, 5]
    assert as_rows(np.array([3, 2], dtype=np.uint32)).tolist() == [2, 3]
    assert as_rows(pa.array([9, 4], pa.int64())).tolist() == [4, 9]
    assert as_rows([]).dtype == np.int64


# ---------------------------------------------------------------------------------------------- files
def test_a_written_dv_is_one_file_in_the_protocols_layout(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    dv = write_deletion_vector(store, [7, 3, 1 << 33], num_records=(1 << 33) + 1)
    assert (dv.storage_type, dv.offset, dv.cardinality) == ("u", 1, 3)
    assert len(dv.path_or_inline_dv) == 20
    name = dv_file_key(dv.storage_type, dv.path_or_inline_dv, str(tmp_path))
    assert name == f"deletion_vector_{uuid.UUID(bytes=z85_decode(dv.path_or_inline_dv))}.bin"
    blob = (tmp_path / name).read_bytes()
    assert blob[0] == 1
    (size,) = struct.unpack(">I", blob[1:5])
    assert size == dv.size_in_bytes == len(blob) - 9
    bitmap = blob[5 : 5 + size]
    assert struct.unpack(">I", blob[5 + size :]) == (zlib.crc32(bitmap),)
    assert oracle_decode(bitmap)[0] == [3, 7, 1 << 33]
    assert read_deletion_vector(store, dv).tolist() == [3, 7, 1 << 33]


def test_inline_dvs_round_trip(tmp_path: Path) -> None:
    dv = inline_deletion_vector([4, 2, 99])
    assert (dv.storage_type, dv.offset, dv.cardinality) == ("i", None, 3)
    assert oracle_decode(z85_decode(dv.path_or_inline_dv)[: dv.size_in_bytes])[0] == [2, 4, 99]
    assert read_deletion_vector(LocalLogStore(str(tmp_path)), dv).tolist() == [2, 4, 99]


def test_dvs_at_an_offset_with_a_prefix_and_by_absolute_path(tmp_path: Path) -> None:
    """Several DVs in one file (as Spark writes them), a ``u`` random prefix, and a ``p`` absolute path."""
    first, second = encode_bitmap([1]), encode_bitmap([2, 3])
    ident = uuid.uuid4()
    one = dv_file_bytes(first)
    blob = one + dv_file_bytes(second)[1:]
    (tmp_path / "ab").mkdir()
    (tmp_path / "ab" / f"deletion_vector_{ident}.bin").write_bytes(blob)
    store = LocalLogStore(str(tmp_path))
    code = z85_encode(ident.bytes)
    dv = DeletionVector("u", "ab" + code, len(second), 2, offset=len(one))
    assert read_deletion_vector(store, dv).tolist() == [2, 3]
    elsewhere = tmp_path / "other place" / "x.bin"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(blob)
    absolute = DeletionVector("p", "file://" + str(elsewhere).replace(" ", "%20"), len(first), 1, offset=1)
    assert read_deletion_vector(LocalLogStore(str(tmp_path / "t")), absolute).tolist() == [1]


def _stored(tmp_path: Path, rows: list[int]) -> tuple[LocalLogStore, DeletionVector, Path]:
    store = LocalLogStore(str(tmp_path))
    dv = write_deletion_vector(store, rows)
    name = dv_file_key("u", dv.path_or_inline_dv, str(tmp_path))
    assert name is not None
    return store, dv, tmp_path / name


def test_corrupt_or_missing_dv_files_are_typed_errors_naming_the_file(tmp_path: Path) -> None:
    store, dv, path = _stored(tmp_path, [1, 2, 3])
    good = path.read_bytes()
    cases = {
        "checksum": good[:-5] + bytes([good[-5] ^ 1]) + good[-4:],
        "format version": b"\x02" + good[1:],
        "file ends": good[:-3],
    }
    for message, blob in cases.items():
        path.write_bytes(blob)
        with pytest.raises(CorruptDataError, match=message) as exc:
            read_deletion_vector(store, dv)
        assert exc.value.path == path.name
    path.write_bytes(good)
    with pytest.raises(CorruptDataError, match="cardinality 4"):
        read_deletion_vector(store, dataclasses.replace(dv, cardinality=4))
    with pytest.raises(CorruptDataError, match="sizeInBytes"):
        read_deletion_vector(store, dataclasses.replace(dv, size_in_bytes=dv.size_in_bytes - 1))
    with pytest.raises(CorruptDataError, match="row 3 of a file with 3 rows"):
        read_deletion_vector(store, dv, num_records=3)
    path.unlink()
    with pytest.raises(CorruptDataError, match=path.name) as exc:
        read_deletion_vector(store, dv)
    assert exc.value.path == path.name


@pytest.mark.parametrize(
    ("dv", "message"),
    [
        (DeletionVector("x", "abc", 1, 1), "unknown storage type"),
        (DeletionVector("u", "short", 1, 1), "shorter than a Z85 UUID"),
        (DeletionVector("p", "relative/dv.bin", 1, 1, offset=1), "absolute path"),
        (DeletionVector("i", "not z85 ~~", 1, 1), "inline"),
        (DeletionVector("i", z85_encode(b"1234"), 9, 1), "sizeInBytes 9"),
    ],
)
def test_malformed_descriptors_are_typed_errors(tmp_path: Path, dv: DeletionVector, message: str) -> None:
    with pytest.raises(CorruptDataError, match=message):
        read_deletion_vector(LocalLogStore(str(tmp_path)), dv)


def test_writing_refuses_nothing_to_delete_and_rows_past_the_file(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    with pytest.raises(InvalidArgumentError, match="at least one"):
        write_deletion_vector(store, [])
    with pytest.raises(InvalidArgumentError, match="beyond the file's 10 rows"):
        write_deletion_vector(store, [3, 10], num_records=10)
    assert list(tmp_path.iterdir()) == []


def test_merging_unions_and_never_shrinks(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    first = merge_deletion_vector(store, None, [5, 1], num_records=100)
    assert read_deletion_vector(store, first).tolist() == [1, 5]
    second = merge_deletion_vector(store, first, [5, 7, 99], num_records=100)
    assert second.cardinality == 4 and second.path_or_inline_dv != first.path_or_inline_dv
    assert read_deletion_vector(store, second).tolist() == [1, 5, 7, 99]
    assert read_deletion_vector(store, first).tolist() == [1, 5]  # the old DV file is untouched
    assert merge_deletion_vector(store, second, [1, 7], num_records=100) == second  # nothing new
    inline = merge_deletion_vector(store, inline_deletion_vector([2]), [3])
    assert read_deletion_vector(store, inline).tolist() == [2, 3]


def test_several_dvs_pack_into_one_file_each_at_its_offset(tmp_path: Path) -> None:
    """One DV file per delete, as Delta Spark packs a task's DVs: each descriptor reads back its own rows."""
    store = LocalLogStore(str(tmp_path))
    sets = [[0, 5, 9], list(range(100, 5000)), [7]]
    dvs = write_deletion_vectors(store, sets, [10, 6000, 8])
    (only,) = list(tmp_path.glob("deletion_vector_*.bin"))
    assert {d.path_or_inline_dv for d in dvs} == {dvs[0].path_or_inline_dv} and dvs[0].offset == 1
    data = only.read_bytes()
    assert data[0] == 1 and len(data) == 1 + sum(8 + d.size_in_bytes for d in dvs)
    for rows, dv in zip(sets, dvs, strict=True):
        assert read_deletion_vector(store, dv).tolist() == rows and dv.cardinality == len(rows)
        size, at = dv.size_in_bytes, dv.offset or 0
        assert oracle_decode(data[at + 4 : at + 4 + size])[0] == rows  # the bytes, not just our reader
    with pytest.raises(InvalidArgumentError, match="beyond the file's 8 rows"):
        write_deletion_vectors(store, [[9]], [8])
    assert write_deletion_vectors(store, []) == []
