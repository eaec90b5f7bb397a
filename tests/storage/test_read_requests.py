"""Exact request counts of the table's reads on the moto S3 server and Azurite, through the counting proxy.

Issue 16's minimums, counted (never timed): a latest load is the hint, one LIST and one GET per commit, plus
one GET of the checkpoint, which is fetched together with the LIST from the version the hint names; time travel
below the checkpoint lists near its version once; time travel by timestamp lists once and reads the newest
commitInfo, then the commits of the version found (and on a table with in-commit timestamps, O(log N)
commitInfos, not all of them); ``history(limit)`` is one LIST and ``limit`` GETs. No HEAD anywhere.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from benchmarks.proxy import LatencyProxy, Request, serial_round_trips
from deltalog import DeltaLog
from deltalog.core.log.timetravel import monotonize
from deltalog.storage.base import LogStore
from deltalog.table.history import HistoryEntry
from tests.storage.servers import BUCKET, CONTAINER, Server, azure_options, s3_options, unique
from tests.tiers import backends

LOG = "_delta_log"
T0 = 1_700_000_000_000
SCHEMA = orjson.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})


def commit(v: int) -> str:
    return f"{LOG}/{v:020d}.json"


def commit_bytes(v: int, ict: bool = False) -> bytes:
    info: dict[str, Any] = {"timestamp": T0 + v * 1000, "operation": "WRITE", "readVersion": v - 1}
    info["operationParameters"] = {"mode": "Append"}
    info["isBlindAppend"] = True
    if ict:
        info["inCommitTimestamp"] = T0 + v * 1000
    lines: list[dict[str, Any]] = [{"commitInfo": info}]
    if v == 0:
        conf = {"delta.enableInCommitTimestamps": "true"} if ict else {}
        protocol = (
            {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["inCommitTimestamp"]}
            if ict
            else {"minReaderVersion": 1, "minWriterVersion": 2}
        )
        lines.append({"protocol": protocol})
        lines.append(
            {
                "metaData": {
                    "id": "0f0c0e47-1b7b-4e5e-8f3c-d9a1b2c3d4e5",
                    "format": {"provider": "parquet", "options": {}},
                    "schemaString": SCHEMA.decode(),
                    "partitionColumns": [],
                    "configuration": conf,
                    "createdTime": T0,
                }
            }
        )
    lines.append(
        {
            "add": {
                "path": f"part-{v:05d}.parquet",
                "partitionValues": {},
                "size": 1,
                "modificationTime": T0,
                "dataChange": True,
            }
        }
    )
    return b"\n".join(orjson.dumps(line) for line in lines) + b"\n"


@dataclass
class Table:
    """A log on one backend: written straight to the server, read through the counting proxy."""

    kind: str
    proxy: LatencyProxy
    location: str
    options: Callable[[str], dict[str, Any]]

    def log(self, via: str = "proxy") -> DeltaLog:
        return DeltaLog.for_table(self.location, self.options(via))

    def write(self, versions: int, ict: bool = False) -> LogStore:
        store = self.log("server").store
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda v: store.put_if_absent(commit(v), commit_bytes(v, ict)), range(versions)))
        return store

    def counted(self, call: Callable[[DeltaLog], Any], log: DeltaLog | None = None) -> tuple[Any, list[Request]]:
        """``call`` on ``log`` (a fresh DeltaLog through the proxy by default), and the requests it made."""
        log = log or self.log()
        self.proxy.clear()
        result = call(log)
        return result, self.proxy.records()

    @property
    def lists(self) -> int:
        """LISTs of a listing from a version: S3 starts after it; Azure lists by name prefix, and a listing
        from version 20 of a log reaching 30 lists the block 20..29, full, then every version from 30 on
        (storage/prefix_listing)."""
        return 1 if self.kind == "s3" else 2


@pytest.fixture(params=backends("s3", "azure"))
def table(request: pytest.FixtureRequest) -> Iterator[Table]:
    kind = str(request.param)
    server: Server = request.getfixturevalue("moto_server" if kind == "s3" else "azurite_server")
    make = s3_options if kind == "s3" else azure_options
    with LatencyProxy(server.endpoint, latency_ms=0) as proxy:
        location = f"s3://{BUCKET}/{unique()}" if kind == "s3" else f"abfs://{CONTAINER}/{unique()}"

        def options(via: str) -> dict[str, Any]:
            return make(proxy.endpoint if via == "proxy" else server.endpoint)

        yield Table(kind, proxy, location, options)


def kinds(requests: list[Request]) -> Counter[str]:
    """GET (a read, found or not), LIST, and anything else by its method: what the issue's minimums count."""
    out: Counter[str] = Counter()
    for r in requests:
        target = r.target.lower()
        is_list = "list-type=" in target or "comp=list" in target or "restype=container" in target
        out["LIST" if r.method == "GET" and is_list else r.method] += 1
    return out


