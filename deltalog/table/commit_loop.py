"""The commit loop: put-if-absent the next version, and when another writer won it, check and move on.

Correctness rests on four things: the store's atomic ``put_if_absent`` (one writer per version), a
conflict check of every winning commit before moving past it, the ``txnId`` stamped in our commitInfo,
which is how a write whose outcome was lost (a timeout after sending) is recognised when it did land, and
a listing after every write that proves the new version is reachable (judged in
:mod:`deltalog.table.acknowledgment` by :mod:`deltalog.core.reachability`): put-if-absent alone would also
"win" a version that log cleanup freed below a newer checkpoint, or one after a gap. Retrying an unknown
outcome at the *same* version is safe: if our first write lands later, the retry finds it and sees our
``txnId``; if another writer took the version, our first write can never land.

The loop has three parts: :meth:`Committer.put` (one version, its unknown outcome resolved by ``txnId``),
reading the winners of a version taken by another writer (:meth:`Committer.winners_after`, and inside
:meth:`Committer.commit`), and the retry on top of the last winner. Creating a table is the same loop with
read version -1: version 0 taken by anyone else is :class:`~deltalog.errors.TableAlreadyExistsError`.

A retry never re-sends the bytes of the lost attempt: what a commit writes can depend on its version and on
the commits before it (an in-commit timestamp, row ids above the winner's high-water mark, an enablement
version). The caller hands an :data:`Encode` hook that makes each attempt's bytes from the version and the
winners read so far; the loop knows nothing of the features behind it.

While the caller's :class:`Young` anchor holds (:func:`deltalog.core.reachability.young`), the transaction
starts from its cached snapshot without listing first, and a lost race reads the winner it lost to (once) and
tries the next version without listing. Every acknowledgment still lists after the write: cleanup cannot have
removed a young version, but a table deleted and recreated under the writer can, and only the listing shows
that (issue 12). A warm append is one PUT and one LIST.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from deltalog.core import actions as A
from deltalog.core.codec import decode_commit
from deltalog.core.conflicts import TxnSummary, Winner, check_winner
from deltalog.core.paths import LOG_DIR, Kind, LogPath, commit_name
from deltalog.core.reachability import UNLISTED, Tip, holds, moved_on, tip_in, young
from deltalog.core.result_repr import result_repr
from deltalog.core.state import CommitData
from deltalog.errors import (
    CommitNotReachableError,
    CommitStateUnknownError,
    FileAlreadyExistsError,
    MaxCommitAttemptsError,
    NotFoundError,
    StorageError,
    TableAlreadyExistsError,
)
from deltalog.storage.base import LogStore
from deltalog.storage.options import UNSAFE_OPT_IN, unsafe_commits_allowed
from deltalog.table.acknowledgment import Acknowledger, Outcome, is_ours
from deltalog.table.listing import list_log
from deltalog.table.snapshot import Snapshot

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How hard a commit tries.

    ``max_attempts`` and ``max_seconds`` bound conflict-free retries (another writer won the version but
    did not conflict). The defaults let hundreds of concurrent blind appends all land. ``transient_retries``
    is a separate budget for storage errors whose outcome must be resolved, and ``transient_seconds`` bounds
    the time it may take: each try is a store call that may itself wait out the client's retries, and on an
    endpoint that stopped answering nine of them took minutes (issue 23). Past either, the outcome is reported
    unknown (a write) or the store's error is raised (a read).
    """

    max_attempts: int = 10_000
    max_seconds: float = 900.0
    backoff_base_s: float = 0.001
    backoff_max_s: float = 0.1
    transient_retries: int = 8
    transient_seconds: float = 30.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)
    #: the clock ``transient_seconds`` is measured on (replaceable, as ``sleep`` is, so tests need not wait)
    monotonic: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)


@dataclass(frozen=True)
class Won:
    """A version another writer took while we tried: its commit, and its time as a listing showed it
    (:data:`~deltalog.core.reachability.UNLISTED` when it was read without a listing)."""

    winner: Winner
    mtime: int


#: the caller's hook: (the version about to be attempted, every winner read so far, in order) -> the bytes of
#: that attempt. Called before every retry, so each attempt re-runs what depends on the version and on the
#: commits before it.
Encode = Callable[[int, Sequence[Won]], bytes]


