"""Delta's deletion vectors: the RoaringBitmapArray codec, DV files, and descriptors (PROTOCOL.md, "Deletion
Vectors" and appendix "Deletion Vector Format").

A DV is the set of deleted row indexes of one data file, as a 64-bit Roaring bitmap in the portable format
(an 8-byte bucket count, then per bucket its high 32 bits and a standard 32-bit Roaring bitmap) behind the
little-endian magic number 1681511377. Inline (``i``) DVs hold those bytes Z85-encoded in the log; stored
ones (``u`` relative to the table root, ``p`` absolute) sit in a DV file: a version byte ``1``, then per DV a
big-endian size, the bytes, and a big-endian CRC-32 of the bytes.

The Roaring part is ``pyroaring`` (CRoaring): it validates what it deserializes and picks array, bitmap or
run containers. What this module adds is Delta's framing and the checks a reader owes the
table: magic, size, checksum, ``cardinality``, and indexes inside the data file. Anything wrong is a
:class:`~deltalog.errors.CorruptDataError` naming the DV (its file, or the inline descriptor): reading on
would return deleted rows.

Row indexes travel as sorted, distinct ``int64`` numpy arrays.
"""

from __future__ import annotations

import array
import struct
import uuid
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
from pyroaring import BitMap64

from deltalog.actions import DeletionVector
from deltalog.core.files.pathkeys import UUID_Z85_LEN, canonical_path, dv_file_key, dv_file_name, z85_decode, z85_encode
from deltalog.data.locate import failures_named, is_absolute, read_range, resolve
from deltalog.errors import CorruptDataError, CorruptLogError, InvalidArgumentError
from deltalog.storage.base import LogStore

#: the RoaringBitmapArray "portable" serialization (the only one the protocol defines)
MAGIC = 1681511377
#: the DV file format this module reads and writes
FILE_VERSION = 1
#: keys must keep their top bit clear (Java reads them signed), so indexes stay below 2**63
MAX_INDEX = (1 << 63) - 1
#: a stored DV this close to the start of its file is read from byte 0, so the version byte is checked too
_HEAD_CHECK_LIMIT = 1 << 16

Rows = Any  # an iterable of ints, a numpy integer array, or a pyarrow integer array


def as_rows(rows: Rows) -> np.ndarray:
    """Row indexes as a sorted, distinct ``int64`` array; refused (typed) when negative or not integers."""
    try:
        if isinstance(rows, np.ndarray):
            values = rows
        elif hasattr(rows, "to_numpy"):  # pyarrow arrays (nulls make floats, refused below)
            values = np.asarray(rows.to_numpy(zero_copy_only=False))
        else:
            values = np.asarray(list(rows))
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidArgumentError(f"row indexes must be integers: {exc}") from None
    if values.size == 0:
        return np.empty(0, dtype=np.int64)
    if values.dtype.kind not in "iu":
        raise InvalidArgumentError(f"row indexes must be integers, not {values.dtype}")
    if values.dtype.kind == "i" and values.min() < 0:
        raise InvalidArgumentError(f"row index {int(values.min())} is negative")
    if int(values.max()) > MAX_INDEX:
        raise InvalidArgumentError(f"row index {int(values.max())} is beyond the format's 2**63 - 1")
    return np.unique(values.astype(np.int64))


# ------------------------------------------------------------------------------------------ the bitmap
def encode_bitmap(rows: Rows) -> bytes:
    """The RoaringBitmapArray bytes of a set of row indexes: magic, then the portable 64-bit bitmap."""
    values = as_rows(rows)
    bitmap = BitMap64(array.array("Q", values.astype(np.uint64).tobytes()))
    bitmap.run_optimize()
    return struct.pack("<I", MAGIC) + bitmap.serialize()


def decode_bitmap(data: bytes, source: str) -> np.ndarray:
    """The row indexes in RoaringBitmapArray bytes; ``source`` names the DV in errors."""
    if len(data) < 4:
        raise CorruptDataError(f"deletion vector {source}: {len(data)} bytes hold no magic number", path=source)
    (magic,) = struct.unpack_from("<I", data)
    if magic != MAGIC:
        raise CorruptDataError(
            f"deletion vector {source}: magic number {magic} is not the RoaringBitmapArray format's {MAGIC}",
            path=source,
        )
    try:
        bitmap = BitMap64.deserialize(bytes(data[4:]))
    except (ValueError, OverflowError) as exc:
        message = f"deletion vector {source}: not a valid 64-bit Roaring bitmap: {exc}"
        raise CorruptDataError(message, path=source) from None
    if len(bitmap) and bitmap.max() > MAX_INDEX:
        raise CorruptDataError(f"deletion vector {source}: a bucket key has its top bit set", path=source)
    return np.frombuffer(bitmap.to_array(), dtype=np.uint64).view(np.int64)


