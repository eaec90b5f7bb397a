"""Space-filling curve keys for rows: Z-order (``OPTIMIZE ZORDER BY``) and Hilbert (liquid clustering).

Delta Spark's way (``MultiDimClustering``, ``ZOrderClustering``, ``HilbertClustering``), facts only: each
column's values are first turned into *range ids*, the value's quantile bucket, so that every column spreads
over the same number of buckets whatever its type and distribution; the ids are then combined into one key
per row, by interleaving their bits (Z-order) or by the Hilbert curve's index (which keeps neighbouring keys
neighbours in every dimension, so a file's bounding box is tighter). Rows sorted by the key and cut into
files of the target size give files whose min/max statistics cover small boxes of the columns' space, which
is what lets a filter on several columns skip most files.

Range ids come from equal-frequency buckets: numeric and temporal columns from the quantiles of an evenly
spaced sample (as Spark's ``range_partition_id`` samples), other orderable types from their exact ranks.
Nulls sort first. Everything is vectorised with numpy over Arrow buffers; nothing here is per-row Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import InvalidArgumentError

ZORDER = "zorder"
HILBERT = "hilbert"
CURVES = (ZORDER, HILBERT)
#: bits of range id per column (65,536 buckets; Spark uses 1,000), fewer when many columns share 64 bits
MAX_BITS = 16
#: values sampled per column to place the bucket boundaries
SAMPLE = 1 << 17

Column: TypeAlias = "pa.Array | pa.ChunkedArray"


def bits_for(columns: int) -> int:
    """Bits of range id per column for ``columns`` columns in a 64-bit key."""
    if columns < 1 or columns > 64:
        raise InvalidArgumentError(f"a curve needs 1 to 64 columns, not {columns}")
    return min(MAX_BITS, 64 // columns)


def _numeric(column: Column) -> np.ndarray | None:
    """The column's values as a numpy array that sorts as the column does (None: not a numeric type); nulls
    read as 0 (they are put in bucket 0 afterwards)."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    t = arr.type
    if pa.types.is_temporal(t):
        arr = arr.view(pa.int32() if t.bit_width == 32 else pa.int64())
    elif pa.types.is_boolean(t):
        arr = arr.cast(pa.int8())
    elif not (pa.types.is_integer(t) or pa.types.is_floating(t)):
        return None
    if arr.null_count:
        arr = pc.fill_null(arr, pa.scalar(0, arr.type))
    return np.asarray(arr.to_numpy(zero_copy_only=False))


