"""Deleting what a maintenance plan chose: in order, inside the root only, stopping at the first store failure.

VACUUM and log cleanup share this so both keep the same two promises: a name that would leave the table
root is never handed to the store (whatever a listing or a log said), and a failed delete stops the run with
an error that says how far it got, so the caller can run it again. Deletes go in batches of the store's
``capabilities.delete_batch`` (one request per 1,000 keys on S3, per 256 on Azure; one per file elsewhere),
batches in order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from deltalog.core.actions import Protocol
from deltalog.core.files.pathkeys import escapes_root
from deltalog.core.plans.cleanup import check_maintainable
from deltalog.errors import BulkDeleteError, StorageError, UnsupportedFeatureError
from deltalog.storage.base import LogStore
from deltalog.storage.bulk import chunked, delete_many

log = logging.getLogger(__name__)


def gate(
    operation: str, protocol: Protocol, configuration: Mapping[str, str], schema: Any, source: str, dry_run: bool
) -> str | None:
    """The writer-protocol check of a deleting operation (PROTOCOL "VACUUM Protocol Check"), run always.

    A real run that the check refuses raises the :class:`~deltalog.errors.UnsupportedFeatureError` naming the
    feature. A dry run is a read: it plans anyway (a table with an unknown feature stays inspectable) and gets
    the refusal back as text, for the result to say that the plan would not be carried out.
    """
    try:
        check_maintainable(protocol, source, operation, configuration, schema)
    except UnsupportedFeatureError as exc:
        if not dry_run:
            raise
        log.info("%s of %s planned as a dry run only: %s", operation, source, exc)
        return str(exc)
    return None


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
    inside = []
    for path in paths:
        if escapes_root(path):
            log.warning("%s of %s skips %r: it is not a name under the table root", what, store.root, path)
        else:
            inside.append(path)
    for batch in chunked(inside, max(1, store.capabilities.delete_batch)):
        try:
            delete_many(store, batch)
        except (StorageError, OSError) as exc:  # OSError: a store of the caller's that does not type its errors
            at = getattr(exc, "path", None) if getattr(exc, "path", None) in batch else batch[0]
            failed = set(exc.failed) if isinstance(exc, BulkDeleteError) else set(batch[batch.index(at) :])
            deleted.extend(p for p in batch if p not in failed)
            raise StorageError(
                f"{what} stopped at {at} after deleting {len(deleted)} of {len(paths)} files: {exc}",
                path=at,
                retryable=isinstance(exc, StorageError) and exc.retryable,
            ) from exc
        deleted.extend(batch)
        if on_deleted is not None:
            on_deleted(len(deleted))
    return deleted


__all__ = ["delete_in_order", "gate"]