# ------------------------------------------------------------------------------------------ DV files
def frame(bitmap: bytes) -> bytes:
    """One stored DV: big-endian size, the bitmap bytes, their big-endian CRC-32."""
    return struct.pack(">I", len(bitmap)) + bitmap + struct.pack(">I", zlib.crc32(bitmap))


def dv_file_bytes(bitmap: bytes) -> bytes:
    """A whole DV file holding one DV, which starts at offset 1."""
    return bytes([FILE_VERSION]) + frame(bitmap)


def unframe(chunk: bytes, size_in_bytes: int, source: str) -> bytes:
    """The bitmap bytes of a stored DV; ``chunk`` starts at the descriptor's offset (size, data, checksum)."""
    if len(chunk) < 8 + size_in_bytes:
        raise CorruptDataError(
            f"deletion vector {source}: the file ends before the {size_in_bytes} bytes the log announces",
            path=source,
        )
    (size,) = struct.unpack_from(">I", chunk)
    if size != size_in_bytes:
        raise CorruptDataError(
            f"deletion vector {source}: the file says {size} bytes, the log's sizeInBytes {size_in_bytes}",
            path=source,
        )
    data = chunk[4 : 4 + size]
    (checksum,) = struct.unpack_from(">I", chunk, 4 + size)
    if zlib.crc32(data) != checksum:
        raise CorruptDataError(f"deletion vector {source}: CRC-32 checksum mismatch", path=source)
    return data


# ------------------------------------------------------------------------------------------ descriptors
def dv_location(store: LogStore, dv: DeletionVector) -> str | None:
    """Where a stored DV's file is (store key, or absolute path outside the root); None for inline DVs."""
    if dv.storage_type == "i":
        return None
    if dv.storage_type == "u":
        try:
            return dv_file_key("u", dv.path_or_inline_dv, store.root)
        except CorruptLogError as exc:
            raise CorruptDataError(str(exc), path=dv.path_or_inline_dv) from None
    if dv.storage_type == "p":
        if not is_absolute(canonical_path(dv.path_or_inline_dv)):
            raise CorruptDataError(
                f"deletion vector {dv.path_or_inline_dv!r}: storage type 'p' needs an absolute path",
                path=dv.path_or_inline_dv,
            )
        return resolve(store, dv.path_or_inline_dv)
    raise CorruptDataError(
        f"deletion vector {dv.unique_id!r}: unknown storage type {dv.storage_type!r}", path=dv.path_or_inline_dv
    )


def _inline_bitmap(dv: DeletionVector) -> bytes:
    source = f"inline {dv.path_or_inline_dv!r}"
    try:
        raw = z85_decode(dv.path_or_inline_dv)
    except ValueError as exc:
        raise CorruptDataError(f"deletion vector {source}: {exc}", path=source) from None
    if not 0 <= dv.size_in_bytes <= len(raw):
        raise CorruptDataError(
            f"deletion vector {source}: sizeInBytes {dv.size_in_bytes} does not fit its {len(raw)} bytes", path=source
        )
    return raw[: dv.size_in_bytes]


def _stored_bitmap(store: LogStore, dv: DeletionVector, where: str) -> bytes:
    offset = 0 if dv.offset is None else dv.offset
    size = dv.size_in_bytes
    if offset < 0 or size < 0:
        raise CorruptDataError(f"deletion vector {where}: offset {offset}, sizeInBytes {size}", path=where)
    if 1 <= offset <= _HEAD_CHECK_LIMIT:
        chunk = read_range(store, where, 0, offset + 8 + size, where)
        if chunk[:1] != bytes([FILE_VERSION]):
            version = chunk[0] if chunk else None
            raise CorruptDataError(f"deletion vector {where}: file format version {version}, not 1", path=where)
        chunk = chunk[offset:]
    else:
        chunk = read_range(store, where, offset, 8 + size, where)
    return unframe(chunk, size, where)


