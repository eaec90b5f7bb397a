"""Which part of a multi-part checkpoint a file action goes to: one function for every writer.

The local writer and Spark's executors both split a checkpoint by a stable hash of the action's
reconciliation key ``(path, DV id)``, so two writers racing on one version, or a Spark job and a local
writer with the same part count, produce the same parts byte for byte and either may win each part.
"""

from __future__ import annotations

import zlib

import pyarrow as pa

from deltalog.core.state.columns import array_of


def part_of(key: str, parts: int) -> int:
    """The part (0-based) of the file action with reconciliation key ``key``: crc32 of its UTF-8, mod ``parts``."""
    return zlib.crc32(key.encode()) % parts


def assign_parts(keys: pa.Array | None, parts: int) -> pa.Array | None:
    """:func:`part_of` for a column of keys (``None`` for no rows)."""
    if keys is None:
        return None
    return array_of([part_of(k, parts) for k in keys.to_pylist()], pa.int64())


__all__ = ["assign_parts", "part_of"]
