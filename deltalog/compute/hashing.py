"""``hash``, ``xxhash64``, ``md5`` and ``sha2`` bit for bit as Spark computes them.

``hash`` is Murmur3 x86_32 with seed 42, chained over the arguments (each argument's hash seeds the next, a
null leaves the seed as it is), over Spark's own encodings (``HashExpression``): integers up to 32 bits and
booleans and dates as one int, longs and timestamps as one long (low word first), floats and doubles by
their bits with -0.0 as 0.0, decimals up to 18 digits as their unscaled long and wider ones as the
big-endian two's-complement bytes of the unscaled value, strings and binaries by their bytes, where Spark's
Murmur3 mixes each trailing byte (sign-extended) as a whole word. ``xxhash64`` is XXH64 with seed 42 over the
same encodings."""

from __future__ import annotations

import hashlib
import struct
from decimal import Decimal
from typing import Any

import pyarrow as pa

from deltalog.compute.columns import Session
from deltalog.expr import tree as X
from deltalog.expr import types as T

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF
_C1, _C2 = 0xCC9E2D51, 0x1B873593


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _mix_k1(k1: int) -> int:
    k1 = (k1 * _C1) & _M32
    k1 = _rotl32(k1, 15)
    return (k1 * _C2) & _M32


def _mix_h1(h1: int, k1: int) -> int:
    h1 ^= k1
    h1 = _rotl32(h1, 13)
    return (h1 * 5 + 0xE6546B64) & _M32


def _fmix(h1: int, length: int) -> int:
    h1 ^= length
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _M32
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _M32
    h1 ^= h1 >> 16
    return h1


def murmur3_int(value: int, seed: int) -> int:
    return _fmix(_mix_h1(seed, _mix_k1(value & _M32)), 4)


def murmur3_long(value: int, seed: int) -> int:
    v = value & _M64
    h1 = _mix_h1(seed, _mix_k1(v & _M32))
    h1 = _mix_h1(h1, _mix_k1(v >> 32))
    return _fmix(h1, 8)


def murmur3_bytes(data: bytes, seed: int) -> int:
    aligned = len(data) - len(data) % 4
    h1 = seed
    for (word,) in struct.iter_unpack("<i", data[:aligned]):
        h1 = _mix_h1(h1, _mix_k1(word & _M32))
    for b in data[aligned:]:
        signed = b - 256 if b > 127 else b
        h1 = _mix_h1(h1, _mix_k1(signed & _M32))
    return _fmix(h1, len(data))


# ---------------------------------------------------------------------------------------------- XXH64
_P1, _P2, _P3, _P4, _P5 = (
    0x9E3779B185EBCA87,
    0xC2B2AE3D27D4EB4F,
    0x165667B19E3779F9,
    0x85EBCA77C2B2AE63,
    0x27D4EB2F165667C5,
)


def _rotl64(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * _P2) & _M64
    acc = _rotl64(acc, 31)
    return (acc * _P1) & _M64


def _merge(acc: int, val: int) -> int:
    acc ^= _round(0, val)
    return (acc * _P1 + _P4) & _M64


def _avalanche(h: int) -> int:
    h ^= h >> 33
    h = (h * _P2) & _M64
    h ^= h >> 29
    h = (h * _P3) & _M64
    h ^= h >> 32
    return h


def xxh64(data: bytes, seed: int) -> int:
    n = len(data)
    i = 0
    if n >= 32:
        v1 = (seed + _P1 + _P2) & _M64
        v2 = (seed + _P2) & _M64
        v3 = seed & _M64
        v4 = (seed - _P1) & _M64
        while i + 32 <= n:
            a, b, c, d = struct.unpack_from("<QQQQ", data, i)
            v1, v2, v3, v4 = _round(v1, a), _round(v2, b), _round(v3, c), _round(v4, d)
            i += 32
        h = (_rotl64(v1, 1) + _rotl64(v2, 7) + _rotl64(v3, 12) + _rotl64(v4, 18)) & _M64
        for v in (v1, v2, v3, v4):
            h = _merge(h, v)
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while i + 8 <= n:
        (k,) = struct.unpack_from("<Q", data, i)
        h ^= _round(0, k)
        h = (_rotl64(h, 27) * _P1 + _P4) & _M64
        i += 8
    if i + 4 <= n:
        (k,) = struct.unpack_from("<I", data, i)
        h ^= (k * _P1) & _M64
        h = (_rotl64(h, 23) * _P2 + _P3) & _M64
        i += 4
    while i < n:
        h ^= (data[i] * _P5) & _M64
        h = (_rotl64(h, 11) * _P1) & _M64
        i += 1
    return _avalanche(h)


