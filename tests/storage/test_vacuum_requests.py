"""VACUUM and log cleanup on object stores (issue 16): bulk deletes and lite mode, counted on the real moto S3
server and Azurite through the debug request log (:mod:`deltalog.storage.requests`).

1,100 removed files go in ceil(1100/1000) = 2 ``DeleteObjects`` on S3 and ceil(1100/256) = 5 blob batches on
Azure; a lite vacuum finds them in the log without listing a single data directory, leaves the files no commit
named (a full vacuum deletes those, in one more bulk request) and never a live file. Cleanup's expired commits
go the same bulk way. Counts, never times.
"""

from __future__ import annotations

import io
import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.maintenance.vacuum import VacuumResult, vacuum
from deltalog.storage.base import LogStore
from deltalog.storage.uri import store_for
from deltalog.table.store_clock import store_now_ms
from tests.peers import deltalake_view, duckdb_view
from tests.protocol_checker import assert_valid
from tests.storage.servers import BUCKET, CONTAINER, Server, azure_options, s3_options, unique
from tests.storage.test_request_counts import Recorded
from tests.storage.test_request_counts import recorded as request_log  # noqa: F401 (the fixture)
from tests.tiers import backends

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])
REMOVED = 1100
DAY_S = 86_400.0


def parquet() -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), sink)
    return sink.getvalue()


@dataclass
class Table:
    kind: str
    location: str
    options: dict[str, Any] | None
    root: Path | None  # a local table's directory, for the peers that read data

    def store(self) -> LogStore:
        return store_for(self.location, self.options)

    def log(self, at: float) -> DeltaLog:
        return DeltaLog.for_table(self.location, self.options, clock=lambda: at, auto_checkpoint=False)


@pytest.fixture(params=backends("local", "s3", "azure"))
def table(request: pytest.FixtureRequest, tmp_path: Path) -> Table:
    kind = str(request.param)
    if kind == "local":
        return Table(kind, str(tmp_path / "t"), None, tmp_path / "t")
    server: Server = request.getfixturevalue("moto_server" if kind == "s3" else "azurite_server")
    if kind == "s3":
        return Table(kind, f"s3://{BUCKET}/{unique()}", s3_options(server.endpoint), None)
    return Table(kind, f"abfs://{CONTAINER}/{unique()}", azure_options(server.endpoint), None)


def requests(rec: Recorded) -> list[tuple[str, str]]:
    return [(str(r.request_method), str(r.request_path)) for r in rec.records]  # type: ignore[attr-defined]


def bulk_deletes(rec: Recorded) -> int:
    return sum(1 for m, p in requests(rec) if m == "POST" and ("?delete" in p or "comp=batch" in p))


def listed_prefixes(rec: Recorded) -> list[str]:
    """The prefix of every listing request (S3 ListObjectsV2, Azure List Blobs)."""
    out = []
    for method, path in requests(rec):
        query = parse_qs(urlsplit(path).query)
        if method == "GET" and ("list-type" in query or query.get("comp") == ["list"]):
            out.append(query.get("prefix", [""])[0])
    return out


def build(t: Table, now: float) -> tuple[list[str], list[str], list[str]]:
    """A partitioned table: 1,100 files added then removed, 2 live files, 3 files no commit names."""
    log = t.log(now)
    log.create(SCHEMA, partition_columns=["p"])
    store = t.store()
    data = parquet()
    removed = [f"p={i % 4}/part-{i:05d}.parquet" for i in range(REMOVED)]
    live = ["p=0/live-0.parquet", "p=1/live-1.parquet"]
    orphans = ["p=2/orphan-0.parquet", "p=3/orphan-1.parquet", "orphan-root.parquet"]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda p: store.put_if_absent(p, data), [*removed, *live, *orphans]))

    def add(path: str) -> A.Add:
        return A.Add(
            path,
            {"p": path[2]} if path.startswith("p=") else {},
            len(data),
            int(now * 1000),
            True,
            stats='{"numRecords":1}',
        )

    log.start_transaction().commit([add(p) for p in removed])
    txn = log.start_transaction()
    txn.remove_files(removed)
    txn.commit()
    log.start_transaction().commit([add(p) for p in live])
    return removed, live, orphans


