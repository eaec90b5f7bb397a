"""Writing log compaction files (PROTOCOL "Log Compaction Files"): list, plan, gate, reconcile, put-if-absent.

Why opt-in and careful: Delta Spark reads these files by default instead of the commits they cover, while
delta-rs and duckdb ignore them, so a wrong file would silently change what Spark sees and nothing else. The
content is the one reconciler's answer (:mod:`deltalog.core.state.compact`) on the very commit bytes of the
range; the file is created with ``put_if_absent`` (never overwritten), and a range is gated like a
checkpoint, which is what a compaction is for part of the log: a writer feature deltalog does not know may
give the log actions it would drop, so such tables are refused by name.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass

from deltalog.core.actions import Protocol
from deltalog.core.codec import ActionDecodeError, from_dict
from deltalog.core.compaction_plan import due, plan_range
from deltalog.core.feature_gate import CHECKPOINT, check_operation
from deltalog.core.paths import LOG_DIR, compaction_name
from deltalog.core.result_repr import result_repr
from deltalog.core.segment import LogSegment
from deltalog.core.state.compact import compacted_actions, encode
from deltalog.errors import (
    CorruptLogError,
    DeltaLogError,
    FileAlreadyExistsError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from deltalog.table import listing, load
from deltalog.table.context import TableContext
from deltalog.table.snapshot import Snapshot

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LogCompactionResult:
    """One compaction file: its range, where it is, and what happened.

    ``written`` is False on a dry run, when the range holds no action to keep (only commitInfo), and when
    the file was already there (``existed``; ``identical`` says whether with the same bytes).
    """

    start: int
    end: int
    path: str  # store-relative, _delta_log/<start>.<end>.compacted.json
    num_actions: int
    bytes: int
    written: bool
    dry_run: bool
    existed: bool = False
    identical: bool | None = None
    reason: str = ""

    @property
    def num_commits(self) -> int:
        return self.end - self.start + 1

    def __repr__(self) -> str:
        return result_repr(
            "LogCompactionResult",
            "dry_run" if self.dry_run else "",
            "written" if self.written else "",
            versions=f"{self.start}..{self.end}",
            actions=self.num_actions,
            bytes=self.bytes,
            reason=self.reason or None,
        )


def compact_log(
    ctx: TableContext, latest: Snapshot, start: int | None = None, end: int | None = None, dry_run: bool = False
) -> LogCompactionResult:
    """Write the compaction file of commits ``start..end`` (defaults: after the newest checkpoint or compaction
    file, to the latest commit); see :func:`deltalog.core.compaction_plan.plan_range` for the ranges refused.

    The checkpoint gate runs on ``latest``'s protocol and on every protocol the range itself sets.
    """
    where = f"{ctx.location}/{LOG_DIR}"
    _gate(latest.protocol, latest, where)
    if start is None:  # from the hint on: the newest checkpoint and the compactions after it
        paths = [p for p in listing.listing_and_scope(ctx, None)[0] if end is None or p.version <= end]
    else:
        paths = listing.list_log(ctx.store, start, end)
    try:
        rng = plan_range(paths, start, end, where)
    except VersionNotFoundError:
        if not start:
            raise
        # A listing from ``start`` cannot tell a cleaned-up start from a gap: the whole log can.
        rng = plan_range(listing.list_log(ctx.store, 0, end), start, end, where)
    commits = load.read_commits(ctx, LogSegment(rng.end, None, rng.commits))
    actions = compacted_actions(commits, ctx.store.root)
    for key, body in actions:
        if key == "protocol":
            _gate(_protocol(body, where, rng.start, rng.end), latest, where)
    name = f"{LOG_DIR}/{compaction_name(rng.start, rng.end)}"
    data = encode(actions)
    result = LogCompactionResult(rng.start, rng.end, name, len(actions), len(data), written=False, dry_run=dry_run)
    if not actions:
        return _with(result, reason="the commits hold no action to keep (commitInfo only): nothing written")
    if dry_run:
        return _with(result, reason="dry run: nothing written")
    try:
        ctx.store.put_if_absent(name, data)
    except FileAlreadyExistsError:
        try:
            same = ctx.store.read(name) == data
        except (DeltaLogError, OSError):  # gone again since (log cleanup): it was never ours to judge
            same = False
        if not same:
            log.warning("%s/%s exists with other content (another writer's); left as it is", ctx.location, name)
        return _with(result, existed=True, identical=same, reason="the file already exists")
    log.info("wrote %s/%s (%d commits, %d actions)", ctx.location, name, rng.end - rng.start + 1, len(actions))
    return _with(result, written=True, reason="written")


def compact_when_due(ctx: TableContext, version: int, interval: int, snapshot: Callable[..., Snapshot]) -> None:
    """After the commit of ``version``: write the compaction file of the last ``interval`` commits when due
    (:func:`deltalog.core.compaction_plan.due`). Never raises: the commit has landed, and a compaction file
    is never needed; a failure is logged, as an automatic checkpoint's is."""
    if not due(version, interval):
        return
    try:
        compact_log(ctx, snapshot(), start=version - interval + 1, end=version)
    except DeltaLogError as exc:
        log.warning(
            "log compaction of versions %d..%d not written (the commit succeeded): %s",
            version - interval + 1,
            version,
            exc,
        )
    except Exception:
        log.exception("log compaction after version %d failed; the commit itself succeeded", version)


def _with(result: LogCompactionResult, **changes: object) -> LogCompactionResult:
    return dataclasses.replace(result, **changes)  # type: ignore[arg-type]


def _protocol(body: object, where: str, start: int, end: int) -> Protocol:
    try:
        action = from_dict("protocol", body)
    except ActionDecodeError as exc:  # the exact parse vetted it already; kept for a typed error regardless
        raise CorruptLogError(f"{where}: invalid protocol in versions {start}..{end}: {exc}") from None
    assert isinstance(action, Protocol)
    return action


def _gate(protocol: Protocol, latest: Snapshot, where: str) -> None:
    """The checkpoint gate (a compaction file is a checkpoint of part of the log), said in this operation's words."""
    try:
        check_operation(CHECKPOINT, protocol, latest.configuration, latest.schema_json, where)
    except UnsupportedFeatureError as exc:
        message = str(exc).replace("cannot checkpoint", "cannot write a log compaction file", 1)
        raise UnsupportedFeatureError(message, feature=exc.feature, path=exc.path, version=exc.version) from None


__all__ = ["LogCompactionResult", "compact_log", "compact_when_due"]