def reads_of(requests: list[Request]) -> list[str]:
    """The log file names each GET (not a LIST) asked for."""
    names = []
    for r in requests:
        if r.method == "GET" and kinds([r])["GET"]:
            names.append(r.target.split("?")[0].rsplit("/", 1)[-1])
    return names


def test_load_latest_without_checkpoint_is_the_hint_one_list_and_a_get_per_commit(table: Table) -> None:
    table.write(30)
    snap, requests = table.counted(lambda log: log.snapshot())
    assert snap.version == 29 and snap.num_files == 30
    assert kinds(requests) == Counter({"GET": 1 + 30, "LIST": 1})


def test_load_latest_reads_the_hinted_checkpoint_alongside_the_listing(table: Table) -> None:
    table.write(31)
    table.log("server").checkpoint(version=20)
    snap, requests = table.counted(lambda log: log.snapshot())
    assert snap.version == 30 and snap.num_files == 31
    # _last_checkpoint, one LIST from 20, the checkpoint (one GET: no HEAD, no ranged reads), commits 21..30
    assert kinds(requests) == Counter({"GET": 1 + 1 + 10, "LIST": table.lists})
    assert sorted(reads_of(requests)) == sorted(
        ["_last_checkpoint", f"{20:020d}.checkpoint.parquet", *(f"{v:020d}.json" for v in range(21, 31))]
    )


def test_a_checkpoint_at_a_round_version_and_its_tail_take_one_listing(table: Table) -> None:
    """Checkpoints sit at round versions (every 10th, 100th): from 100, Azure lists the block 100..199 at once,
    not 100..109 and then, found full, 100..199 (a second LIST on the load's chain of round trips)."""
    table.write(150)
    table.log("server").checkpoint(version=100)
    snap, requests = table.counted(lambda log: log.snapshot())
    assert snap.version == 149 and snap.num_files == 150
    assert kinds(requests) == Counter({"GET": 1 + 1 + 49, "LIST": 1})


def test_a_stale_hint_costs_one_wasted_get_never_a_wrong_snapshot(table: Table) -> None:
    """The hint names checkpoint 10, but that file is not the one listed (rewritten smaller, then a newer
    checkpoint 20 whose hint was lost): the prefetched bytes are not used, the listing decides."""
    table.write(31)
    server = table.log("server")
    server.checkpoint(version=10)
    hint = server.store.read(f"{LOG}/_last_checkpoint")
    server.checkpoint(version=20)
    server.store.put(f"{LOG}/_last_checkpoint", hint)  # a reader of the hint is sent to 10
    server.store.put(f"{LOG}/{10:020d}.checkpoint.parquet", b"PAR1 torn")  # and 10 is damaged since
    snap, requests = table.counted(lambda log: log.snapshot())
    assert snap.version == 30 and snap.num_files == 31
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 20
    assert kinds(requests)["HEAD"] == 0


def test_time_travel_below_the_checkpoint_lists_once(table: Table) -> None:
    """Version 300 of 400 with a checkpoint at 390: the listing near 300 must reach back to a checkpoint or to
    0, and on an object store one LIST of up to 1,000 keys costs the same however narrow: one window does."""
    table.write(400)
    table.log("server").checkpoint(version=390)
    snap, requests = table.counted(lambda log: log.snapshot(version=300))
    assert snap.version == 300 and snap.num_files == 301
    assert kinds(requests) == Counter({"GET": 1 + 301, "LIST": 1})


