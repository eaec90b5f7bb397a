"""Auto compaction: after a commit that wrote data, compact the partitions it wrote into when they hold enough
small files (``delta.autoOptimize.autoCompact``).

Delta Spark's auto compaction (facts only; its thresholds are session settings, with these defaults): a
partition qualifies when it holds at least ``autoCompact.minNumFiles`` (50) files smaller than
``autoCompact.minFileSize`` (half of ``autoCompact.maxFileSize``, 128 MiB); the qualifying partitions are then
compacted into files of up to ``maxFileSize``, committed as ``OPTIMIZE`` with ``auto: true``. The property takes
``true``/``auto``/``legacy`` (on; ``auto`` also lets Databricks tune the sizes, which deltalog does not) or
``false``.

It runs as a post-commit step of :class:`~deltalog.DeltaLog`, beside the automatic checkpoint: the commit that
triggered it has landed and is reported as such whatever happens here. A failure is logged, never raised; a
conflict with a concurrent writer is expected and logged at info level (the next commit tries again).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from deltalog.core import actions as A
from deltalog.core import optimize_plan
from deltalog.dml.optimize import OPTIMIZE, REORG, OptimizeResult, Request, optimize
from deltalog.errors import ConcurrentModificationError, DeltaLogError

if TYPE_CHECKING:
    from deltalog.table.snapshot import Snapshot
    from deltalog.table.transaction import Transaction

log = logging.getLogger(__name__)

PROPERTY = "delta.autoOptimize.autoCompact"
ON = frozenset({"true", "auto", "legacy"})
MIN_NUM_FILES = 50
MAX_FILE_SIZE = 128 * 1024 * 1024
MIN_FILE_SIZE = MAX_FILE_SIZE // 2
Key = tuple[tuple[str, str | None], ...]


def enabled(configuration: Mapping[str, str]) -> bool:
    return str(configuration.get(PROPERTY, "false")).strip().lower() in ON


def written_partitions(operation: str, actions: Iterable[A.Action]) -> frozenset[Key]:
    """The partitions a commit added data files to (none for OPTIMIZE/REORG itself, which never triggers it)."""
    if operation in (OPTIMIZE, REORG):
        return frozenset()
    return frozenset(optimize_plan.partition_key(a) for a in actions if isinstance(a, A.Add) and a.data_change)


def due(snap: Snapshot, partitions: frozenset[Key]) -> frozenset[Key]:
    """Those of ``partitions`` holding at least :data:`MIN_NUM_FILES` files under :data:`MIN_FILE_SIZE`."""
    small: dict[Key, int] = {}
    for a in snap.add_actions():
        key = optimize_plan.partition_key(a)
        if key in partitions and a.size < MIN_FILE_SIZE:
            small[key] = small.get(key, 0) + 1
    return frozenset(k for k, n in small.items() if n >= MIN_NUM_FILES)


def compact_when_due(
    start_transaction: Callable[[], Transaction], snap: Snapshot, operation: str, actions: Iterable[A.Action]
) -> OptimizeResult | None:
    """Compact the partitions a commit (``operation``, ``actions``) wrote into, on ``snap`` (the table after it),
    when the table asks for auto compaction and they qualify; None when nothing ran. Never raises."""
    try:
        if not enabled(snap.configuration):
            return None
        wanted = due(snap, written_partitions(operation, actions))
        if not wanted:
            return None
        request = Request(target_size=MAX_FILE_SIZE, min_file_size=MIN_FILE_SIZE, auto=True, partitions=wanted)
        result = optimize(start_transaction, request)
        log.info("%s: auto compaction committed version %s", snap.context.location, result.version)
        return result
    except ConcurrentModificationError as exc:
        log.info("%s: auto compaction gave way to a concurrent commit: %s", snap.context.location, exc)
    except DeltaLogError:
        log.warning("%s: auto compaction failed", snap.context.location, exc_info=True)
    except Exception:
        log.exception("%s: auto compaction failed", snap.context.location)
    return None


__all__ = [
    "MAX_FILE_SIZE",
    "MIN_FILE_SIZE",
    "MIN_NUM_FILES",
    "PROPERTY",
    "compact_when_due",
    "due",
    "enabled",
    "written_partitions",
]