def read_deletion_vector(store: LogStore, dv: DeletionVector, num_records: int | None = None) -> np.ndarray:
    """The deleted row indexes of a DV (sorted ``int64``), checked against its descriptor.

    ``num_records``, the data file's physical row count when known, must exceed every index.
    """
    where = dv_location(store, dv)
    bitmap = _inline_bitmap(dv) if where is None else _stored_bitmap(store, dv, where)
    source = where or f"inline {dv.path_or_inline_dv!r}"
    rows = decode_bitmap(bitmap, source)
    if len(rows) != dv.cardinality:
        raise CorruptDataError(
            f"deletion vector {source}: {len(rows)} rows, the log's cardinality {dv.cardinality}", path=source
        )
    if num_records is not None and len(rows) and int(rows[-1]) >= num_records:
        raise CorruptDataError(
            f"deletion vector {source}: deletes row {int(rows[-1])} of a file with {num_records} rows", path=source
        )
    return rows


def _checked(rows: Rows, num_records: int | None) -> np.ndarray:
    values = as_rows(rows)
    if values.size == 0:
        raise InvalidArgumentError("a deletion vector needs at least one row index")
    if num_records is not None and int(values[-1]) >= num_records:
        raise InvalidArgumentError(f"row index {int(values[-1])} is beyond the file's {num_records} rows")
    return values


def inline_deletion_vector(rows: Rows, num_records: int | None = None) -> DeletionVector:
    """A DV held in the log itself (``i``): for a handful of rows, no file to write or vacuum."""
    values = _checked(rows, num_records)
    bitmap = encode_bitmap(values)
    return DeletionVector("i", z85_encode(bitmap), len(bitmap), len(values))


def write_deletion_vector(store: LogStore, rows: Rows, num_records: int | None = None) -> DeletionVector:
    """Write a new DV file ``deletion_vector_<uuid>.bin`` at the table root; its ``u`` descriptor.

    The name is a fresh UUID and the write is ``put_if_absent``: a DV file is never overwritten, so a
    descriptor in the log always means the bytes it was committed with.
    """
    return write_deletion_vectors(store, [rows], [num_records])[0]


def write_deletion_vectors(
    store: LogStore, rows: Sequence[Rows], num_records: Sequence[int | None] | None = None
) -> list[DeletionVector]:
    """Write several DVs into one new DV file, as Delta Spark packs the DVs of one task: the version byte, then
    each DV framed (size, bytes, CRC-32) at the offset its ``u`` descriptor gives. One file per delete, not per
    data file, keeps a delete touching thousands of files from writing thousands of objects."""
    counts = list(num_records) if num_records is not None else [None] * len(rows)
    if len(counts) != len(rows):
        raise InvalidArgumentError(f"{len(rows)} row sets but {len(counts)} record counts")
    if not rows:
        return []
    parts, placed = [bytes([FILE_VERSION])], []
    offset = 1
    for values, n in zip(rows, counts, strict=True):
        checked = _checked(values, n)
        bitmap = encode_bitmap(checked)
        parts.append(frame(bitmap))
        placed.append((offset, len(bitmap), len(checked)))
        offset += len(parts[-1])
    ident = uuid.uuid4()
    key = dv_file_name(ident)
    with failures_named(key):
        store.put_if_absent(key, b"".join(parts))
    encoded = z85_encode(ident.bytes)
    assert len(encoded) == UUID_Z85_LEN
    return [DeletionVector("u", encoded, size, cardinality, offset=at) for at, size, cardinality in placed]


def merge_deletion_vector(
    store: LogStore, existing: DeletionVector | None, rows: Rows, num_records: int | None = None
) -> DeletionVector:
    """A DV deleting the rows ``existing`` deletes and ``rows``: never smaller (Delta Spark's removeRows).

    With nothing new to delete, ``existing`` itself comes back, so the caller can leave the file alone.
    """
    added = _checked(rows, num_records)
    if existing is None:
        return write_deletion_vector(store, added, num_records)
    old = read_deletion_vector(store, existing, num_records)
    union = np.union1d(old, added)
    if len(union) == len(old):
        return existing
    return write_deletion_vector(store, union, num_records)


__all__ = [
    "FILE_VERSION",
    "MAGIC",
    "MAX_INDEX",
    "as_rows",
    "decode_bitmap",
    "dv_file_bytes",
    "dv_location",
    "encode_bitmap",
    "frame",
    "inline_deletion_vector",
    "merge_deletion_vector",
    "read_deletion_vector",
    "unframe",
    "write_deletion_vector",
    "write_deletion_vectors",
]
