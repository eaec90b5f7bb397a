"""Commits under injected storage faults, on the local store: every commit lands exactly once, or says it may have.

The commit file's ``put_if_absent`` is where a writer can lose track of its own commit: the request may fail
before it arrived (retry it), fail after the file landed (recognise our ``txnId`` and report success), or the
process may die with a temp file left behind (readers must not see it). These tests arrange each failure with
:class:`~deltalog.storage.faults.FaultyStore` and check the outcome on disk, commit by commit, by ``txnId``.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import orjson
import pyarrow as pa
import pytest

from deltalog import CommitResult, DeltaLog, RetryPolicy
from deltalog import actions as A
from deltalog.errors import CommitStateUnknownError, StorageError
from deltalog.storage.faults import (
    ErrorFactory,
    FaultRule,
    FaultyStore,
    Op,
    Outcome,
    SimulatedCrash,
    connection_reset,
    crash,
    fail_after,
    fail_before,
    server_error,
    slow,
    throttled,
    timeout,
    transient,
)
from deltalog.storage.local import LocalLogStore

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
#: the engine's backoff sleeps through time.sleep (Transaction offers no way to inject it): make it 0
NO_BACKOFF = RetryPolicy(backoff_base_s=0.0, backoff_max_s=0.0)
COMMIT_RE = re.compile(r"\d{20}\.json")

ERRORS: list[ErrorFactory] = [
    transient(),
    server_error(500, "Internal Server Error"),
    throttled(),
    timeout(),
    connection_reset(),
]
ERROR_IDS = ["transient", "http500", "throttled", "timeout", "connection-reset"]


def commit_path(version: int) -> str:
    return f"_delta_log/{version:020d}.json"


def add(name: str) -> A.Add:
    return A.Add(path=name, partition_values={}, size=1, modification_time=0, data_change=True)


def no_sleep(seconds: float) -> None:
    del seconds


def txn_ids(root: Path) -> dict[int, str | None]:
    """Every commit file on disk and its commitInfo.txnId, read without the engine."""
    out: dict[int, str | None] = {}
    log_dir = root / "_delta_log"
    for p in sorted(log_dir.iterdir() if log_dir.is_dir() else ()):
        if not COMMIT_RE.fullmatch(p.name):
            continue
        txn: str | None = None
        for line in p.read_bytes().splitlines():
            obj = orjson.loads(line)
            if "commitInfo" in obj:
                txn = obj["commitInfo"].get("txnId")
        out[int(p.name[:20])] = txn
    return out


def versions_of(root: Path, txn_id: str) -> list[int]:
    return [v for v, t in txn_ids(root).items() if t == txn_id]


def make_table(
    tmp_path: Path, *rules: FaultRule, sleep: Callable[[float], None] = no_sleep
) -> tuple[FaultyStore, DeltaLog]:
    """A table at version 0, and a DeltaLog over a FaultyStore armed with ``rules`` from now on."""
    store = FaultyStore(LocalLogStore(str(tmp_path)), sleep=sleep)
    log = DeltaLog(store, str(tmp_path))
    log.create(SCHEMA)
    store.arm(*rules)
    store.clear_calls()
    return store, log


def commit_one(log: DeltaLog, name: str, retry: RetryPolicy = NO_BACKOFF) -> CommitResult:
    return log.start_transaction(retry=retry).commit([add(name)])


def fresh_log(tmp_path: Path) -> DeltaLog:
    """Another process's view of the table: a plain store, no cache."""
    return DeltaLog(LocalLogStore(str(tmp_path)), str(tmp_path))


def live_paths(log: DeltaLog) -> list[str]:
    return sorted(log.snapshot().files().column("path").to_pylist())


# ------------------------------------------------------------------------------------------ fail before the write
@pytest.mark.parametrize("error", ERRORS, ids=ERROR_IDS)
def test_transient_failures_before_the_write_are_retried_at_the_same_version(
    tmp_path: Path, error: ErrorFactory
) -> None:
    store, log = make_table(tmp_path, fail_before("put_if_absent", commit_path(1), first=3, error=error))
    result = commit_one(log, "a.parquet")
    assert result.version == 1
    assert versions_of(tmp_path, result.txn_id) == [1]
    assert sorted(txn_ids(tmp_path)) == [0, 1]
    assert outcomes(store, "put_if_absent") == [Outcome.FAILED_BEFORE] * 3 + [Outcome.OK]
    assert live_paths(fresh_log(tmp_path)) == ["a.parquet"]


def outcomes(store: FaultyStore, op: Op, path: str = "*") -> list[Outcome]:
    return [c.outcome for c in store.calls_to(op, path)]


