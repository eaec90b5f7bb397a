"""Which clock a deletion judges a file's age by.

A file's modification time is the store's clock when the file was written. Judging its age by the deleting
process's clock alone lets a process whose clock runs ahead take a file another writer is still using (a
commit's temp file, a data file written but not committed yet) for an abandoned one, and delete it. The store's
clock cannot run ahead of the files it stamps, so a deletion judges by the earlier of the two: a fast process
clock never makes a young file look old, and a slow one only keeps files longer. Log cleanup's temp files and
VACUUM's data files use this one rule.
"""

from __future__ import annotations


def age_clock(now_ms: int, store_ms: int | None) -> int:
    """The time file ages are judged against: the earlier of the process clock ``now_ms`` and ``store_ms``, a time
    the store's clock is known to have reached (None: not known, so the process clock alone)."""
    return now_ms if store_ms is None else min(now_ms, store_ms)


__all__ = ["age_clock"]
