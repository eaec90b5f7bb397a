"""The checkpoints a version already has, before one is written for it.

A version gets at most one checkpoint layout: a second one beside a complete checkpoint (a V2 manifest next to
a classic file, parts next to either) leaves a hint describing only one of them, and engines that pick the
other get a different file set or fail. So the writer first looks here, keeps a complete checkpoint of any
layout, and refuses to write beside a damaged one unless it is the single classic file it is about to replace.
"""

from __future__ import annotations

from deltalog.checkpoint.reader import CheckpointReader, FileActions
from deltalog.checkpoint.scan import open_parquet
from deltalog.core.paths import LOG_DIR, checkpoint_name, log_files, version_prefix
from deltalog.core.segment import CheckpointRef, complete_checkpoints
from deltalog.core.state import BaseState
from deltalog.errors import CheckpointError, CorruptLogError
from deltalog.storage.base import LogStore


def checkpoints_at(store: LogStore, version: int) -> list[CheckpointRef]:
    """The complete checkpoints of ``version`` on the store, in the order readers prefer them last."""
    listed = log_files(store.list_range(f"{LOG_DIR}/{version_prefix(version)}", version_prefix(version + 1)))
    return [c for c in complete_checkpoints(listed) if c.version == version]


def readable_checkpoint(store: LogStore, version: int, classic: bool) -> tuple[CheckpointRef, BaseState] | None:
    """The complete checkpoint of ``version`` readers would take, read; None when there is none to keep.

    ``classic``: the writer is about to write the single classic file, so a damaged checkpoint that is only that
    file (a torn copy) is left for it to replace. Any other damaged one is a :class:`CheckpointError` naming it.
    """
    damaged: list[tuple[CheckpointRef, CorruptLogError]] = []
    for ref in reversed(checkpoints_at(store, version)):  # the layout readers prefer first
        try:
            return ref, CheckpointReader(store).read_base(ref)
        except CorruptLogError as exc:
            damaged.append((ref, exc))
    if not damaged:
        return None
    ours = checkpoint_name(version)
    if classic and all(len(ref.files) == 1 and ref.files[0].name == ours for ref, _ in damaged):
        return None  # publishing replaces the torn file under our own name
    names = ", ".join(ref.files[0].name + (" (+ parts)" if len(ref.files) > 1 else "") for ref, _ in damaged)
    raise CheckpointError(
        f"version {version} already has a checkpoint that cannot be read ({names}: {damaged[0][1]}); "
        "writing another layout beside it would leave two checkpoints of one version: delete the damaged "
        "files, or checkpoint a later version"
    )


def action_count(store: LogStore, files: list[str], base: BaseState) -> int:
    """How many actions a checkpoint holds: its parquet files' rows (sidecars included), its JSON lines."""
    total = 0
    actions = base.adds_stats
    parquet = actions.files if isinstance(actions, FileActions) else [f for f in files if f.endswith(".parquet")]
    for path in parquet:
        with open_parquet(store, path) as pf:
            total += pf.metadata.num_rows
    for path in files:
        if path.endswith(".json"):
            total += sum(1 for line in store.read(path).split(b"\n") if line.strip())
    return total


__all__ = ["action_count", "checkpoints_at", "readable_checkpoint"]
