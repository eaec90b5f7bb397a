"""In-commit timestamps and row tracking on the one commit path, with racing writers (issue 14, Build 3 and 4).

Every attempt's bytes are made again for the version it is attempted at (``deltalog/table/commit/attempts.py``), so
a writer that loses a race re-stamps its ``inCommitTimestamp`` above the winner's and renumbers its row ids
above the winner's high-water mark. Writers here are threads with their own ``DeltaLog`` each, meeting at a
barrier before every commit so that most commits lose at least once; some share a frozen clock, so only the
rule ``max(now, previous + 1)`` keeps their timestamps apart. The independent protocol checker
(``tests/protocol_checker``) runs after every round of commits, and ``deltalake`` and duckdb read the rows.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
import pytest

from deltalog import CommitResult, DeltaLog, UnsupportedFeatureError
from deltalog import actions as A
from deltalog.storage.local import LocalLogStore
from tests.integration.datafiles import SCHEMA, assert_peers_agree, data_file, log_files
from tests.protocol_checker import CheckState, assert_valid

ICT = {"delta.enableInCommitTimestamps": "true"}
ROWS = {"delta.enableRowTracking": "true"}
WRITERS = 4
ROUNDS = 5
#: the writers' frozen clock: now, so that log cleanup after automatic checkpoints keeps every version
FROZEN_MS = int(time.time() * 1000)


def commit_lines(root: Path, version: int) -> list[dict]:
    raw = (root / "_delta_log" / f"{version:020d}.json").read_bytes()
    return [orjson.loads(line) for line in raw.splitlines() if line.strip()]


def ict_of(root: Path, version: int) -> int | None:
    first = commit_lines(root, version)[0]
    return first.get("commitInfo", {}).get("inCommitTimestamp")


def mtime_ms(root: Path, version: int) -> int:
    return (root / "_delta_log" / f"{version:020d}.json").stat().st_mtime_ns // 1_000_000


def adds_of(root: Path, version: int) -> list[dict]:
    return [line["add"] for line in commit_lines(root, version) if "add" in line]


def race(root: Path, rounds: int, rows: Callable[[int, int], int], clock: Callable[[], float] | None = None) -> int:
    """``WRITERS`` threads x ``rounds`` appends of real files, the checker after every round; the attempts."""
    logs = [DeltaLog.for_table(root, **({"clock": clock} if clock else {})) for _ in range(WRITERS)]
    for log in logs:
        log.snapshot()
    state: CheckState = assert_valid(root)
    barrier = threading.Barrier(WRITERS)

    def one(w: int, r: int) -> CommitResult:
        add = data_file(root, f"w{w}-r{r}", rows(w, r))
        txn = logs[w].start_transaction()
        barrier.wait(timeout=60)
        return txn.commit([add])

    attempts = 0
    with ThreadPoolExecutor(WRITERS) as pool:
        for r in range(rounds):
            results = list(pool.map(one, range(WRITERS), [r] * WRITERS))
            attempts += sum(res.attempts for res in results)
            state = assert_valid(root, since=state)
    return attempts


class BeforeFirstCommit(LocalLogStore):
    """A local store that runs ``then()`` once, just before the first commit file it writes: another writer
    winning the version this one is about to attempt."""

    def __init__(self, root: str, then: Callable[[], None]) -> None:
        super().__init__(root)
        self.then: Callable[[], None] | None = then

    def put_if_absent(self, path: str, data: bytes) -> None:
        then, self.then = self.then, None
        if then is not None and path.endswith(".json"):
            then()
        super().put_if_absent(path, data)


# ---------------------------------------------------------------------------------------------- in-commit timestamps
def test_racing_writers_on_a_frozen_clock_stamp_strictly_increasing_timestamps(tmp_path: Path) -> None:
    log = DeltaLog.for_table(tmp_path, clock=lambda: FROZEN_MS / 1000)
    log.create(SCHEMA, configuration=ICT)
    conf = log.snapshot().configuration
    assert not any(k.startswith("delta.inCommitTimestampEnablement") for k in conf)  # created with ICT: no pair
    assert log.snapshot().protocol.writer_features and "inCommitTimestamp" in log.snapshot().protocol.writer_features

    attempts = race(tmp_path, ROUNDS, lambda w, r: 1, clock=lambda: FROZEN_MS / 1000)
    latest = WRITERS * ROUNDS
    assert attempts > latest  # writers lost races and retried
    stamps = [ict_of(tmp_path, v) for v in range(latest + 1)]
    assert all(s is not None for s in stamps)
    assert stamps == [FROZEN_MS + v for v in range(latest + 1)]  # only previous + 1 moved them: strictly increasing
    assert DeltaLog.for_table(tmp_path).version_at(FROZEN_MS + 7) == 7
    assert [e.timestamp for e in DeltaLog.for_table(tmp_path).history(limit=3)] == stamps[::-1][:3]
    assert_peers_agree(tmp_path)


def test_enabling_at_a_later_version_names_the_version_it_lands_at_after_a_retry(tmp_path: Path) -> None:
    DeltaLog.for_table(tmp_path).create(SCHEMA)
    DeltaLog.for_table(tmp_path).start_transaction().commit([data_file(tmp_path, "a")])

    def other() -> None:  # version 2 goes to another writer while we attempt it
        DeltaLog.for_table(tmp_path).start_transaction().commit([data_file(tmp_path, "b")])

    log = DeltaLog(BeforeFirstCommit(str(tmp_path), other), str(tmp_path))
    log.snapshot()
    state = assert_valid(tmp_path)
    result = log.set_properties(ICT)
    assert (result.version, result.attempts, result.winners) == (3, 2, (2,))
    state = assert_valid(tmp_path, since=state)

    conf = DeltaLog.for_table(tmp_path).snapshot().configuration
    stamp = ict_of(tmp_path, 3)
    assert stamp is not None and stamp > mtime_ms(tmp_path, 2)  # after the winner's file time
    assert conf["delta.inCommitTimestampEnablementVersion"] == "3"
    assert conf["delta.inCommitTimestampEnablementTimestamp"] == str(stamp)
    assert [ict_of(tmp_path, v) for v in range(3)] == [None, None, None]
    assert "commitInfo" in commit_lines(tmp_path, 3)[0]

    after = DeltaLog.for_table(tmp_path).start_transaction().commit([data_file(tmp_path, "c")])
    assert after.version == 4 and (ict_of(tmp_path, 4) or 0) > stamp
    assert_valid(tmp_path, since=state)
    fresh = DeltaLog.for_table(tmp_path)
    entries = {e.version: e.timestamp for e in fresh.history()}
    assert entries[3] == stamp and entries[4] == ict_of(tmp_path, 4)  # history speaks ICT from the enablement on
    assert fresh.version_at(stamp) == 3
    assert_peers_agree(tmp_path)


# ---------------------------------------------------------------------------------------------- row tracking
def assert_row_ids(root: Path) -> None:
    """Every add since creation: ids above the previous mark, contiguous ranges, committed version, final mark."""
    latest = DeltaLog.for_table(root).snapshot()
    mark = -1
    for v in range(1, latest.version + 1):
        lines = commit_lines(root, v)
        for add in (line["add"] for line in lines if "add" in line):
            assert add["baseRowId"] == mark + 1 and add["defaultRowCommitVersion"] == v
            mark += orjson.loads(add["stats"])["numRecords"]
        domains = [line["domainMetadata"] for line in lines if "domainMetadata" in line]
        if any("add" in line for line in lines):
            assert domains == [
                {"domain": "delta.rowTracking", "configuration": f'{{"rowIdHighWaterMark":{mark}}}', "removed": False}
            ]
    assert orjson.loads(latest.domain_metadata["delta.rowTracking"].configuration) == {"rowIdHighWaterMark": mark}


@pytest.mark.parametrize("conf", [ROWS, {"delta.feature.rowTracking": "supported"}], ids=["enabled", "supported"])
def test_racing_writers_get_row_ids_above_the_winners_mark(tmp_path: Path, conf: dict[str, str]) -> None:
    log = DeltaLog.for_table(tmp_path)
    log.create(SCHEMA, configuration=conf)
    snap = log.snapshot()
    assert {"rowTracking", "domainMetadata"} <= set(snap.protocol.writer_features or ())
    if conf is ROWS:  # the materialized column names are chosen by the commit that enables it
        assert snap.configuration["delta.rowTracking.materializedRowIdColumnName"].startswith("_row-id-col-")
    attempts = race(tmp_path, ROUNDS, lambda w, r: 1 + (w + r) % 3)
    assert attempts > WRITERS * ROUNDS
    assert_row_ids(tmp_path)
    assert_peers_agree(tmp_path)


def test_a_winner_that_adds_row_tracking_makes_the_retry_assign_ids(tmp_path: Path) -> None:
    DeltaLog.for_table(tmp_path).create(SCHEMA)

    def other() -> None:
        DeltaLog.for_table(tmp_path).enable_feature("rowTracking")

    log = DeltaLog(BeforeFirstCommit(str(tmp_path), other), str(tmp_path))
    log.snapshot()
    state = assert_valid(tmp_path)
    result = log.start_transaction().commit([data_file(tmp_path, "a", rows=3)])
    assert (result.version, result.winners) == (2, (1,))
    assert_valid(tmp_path, since=state)
    (add,) = adds_of(tmp_path, 2)
    assert (add["baseRowId"], add["defaultRowCommitVersion"]) == (0, 2)
    added = [a for a in result.actions if isinstance(a, A.Add)]
    assert added[0].base_row_id == 0  # the result reports what was written
    mark = DeltaLog.for_table(tmp_path).snapshot().domain_metadata["delta.rowTracking"].configuration
    assert orjson.loads(mark) == {"rowIdHighWaterMark": 2}
    assert_peers_agree(tmp_path)


def test_removes_and_rewrites_keep_or_refuse_row_ids(tmp_path: Path) -> None:
    log = DeltaLog.for_table(tmp_path)
    log.create(SCHEMA, configuration={"delta.feature.rowTracking": "supported"})
    log.start_transaction().commit([data_file(tmp_path, "a", rows=2)])
    log.start_transaction().commit([data_file(tmp_path, "b", rows=2)])
    state = assert_valid(tmp_path)
    # supported only: a rewrite's new file gets fresh ids; its remove copies the old file's fields
    txn = log.start_transaction()
    txn.remove_files(["a.parquet"])
    result = txn.commit([data_file(tmp_path, "a2", rows=1)], operation="UPDATE")
    state = assert_valid(tmp_path, since=state)
    removed = next(line["remove"] for line in commit_lines(tmp_path, result.version) if "remove" in line)
    assert (removed["baseRowId"], removed["defaultRowCommitVersion"]) == (0, 1)
    (add,) = adds_of(tmp_path, result.version)
    assert (add["baseRowId"], add["defaultRowCommitVersion"]) == (4, 3)
    assert_peers_agree(tmp_path)

    # enabling on a table with live files needs a backfill: refused, nothing written
    before = log_files(tmp_path)
    with pytest.raises(UnsupportedFeatureError, match="backfill"):
        log.set_properties(ROWS)
    assert log_files(tmp_path) == before

    enabled = tmp_path / "enabled"
    enabled.mkdir()
    on = DeltaLog.for_table(enabled)
    on.create(SCHEMA)
    on.set_properties(ROWS)  # an empty table: nothing to backfill
    on.start_transaction().commit([data_file(enabled, "x", rows=2)])
    txn = on.start_transaction()
    txn.remove_files(["x.parquet"])
    before = log_files(enabled)
    with pytest.raises(UnsupportedFeatureError, match="materialized") as info:
        txn.commit([data_file(enabled, "x2")], operation="UPDATE")  # copies rows without their ids
    assert info.value.feature == "rowTracking" and log_files(enabled) == before
    # an overwrite's name does not let copies through: a writer that says it copied rows must have kept their ids
    overwrite = on.start_transaction()
    overwrite.remove_files(["x.parquet"])
    with pytest.raises(UnsupportedFeatureError, match="materialized") as info:
        overwrite.commit([data_file(enabled, "x2")], operation="WRITE", copies_rows=True)
    assert info.value.feature == "rowTracking" and log_files(enabled) == before
    delete = on.start_transaction()
    delete.remove_files(["x.parquet"])
    deleted = delete.commit(operation="DELETE")  # whole-file deletes copy no row
    info_line = commit_lines(enabled, deleted.version)[0]["commitInfo"]
    assert info_line["tags"] == {"delta.rowTracking.preserved": "true"}
    assert_valid(enabled)
    assert_peers_agree(enabled)


def test_an_append_retried_over_a_protocol_change_is_gated_as_an_append(tmp_path: Path) -> None:
    """A winner's protocol is checked for what the retry does: on a table with row tracking enabled (where a
    rewrite is refused) an append still lands after a winner that upgraded the protocol."""
    DeltaLog.for_table(tmp_path).create(SCHEMA, configuration=ROWS)

    def other() -> None:
        DeltaLog.for_table(tmp_path).enable_feature("deletionVectors")

    log = DeltaLog(BeforeFirstCommit(str(tmp_path), other), str(tmp_path))
    log.snapshot()
    result = log.start_transaction().commit([data_file(tmp_path, "a", rows=2)])
    assert (result.version, result.winners) == (2, (1,))
    (add,) = adds_of(tmp_path, 2)
    assert (add["baseRowId"], add["defaultRowCommitVersion"]) == (0, 2)
    assert_valid(tmp_path)
    assert_peers_agree(tmp_path)
