"""Many writers on real object-store servers: every append lands exactly once, and delta-rs can write alongside.

User needs 1, 4 and 5 on the backends where they matter: processes appending through ``s3://`` (a moto server)
and ``abfs://`` (Azurite) race through the servers' conditional writes; versions come out dense, no commit is
lost or doubled, no writer sees an error. On S3, ``deltalake`` writers (which send ``If-None-Match: *`` by
default; the recording below proves it) and deltalog writers append to one table at once, and both engines
then read the same state. And under injected faults, a timeout after the object landed included, no commit is
written twice.
"""

from __future__ import annotations

import json
import multiprocessing
import threading
import time
from collections import Counter
from typing import Any

import orjson
import pyarrow as pa
import pytest
import requests

from deltalog import DeltaLog, RetryPolicy
from deltalog import actions as A
from deltalog.storage.base import LogStore
from deltalog.storage.faults import FaultyStore, fail_after, fail_before, server_error, timeout
from deltalog.storage.uri import store_for
from tests.storage.servers import (
    BUCKET,
    CONTAINER,
    Server,
    azure_options,
    azurite_server,
    moto_server,
    s3_options,
    unique,
)
from tests.tiers import backends

__all__ = ["azurite_server", "moto_server"]

SCHEMA = pa.schema([("id", pa.int64())])
WRITERS, COMMITS = 8, 20
NO_BACKOFF = RetryPolicy(backoff_base_s=0.0, backoff_max_s=0.0)


def _add(name: str) -> A.Add:
    return A.Add(path=name, partition_values={}, size=1, modification_time=0, data_change=True)


def _deltalog_writer(location: str, options: dict[str, Any], writer: int, commits: int, barrier: Any, out: Any) -> None:
    """A spawned process: ``commits`` blind appends; reports (kind, writer, [(txnId, version)], error)."""
    done: list[tuple[str, int]] = []
    try:
        log = DeltaLog.for_table(location, options)
        barrier.wait(timeout=300)
        for i in range(commits):
            result = log.start_transaction().commit([_add(f"w{writer:02d}-{i:03d}.parquet")], operation="WRITE")
            assert result.version is not None
            done.append((result.txn_id, result.version))
        out.put(("deltalog", writer, done, None))
    except BaseException as exc:
        out.put(("deltalog", writer, done, f"{type(exc).__name__}: {exc}"))


def _deltalake_writer(
    location: str, options: dict[str, Any], writer: int, commits: int, barrier: Any, out: Any
) -> None:
    """A spawned process appending with delta-rs; reports the ids it was told were committed."""
    from deltalake import CommitProperties, write_deltalake

    done: list[int] = []
    try:
        barrier.wait(timeout=300)
        for i in range(commits):
            row = 1000 * (writer + 1) + i
            write_deltalake(
                location,
                pa.table({"id": pa.array([row], pa.int64())}),
                mode="append",
                storage_options=options,
                commit_properties=CommitProperties(max_commit_retries=1000),
            )
            done.append(row)
        out.put(("deltalake", writer, done, None))
    except BaseException as exc:
        out.put(("deltalake", writer, done, f"{type(exc).__name__}: {exc}"))


def _run(workers: list[tuple[Any, tuple[Any, ...]]]) -> list[tuple[str, int, list[Any], str | None]]:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(workers))
    out = ctx.Queue()
    procs = [ctx.Process(target=fn, args=(*args, barrier, out)) for fn, args in workers]
    for p in procs:
        p.start()
    reports = []
    try:
        for _ in procs:
            reports.append(out.get(timeout=600))
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
                p.join()
    assert [p.exitcode for p in procs] == [0] * len(procs)
    return reports


def _commits(store: LogStore) -> dict[int, list[dict[str, Any]]]:
    """Every commit file's actions, read through a plain store (no engine)."""
    out = {}
    for info in store.list_from("_delta_log/"):
        if info.name.endswith(".json") and len(info.name) == 25:
            out[int(info.name[:20])] = [orjson.loads(x) for x in store.read(f"_delta_log/{info.name}").splitlines()]
    return out