def _times(store: LogStore) -> dict[int, int]:
    listed = [f for f in store.list_from(f"{LOG}/") if f.name.endswith(".json")]
    return dict(monotonize([(int(f.name[:20]), f.mtime) for f in sorted(listed, key=lambda f: f.name)]))


def test_timestamp_travel_lists_once_and_reads_the_newest_commit_info(table: Table) -> None:
    store = table.write(25)
    at = _times(store)[9]
    snap, requests = table.counted(lambda log: log.snapshot(timestamp=at))
    assert snap.version == 9 and snap.num_files == 10
    # one LIST; the newest commit's commitInfo (no in-commit timestamps: nothing more); commits 0..9
    assert kinds(requests) == Counter({"GET": 1 + 10, "LIST": 1})


def test_timestamp_travel_with_in_commit_timestamps_reads_log_n_commit_infos(table: Table) -> None:
    versions = 200
    table.write(versions, ict=True)
    log = table.log()
    assert log.snapshot().version == versions - 1  # the latest snapshot cached: it gives the enablement
    at = T0 + 170 * 1000 + 500
    snap, requests = table.counted(lambda log: log.snapshot(timestamp=at), log)
    assert snap.version == 170 and snap.num_files == 171
    commit_gets = [n for n in reads_of(requests) if n.endswith(".json")]
    # one LIST of the log, the cache's refresh (a LIST from 199); the newest commitInfo; a binary search over 200
    # commitInfos; then commits 0..170 of the version found
    searched = len(commit_gets) - 1 - 171
    assert 1 <= searched <= math.ceil(math.log2(versions)) + 1
    assert kinds(requests) == Counter({"GET": len(commit_gets), "LIST": 1 + table.lists})


def test_history_is_one_listing_and_the_commit_infos_shown(table: Table) -> None:
    table.write(40)
    entries, requests = table.counted(lambda log: log.history(limit=10))
    assert isinstance(entries, list) and all(isinstance(e, HistoryEntry) for e in entries)
    assert [e.version for e in entries] == list(range(39, 29, -1))
    assert kinds(requests) == Counter({"GET": 10, "LIST": 1})
    assert sorted(reads_of(requests)) == [f"{v:020d}.json" for v in range(30, 40)]
    newest = entries[0]
    assert (newest.operation, newest.read_version, newest.is_blind_append) == ("WRITE", 38, True)
    assert newest.operation_parameters == {"mode": "Append"}


def test_history_of_a_table_with_in_commit_timestamps_shows_them(table: Table) -> None:
    table.write(12, ict=True)
    entries, _requests = table.counted(lambda log: log.history(limit=3))
    assert [(e.version, e.timestamp) for e in entries] == [(v, T0 + v * 1000) for v in (11, 10, 9)]
    assert all(e.in_commit_timestamp == e.timestamp for e in entries)


def commit_get(method: str, target: str) -> bool:
    """A GET of a commit file (not a LIST, not the hint)."""
    return method == "GET" and target.split("?")[0].endswith(".json")


@pytest.mark.parametrize("versions", [500, 1000])
def test_a_long_load_through_obstore_is_the_minimum_chain_plus_one_at_most(table: Table, versions: int) -> None:
    """Issue 16's chain gate on the default client: every commit GET leaves before any answer comes back.

    The proxy holds each commit GET's answer until all ``versions`` have arrived (:meth:`LatencyProxy.hold`), so
    the reads are one round trip exactly when the client sends them all at once; a client with a bounded pool
    (s3fs's 64 in flight) would wait for the safety timeout instead. The hint and the LIST go out together
    before them: at most 2 + 1 serial round trips where the minimum is 2, on any machine.
    """
    table.write(versions)
    log = table.log()
    assert getattr(log.store, "backend", None) == "obstore"
    table.proxy.hold(versions, commit_get)
    snapshot, requests = table.counted(lambda lg: lg.snapshot())
    assert snapshot.version == versions - 1
    assert kinds(requests)["GET"] == versions + 1 and kinds(requests)["LIST"] == 1  # the commits and the hint
    reads = [r for r in requests if commit_get(r.method, r.target)]
    assert len(reads) == versions and serial_round_trips(reads) == 1
    assert serial_round_trips(requests) <= 3
