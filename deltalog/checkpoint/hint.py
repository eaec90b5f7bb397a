"""``_last_checkpoint``: the one reader (for listing) and the one writer (after a checkpoint).

Reading: the hint only says where to start listing, so anything doubtful (torn, malformed, a checksum
that does not match, something that is not a readable file in its place) reads as "no hint", with a
warning for a reader that will list the whole log instead; only a retryable storage error is raised.

Writing: last, with the spec's checksum, and only ever forward. Overwrites are not atomic everywhere and
two checkpoint writers can race, so the hint is only moved when it points at an older version, and after
writing we look at the listing: if a newer complete checkpoint appeared meanwhile (a racing writer whose
hint we may have just overwritten), the hint is pointed at it.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from deltalog.core import last_checkpoint as hints
from deltalog.core.paths import LAST_CHECKPOINT, LOG_DIR, log_files, version_prefix
from deltalog.core.segment import complete_checkpoints
from deltalog.errors import AccessDeniedError, NotFoundError, StorageError
from deltalog.storage.base import LogStore

log = logging.getLogger(__name__)
HINT = f"{LOG_DIR}/{LAST_CHECKPOINT}"


def encode_hint(info: dict[str, Any]) -> bytes:
    """The hint with ``version``, ``size`` and ``parts`` first (old readers split-read them) and a checksum."""
    ordered: dict[str, Any] = {k: info[k] for k in ("version", "size", "parts") if k in info}
    ordered.update({k: v for k, v in info.items() if k not in ordered and k != "checksum"})
    ordered["checksum"] = hints.checksum(ordered)
    return orjson.dumps(ordered)


def read_hint(store: LogStore, where: str | None = None) -> hints.LastCheckpoint | None:
    """``_last_checkpoint`` if present and sound, else ``None``; a retryable storage error is raised.

    ``where`` (the table's location) asks for a warning when a hint is there but unusable: a reader
    about to list the whole log says why. The writer, about to replace such a hint, passes none.
    """
    try:
        data = store.read(HINT)
    except NotFoundError:
        return None
    except StorageError as exc:
        if exc.retryable or isinstance(exc, AccessDeniedError):
            raise  # a listing would meet the same refusal: say it once, now
        # Only a hint: something that is not a readable file in its place (a directory, a FIFO) means list.
        _ignored(where, exc)
        return None
    try:
        return hints.parse(data)
    except hints.HintError as exc:
        _ignored(where, exc)
        return None


def _ignored(where: str | None, exc: Exception) -> None:
    if where is not None:
        log.warning("ignoring %s/%s: %s; listing the log instead", where, HINT, exc)


def update_hint(store: LogStore, info: dict[str, Any]) -> bool:
    """Point the hint at ``info['version']`` unless it already points at a newer version, or at this one
    with the same number of parts (a hint naming the right version with the wrong ``parts`` sends readers
    that trust it to files that are not there)."""
    version = int(info["version"])
    existing = read_hint(store)  # an unusable hint is replaced below, or the put says why it cannot be
    if existing is not None and (
        existing.version > version or (existing.version == version and existing.parts == info.get("parts"))
    ):
        log.info("_last_checkpoint already at version %d; leaving it", existing.version)
        return False
    try:
        store.put(HINT, encode_hint(info))
    except (OSError, StorageError) as exc:
        if isinstance(exc, StorageError) and exc.retryable:
            raise
        # The checkpoint is written and complete; without the hint readers list the log to find it.
        log.warning("could not write %s (%s); readers will find the checkpoint by listing", HINT, exc)
        return False
    newer = complete_checkpoints(log_files(store.list_from(f"{LOG_DIR}/{version_prefix(version + 1)}")))
    if newer:
        best = newer[-1]
        repaired: dict[str, Any] = {"version": best.version, "size": -1}
        if len(best.files) > 1:
            repaired["parts"] = len(best.files)
        log.info("a newer checkpoint (version %d) appeared while writing; pointing the hint at it", best.version)
        store.put(HINT, encode_hint(repaired))
    return True


__all__ = ["HINT", "encode_hint", "read_hint", "update_hint"]
