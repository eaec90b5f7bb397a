"""The store's clock, read from a probe file's modification time.

Why: a deletion that judges a file's age by its own clock alone deletes young files when that clock runs ahead
(:mod:`deltalog.core.file_age`). A file's modification time is the store's clock, so writing a small probe and
listing it gives a time the store's clock has reached, on every store alike, without comparing two machines'
wall clocks. The probe is a temp file by name (``_delta_log/.clock.<uuid>.tmp``): no log reader takes it for a
log file, it is deleted once read, and one left behind by a process that stopped in between is an abandoned
temp file that log cleanup deletes (:func:`~deltalog.core.cleanup_plan.is_temp_file`).
"""

from __future__ import annotations

import uuid

from deltalog.core.paths import LOG_DIR
from deltalog.errors import StorageError
from deltalog.storage.base import LogStore

_CONTENT = b"deltalog reads the store's clock from this file's modification time; it deletes it right after\n"


def store_now_ms(store: LogStore) -> int:
    """A time (epoch ms) the store's clock has reached: the modification time of a probe written now.

    One write, one listing bounded to the probe's name, one delete. :class:`~deltalog.errors.StorageError`
    when the probe is written but not listed (a store that does not show its own writes has no clock to read);
    a probe that cannot be written fails as the store fails.
    """
    path = f"{LOG_DIR}/.clock.{uuid.uuid4().hex}.tmp"
    store.put(path, _CONTENT)
    try:
        listed = store.list_range(path, path + "\x00")
    finally:
        store.delete(path)
    name = path.rsplit("/", 1)[1]
    for info in listed:
        if info.name == name:
            return int(info.mtime)
    raise StorageError(f"the probe {path} was written but is not listed, so the store's clock is unknown", path=path)


__all__ = ["store_now_ms"]
