"""8 writers x 25 appends on each store (local disk, moto S3, Azurite): none fails, none is lost (issue 16).

Each writer is a thread with its own long-lived ``DeltaLog``, released by a barrier, so every version is
contended: losers read the winner once and retry on the next version after a jittered backoff (the sleeps
are recorded and must differ). Afterwards the versions are dense, every append is live exactly once at the
version its writer was told, the protocol checker passes on the log, and the peers read the table (local:
``deltalake`` and duckdb on real parquet files; S3: ``deltalake`` on the log). Commit latency is reported by
``python -m benchmarks --store ...`` (the writers case, p50/p95), never asserted here.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from deltalog import DeltaLog, RetryPolicy
from deltalog import actions as A
from deltalog.storage.uri import store_for
from tests.integration.datafiles import SCHEMA, assert_peers_agree, data_file
from tests.protocol_checker import assert_valid
from tests.storage.servers import BUCKET, CONTAINER, azure_options, azurite_server, moto_server, s3_options, unique
from tests.tiers import backends

__all__ = ["azurite_server", "moto_server"]

WRITERS = 8
APPENDS = 25


def fake_add(name: str) -> A.Add:
    return A.Add(path=f"{name}.parquet", partition_values={}, size=1, modification_time=0, data_change=True)


@pytest.fixture(params=backends("local", "s3", "azure"))
def target(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str, dict[str, Any]]:
    kind = str(request.param)
    if kind == "local":
        root = tmp_path / "t"
        root.mkdir()
        return kind, str(root), {}
    if kind == "s3":
        return kind, f"s3://{BUCKET}/{unique()}", s3_options(request.getfixturevalue("moto_server").endpoint)
    return kind, f"abfs://{CONTAINER}/{unique()}", azure_options(request.getfixturevalue("azurite_server").endpoint)


def test_eight_writers_append_25_times_each_and_nothing_fails_or_is_lost(
    target: tuple[str, str, dict[str, Any]], tmp_path: Path
) -> None:
    kind, location, options = target
    DeltaLog.for_table(location, options).create(SCHEMA)
    sleeps: list[float] = []
    lock = threading.Lock()

    def sleep(seconds: float) -> None:
        # the retry policy's own backoff, recorded and then really waited: the writers' spacing under contention
        # is what this test checks, not a stand-in for synchronisation (the start is a barrier)
        with lock:
            sleeps.append(seconds)
        time.sleep(seconds)

    policy = RetryPolicy(sleep=sleep)
    logs = [DeltaLog.for_table(location, options, auto_checkpoint=False) for _ in range(WRITERS)]
    barrier = threading.Barrier(WRITERS)
    make: Callable[[str], A.Add] = (lambda name: data_file(Path(location), name)) if kind == "local" else fake_add

    def writer(w: int) -> list[tuple[str, int]]:
        logs[w].snapshot()
        barrier.wait(timeout=120)
        acked = []
        for i in range(APPENDS):
            add = make(f"w{w}-{i}")
            result = logs[w].start_transaction(retry=policy).commit([add])
            assert result.version is not None
            acked.append((add.path, result.version))
        return acked

    with ThreadPoolExecutor(WRITERS) as pool:
        acked = [a for out in pool.map(writer, range(WRITERS)) for a in out]  # a failed append raises here

    total = WRITERS * APPENDS
    assert len(acked) == total
    assert sorted(v for _, v in acked) == list(range(1, total + 1))  # one version each, none twice, no gap
    snap = DeltaLog.for_table(location, options).snapshot()
    assert snap.version == total
    assert sorted(snap.files().column("path").to_pylist()) == sorted(p for p, _ in acked)  # none lost
    assert sleeps and len(set(sleeps)) > 1 and max(sleeps) <= policy.backoff_max_s  # jittered, bounded

    if kind == "local":
        assert_valid(location)
        assert_peers_agree(Path(location))
        return
    local = tmp_path / "log-copy"
    (local / "_delta_log").mkdir(parents=True)
    store = store_for(location, options)
    for info in store.list_from("_delta_log/"):
        if info.name.endswith(".json") or ".checkpoint." in info.name or info.name == "_last_checkpoint":
            (local / "_delta_log" / info.name).write_bytes(store.read(f"_delta_log/{info.name}"))
    assert_valid(local)
    shutil.rmtree(local)
    if kind == "s3":  # deltalake's Azure client takes no connection string for an emulator on a random port
        from deltalake import DeltaTable

        dt = DeltaTable(location, storage_options=options)
        assert dt.version() == total
        assert sorted(dt.get_add_actions(flatten=True).column("path").to_pylist()) == sorted(p for p, _ in acked)