@dataclass(frozen=True)
class Young:
    """When the commit may skip listings: ``anchor_ms`` is the writer's clock before it sent the commit the
    read version descends from, ``retention_ms`` the table's ``delta.logRetentionDuration``."""

    anchor_ms: int
    retention_ms: int

    def holds(self, now_ms: int) -> bool:
        return young(self.anchor_ms, now_ms, self.retention_ms)


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class CommitResult:
    """What a commit did. ``version`` is None only when an exactly-once commit was skipped. ``metrics`` are the
    ``operationMetrics`` its commitInfo records (Delta Spark's names for a MERGE, UPDATE or DELETE)."""

    version: int | None
    attempts: int
    winners: tuple[int, ...]
    txn_id: str
    operation: str
    actions: tuple[A.Action, ...]
    read_version: int
    isolation_level: str
    skipped: bool = False
    elapsed_s: float = 0.0
    recovered_unknown_outcome: bool = False
    metrics: Mapping[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        """Version, operation and counts; the actions are on :attr:`actions`."""
        if self.skipped:
            return result_repr("CommitResult", "skipped", operation=self.operation, read_version=self.read_version)
        adds = sum(1 for a in self.actions if isinstance(a, A.Add))
        removes = sum(1 for a in self.actions if isinstance(a, A.Remove))
        return result_repr(
            "CommitResult",
            version=self.version,
            operation=self.operation,
            adds=adds,
            removes=removes,
            actions=len(self.actions),
            attempts=self.attempts,
            winners=self.winners or None,
        )


@dataclass(frozen=True)
class Committed:
    """What a transaction hands its ``on_committed`` callback after a commit landed."""

    #: the snapshot the transaction read (``None`` for the commit that created the table)
    read: Snapshot | None
    #: the versions after it, in order: the winners the commit moved past, then ours
    commits: tuple[CommitData, ...]
    result: CommitResult
    #: the writer's clock just before our commit was sent (what the next commit's :class:`Young` anchors on)
    sent_ms: int | None = None


#: the tip a create is attempted on: the table has no version yet, so there is nothing to have moved on
NO_TABLE = Tip(-1, ())


def _read_winner(store: LogStore, version: int, mtime: int = 0) -> tuple[Winner, CommitData]:
    return _winner(version, store.read(f"{LOG_DIR}/{commit_name(version)}"), mtime)


def _winner(version: int, data: bytes, mtime: int) -> tuple[Winner, CommitData]:
    path = f"{LOG_DIR}/{commit_name(version)}"
    decoded = decode_commit(data, path)
    return Winner(version, decoded.actions, decoded.commit_info or {}), CommitData(version, path, data, mtime)


def _commits(listing: list[LogPath]) -> dict[int, LogPath]:
    return {p.version: p for p in listing if p.kind is Kind.COMMIT}


def _last_contiguous(commits: dict[int, LogPath], after: int) -> int:
    """The last version of the unbroken run of commits after ``after`` (``after`` itself when none follows)."""
    latest = after
    while latest + 1 in commits:
        latest += 1
    return latest


def _refuse_unsafe_store(store: LogStore) -> None:
    """No commit through a store that cannot put-if-absent atomically, unless the user opted in.

    Such a store lets two writers both "win" a version: one commit silently overwrites the other.
    """
    if store.capabilities.atomic_put_if_absent or unsafe_commits_allowed(store):
        return
    raise StorageError(
        f"refusing to commit to {store.root}: this store cannot create a file only-if-absent atomically, so "
        "concurrent writers could overwrite each other's commits. Use a store with conditional writes "
        "(a local path, s3://, abfs[s]://), check it with 'deltalog doctor', or, if only one writer ever "
        f"commits to this table, pass storage_options={{'{UNSAFE_OPT_IN}': 'true'}}"
    )


class Committer:
    def __init__(
        self,
        store: LogStore,
        policy: RetryPolicy,
        check_protocol: Callable[[A.Protocol], None] | None = None,
        now_ms: Callable[[], int] = _now_ms,
    ) -> None:
        self.store = store
        self.policy = policy
        self.check_protocol = check_protocol
        self.sleep = policy.sleep
        self.now_ms = now_ms
        self.ack = Acknowledger(store, self._transient)

    def _backoff(self, attempt: int) -> None:
        cap = min(self.policy.backoff_max_s, self.policy.backoff_base_s * (2 ** min(attempt, 16)))
        self.sleep(random.uniform(0, cap))

    def put(self, version: int, data: bytes, txn_id: str) -> str:
        """Write ``version``: ``"ours"``, ``"recovered"`` (ours, found after an unknown outcome) or ``"taken"``."""
        return self._put(version, data, txn_id)[0]

    def _put(self, version: int, data: bytes, txn_id: str) -> tuple[str, bytes]:
        """:meth:`put`, and when the version was taken the winner's commit as read to tell (read once)."""
        path = f"{LOG_DIR}/{commit_name(version)}"
        _refuse_unsafe_store(self.store)
        failed = False
        clock = self.policy.monotonic
        start, tries = clock(), 0
        for transient in range(self.policy.transient_retries + 1):
            if failed and clock() - start > self.policy.transient_seconds:
                break
            tries += 1
            try:
                self.store.put_if_absent(path, data)
                return ("recovered" if failed else "ours"), b""
            except FileAlreadyExistsError:
                pass
            except (StorageError, OSError, TimeoutError) as exc:
                if isinstance(exc, StorageError) and not exc.retryable and not failed:
                    raise  # rejected outright (bad credentials, no bucket): known not written, and retries won't help
                failed = True
                log.warning("write of %s failed (%s); resolving its outcome", path, exc)
            # Taken, or unknown: the file tells which.
            try:
                existing = self.store.read(path)
            except NotFoundError:
                self._backoff(transient)
                continue  # it did not land: try the same version again
            except (StorageError, OSError, TimeoutError) as exc:
                log.warning("cannot read %s to resolve a commit (%s)", path, exc)
                failed = True
                self._backoff(transient)
                continue
            if is_ours(existing, txn_id):
                return ("recovered" if failed else "ours"), b""
            return "taken", existing
        raise CommitStateUnknownError(
            f"could not determine whether commit {path} (txnId {txn_id}) landed after {tries} tries in "
            f"{clock() - start:.0f}s; look for that txnId in the log before retrying"
        )

    def _transient(self, what: str, call: Callable[[], T]) -> T:
        """Run a read-side call, retrying retryable storage errors within the transient budget."""
        deadline = self.policy.monotonic() + self.policy.transient_seconds
        for transient in range(self.policy.transient_retries + 1):
            try:
                return call()
            except NotFoundError:
                raise
            except (StorageError, OSError, TimeoutError) as exc:
                if isinstance(exc, StorageError) and not exc.retryable:
                    raise
                if transient == self.policy.transient_retries or self.policy.monotonic() > deadline:
                    raise
                log.warning("%s failed (%s); retrying", what, exc)
                self._backoff(transient)
        raise AssertionError("unreachable")

    def winners_after(self, version: int) -> list[Winner]:
        """Every commit after ``version`` that exists now, read as the commit loop reads winners.

        For early conflict checks (:meth:`deltalog.table.transaction.Transaction.check_early`): the caller runs
        :func:`~deltalog.core.conflicts.check_winner` on each, as :meth:`commit` does.
        """
        commits = _commits(self._transient("listing the log", partial(list_log, self.store, version + 1)))
        return [
            self._transient(f"reading commit {v}", partial(_read_winner, self.store, v))[0]
            for v in range(version + 1, _last_contiguous(commits, version) + 1)
        ]

    def commit(
        self,
        read_version: int,
        data: bytes,
        summary: TxnSummary,
        txn_id: str,
        tip: Tip,
        *,
        encode: Encode | None = None,
        young: Young | None = None,
    ) -> Outcome:
        """Commit ``data`` as the version after ``read_version``, or after the winners it does not conflict with.

        ``tip`` is how the log listed ``read_version``'s files when the transaction's snapshot was taken: every
        version is attempted on top of a tip, and acknowledged only once a listing after the write proves it
        reachable (:func:`~deltalog.core.reachability.judge`), or, while ``young`` holds, without a listing.
        A transaction whose read version is gone (log cleanup, a recreated table) raises
        :class:`CommitNotReachableError`, having written nothing. ``read_version`` -1 creates the table:
        ``tip`` is :data:`NO_TABLE`, and version 0 taken by another writer is :class:`TableAlreadyExistsError`
        (ours, found by ``txnId`` after a lost response, is ours). ``encode`` makes every retry's bytes
        (``data`` is the first attempt's); without it, every attempt sends ``data``.
        """
        start = time.monotonic()
        attempt_version = read_version + 1
        tips = {attempt_version: tip}
        outcome = Outcome(version=attempt_version, attempts=0, data=data)
        won: list[Won] = []
        # Decided once: a window of days does not close within one commit's retries, and the listing path
        # needs the tip the first attempt was made on.
        short = young is not None and read_version >= 0 and young.holds(self.now_ms())
        while True:
            outcome.attempts += 1
            outcome.sent_ms = self.now_ms()
            written, taken_by = self._put(attempt_version, outcome.data, txn_id)
            if written != "taken":
                listing = self._list_from(tip)
                return self.ack.acknowledge(attempt_version, tip, listing, outcome, txn_id, written == "recovered")
            if read_version < 0:
                raise TableAlreadyExistsError(
                    f"a Delta table already exists at {self.store.root} (another writer created version 0 first)"
                )
            if short and not won:
                # The version we lost is younger than anything cleanup may delete: the winner we just read is
                # all we need, and the next version is tried without a listing. Lost again, the loop lists
                # (one listing finds every further winner, where trying version after version would not end).
                # The tip we read rests on ``tip``, which no listing has shown since the table could have been
                # recreated: the next listing starts there and must find it unreplaced (``Tip.under``).
                won.append(self._check(summary, outcome, _winner(attempt_version, taken_by, UNLISTED)))
                tip = Tip(attempt_version, ((f"{commit_name(attempt_version)}", len(taken_by), UNLISTED),), tip)
                attempt_version += 1
                tips[attempt_version] = tip
            else:
                listing = self._list_from(tip)
                if not holds(tip, listing):
                    raise CommitNotReachableError(
                        f"cannot commit to {self.store.root}: {moved_on(tip, self.ack.whole_log())} since this "
                        "transaction read it; nothing was written. Start a new transaction on the latest snapshot",
                        version=attempt_version,
                    )
                commits = _commits(listing)
                latest = _last_contiguous(commits, attempt_version - 1)
                for v in range(attempt_version, latest + 1):
                    if v == attempt_version and taken_by:
                        read = _winner(v, taken_by, commits[v].mtime)
                    else:
                        read = self._transient(
                            f"reading winning commit {v}", partial(_read_winner, self.store, v, commits[v].mtime)
                        )
                    if read[0].txn_id == txn_id and v in tips:
                        # An earlier attempt whose outcome we lost did land: that is our commit, if reachable.
                        return self.ack.acknowledge(v, tips[v], listing, outcome, txn_id, True)
                    won.append(self._check(summary, outcome, read))
                if latest >= attempt_version:
                    new_tip = tip_in(listing, latest)
                    assert new_tip is not None
                    tip, attempt_version = new_tip, latest + 1
                    tips[attempt_version] = tip
            elapsed = time.monotonic() - start
            if outcome.attempts >= self.policy.max_attempts or elapsed > self.policy.max_seconds:
                taken = f"versions {outcome.winners[0]}..{outcome.winners[-1]}" if outcome.winners else "the version"
                raise MaxCommitAttemptsError(
                    f"gave up after {outcome.attempts} attempts in {elapsed:.1f}s; {taken} were taken by other writers"
                )
            if encode is not None and won:
                outcome.data = encode(attempt_version, tuple(won))
            self._backoff(min(outcome.attempts, 6))

    def _list_from(self, tip: Tip) -> list[LogPath]:
        """The listing that judges a version attempted on ``tip``: from the lowest version it rests on."""
        return self._transient("listing the log", partial(list_log, self.store, max(tip.floor, 0)))

    def _check(self, summary: TxnSummary, outcome: Outcome, read: tuple[Winner, CommitData]) -> Won:
        """Check one winner against ``summary`` (raising the conflict) and record it as moved past."""
        winner, commit_data = read
        check_winner(summary, winner, self.check_protocol)
        outcome.winners.append(winner.version)
        outcome.winner_data.append(commit_data)
        return Won(winner, commit_data.mtime)


__all__ = ["NO_TABLE", "CommitResult", "Committed", "Committer", "Encode", "Outcome", "RetryPolicy", "Won", "Young"]
