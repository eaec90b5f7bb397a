"""OPTIMIZE beside running writers (issue 27): four appenders and one deleter commit while OPTIMIZE compacts the
same table, and no row is lost or duplicated.

The interleaving is forced, not hoped for: OPTIMIZE's store holds its first commit attempt (a hook on the
``put_if_absent`` of a log file) until the other writers have committed in between, so every run checks its
commit against those winners. Appenders commit both while OPTIMIZE rewrites and while it waits to commit. The
deleter removes rows with deletion vectors either in a partition OPTIMIZE does not touch (OPTIMIZE must commit) or
in files OPTIMIZE rewrote (OPTIMIZE must fail with ``ConcurrentDeleteReadError`` and delete its files); a third
case changes a table property instead (a metadata conflict whose re-check finds every rewritten file still live,
so OPTIMIZE commits on retry). A ledger of ids counts what must be there; deltalog, deltalake's SQL path and
duckdb must all read exactly it, and no file may be left that no commit references.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import deltalog
from deltalog import DeltaLog
from deltalog.errors import ConcurrentDeleteReadError, ConcurrentModificationError
from deltalog.storage.faults import FaultyStore, slow
from deltalog.storage.local import LocalLogStore
from tests.integration.dml_kit import enable_deletion_vectors, files_on_disk
from tests.integration.optimize_kit import SCHEMA, batch
from tests.integration.restore_kit import duck_rows, lake_rows
from tests.protocol_checker import assert_valid

pytestmark = pytest.mark.interop

APPENDERS = 4
PARTS = 4
PREFILL = 8  # appends of 40 rows before the race: 32 small files
WAIT_S = 60.0


def referenced(root: Path) -> set[str]:
    """Every data or DV file any commit ever added (what may exist on disk)."""
    out: set[str] = set()
    log = DeltaLog.for_table(root)
    for line_file in sorted((root / "_delta_log").glob("*.json")):
        for line in line_file.read_bytes().splitlines():
            doc = orjson.loads(line) if line.strip() else {}
            add = doc.get("add")
            if add:
                out.add(add["path"])
    for a in log.snapshot().add_actions():
        dv = a.deletion_vector
        if dv is not None and dv.storage_type == "u":
            from deltalog.data.dv import dv_location

            where = dv_location(log.store, dv)
            assert where is not None
            out.add(where)
    return out


def ids_read(root: Path) -> dict[str, list[int]]:
    mine = DeltaLog.for_table(root).snapshot().to_arrow(columns=["id"]).column("id").to_pylist()
    return {
        "deltalog": sorted(mine),
        "deltalake": sorted(r["id"] for r in lake_rows(root)),
        "duckdb": sorted(r["id"] for r in duck_rows(root)),
    }


@pytest.mark.parametrize("case", ["other-partition", "its-files", "property-change"])
def test_writers_race_optimize_and_no_row_is_lost_or_duplicated(tmp_path: Path, case: str) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(SCHEMA, partition_columns=["part"])
    enable_deletion_vectors(log)
    ledger: set[int] = set()
    for i in range(PREFILL):
        data = batch(i * 40, 40, parts=PARTS)
        deltalog.write(data, root)
        ledger.update(data.column("id").to_pylist())

    doomed = pc.field("part") == ("p3" if case == "other-partition" else "p0")
    doomed = doomed & pc.field("id").isin(pa.array(range(0, PREFILL * 40, 3), pa.int64()))
    at_commit, deleter_done = threading.Event(), threading.Event()
    appenders_done = threading.Barrier(APPENDERS + 1)
    first_half = threading.Barrier(APPENDERS + 1)  # the appenders' first halves, then the deleter
    start = threading.Barrier(APPENDERS + 2)
    errors: list[BaseException] = []
    appended: list[list[int]] = [[] for _ in range(APPENDERS)]
    deleted: list[int] = []

    def guarded(work: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                work()
            except BaseException as exc:  # recorded, then asserted empty
                errors.append(exc)

        return run

    def appender(k: int) -> None:
        start.wait(WAIT_S)
        for round_ in range(4):
            if round_ == 2:  # the second half commits while OPTIMIZE waits to commit, after the deleter
                first_half.wait(WAIT_S)
                assert deleter_done.wait(WAIT_S)
            data = batch(100_000 * (k + 1) + round_ * 40, 40, parts=PARTS)
            deltalog.write(data, root)  # a blind append: it must never fail because of OPTIMIZE
            appended[k].extend(data.column("id").to_pylist())
        appenders_done.wait(WAIT_S)

    def deleter() -> None:
        start.wait(WAIT_S)
        try:
            assert at_commit.wait(WAIT_S)
            first_half.wait(WAIT_S)
            mine = DeltaLog.for_table(root)
            if case == "property-change":
                mine.set_properties({"delta.logRetentionDuration": "interval 31 days"})
                return
            deleted.extend(mine.snapshot().to_arrow(columns=["id"], filter=doomed).column("id").to_pylist())
            mine.delete(doomed)
        finally:
            deleter_done.set()

    def hold_first_commit(op: str, path: str) -> None:
        at_commit.set()
        try:
            assert deleter_done.wait(WAIT_S)
            appenders_done.wait(WAIT_S)
        except (AssertionError, threading.BrokenBarrierError) as exc:
            errors.append(exc)  # a writer failed or hung: the assertions below say which

    threads = [threading.Thread(target=guarded(lambda k=k: appender(k))) for k in range(APPENDERS)]
    threads.append(threading.Thread(target=guarded(deleter)))
    for t in threads:
        t.start()
    store = FaultyStore(
        LocalLogStore(str(root)),
        slow("put_if_absent", "_delta_log/*.json", delay_s=0, nth=1, on_fire=hold_first_commit),
    )
    start.wait(WAIT_S)
    where = "part != 'p3'" if case == "other-partition" else None
    outcome: object
    try:
        outcome = DeltaLog(store, str(root)).optimize(where=where)
    except ConcurrentModificationError as exc:
        outcome = exc
    for t in threads:
        t.join(WAIT_S)
    assert not errors, errors
    assert all(not t.is_alive() for t in threads)

    if case == "its-files":
        assert isinstance(outcome, ConcurrentDeleteReadError), outcome  # a file it rewrote got a new DV
    else:
        assert not isinstance(outcome, BaseException), outcome
        assert outcome.version is not None and outcome.num_files_removed > 0  # type: ignore[attr-defined]
    assert deleted or case == "property-change"
    expected = sorted((ledger | {i for part in appended for i in part}) - set(deleted))
    assert all(len(part) == 4 * 40 for part in appended)
    reads = ids_read(root)
    assert reads == {"deltalog": expected, "deltalake": expected, "duckdb": expected}
    assert files_on_disk(root) <= referenced(root)  # a failed OPTIMIZE deleted what it wrote
    assert_valid(root)