# ------------------------------------------------------------------------------------------ fail after it landed
@pytest.mark.parametrize("error", ERRORS, ids=ERROR_IDS)
def test_lost_response_after_the_commit_landed_reports_that_version(tmp_path: Path, error: ErrorFactory) -> None:
    store, log = make_table(tmp_path, fail_after("put_if_absent", commit_path(1), nth=1, error=error))
    result = commit_one(log, "a.parquet")
    assert result.version == 1
    assert versions_of(tmp_path, result.txn_id) == [1]  # recognised as ours, not written again at 2
    assert sorted(txn_ids(tmp_path)) == [0, 1]
    assert outcomes(store, "put_if_absent") == [Outcome.FAILED_AFTER]
    assert outcomes(store, "read", commit_path(1)) == [Outcome.OK]  # the resolution read
    assert log.snapshot().version == 1
    assert live_paths(fresh_log(tmp_path)) == ["a.parquet"]


def test_lost_response_is_reported_as_a_recovered_unknown_outcome(tmp_path: Path) -> None:
    # Regression (deltalog/table/acknowledgment.py, Acknowledger): a put resolved as ours by txnId says so.
    _, log = make_table(tmp_path, fail_after("put_if_absent", commit_path(1), nth=1))
    result = commit_one(log, "a.parquet")
    assert result.version == 1
    assert result.recovered_unknown_outcome is True


def test_lost_response_then_a_failing_resolution_read_is_retried(tmp_path: Path) -> None:
    store, log = make_table(
        tmp_path,
        fail_after("put_if_absent", commit_path(1), nth=1),
        fail_before("read", commit_path(1), nth=1, error=timeout()),
    )
    result = commit_one(log, "a.parquet")
    assert result.version == 1
    assert versions_of(tmp_path, result.txn_id) == [1]
    assert sorted(txn_ids(tmp_path)) == [0, 1]
    # lost response, failed read, the retry finds the name taken, the read finds our txnId
    assert [(c.op, c.outcome) for c in store.calls if c.path == commit_path(1)] == [
        ("put_if_absent", Outcome.FAILED_AFTER),
        ("read", Outcome.FAILED_BEFORE),
        ("put_if_absent", Outcome.ERROR),
        ("read", Outcome.OK),
    ]


@pytest.mark.parametrize("other_started", ["before-ours-landed", "after-ours-landed"])
def test_lost_response_while_another_writer_commits_the_next_version(tmp_path: Path, other_started: str) -> None:
    store, log = make_table(tmp_path)
    other = fresh_log(tmp_path)
    other_results: list[CommitResult] = []
    early = other.start_transaction(retry=NO_BACKOFF) if other_started == "before-ours-landed" else None

    def other_writer_commits(op: str, path: str) -> None:
        # Runs after our file landed at version 1 and before we are told anything.
        txn = early if early is not None else other.start_transaction(retry=NO_BACKOFF)
        other_results.append(txn.commit([add("other.parquet")]))

    store.arm(fail_after("put_if_absent", commit_path(1), nth=1, on_fire=other_writer_commits))
    ours = commit_one(log, "ours.parquet")
    (theirs,) = other_results
    assert ours.version == 1
    assert theirs.version == 2
    assert theirs.winners == ((1,) if early is not None else ())
    ids = txn_ids(tmp_path)
    assert ids == {0: ids[0], 1: ours.txn_id, 2: theirs.txn_id}
    assert sorted(live_paths(fresh_log(tmp_path))) == ["other.parquet", "ours.parquet"]
    assert [c.outcome for c in store.injected()] == [Outcome.FAILED_AFTER]
    # our resolution read of version 1 came after the other writer's version 2 existed
    assert log.snapshot().version == 2


def test_failed_request_while_another_writer_takes_the_version(tmp_path: Path) -> None:
    other = fresh_log(tmp_path)
    other_results: list[CommitResult] = []

    def other_writer_commits(op: str, path: str) -> None:
        other_results.append(commit_one(other, "other.parquet"))

    _, log = make_table(tmp_path, fail_before("put_if_absent", commit_path(1), nth=1, on_fire=other_writer_commits))
    ours = commit_one(log, "ours.parquet")
    (theirs,) = other_results
    assert theirs.version == 1
    assert ours.version == 2
    assert ours.winners == (1,)
    assert versions_of(tmp_path, ours.txn_id) == [2]
    assert sorted(txn_ids(tmp_path)) == [0, 1, 2]


