"""Columns that hold one value in every row (a file's partition value, a change row's type, commit version and
timestamp), built once and handed out as slices.

A reader of many small files fills the same few values into every batch: the change feed of a hundred
appends repeats four partition values, one change type and one version per commit into 1.7M rows, which
were 45 of the output's 105 MiB (each a fresh, zeroed allocation). A :class:`Constants` keeps the longest
column it has built per value and slices it (zero-copy) for every shorter batch, so the rows share a
buffer. It lives as long as one read (its owner makes one per read), holds at most :data:`MAX_ENTRIES`
values and :data:`MAX_BYTES` bytes per thread, least recently used first out, and is safe to share between
the read's threads (each thread keeps its own columns).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import pyarrow as pa

from deltalog.data.memory import DATA_POOL

#: distinct values each thread of a read keeps columns of (a read of many versions or partitions drops the oldest)
MAX_ENTRIES = 16
#: bytes of columns each thread of a read keeps; a longer column is built for its batch alone
MAX_BYTES = 8 << 20


class _Held(threading.local):
    def __init__(self) -> None:
        self.columns: OrderedDict[pa.Scalar, pa.Array] = OrderedDict()
        self.bytes = 0


class Constants:
    """Columns of one value per read: :meth:`column` is ``pa.repeat(value, n)``, sharing buffers. Each thread
    keeps its own columns, so the read's threads never wait for one another here."""

    def __init__(self) -> None:
        self._held = _Held()

    def column(self, value: pa.Scalar, n: int) -> pa.Array:
        """``value`` in each of ``n`` rows (of its type; a null value is a null column)."""
        held = self._held
        column = held.columns.get(value)
        if column is not None and len(column) >= n:
            held.columns.move_to_end(value)
            return column.slice(0, n)
        built = pa.repeat(value, n, memory_pool=DATA_POOL)
        if built.nbytes <= MAX_BYTES:
            old = held.columns.pop(value, None)
            held.bytes += built.nbytes - (old.nbytes if old is not None else 0)
            held.columns[value] = built
            while len(held.columns) > MAX_ENTRIES or held.bytes > MAX_BYTES:
                held.bytes -= held.columns.popitem(last=False)[1].nbytes
        return built


__all__ = ["MAX_BYTES", "MAX_ENTRIES", "Constants"]