def vacuum_later(t: Table, now: float, **options: Any) -> VacuumResult:
    """A vacuum 8 days after ``now``, past the default 7-day retention of the tombstones and the files, on both
    clocks vacuum judges ages by: this process's (the log's) and the store's (its probe's time, moved on 8 days:
    an object store's own clock cannot be moved)."""
    log = t.log(now + 8 * DAY_S)

    def store_later(store: LogStore) -> int:
        return store_now_ms(store) + int(8 * DAY_S * 1000)

    return vacuum(log.context, log.snapshot(), store_clock=store_later, **options)


def existing(t: Table) -> set[str]:
    return {f.name for f in t.store().walk("") if not f.name.startswith("_delta_log/")}


def check_peers(t: Table, live: list[str]) -> None:
    """The protocol checker and duckdb read a local table; deltalake reads every backend's log."""
    if t.root is not None:
        assert_valid(t.root)
        assert duckdb_view(t.root).rows == len(live)
        assert deltalake_view(t.root).files == set(live)


def test_lite_vacuum_deletes_expired_removes_in_bulk_without_listing_the_table(
    table: Table,
    request_log: Recorded,  # noqa: F811 (the imported fixture)
) -> None:
    now = time.time()
    removed, live, orphans = build(table, now)
    request_log.records.clear()

    planned = vacuum_later(table, now, lite=True)
    assert planned.lite and sorted(planned.paths) == sorted(removed) and planned.deleted == ()
    result = vacuum_later(table, now, dry_run=False, lite=True)
    assert sorted(result.deleted) == sorted(removed)
    if table.kind != "local":
        assert all("_delta_log/" in p for p in listed_prefixes(request_log))  # the log only, never the data
        batch = 1000 if table.kind == "s3" else 256
        probes = 2 if table.kind == "s3" else 0  # each vacuum deletes its clock probe: on S3, a DeleteObjects of one
        assert bulk_deletes(request_log) == math.ceil(REMOVED / batch) + probes  # and the dry run sent no other
    assert existing(table) == {*live, *orphans}  # no live file, and lite cannot see what no commit named

    request_log.records.clear()
    full = vacuum_later(table, now, dry_run=False)
    assert not full.lite and sorted(full.deleted) == sorted(orphans)
    if table.kind != "local":
        assert bulk_deletes(request_log) == (2 if table.kind == "s3" else 1)  # the probe's too, on S3
        data = sorted(p.split("/", 1)[1] for p in listed_prefixes(request_log) if "_delta_log" not in p)
        assert data == ["", "p=0/", "p=1/", "p=2/", "p=3/"]  # the root and each partition once; no _delta_log
    assert existing(table) == set(live)
    check_peers(table, live)


def test_cleanup_deletes_expired_commits_in_bulk(table: Table, request_log: Recorded) -> None:  # noqa: F811
    now = time.time() - 40 * DAY_S
    log = table.log(now)
    log.create(SCHEMA)
    for i in range(30):
        log.start_transaction().commit([A.Txn("app", i, int(now * 1000))])
    log.checkpoint()
    later = table.log(time.time() + 40 * DAY_S)  # the commit files' own times are today's: past them too
    request_log.records.clear()
    result = later.cleanup(retention=0, dry_run=False)
    assert len(result.deleted) == 30  # versions 0..29; the checkpoint's version stays
    assert later.earliest_version() == 30 and later.snapshot().txns["app"].version == 29
    if table.kind != "local":
        assert bulk_deletes(request_log) == 1
        assert sum(1 for m, _ in requests(request_log) if m == "DELETE") == 0
    check_peers(table, [])