@pytest.mark.parametrize("landed", [True, False], ids=["landed", "not-landed"])
def test_unresolvable_outcome_raises_commit_state_unknown(tmp_path: Path, landed: bool) -> None:
    first_put = (
        fail_after("put_if_absent", commit_path(1), nth=1)
        if landed
        else fail_before("put_if_absent", commit_path(1), error=server_error())
    )
    store, log = make_table(tmp_path, first_put, fail_before("read", commit_path(1), error=server_error()))
    policy = RetryPolicy(backoff_base_s=0.0, backoff_max_s=0.0, transient_retries=3)
    txn = log.start_transaction(retry=policy)
    with pytest.raises(CommitStateUnknownError) as info:
        txn.commit([add("a.parquet")])
    assert txn.txn_id in str(info.value)  # the caller is told what to look for
    assert len(store.calls_to("put_if_absent", commit_path(1))) == policy.transient_retries + 1
    assert versions_of(tmp_path, txn.txn_id) == ([1] if landed else [])
    store.disarm()
    assert fresh_log(tmp_path).snapshot().version == (1 if landed else 0)


def test_resolving_an_unknown_outcome_stops_at_its_time_budget(tmp_path: Path) -> None:
    # Each try of a failed write is a store call that may wait out the client's own retries (seconds each on a
    # dead endpoint, issue 23): the tries stop once ``transient_seconds`` have passed, however many are left.
    store, log = make_table(
        tmp_path,
        fail_before("put_if_absent", commit_path(1), error=timeout()),
        fail_before("read", commit_path(1), error=server_error()),
    )
    ticks = iter(range(0, 10_000, 20))  # every look at the clock finds 20 s gone
    policy = RetryPolicy(backoff_base_s=0.0, transient_retries=8, transient_seconds=30.0, monotonic=lambda: next(ticks))
    txn = log.start_transaction(retry=policy)
    with pytest.raises(CommitStateUnknownError, match="after 2 tries") as info:
        txn.commit([add("a.parquet")])
    assert txn.txn_id in str(info.value)
    assert len(store.calls_to("put_if_absent", commit_path(1))) == 2  # not transient_retries + 1 = 9
    store.disarm()
    assert fresh_log(tmp_path).snapshot().version == 0


@pytest.mark.parametrize("landed", [True, False], ids=["landed", "not-landed"])
def test_after_an_unknown_outcome_an_exactly_once_retry_commits_at_most_once(tmp_path: Path, landed: bool) -> None:
    # The recovery CommitStateUnknownError asks for: retry as the same application version. The retry must
    # skip when the first attempt did land and commit when it did not; either way the app commits once.
    first_put = (
        fail_after("put_if_absent", commit_path(1), nth=1)
        if landed
        else fail_before("put_if_absent", commit_path(1), error=server_error())
    )
    store, log = make_table(tmp_path, first_put, fail_before("read", commit_path(1), error=server_error()))
    policy = RetryPolicy(backoff_base_s=0.0, backoff_max_s=0.0, transient_retries=2)
    with pytest.raises(CommitStateUnknownError):
        log.start_transaction(app_id="ingest", app_version=7, retry=policy).commit([add("batch-7.parquet")])
    store.disarm()  # the store recovered
    retry = log.start_transaction(app_id="ingest", app_version=7, retry=policy).commit([add("batch-7.parquet")])
    assert retry.skipped is landed
    assert retry.version == (None if landed else 1)
    reader = fresh_log(tmp_path)
    assert reader.snapshot().version == 1
    assert reader.snapshot().app_version("ingest") == 7
    assert live_paths(reader) == ["batch-7.parquet"]


# ------------------------------------------------------------------------------------------ transient errors elsewhere
@pytest.mark.parametrize(
    ("op", "path", "nth"),
    [("list_from", "_delta_log/*", 1), ("read", commit_path(1), 2)],
    ids=["listing-winners", "reading-the-winner"],
)
def test_transient_error_while_checking_a_winner_is_retried(tmp_path: Path, op: Op, path: str, nth: int) -> None:
    # Regression (deltalog/table/commit/loop.py, Committer._transient): winner checks retry transient errors.
    # (nth=2 for the read: the first read of v1 is the put's resolution read, which is retried.)
    store, log = make_table(tmp_path)
    txn = log.start_transaction(retry=NO_BACKOFF)
    winner = commit_one(fresh_log(tmp_path), "winner.parquet")
    store.arm(FaultRule(op, path, nth=nth, error=server_error()))
    result = txn.commit([add("ours.parquet")])
    assert winner.version == 1
    assert result.version == 2
    assert result.winners == (1,)


