"""Stage 4, the loop: put-if-absent the next version, and when another writer won it, check and move on.

Correctness rests on four things: the store's atomic ``put_if_absent`` (one writer per version), a
conflict check of every winning commit before moving past it, the ``txnId`` stamped in our commitInfo,
which is how a write whose outcome was lost (a timeout after sending) is recognised when it did land, and
a listing after every write that proves the new version is reachable (judged in
:mod:`deltalog.table.commit.acknowledgment` by :mod:`deltalog.core.log.reachability`): put-if-absent alone would also
"win" a version that log cleanup freed below a newer checkpoint, or one after a gap. Retrying an unknown
outcome at the *same* version is safe: if our first write lands later, the retry finds it and sees our
``txnId``; if another writer took the version, our first write can never land.

The loop has three parts: :meth:`Committer.put` (one version, its unknown outcome resolved by ``txnId``),
reading the winners of a version taken by another writer (:meth:`Committer.winners_after`, and inside
:meth:`Committer.commit`), and the retry on top of the last winner. Creating a table is the same loop with
read version -1: version 0 taken by anyone else is :class:`~deltalog.errors.TableAlreadyExistsError`.

A retry never re-sends the bytes of the lost attempt: what a commit writes can depend on its version and on
the commits before it (an in-commit timestamp, row ids above the winner's high-water mark, an enablement
version). The loop takes the attempts stage (:class:`Encoding`), which makes each attempt's bytes from the
version and the winners read so far; the loop knows nothing of the features behind it. It ends when a version is
written, handing it on as :class:`~deltalog.table.commit.acknowledgment.Landed` with the listing that judges it.

While the transaction's :class:`~deltalog.table.commit.anchor.Young` anchor holds
(:func:`deltalog.core.log.reachability.young`), the transaction starts from its cached snapshot without listing
first, and a lost race reads the winner it lost to (once) and tries the next version without listing. Every
acknowledgment still lists after the write: cleanup cannot have removed a young version, but a table deleted and
recreated under the writer can, and only the listing shows that (issue 12). A warm append is one PUT and one LIST.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol, TypeVar

from deltalog.core.commit.conflicts import TxnSummary, Winner, check_winner
from deltalog.core.log.codec import decode_commit
from deltalog.core.log.paths import LOG_DIR, Kind, LogPath, commit_name
from deltalog.core.log.reachability import UNLISTED, Tip, holds, moved_on, tip_in
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
from deltalog.table.commit.acknowledgment import Acknowledger, Landed, is_ours
from deltalog.table.commit.anchor import Young
from deltalog.table.listing import list_log

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
    (:data:`~deltalog.core.log.reachability.UNLISTED` when it was read without a listing)."""

    winner: Winner
    mtime: int


class Encoding(Protocol):
    """What the loop takes of the attempts stage: the bytes of the attempt at a version, after every winner read
    so far (in order). Asked before every attempt, so each re-runs what depends on the version and on the
    commits before it (:class:`~deltalog.table.commit.attempts.Attempts`)."""

    def encode(self, version: int, won: Sequence[Won]) -> bytes: ...


def _now_ms() -> int:
    return int(time.time() * 1000)


def _read_winner(store: LogStore, version: int, mtime: int = 0) -> tuple[Winner, CommitData]:
    return _winner(version, store.read(f"{LOG_DIR}/{commit_name(version)}"), mtime)


def _winner(version: int, data: bytes, mtime: int) -> tuple[Winner, CommitData]:
    path = f"{LOG_DIR}/{commit_name(version)}"
    decoded = decode_commit(data, path)
    return Winner(version, decoded.actions, decoded.commit_info or {}), CommitData(version, path, data, mtime)


