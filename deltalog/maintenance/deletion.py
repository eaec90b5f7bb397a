"""Deleting what a maintenance plan chose: in order, inside the root only, stopping at the first store failure.

VACUUM and log cleanup share this so both keep the same two promises: a name that would leave the table
root is never handed to the store (whatever a listing or a log said), and a failed delete stops the run with
an error that says how far it got, so the caller can run it again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from deltalog.core.pathkeys import escapes_root
from deltalog.errors import StorageError
from deltalog.storage.base import LogStore

log = logging.getLogger(__name__)


def delete_in_order(
    store: LogStore,
    paths: Sequence[str],
    what: str,
    on_deleted: Callable[[int], None] | None = None,
) -> list[str]:
    """Delete each store-relative path; the ones actually handed to the store, in order.

    A path that leaves the root is skipped with a warning (never deleted); ``what`` names the operation
    in messages; ``on_deleted(n)`` is called after the n-th deletion.
    """
    deleted: list[str] = []
    for path in paths:
        if escapes_root(path):
            log.warning("%s of %s skips %r: it is not a name under the table root", what, store.root, path)
            continue
        try:
            store.delete(path)
        except (StorageError, OSError) as exc:  # OSError: a store of the caller's that does not type its errors
            raise StorageError(
                f"{what} stopped at {path} after deleting {len(deleted)} of {len(paths)} files: {exc}",
                path=path,
                retryable=isinstance(exc, StorageError) and exc.retryable,
            ) from exc
        deleted.append(path)
        if on_deleted is not None:
            on_deleted(len(deleted))
    return deleted


__all__ = ["delete_in_order"]
