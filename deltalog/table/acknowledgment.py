"""Acknowledging a commit: the outcome is ours only once a listing made after the write proves it reachable.

Put-if-absent alone would also "win" a version that log cleanup freed below a newer checkpoint, or one after a
gap: a file no reader ever replays. So the commit loop hands every version it wrote here with the listing it
made after the write, and the pure rules of :mod:`deltalog.core.reachability` decide. An orphan (provably never
visible) is withdrawn, since no writer builds on a version it cannot reach, and refused; a commit whose
visibility cannot be told is reported as an unknown outcome rather than guessed at.

The ``txnId`` stamped in our commitInfo is how a write whose response was lost is recognised as ours
(:func:`is_ours`), here and when the loop re-reads a version it thought another writer took.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol, TypeVar

import orjson

from deltalog.core.paths import LOG_DIR, LogPath, commit_name, parse
from deltalog.core.reachability import UNLISTED, Tip, Verdict, judge
from deltalog.core.state import CommitData
from deltalog.errors import CommitNotReachableError, CommitStateUnknownError, NotFoundError, StorageError
from deltalog.storage.base import LogStore
from deltalog.table.listing import list_log

log = logging.getLogger(__name__)
T = TypeVar("T")


class Transient(Protocol):
    """The commit loop's retry of read-side storage calls (within its transient budget)."""

    def __call__(self, what: str, call: Callable[[], T]) -> T: ...


@dataclass
class Outcome:
    """What the commit loop found: the version ours landed at, the winners moved past on the way, and the
    evidence it is reachable. Mutable: the loop fills it in attempt by attempt."""

    version: int
    attempts: int
    winners: list[int] = field(default_factory=list)
    winner_data: list[CommitData] = field(default_factory=list)
    ours_found_after_unknown: bool = False
    #: our commit as the listing that proved it reachable showed it (size and the store's modification time)
    listed: LogPath | None = None
    #: the bytes of the attempt that landed
    data: bytes = b""
    #: the writer's clock just before the attempt that landed was sent: the next commit's ``Young`` anchor
    sent_ms: int = 0

    def commits(self, data: bytes | None = None) -> list[CommitData]:
        """The winners read on the way and our own commit, in version order: what a snapshot of the read
        version advances by to become our version's.

        Our commit carries the time the listing showed; without one (it was acknowledged as young) the time
        is :data:`~deltalog.core.reachability.UNLISTED`, which a refresh matches by name and size.
        """
        data = self.data if data is None else data
        name = commit_name(self.version)
        listed = self.listed
        if listed is None or listed.name != name or listed.size != len(data):
            listed = parse(name, len(data), UNLISTED)
        assert listed is not None
        return [*self.winner_data, CommitData(self.version, f"{LOG_DIR}/{name}", data, listed.mtime)]


def is_ours(data: bytes, txn_id: str) -> bool:
    """Whether a commit file's bytes are the commit stamped with ``txn_id`` (its first line, the commitInfo)."""
    first = data.split(b"\n", 1)[0]
    try:
        obj = orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    info = obj.get("commitInfo") if isinstance(obj, dict) else None
    return isinstance(info, dict) and info.get("txnId") == txn_id


class Acknowledger:
    """Judges the versions one commit wrote, through the loop's store and its transient retries."""

    def __init__(self, store: LogStore, transient: Transient) -> None:
        self.store = store
        self.transient = transient

    def whole_log(self) -> list[LogPath]:
        """Every log file: what a store that lists by name prefix cannot answer from a listing after a version."""
        return self.transient("listing the log", partial(list_log, self.store, 0))

    def acknowledge(
        self, version: int, tip: Tip, listing: list[LogPath], outcome: Outcome, txn_id: str, recovered: bool
    ) -> Outcome:
        """The outcome for our commit at ``version``, once ``listing`` (made after the write) proves it reachable;
        :class:`CommitNotReachableError` (withdrawn) for an orphan, :class:`CommitStateUnknownError` when
        whether readers see it cannot be told."""
        path = f"{LOG_DIR}/{commit_name(version)}"
        judged = judge(version, tip, listing)
        if judged.verdict is not Verdict.REACHABLE:
            # A store that lists by name prefix (Azure) trusts versions to be contiguous, which they are not
            # here: only the whole log shows whether a newer checkpoint or an older file is there.
            judged = judge(version, tip, self.whole_log())
        if judged.verdict is Verdict.REACHABLE:
            outcome.version = version
            outcome.ours_found_after_unknown = recovered
            outcome.listed = judged.ours
            return outcome
        if judged.verdict is Verdict.ORPHAN:
            removed = self.withdraw(path, txn_id)
            raise CommitNotReachableError(
                f"commit {path} in {self.store.root} was not acknowledged: {judged.reason}. "
                + ("It was removed again; " if removed else "")
                + "nothing in the table changed. Start a new transaction on the latest snapshot",
                version=version,
                path=path,
            )
        raise CommitStateUnknownError(
            f"commit {path} (txnId {txn_id}) in {self.store.root} was written, but whether readers of the table "
            f"see it cannot be told: {judged.reason}. Check the latest snapshot (for an exactly-once "
            "transaction, its app version) before retrying"
        )

    def withdraw(self, path: str, txn_id: str) -> bool:
        """Delete our own unreachable commit file: safe, since no writer builds on a version it cannot reach."""
        try:
            if not is_ours(self.transient(f"reading {path}", partial(self.store.read, path)), txn_id):
                return False
            self.store.delete(path)
        except NotFoundError:
            return False
        except (StorageError, OSError, TimeoutError) as exc:
            log.warning("could not remove the unreachable commit %s (%s); readers never see it", path, exc)
            return False
        log.warning("removed our unreachable commit %s from %s", path, self.store.root)
        return True


__all__ = ["Acknowledger", "Outcome", "Transient", "is_ours"]