def _recorded_entries(text: str) -> list[dict[str, Any]]:
    """moto's request recording: JSON documents, one per line, except that its server threads sometimes
    write two entries without the newline between them; decode document by document instead of by line."""
    decoder = json.JSONDecoder()
    entries, pos = [], 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return entries
        entry, pos = decoder.raw_decode(text, pos)
        entries.append(entry)


def _txn_ids(commits: dict[int, list[dict[str, Any]]]) -> dict[int, str | None]:
    return {
        v: next((a["commitInfo"].get("txnId") for a in acts if "commitInfo" in a), None) for v, acts in commits.items()
    }


@pytest.mark.parametrize("backend", backends("s3", "azure"))
def test_processes_blind_append_through_a_cloud_store(backend: str, request: pytest.FixtureRequest) -> None:
    if backend == "s3":
        server: Server = request.getfixturevalue("moto_server")
        location, options = f"s3://{BUCKET}/{unique()}", s3_options(server.endpoint)
    else:
        server = request.getfixturevalue("azurite_server")
        location, options = f"abfs://{CONTAINER}/{unique()}", azure_options(server.endpoint)
    DeltaLog.for_table(location, options).create(SCHEMA)
    started = time.monotonic()
    reports = _run([(_deltalog_writer, (location, options, w, COMMITS)) for w in range(WRITERS)])
    elapsed = time.monotonic() - started
    assert [r[3] for r in reports] == [None] * WRITERS  # no writer saw an error
    reported = {txn: v for _, _, done, _ in reports for txn, v in done}
    total = WRITERS * COMMITS
    assert sorted(reported.values()) == list(range(1, total + 1))  # dense, unique

    store = store_for(location, options)
    ids = _txn_ids(_commits(store))
    assert sorted(ids) == list(range(total + 1))
    assert all(n == 1 for n in Counter(ids.values()).values())  # no txnId twice: nothing duplicated
    assert {t: v for v, t in ids.items() if v > 0} == reported  # nothing lost
    strays = [
        f.name for f in store.list_from("_delta_log/") if not f.name[:1].isdigit() and f.name != "_last_checkpoint"
    ]
    assert strays == []
    snap = DeltaLog.for_table(location, options).snapshot()
    assert (snap.version, snap.num_files) == (total, total)
    print(f"\n{backend}: {WRITERS} processes x {COMMITS} appends in {elapsed:.1f}s")


def test_deltalake_and_deltalog_append_to_one_s3_table(moto_server: Server) -> None:
    from deltalake import DeltaTable, write_deltalake

    location, options = f"s3://{BUCKET}/{unique()}", s3_options(moto_server.endpoint)
    write_deltalake(location, pa.table({"id": pa.array([0], pa.int64())}), storage_options=options)
    moto = moto_server.endpoint
    requests.post(f"{moto}/moto-api/recorder/reset-recording", timeout=10)
    requests.post(f"{moto}/moto-api/recorder/start-recording", timeout=10)
    try:
        half, commits = WRITERS // 2, 10
        reports = _run(
            [(_deltalake_writer, (location, options, w, commits)) for w in range(half)]
            + [(_deltalog_writer, (location, options, w, commits)) for w in range(half)]
        )
    finally:
        requests.post(f"{moto}/moto-api/recorder/stop-recording", timeout=10)
    recording = requests.get(f"{moto}/moto-api/recorder/download-recording", timeout=60).text
    assert [r[3] for r in reports] == [None] * WRITERS
    rs_rows = sorted(row for kind, _, done, _ in reports if kind == "deltalake" for row in done)
    ours = {txn: v for kind, _, done, _ in reports if kind == "deltalog" for txn, v in done}
    assert len(rs_rows) == len(ours) == half * commits

    commits_by_version = _commits(store_for(location, options))
    total = 1 + 2 * half * commits
    assert sorted(commits_by_version) == list(range(total))
    engines: Counter[str] = Counter()
    rows_in_log = []
    for acts in commits_by_version.values():
        info = next(a["commitInfo"] for a in acts if "commitInfo" in a)
        engines[str(info.get("engineInfo", "")).split(":")[0].split("/")[0]] += 1
        for a in acts:
            if "add" in a and a["add"].get("stats"):
                rows_in_log.append(orjson.loads(a["add"]["stats"])["minValues"]["id"])
    assert engines == {"delta-rs": 1 + half * commits, "deltalog": half * commits}
    assert sorted(rows_in_log) == [0, *rs_rows]  # every delta-rs append reported done is there, once
    ids = _txn_ids(commits_by_version)
    assert {t: v for v, t in ids.items() if t in ours} == {t: v for t, v in ours.items()}

    # Both engines read the same state.
    snap = DeltaLog.for_table(location, options).snapshot()
    dt = DeltaTable(location, storage_options=options)
    assert dt.version() == snap.version == total - 1
    theirs = set(dt.get_add_actions(flatten=True).column("path").to_pylist())
    assert theirs == set(snap.files().column("path").to_pylist())
    assert len(theirs) == total

    # Every commit file either engine wrote was a conditional PUT.
    commit_puts = []
    for entry in _recorded_entries(recording):
        url = str(entry.get("url", ""))
        if entry.get("method") == "PUT" and "/_delta_log/" in url and url.split("?")[0].endswith(".json"):
            commit_puts.append(entry.get("headers") or {})
    assert len(commit_puts) >= 2 * half * commits
    assert all(h.get("If-None-Match") == "*" for h in commit_puts)