def _commits(listing: Sequence[LogPath]) -> dict[int, LogPath]:
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
    """The loop of one commit on ``store`` under ``policy``; ``now_ms`` is the writer's clock."""

    def __init__(self, store: LogStore, policy: RetryPolicy, now_ms: Callable[[], int] = _now_ms) -> None:
        self.store = store
        self.policy = policy
        self.sleep = policy.sleep
        self.now_ms = now_ms
        #: the next stage, judging what the loop wrote with the loop's retries of reads
        self.acknowledger = Acknowledger(store, self._transient)

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

        For early conflict checks (:meth:`deltalog.table.commit.transaction.Transaction.check_early`): the caller
        runs :func:`~deltalog.core.commit.conflicts.check_winner` on each, as :meth:`commit` does.
        """
        commits = _commits(self._transient("listing the log", partial(list_log, self.store, version + 1)))
        return [
            self._transient(f"reading commit {v}", partial(_read_winner, self.store, v))[0]
            for v in range(version + 1, _last_contiguous(commits, version) + 1)
        ]

    def commit(
        self,
        read_version: int,
        attempts: Encoding,
        summary: TxnSummary,
        txn_id: str,
        tip: Tip,
        *,
        young: Young | None = None,
    ) -> Landed:
        """Write the commit ``attempts`` encodes as the version after ``read_version``, or after the winners it
        does not conflict with; the version written and the listing that judges it, as :class:`Landed`.

        ``tip`` is how the log listed ``read_version``'s files when the transaction's snapshot was taken: every
        version is attempted on top of a tip, and judged by a listing after the write that starts at or below it
        (the next stage, :mod:`~deltalog.table.commit.acknowledgment`). While ``young`` holds, a lost race
        moves on without listing first. A transaction whose read version is gone (log cleanup, a recreated
        table) raises :class:`CommitNotReachableError`, having written nothing. ``read_version`` -1 creates the
        table: ``tip`` is the empty one, and version 0 taken by another writer is
        :class:`TableAlreadyExistsError` (ours, found by ``txnId`` after a lost response, is ours).
        """
        start = time.monotonic()
        attempt_version = read_version + 1
        tips = {attempt_version: tip}
        sent: dict[int, int] = {}
        won: list[Won] = []
        winners: list[CommitData] = []
        made = 0
        data = attempts.encode(attempt_version, ())
        # Decided once: a window of days does not close within one commit's retries, and the listing path
        # needs the tip the first attempt was made on.
        short = young is not None and read_version >= 0 and young.holds(self.now_ms())
        while True:
            made += 1
            sent[attempt_version] = self.now_ms()
            written, taken_by = self._put(attempt_version, data, txn_id)
            if written != "taken":
                listing = tuple(self._list_from(tip))
                recovered = written == "recovered"
                return Landed(
                    attempt_version, tip, listing, data, made, tuple(winners), recovered, sent[attempt_version]
                )
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
                won.append(self._check(summary, winners, _winner(attempt_version, taken_by, UNLISTED)))
                tip = Tip(attempt_version, ((f"{commit_name(attempt_version)}", len(taken_by), UNLISTED),), tip)
                attempt_version += 1
                tips[attempt_version] = tip
            else:
                listing = tuple(self._list_from(tip))
                if not holds(tip, listing):
                    raise CommitNotReachableError(
                        f"cannot commit to {self.store.root}: {moved_on(tip, self.acknowledger.whole_log())} "
                        "since this transaction read it; nothing was written. Start a new transaction on the "
                        "latest snapshot",
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
                        return Landed(v, tips[v], listing, read[1].data, made, tuple(winners), True, sent[v])
                    won.append(self._check(summary, winners, read))
                if latest >= attempt_version:
                    new_tip = tip_in(listing, latest)
                    assert new_tip is not None
                    tip, attempt_version = new_tip, latest + 1
                    tips[attempt_version] = tip
            elapsed = time.monotonic() - start
            if made >= self.policy.max_attempts or elapsed > self.policy.max_seconds:
                taken = f"versions {winners[0].version}..{winners[-1].version}" if winners else "the version"
                raise MaxCommitAttemptsError(
                    f"gave up after {made} attempts in {elapsed:.1f}s; {taken} were taken by other writers"
                )
            if won:
                data = attempts.encode(attempt_version, tuple(won))
            self._backoff(min(made, 6))

    def _list_from(self, tip: Tip) -> list[LogPath]:
        """The listing that judges a version attempted on ``tip``: from the lowest version it rests on."""
        return self._transient("listing the log", partial(list_log, self.store, max(tip.floor, 0)))

    def _check(self, summary: TxnSummary, winners: list[CommitData], read: tuple[Winner, CommitData]) -> Won:
        """Check one winner against ``summary`` (raising the conflict) and record it as moved past."""
        winner, commit_data = read
        check_winner(summary, winner)
        winners.append(commit_data)
        return Won(winner, commit_data.mtime)


__all__ = ["Committer", "Encoding", "RetryPolicy", "Won"]
