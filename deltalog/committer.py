"""The commit loop: put-if-absent the next version, and when another writer won it, check and move on.

Correctness rests on three things: the store's atomic ``put_if_absent`` (one writer per version), a
conflict check of every winning commit before moving past it, and the ``txnId`` stamped in our commitInfo,
which is how a write whose outcome was lost (a timeout after sending) is recognised when it did land.
Retrying an unknown outcome at the *same* version is safe: if our first write lands later, the retry finds
it and sees our ``txnId``; if another writer took the version, our first write can never land.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

import orjson

from deltalog.core import actions as A
from deltalog.core.codec import ActionDecodeError, decode_line
from deltalog.core.conflicts import Intent, Winner, check_winner
from deltalog.core.paths import LOG_DIR, commit_name
from deltalog.core.replay import CommitData
from deltalog.errors import (
    CommitStateUnknownError,
    CorruptLogError,
    FileAlreadyExistsError,
    MaxCommitAttemptsError,
    StorageError,
)
from deltalog.storage.base import LogStore
from deltalog.storage.options import UNSAFE_OPT_IN, unsafe_commits_allowed

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How hard a commit tries.

    ``max_attempts`` and ``max_seconds`` bound conflict-free retries (another writer won the version but
    did not conflict). The defaults let hundreds of concurrent blind appends all land. ``transient_retries``
    is a separate budget for storage errors whose outcome must be resolved.
    """

    max_attempts: int = 10_000
    max_seconds: float = 900.0
    backoff_base_s: float = 0.001
    backoff_max_s: float = 0.1
    transient_retries: int = 8
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)


@dataclass
class Outcome:
    version: int
    attempts: int
    winners: list[int] = field(default_factory=list)
    winner_data: list[CommitData] = field(default_factory=list)
    ours_found_after_unknown: bool = False


def _read_winner(store: LogStore, version: int) -> tuple[Winner, CommitData]:
    path = f"{LOG_DIR}/{commit_name(version)}"
    data = store.read(path)
    acts: list[A.Action] = []
    info: dict[str, object] = {}
    for line_no, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = orjson.loads(raw)
            if isinstance(obj, dict) and isinstance(obj.get("commitInfo"), dict):
                info = obj["commitInfo"]
                continue
            acts.extend(decode_line(raw))
        except (orjson.JSONDecodeError, ActionDecodeError) as exc:
            raise CorruptLogError(f"{path} line {line_no}: {exc}", path=path, line=line_no) from None
    return Winner(version, acts, info), CommitData(version, path, data)


def _is_ours(data: bytes, txn_id: str) -> bool:
    first = data.split(b"\n", 1)[0]
    try:
        obj = orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    info = obj.get("commitInfo") if isinstance(obj, dict) else None
    return isinstance(info, dict) and info.get("txnId") == txn_id


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
    ) -> None:
        self.store = store
        self.policy = policy
        self.check_protocol = check_protocol
        self.sleep = policy.sleep

    def _backoff(self, attempt: int) -> None:
        cap = min(self.policy.backoff_max_s, self.policy.backoff_base_s * (2 ** min(attempt, 16)))
        self.sleep(random.uniform(0, cap))

    def put(self, version: int, data: bytes, txn_id: str) -> str:
        """Write ``version``: ``"ours"``, ``"recovered"`` (ours, found after an unknown outcome) or ``"taken"``."""
        path = f"{LOG_DIR}/{commit_name(version)}"
        _refuse_unsafe_store(self.store)
        failed = False
        for transient in range(self.policy.transient_retries + 1):
            try:
                self.store.put_if_absent(path, data)
                return "recovered" if failed else "ours"
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
            except FileNotFoundError:
                self._backoff(transient)
                continue  # it did not land: try the same version again
            except (StorageError, OSError, TimeoutError) as exc:
                log.warning("cannot read %s to resolve a commit (%s)", path, exc)
                failed = True
                self._backoff(transient)
                continue
            if _is_ours(existing, txn_id):
                return "recovered" if failed else "ours"
            return "taken"
        raise CommitStateUnknownError(
            f"could not determine whether commit {path} (txnId {txn_id}) landed after "
            f"{self.policy.transient_retries + 1} tries; look for that txnId in the log before retrying"
        )

    def _transient(self, what: str, call: Callable[[], T]) -> T:
        """Run a read-side call, retrying retryable storage errors within the transient budget."""
        for transient in range(self.policy.transient_retries + 1):
            try:
                return call()
            except FileNotFoundError:
                raise
            except (StorageError, OSError, TimeoutError) as exc:
                if isinstance(exc, StorageError) and not exc.retryable:
                    raise
                if transient == self.policy.transient_retries:
                    raise
                log.warning("%s failed (%s); retrying", what, exc)
                self._backoff(transient)
        raise AssertionError("unreachable")

    def _latest_commit(self, from_version: int) -> int:
        latest = from_version - 1
        for info in self.store.list_from(f"{LOG_DIR}/{from_version:020d}."):
            name = info.name
            if name.endswith(".json") and len(name) == 25 and name[:20].isdigit():
                v = int(name[:20])
                if v == latest + 1:
                    latest = v
        return latest

    def winners_after(self, version: int) -> list[Winner]:
        """Every commit after ``version`` that exists now, read as the commit loop reads winners.

        For early conflict checks (:meth:`deltalog.transaction.Transaction.check_early`): the caller runs
        :func:`~deltalog.core.conflicts.check_winner` on each, as :meth:`commit` does.
        """
        latest = self._transient("listing the log", partial(self._latest_commit, version + 1))
        return [
            self._transient(f"reading commit {v}", partial(_read_winner, self.store, v))[0]
            for v in range(version + 1, latest + 1)
        ]

    def commit(self, read_version: int, data: bytes, intent: Intent, txn_id: str) -> Outcome:
        start = time.monotonic()
        attempt_version = read_version + 1
        outcome = Outcome(version=attempt_version, attempts=0)
        while True:
            outcome.attempts += 1
            written = self.put(attempt_version, data, txn_id)
            if written != "taken":
                outcome.version = attempt_version
                outcome.ours_found_after_unknown = written == "recovered"
                return outcome
            latest = max(
                self._transient("listing the log", partial(self._latest_commit, attempt_version)), attempt_version
            )
            for v in range(attempt_version, latest + 1):
                winner, commit_data = self._transient(
                    f"reading winning commit {v}",
                    partial(_read_winner, self.store, v),
                )
                if winner.txn_id == txn_id:
                    # An earlier attempt whose outcome we lost did land: that is our commit.
                    outcome.version = v
                    outcome.ours_found_after_unknown = True
                    return outcome
                check_winner(intent, winner, self.check_protocol)
                outcome.winners.append(v)
                outcome.winner_data.append(commit_data)
            attempt_version = latest + 1
            elapsed = time.monotonic() - start
            if outcome.attempts >= self.policy.max_attempts or elapsed > self.policy.max_seconds:
                raise MaxCommitAttemptsError(
                    f"gave up after {outcome.attempts} attempts in {elapsed:.1f}s; "
                    f"versions {outcome.winners[0]}..{outcome.winners[-1]} were taken by other writers"
                )
            self._backoff(min(outcome.attempts, 6))


__all__ = ["Committer", "Outcome", "RetryPolicy"]
