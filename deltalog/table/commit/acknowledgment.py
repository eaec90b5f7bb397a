"""Stage 5, acknowledged: a version the loop wrote is ours only once a listing made after the write proves it
reachable.

Put-if-absent alone would also "win" a version that log cleanup freed below a newer checkpoint, or one after a
gap: a file no reader ever replays. So the loop hands every version it wrote here as a :class:`Landed` value,
with the listing it made after the write, and the pure rules of :mod:`deltalog.core.log.reachability` decide.
An orphan (provably never visible) is withdrawn, since no writer builds on a version it cannot reach, and
refused; a commit whose visibility cannot be told is reported as an unknown outcome rather than guessed at. What
is reachable becomes :class:`Acknowledged`: the version, and the commits a snapshot of the read version advances
by to become it.

The ``txnId`` stamped in our commitInfo is how a write whose response was lost is recognised as ours
(:func:`is_ours`), here and when the loop re-reads a version it thought another writer took.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Protocol, TypeVar

import orjson

from deltalog.core.log.paths import LOG_DIR, LogPath, commit_name, parse
from deltalog.core.log.reachability import UNLISTED, Tip, Verdict, judge
from deltalog.core.state import CommitData
from deltalog.errors import CommitNotReachableError, CommitStateUnknownError, NotFoundError, StorageError
from deltalog.storage.base import LogStore
from deltalog.table.listing import list_log

log = logging.getLogger(__name__)
T = TypeVar("T")


class Transient(Protocol):
    """The commit loop's retry of read-side storage calls (within its transient budget)."""

    def __call__(self, what: str, call: Callable[[], T]) -> T: ...


@dataclass(frozen=True)
class Landed:
    """What the loop leaves: our commit written at ``version`` on top of ``tip``, and ``listing``, made after the
    write, to judge it by; the winners moved past on the way (read as the loop read them)."""

    version: int
    tip: Tip
    listing: tuple[LogPath, ...]
    #: the bytes of our commit at ``version``
    data: bytes
    attempts: int
    winners: tuple[CommitData, ...]
    #: found by ``txnId`` after an outcome that was lost (a timeout after sending, a retried write)
    recovered: bool
    #: the writer's clock just before the attempt at ``version`` was sent: the next commit's ``Young`` anchor
    sent_ms: int


@dataclass(frozen=True)
class Acknowledged:
    """Our commit at ``version``, proved reachable; ``listed`` is it as the listing that proved it showed it
    (size and the store's modification time), None when it was not listed."""

    version: int
    data: bytes
    attempts: int
    winners: tuple[CommitData, ...]
    recovered: bool
    sent_ms: int
    listed: LogPath | None

    def commits(self) -> list[CommitData]:
        """The winners read on the way and our own commit, in version order: what a snapshot of the read
        version advances by to become our version's.

        Our commit carries the time the listing showed; without one the time is
        :data:`~deltalog.core.log.reachability.UNLISTED`, which a refresh matches by name and size.
        """
        name = commit_name(self.version)
        listed = self.listed
        if listed is None or listed.name != name or listed.size != len(self.data):
            listed = parse(name, len(self.data), UNLISTED)
        assert listed is not None
        return [*self.winners, CommitData(self.version, f"{LOG_DIR}/{name}", self.data, listed.mtime)]


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

    def acknowledge(self, landed: Landed, txn_id: str) -> Acknowledged:
        """``landed`` once its listing (made after the write) proves it reachable;
        :class:`CommitNotReachableError` (withdrawn) for an orphan, :class:`CommitStateUnknownError` when
        whether readers see it cannot be told."""
        version, tip = landed.version, landed.tip
        path = f"{LOG_DIR}/{commit_name(version)}"
        judged = judge(version, tip, landed.listing)
        if judged.verdict is not Verdict.REACHABLE:
            # A store that lists by name prefix (Azure) trusts versions to be contiguous, which they are not
            # here: only the whole log shows whether a newer checkpoint or an older file is there.
            judged = judge(version, tip, self.whole_log())
        if judged.verdict is Verdict.REACHABLE:
            return Acknowledged(
                version, landed.data, landed.attempts, landed.winners, landed.recovered, landed.sent_ms, judged.ours
            )
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


__all__ = ["Acknowledged", "Acknowledger", "Landed", "Transient", "is_ours"]