def test_slow_and_throttled_responses(tmp_path: Path) -> None:
    slept: list[float] = []
    store, log = make_table(
        tmp_path,
        slow("put_if_absent", delay_s=7.0),
        fail_before("put_if_absent", first=2, error=throttled()),
        slow("read", commit_path(1), delay_s=0.5),
        sleep=slept.append,
    )
    result = commit_one(log, "a.parquet")
    assert result.version == 1
    assert versions_of(tmp_path, result.txn_id) == [1]
    assert slept == [7.0, 0.5, 7.0, 0.5, 7.0]  # put (503), resolution read, put (503), read, put (ok)
    assert outcomes(store, "put_if_absent") == [Outcome.FAILED_BEFORE, Outcome.FAILED_BEFORE, Outcome.OK]


# ------------------------------------------------------------------------------------------ table creation
@pytest.mark.parametrize("mode", ["before", "after"])
def test_create_table_survives_a_transient_failure_of_version_zero(tmp_path: Path, mode: str) -> None:
    # Regression (deltalog/table/ddl.py, create_table): version 0 is a Transaction commit, retried and resolved.
    rule = (fail_before if mode == "before" else fail_after)("put_if_absent", commit_path(0), nth=1)
    store = FaultyStore(LocalLogStore(str(tmp_path)), rule, sleep=no_sleep)
    log = DeltaLog(store, str(tmp_path))
    try:
        result = log.create(SCHEMA)
    except StorageError as exc:
        pytest.fail(f"create() failed on one retryable error ({exc}); on disk: {txn_ids(tmp_path)}")
    assert result.version == 0
    assert txn_ids(tmp_path) == {0: result.txn_id}


# ------------------------------------------------------------------------------------------ a crashed writer
def test_a_crash_leaves_a_temp_file_that_readers_and_the_next_writer_ignore(tmp_path: Path) -> None:
    _, log = make_table(tmp_path, crash("put_if_absent", commit_path(1)))
    with pytest.raises(SimulatedCrash) as info:
        commit_one(log, "lost.parquet")
    leftover = info.value.leftover
    assert leftover is not None and (tmp_path / leftover).is_file()
    assert not (tmp_path / commit_path(1)).exists()

    survivor = fresh_log(tmp_path)  # the next process
    assert survivor.latest_version() == 0
    assert survivor.snapshot().version == 0
    assert live_paths(survivor) == []
    assert [p.version for p in survivor.list_log(0)] == [0]
    result = commit_one(survivor, "next.parquet")
    assert result.version == 1
    assert (tmp_path / leftover).is_file()  # nobody cleaned it, and it still does not matter
    reader = fresh_log(tmp_path)
    assert reader.snapshot().version == 1
    assert live_paths(reader) == ["next.parquet"]
    assert [h.version for h in reader.history()] == [1, 0]
    assert sorted(txn_ids(tmp_path)) == [0, 1]


# ------------------------------------------------------------------------------------------ many writers
def test_sixteen_concurrent_writers_with_random_faults_each_commit_exactly_once(tmp_path: Path) -> None:
    writers, per_writer = 16, 4
    make_table(tmp_path)
    stores = [
        FaultyStore(
            LocalLogStore(str(tmp_path)),
            fail_after("put_if_absent", "_delta_log/*.json", probability=0.2),
            fail_before("put_if_absent", "_delta_log/*.json", probability=0.1, error=server_error()),
            seed=i,
            sleep=no_sleep,
        )
        for i in range(writers)
    ]
    results: list[CommitResult] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(writers)

    def write(i: int) -> None:
        log = DeltaLog(stores[i], str(tmp_path))
        start.wait()
        for j in range(per_writer):
            try:
                r = commit_one(log, f"w{i:02d}-{j}.parquet")
            except BaseException as exc:
                with lock:
                    errors.append(exc)
                return
            with lock:
                results.append(r)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    total = writers * per_writer
    assert len(results) == total
    ids = txn_ids(tmp_path)
    assert sorted(ids) == list(range(total + 1))  # dense: 0 (create) .. total
    counts = Counter(ids.values())
    assert all(n == 1 for n in counts.values())  # no txnId twice
    assert {r.txn_id: r.version for r in results} == {t: v for v, t in ids.items() if v > 0}
    assert live_paths(fresh_log(tmp_path)) == sorted(
        f"w{i:02d}-{j}.parquet" for i in range(writers) for j in range(per_writer)
    )
    injected = Counter(c.outcome for s in stores for c in s.injected())
    assert injected[Outcome.FAILED_AFTER] > 0 and injected[Outcome.FAILED_BEFORE] > 0  # the faults did happen
