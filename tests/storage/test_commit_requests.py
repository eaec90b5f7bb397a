"""Exact request counts of commits on moto S3 and Azurite, seen by the counting proxy (issue 16).

A warm append, by a ``DeltaLog`` whose last commit is younger than ``delta.logRetentionDuration`` minus the
margin (:func:`deltalog.core.log.reachability.young`), is one conditional PUT and one LIST: no listing before (the
cached snapshot is taken as it is: nothing it builds on can have been cleaned up), one after (only a listing
shows a table deleted and recreated under the writer, issue 12). Once the anchor is old by the writer's clock,
the append lists before and after, as docs/commits.md requires. A lost race reads the
winner once: on the young path it then tries the next version straight away, on the listing path it lists
once to find further winners and check its tip.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from benchmarks.proxy import LatencyProxy, Request
from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.storage.uri import store_for
from tests.protocol_checker import assert_valid
from tests.storage.servers import BUCKET, CONTAINER, Server, azure_options, s3_options, unique
from tests.tiers import backends

SCHEMA = pa.schema([("id", pa.int64())])
DAY_S = 86_400.0


@dataclass
class Table:
    kind: str
    location: str
    proxy: LatencyProxy
    options: Callable[[str], dict[str, Any]]

    def log(self, clock: Callable[[], float] = time.time) -> DeltaLog:
        """A ``DeltaLog`` whose requests go through the counting proxy."""
        return DeltaLog.for_table(self.location, self.options("proxy"), clock=clock, auto_checkpoint=False)

    def direct(self) -> DeltaLog:
        return DeltaLog.for_table(self.location, self.options("server"), auto_checkpoint=False)


@pytest.fixture(params=backends("s3", "azure"))
def table(request: pytest.FixtureRequest) -> Iterator[Table]:
    kind = str(request.param)
    server: Server = request.getfixturevalue("moto_server" if kind == "s3" else "azurite_server")
    with LatencyProxy(server.endpoint, latency_ms=0) as proxy:
        location = f"s3://{BUCKET}/{unique()}" if kind == "s3" else f"abfs://{CONTAINER}/{unique()}"
        make = s3_options if kind == "s3" else azure_options

        def options(via: str) -> dict[str, Any]:
            return make(proxy.endpoint if via == "proxy" else server.endpoint)

        yield Table(kind, location, proxy, options)


def add(name: str) -> A.Add:
    return A.Add(path=f"{name}.parquet", partition_values={}, size=1, modification_time=0, data_change=True)


def kinds(requests: list[Request]) -> list[str]:
    """Each request as PUT, GET (a read) or LIST (a GET with a listing query), in the order sent."""
    out = []
    for r in requests:
        listing = r.method == "GET" and ("list-type" in r.target or "comp=list" in r.target)
        out.append("LIST" if listing else r.method)
    return out


def check_log(t: Table, tmp_path: Path, versions: int) -> None:
    """The log is dense, passes the protocol checker (on a local copy) and deltalake reads it (S3)."""
    store = store_for(t.location, t.options("server"))
    local = tmp_path / "copy"
    (local / "_delta_log").mkdir(parents=True)
    names = [f.name for f in store.list_from("_delta_log/")]
    for name in names:
        (local / "_delta_log" / name).write_bytes(store.read(f"_delta_log/{name}"))
    assert sorted(n for n in names if n.endswith(".json")) == [f"{v:020d}.json" for v in range(versions)]
    assert_valid(local)
    if t.kind == "s3":  # deltalake's Azure client takes no connection string for an emulator on a random port
        from deltalake import DeltaTable

        dt = DeltaTable(t.location, storage_options=t.options("server"))
        assert dt.version() == versions - 1
        assert set(dt.get_add_actions(flatten=True).column("path").to_pylist()) == set(
            t.direct().snapshot().files().column("path").to_pylist()
        )
    shutil.rmtree(local)


def test_a_warm_append_is_one_put_while_young_and_lists_around_it_once_old(table: Table, tmp_path: Path) -> None:
    offset = [0.0]
    log = table.log(clock=lambda: time.time() + offset[0])
    log.create(SCHEMA)
    log.start_transaction().commit([add("first")])  # the first append lists: it has no anchor yet
    table.proxy.clear()
    for i in range(3):
        result = log.start_transaction().commit([add(f"warm{i}")])
        assert (result.version, result.attempts) == (2 + i, 1)
    assert kinds(table.proxy.records()) == ["PUT", "LIST"] * 3  # write, reachability

    offset[0] = 30 * DAY_S  # the anchor is now older than the retention (30 days) minus the margin
    table.proxy.clear()
    result = log.start_transaction().commit([add("old")])
    assert result.version == 5
    assert kinds(table.proxy.records()) == ["LIST", "PUT", "LIST"]  # refresh, write, reachability
    table.proxy.clear()
    log.start_transaction().commit([add("young again")])  # the commit that listed is the new anchor
    assert kinds(table.proxy.records()) == ["PUT", "LIST"]
    check_log(table, tmp_path, 7)


def test_a_freshly_loaded_table_appends_with_one_put_while_its_tip_is_young(table: Table, tmp_path: Path) -> None:
    """The listing of a load stamps its tip (the store's clock): a new writer's first append skips the listing
    before its PUT as a warm one does, and one whose tip is older than the retention minus twice the margin
    lists first (:func:`deltalog.core.log.reachability.listed_anchor_ms`)."""
    table.direct().create(SCHEMA)
    offset = [0.0]
    log = table.log(clock=lambda: time.time() + offset[0])
    log.snapshot()  # the load: what a writer holds before its first append
    table.proxy.clear()
    assert log.start_transaction().commit([add("first")]).version == 1
    assert kinds(table.proxy.records()) == ["PUT", "LIST"]  # write, reachability

    offset[0] = 29 * DAY_S  # younger than the retention minus one margin, older than minus two
    stale = table.log(clock=lambda: time.time() + offset[0])
    stale.snapshot()
    table.proxy.clear()
    assert stale.start_transaction().commit([add("second")]).version == 2
    assert kinds(table.proxy.records()) == ["LIST", "PUT", "LIST"]  # refresh, write, reachability
    check_log(table, tmp_path, 3)


def test_a_transaction_that_reads_refreshes_first(table: Table, tmp_path: Path) -> None:
    log = table.log()
    log.create(SCHEMA)
    log.start_transaction().commit([add("a")])
    log.start_transaction().commit([add("b")])
    table.direct().start_transaction().commit([add("other")])  # version 3, unseen by log's cache
    txn = log.start_transaction()
    assert txn.read_version == 2  # the cached snapshot, taken without a listing
    files = set(txn.read().column("path").to_pylist())
    assert txn.read_version == 3 and "other.parquet" in files  # the read made it refresh
    txn.remove_files(["a.parquet"])
    assert txn.commit(operation="DELETE").version == 4
    check_log(table, tmp_path, 5)


def test_a_lost_race_reads_the_winner_once(table: Table, tmp_path: Path) -> None:
    offset = [0.0]
    log = table.log(clock=lambda: time.time() + offset[0])
    log.create(SCHEMA)
    log.start_transaction().commit([add("a")])
    log.start_transaction().commit([add("b")])  # young from here on

    table.direct().start_transaction().commit([add("w1")])  # version 3
    table.proxy.clear()
    result = log.start_transaction().commit([add("young")])
    assert (result.version, result.winners) == (4, (3,))
    assert kinds(table.proxy.records()) == ["PUT", "GET", "PUT", "LIST"]  # lost 3, read it, took 4, listed once

    offset[0] = 30 * DAY_S
    txn = log.start_transaction()  # old: lists (refresh) before the transaction starts
    table.direct().start_transaction().commit([add("w2")])  # version 5, after that listing
    table.proxy.clear()
    result = txn.commit([add("old")])
    assert (result.version, result.winners) == (6, (5,))
    # lost 5 and read it once; one listing finds further winners and checks the tip; then 6, and its check
    assert kinds(table.proxy.records()) == ["PUT", "GET", "LIST", "PUT", "LIST"]
    check_log(table, tmp_path, 7)


def test_a_metadata_change_since_the_cached_snapshot_does_not_fail_a_blind_append(table: Table, tmp_path: Path) -> None:
    log = table.log()
    log.create(SCHEMA)
    log.start_transaction().commit([add("a")])
    log.start_transaction().commit([add("b")])
    table.direct().set_properties({"delta.appendOnly": "true"})  # version 3 changes the metadata
    result = log.start_transaction().commit([add("c")])
    assert result.version == 4 and result.read_version == 3  # started again on the latest snapshot
    assert log.snapshot().configuration.get("delta.appendOnly") == "true"
    check_log(table, tmp_path, 5)


def test_a_young_writer_lost_twice_lists_once_for_every_further_winner(table: Table, tmp_path: Path) -> None:
    log = table.log()
    log.create(SCHEMA)
    log.start_transaction().commit([add("a")])
    log.start_transaction().commit([add("b")])  # young from here on
    other = table.direct()
    for i in range(3):
        other.start_transaction().commit([add(f"w{i}")])  # versions 3, 4, 5
    table.proxy.clear()
    result = log.start_transaction().commit([add("late")])
    assert (result.version, result.winners) == (6, (3, 4, 5))
    # lost 3 (read it), lost 4 (read it): one listing finds 5, which is read; then 6, listed once to acknowledge
    assert kinds(table.proxy.records()) == ["PUT", "GET", "PUT", "GET", "LIST", "GET", "PUT", "LIST"]
    check_log(table, tmp_path, 7)