def range_ids(column: Column, bits: int) -> np.ndarray:
    """Each row's quantile bucket of ``column`` in ``[0, 2**bits)`` as ``uint64``; nulls in bucket 0."""
    n = len(column)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    values = _numeric(column)
    valid = None
    if column.null_count:
        valid = np.asarray(pc.is_valid(column).to_numpy(zero_copy_only=False), dtype=bool)
    if values is not None:
        present = values if valid is None else values[valid]
        step = max(1, len(present) // SAMPLE)
        sample = np.sort(present[::step])
        if len(sample) == 0:
            return np.zeros(n, dtype=np.uint64)
        # the approximate rank of each value among the sample, scaled to the buckets: equal frequency (in place:
        # a column of 10M rows is 80 MB per temporary)
        ids = np.searchsorted(sample, values, side="left").view(np.uint64)
        del values
        np.left_shift(ids, np.uint64(bits), out=ids)
        np.floor_divide(ids, np.uint64(len(sample)), out=ids)
    else:
        try:
            rank = pc.rank(column, sort_keys=[("", "ascending")], tiebreaker="min")
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise InvalidArgumentError(f"cannot order values of type {column.type} for a curve: {exc}") from None
        r = np.asarray(rank.to_numpy(), dtype=np.uint64)
        ids = ((r - np.uint64(1)) << np.uint64(bits)) // np.uint64(n)
    if valid is not None:
        ids = np.where(valid, ids, np.uint64(0))
    return ids


def _spread_table(k: int) -> np.ndarray:
    """For each byte value, its 8 bits spread ``k`` positions apart (bit i to bit i*k)."""
    out = np.zeros(256, dtype=np.uint64)
    for v in range(256):
        s = 0
        for i in range(8):
            s |= ((v >> i) & 1) << (i * k)
        out[v] = s
    return out


def interleave(ids: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """The Z-order key of each row: bit ``b`` of column ``j`` goes to bit ``b*k + (k-1-j)``, so the first
    column's bits are the most significant of each level."""
    k = len(ids)
    n = len(ids[0]) if k else 0
    key = np.zeros(n, dtype=np.uint64)
    table = _spread_table(k)
    mask = np.uint64(255)
    chunk = np.empty(n, dtype=np.uint64)  # two scratch columns, reused: no temporary per step
    spread = np.empty(n, dtype=np.uint64)
    for j, column in enumerate(ids):
        shift = k - 1 - j
        for byte in range(0, bits, 8):
            np.right_shift(column, np.uint64(byte), out=chunk)
            np.bitwise_and(chunk, mask, out=chunk)
            np.take(table, chunk.view(np.int64), out=spread)
            np.left_shift(spread, np.uint64(byte * k + shift), out=spread)
            np.bitwise_or(key, spread, out=key)
    return key


def hilbert(ids: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """The Hilbert index of each row's point (Skilling's transpose algorithm, vectorised over rows)."""
    x = [np.array(c, dtype=np.uint64) for c in ids]
    k = len(x)
    if k == 1:
        only: np.ndarray = x[0].copy()
        return only
    top = np.uint64(1 << (bits - 1))
    q = top
    while q > 1:  # undo excess work: invert or exchange low bits
        p = q - np.uint64(1)
        for i in range(k):
            hit = (x[i] & q) != 0
            swap = (x[0] ^ x[i]) & p
            x[0] = np.where(hit, x[0] ^ p, x[0] ^ swap)
            if i:
                x[i] = np.where(hit, x[i], x[i] ^ swap)
        q >>= np.uint64(1)
    for i in range(1, k):  # Gray encode
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    q = top
    while q > 1:
        t = np.where((x[k - 1] & q) != 0, t ^ (q - np.uint64(1)), t)
        q >>= np.uint64(1)
    for i in range(k):
        x[i] ^= t
    return interleave(x, bits)


def curve_keys(columns: Sequence[Column], curve: str = ZORDER) -> np.ndarray:
    """One ``uint64`` key per row of ``columns`` (equal lengths) on ``curve``."""
    if curve not in CURVES:
        raise InvalidArgumentError(f"curve {curve!r} is not one of {CURVES}")
    bits = bits_for(len(columns))
    ids = [range_ids(c, bits) for c in columns]
    return interleave(ids, bits) if curve == ZORDER else hilbert(ids, bits)


def curve_order(columns: Sequence[Column], curve: str = ZORDER) -> pa.Array:
    """The row positions that sort ``columns`` along ``curve`` (ties keep their order), for ``take``."""
    return sorted_by_curve(columns, curve)[0]


def sorted_by_curve(columns: Sequence[Column], curve: str = ZORDER) -> tuple[pa.Array, np.ndarray]:
    """The row positions that sort ``columns`` along ``curve`` (for ``take``) and the keys in that order."""
    keys = curve_keys(columns, curve)
    order = np.argsort(keys, kind="stable")
    return pa.array(order.astype(np.int64, copy=False)), keys[order]


def file_cuts(sorted_keys: np.ndarray, rows_per_file: int) -> list[int]:
    """Where to start new files in rows sorted by curve key, so that every file is one aligned cell of the curve
    holding at most ``rows_per_file`` rows.

    An aligned cell (the rows whose keys share their high bits) is a box of the columns' quantile space, on both
    curves; a file made of one cell has min/max statistics that bound that box, so a filter on the columns skips
    every file whose box it misses. Cutting at row counts instead makes files straddle cell edges, and their
    statistics then span both sides. So a cell with too many rows is halved (its next key bit), again and again,
    like a k-d tree: files hold between about half and all of ``rows_per_file`` rows where the data is spread, and
    a run of one repeated key larger than a file is split by rows. Returns the start offsets of the files after
    the first.
    """
    n = len(sorted_keys)
    cuts: list[int] = []
    todo = [(0, n, 64)]  # (first row, end row, bits still shared below the cell's prefix)
    while todo:
        lo, hi, bits = todo.pop()
        if hi == lo:
            continue
        if hi - lo <= rows_per_file:
            cuts.append(lo)
            continue
        if bits == 0:  # one key, more rows than a file: split by rows
            cuts.extend(range(lo, hi, rows_per_file))
            continue
        bit = np.uint64(1 << (bits - 1))
        base = (sorted_keys[lo] >> np.uint64(bits)) << np.uint64(bits) if bits < 64 else np.uint64(0)
        mid = lo + int(np.searchsorted(sorted_keys[lo:hi], base | bit, side="left"))
        todo.append((mid, hi, bits - 1))  # popped after the lower half: offsets come out ascending
        todo.append((lo, mid, bits - 1))
    return [c for c in cuts if 0 < c < n]


__all__ = [
    "CURVES",
    "HILBERT",
    "MAX_BITS",
    "ZORDER",
    "bits_for",
    "curve_keys",
    "curve_order",
    "file_cuts",
    "hilbert",
    "interleave",
    "range_ids",
    "sorted_by_curve",
]