@pytest.mark.parametrize("backend", backends("s3", "azure"))
def test_faults_on_a_cloud_store_leave_no_duplicate_commit(backend: str, request: pytest.FixtureRequest) -> None:
    if backend == "s3":
        server: Server = request.getfixturevalue("moto_server")
        location, options = f"s3://{BUCKET}/{unique()}", s3_options(server.endpoint)
    else:
        server = request.getfixturevalue("azurite_server")
        location, options = f"abfs://{CONTAINER}/{unique()}", azure_options(server.endpoint)
    DeltaLog.for_table(location, options).create(SCHEMA)

    # A timeout after the object was written: recognised by txnId, not written again at the next version.
    store = FaultyStore(store_for(location, options), sleep=lambda s: None)
    store.arm(fail_after("put_if_absent", "_delta_log/00000000000000000001.json", nth=1, error=timeout()))
    log = DeltaLog(store, store.root)
    first = log.start_transaction(retry=NO_BACKOFF).commit([_add("after-timeout.parquet")])
    assert first.version == 1

    # Then four threads committing through stores that fail at random, before and after the write.
    results: list[tuple[str, int]] = []
    errors: list[str] = []
    lock = threading.Lock()

    def work(seed: int) -> None:
        faulty = FaultyStore(
            store_for(location, options),
            fail_after("put_if_absent", "_delta_log/*.json", probability=0.25, error=timeout()),
            fail_before("put_if_absent", "_delta_log/*.json", probability=0.15, error=server_error()),
            seed=seed,
            sleep=lambda s: None,
        )
        writer = DeltaLog(faulty, faulty.root)
        for i in range(5):
            try:
                r = writer.start_transaction(retry=NO_BACKOFF).commit([_add(f"t{seed}-{i}.parquet")])
            except Exception as exc:  # reported to the test thread
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")
                return
            with lock:
                results.append((r.txn_id, r.version or -1))

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert errors == []
    ids = _txn_ids(_commits(store_for(location, options)))
    assert sorted(ids) == list(range(2 + 20))
    assert all(n == 1 for n in Counter(ids.values()).values())  # nothing written twice
    assert ids[1] == first.txn_id
    assert {t: v for v, t in ids.items() if v > 1} == dict(results)
    files = DeltaLog.for_table(location, options).snapshot().files().column("path").to_pylist()
    assert sorted(files) == sorted(
        ["after-timeout.parquet"] + [f"t{s}-{i}.parquet" for s in range(4) for i in range(5)]
    )