# ---------------------------------------------------------------------------------------------- encodings
def _float_bits(value: float, single: bool) -> int:
    if value == 0:
        value = 0.0
    if value != value:
        return 0x7FC00000 if single else 0x7FF8000000000000
    packed = struct.pack("<f" if single else "<d", value)
    return int.from_bytes(packed, "little")


def _unscaled(value: Decimal, scale: int) -> int:
    return int(value.scaleb(scale))


def _encoded(value: Any, t: T.DataType) -> tuple[str, Any]:
    """(``int``/``long``/``bytes``, the value) as Spark hashes it."""
    if t in (T.BYTE, T.SHORT, T.INT):
        return "int", int(value)
    if t == T.BOOLEAN:
        return "int", 1 if value else 0
    if t == T.DATE:
        return "int", int(value)
    if t in (T.LONG, T.TIMESTAMP, T.TIMESTAMP_NTZ, T.DAY_TIME):
        return "long", int(value)
    if t == T.YEAR_MONTH:
        return "int", int(value)
    if t == T.FLOAT:
        return "int", _float_bits(value, True)
    if t == T.DOUBLE:
        return "long", _float_bits(value, False)
    if isinstance(t, T.Decimal):
        unscaled = _unscaled(value, t.scale)
        if t.precision <= 18:
            return "long", unscaled
        length = (unscaled.bit_length() + 8) // 8 or 1
        return "bytes", unscaled.to_bytes(length, "big", signed=True)
    if t == T.STRING:
        return "bytes", value.encode("utf-8")
    if t == T.BINARY:
        return "bytes", bytes(value)
    raise TypeError(f"cannot hash {t.sql()}")


def _raw(arr: pa.Array, t: T.DataType) -> list[Any]:
    if t in (T.DATE, T.TIMESTAMP, T.TIMESTAMP_NTZ):
        return arr.cast(pa.int32() if t == T.DATE else pa.int64()).to_pylist()  # type: ignore[no-any-return]
    return arr.to_pylist()  # type: ignore[no-any-return]


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def _hash(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    types = [a.type for a in call.args]
    columns = [_raw(arr, t) for arr, t in zip(args, types, strict=True) if t is not None]
    murmur = call.name == "hash"
    out = []
    for row in zip(*columns, strict=True) if columns else [()] * ev.num_rows:
        h = 42
        for value, t in zip(row, types, strict=True):
            if value is None:
                continue
            assert t is not None
            kind, enc = _encoded(value, t)
            if murmur:
                h = (
                    murmur3_int(enc, h)
                    if kind == "int"
                    else murmur3_long(enc, h)
                    if kind == "long"
                    else murmur3_bytes(enc, h)
                )
            else:
                data = (
                    struct.pack("<i", _signed(enc & _M32, 32))
                    if kind == "int"
                    else (struct.pack("<q", _signed(enc & _M64, 64)) if kind == "long" else enc)
                )
                h = xxh64(data, h)
        out.append(_signed(h, 32) if murmur else _signed(h, 64))
    return pa.array(out, pa.int32() if murmur else pa.int64())


def _md5(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    return pa.array([None if v is None else hashlib.md5(v).hexdigest() for v in args[0].to_pylist()], pa.string())


_SHA2 = {0: "sha256", 224: "sha224", 256: "sha256", 384: "sha384", 512: "sha512"}


def _sha2(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    out = []
    for data, bits in zip(args[0].to_pylist(), args[1].to_pylist(), strict=True):
        name = _SHA2.get(bits) if bits is not None else None
        out.append(None if data is None or name is None else hashlib.new(name, data).hexdigest())
    return pa.array(out, pa.string())


KERNELS: dict[str, Any] = {}
KERNELS.update({"hash": _hash, "xxhash64": _hash, "md5": _md5, "sha2": _sha2})

__all__ = ["KERNELS", "murmur3_bytes", "murmur3_int", "murmur3_long", "xxh64"]
