"""A commit is acknowledged only when readers of the latest snapshot can see it (docs/commits.md).

Put-if-absent "wins" a version that log cleanup freed below a newer checkpoint, or one after a gap, just as
it wins a new one. Each scenario here is one of those: the writer must get a typed error, the log must be
as it was, and both peers must read the table as deltalog does.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from deltalog import CommitNotReachableError, CommitStateUnknownError, DeltaLog, Transaction
from deltalog.storage.local import LocalLogStore
from tests.integration.datafiles import SCHEMA, assert_peers_agree, data_file, live_paths, log_files

DAY_S = 86_400
INTERVAL = {"delta.checkpointInterval": "5"}


def later(days: float) -> Callable[[], float]:
    """A clock ``days`` ahead: cleanup truncates its cutoff to the day, so fresh files expire only this way."""
    return lambda: time.time() + days * DAY_S


def clean_up(root: Path) -> tuple[str, ...]:
    """Log cleanup by a process whose clock runs three days ahead, with no retention: all below the newest
    checkpoint goes."""
    return DeltaLog.for_table(root, clock=later(3)).cleanup(retention=0, dry_run=False).deleted


def appends(root: Path, names: list[str]) -> None:
    for name in names:
        DeltaLog.for_table(root).start_transaction().commit([data_file(root, name)])


def refused(root: Path, txn: Transaction) -> CommitNotReachableError:
    """Commit ``txn``, which must be refused with the log, the table and the peers' view left as they were."""
    before, live = log_files(root), live_paths(root)
    with pytest.raises(CommitNotReachableError) as info:
        txn.commit()
    assert log_files(root) == before
    assert live_paths(root) == live
    assert_peers_agree(root)
    return info.value


def new_table(root: Path) -> DeltaLog:
    log = DeltaLog.for_table(root)
    log.create(SCHEMA, configuration=INTERVAL)
    return log


def slow_writer(root: Path, before: int, after: int, clock: Callable[[], float] = time.time) -> Transaction:
    """A transaction that read version ``before`` and staged ``slow.parquet``, ``after`` commits behind."""
    new_table(root)
    appends(root, [f"a{i}" for i in range(before)])
    slow = DeltaLog.for_table(root, clock=clock).start_transaction()
    slow.stage([data_file(root, "slow")])
    appends(root, [f"b{i}" for i in range(after)])
    return slow


def test_a_slow_writer_cannot_commit_into_a_version_cleanup_freed(tmp_path: Path) -> None:
    slow = slow_writer(tmp_path, 1, 11)  # read version 1; 2..12 with checkpoints at 5 and 10 since
    deleted = clean_up(tmp_path)
    assert "_delta_log/00000000000000000002.json" in deleted

    error = refused(tmp_path, slow)
    # version 2's name was free, so the write landed below checkpoint 10: it was found out and taken back
    assert error.version == 2
    assert "removed by log cleanup" in str(error)
    assert "slow.parquet" not in live_paths(tmp_path)


def test_a_writer_whose_read_version_was_cleaned_up_writes_nothing(tmp_path: Path) -> None:
    # read version 4 (its listing's tip too old for the one-request path, so the commit lists first); 5
    # (checkpoint) and 6 since
    slow = slow_writer(tmp_path, 4, 2, clock=later(29))
    clean_up(tmp_path)  # 0..4 go; 5 stays as the boundary, so the name slow tries first is taken

    error = refused(tmp_path, slow)
    assert "version 4" in str(error) and "nothing was written" in str(error)
    assert "slow.parquet" not in live_paths(tmp_path)


def test_a_young_writer_whose_read_version_was_cleaned_up_commits_above_the_winners(tmp_path: Path) -> None:
    """A retention-breaking cleanup (forced to 0) under a writer on the one-request path: the names it tries
    are taken, it checks each winner it reads (blind appends: no conflict) and lands above them, where the
    listing after the write shows it reachable."""
    slow = slow_writer(tmp_path, 4, 2)  # read version 4, young by its listing; 5 (checkpoint) and 6 since
    clean_up(tmp_path)  # 0..4 go
    result = slow.commit()
    assert (result.version, result.attempts) == (7, 3)
    assert "slow.parquet" in live_paths(tmp_path)
    assert_peers_agree(tmp_path)


def test_a_commit_that_would_follow_a_gap_is_taken_back(tmp_path: Path) -> None:
    new_table(tmp_path)
    appends(tmp_path, ["a", "b", "c", "d"])
    stale = DeltaLog.for_table(tmp_path).start_transaction()  # reads version 4
    stale.stage([data_file(tmp_path, "stale")])
    shutil.rmtree(tmp_path / "_delta_log")  # the table is dropped and created again, shorter
    new_table(tmp_path)
    appends(tmp_path, ["new"])

    error = refused(tmp_path, stale)
    assert error.version == 5
    assert "gap" in str(error)
    assert live_paths(tmp_path) == ["new.parquet"]


class AfterPut(LocalLogStore):
    """A local store that runs ``then()`` once, right after the first commit file it writes lands:
    another process acting between a writer's write and its check."""

    def __init__(self, root: str, then: Callable[[], None]) -> None:
        super().__init__(root)
        self.then: Callable[[], None] | None = then

    def put_if_absent(self, path: str, data: bytes) -> None:
        super().put_if_absent(path, data)
        then, self.then = self.then, None
        if then is not None and path.endswith(".json"):
            then()


def test_a_checkpoint_built_on_our_commit_before_we_check_does_not_undo_it(tmp_path: Path) -> None:
    new_table(tmp_path)
    appends(tmp_path, ["a", "b", "c"])

    def others() -> None:  # version 5 and its checkpoint land before our listing
        appends(tmp_path, ["other"])

    log = DeltaLog(AfterPut(str(tmp_path), others), str(tmp_path), auto_checkpoint=False)
    result = log.start_transaction().commit([data_file(tmp_path, "ours")])
    assert result.version == 4
    assert (tmp_path / "_delta_log" / "00000000000000000005.checkpoint.parquet").exists()
    assert {"ours.parquet", "other.parquet"} <= set(live_paths(tmp_path))
    assert_peers_agree(tmp_path)


def test_cleanup_between_our_write_and_its_check_is_an_unknown_outcome_an_exactly_once_retry_settles(
    tmp_path: Path,
) -> None:
    new_table(tmp_path)
    appends(tmp_path, ["a", "b", "c"])

    def others() -> None:  # 5 with its checkpoint, then cleanup removes 0..4, ours (4) included
        appends(tmp_path, ["other"])
        clean_up(tmp_path)

    log = DeltaLog(AfterPut(str(tmp_path), others), str(tmp_path), auto_checkpoint=False)
    txn = log.start_transaction(app_id="loader", app_version=7)
    with pytest.raises(CommitStateUnknownError, match="log cleanup"):
        txn.commit([data_file(tmp_path, "ours")])

    # The checkpoint at 5 was built on our commit: the retry finds the app version and writes nothing.
    retry = DeltaLog.for_table(tmp_path).start_transaction(app_id="loader", app_version=7)
    assert retry.commit([data_file(tmp_path, "ours-again")]).skipped
    assert live_paths(tmp_path).count("ours.parquet") == 1
    assert "ours-again.parquet" not in live_paths(tmp_path)
    assert_peers_agree(tmp_path)


def test_a_lost_response_is_still_recovered_by_txn_id_and_checked(tmp_path: Path) -> None:
    new_table(tmp_path)
    appends(tmp_path, ["a"])
    store = LocalLogStore(str(tmp_path))
    real_put = store.put_if_absent
    lost = []

    def put_losing_the_first_response(path: str, data: bytes) -> None:
        real_put(path, data)
        if not lost:
            lost.append(path)
            raise TimeoutError("response lost after the write landed")

    store.put_if_absent = put_losing_the_first_response  # type: ignore[method-assign]
    result = DeltaLog(store, str(tmp_path)).start_transaction().commit([data_file(tmp_path, "ours")])
    assert lost == ["_delta_log/00000000000000000002.json"]
    assert result.version == 2 and result.recovered_unknown_outcome
    assert "ours.parquet" in live_paths(tmp_path)
    assert_peers_agree(tmp_path)
