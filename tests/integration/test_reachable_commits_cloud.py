"""Reachability on the object stores: their listing times are the store's clock, coarse (seconds), and the
same on every listing, which is what the tips of docs/commits.md compare.

On a moto S3 server and on Azurite: a long-lived writer's warm appends never mistake its own commits for
changed files (no reload), a slow writer's commit into a cleaned-up log is never acknowledged, and a table
recreated under a cached ``DeltaLog`` is read from the log. ``deltalake`` reads the S3 tables alongside.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from deltalog import CommitNotReachableError, CommitStateUnknownError, DeltaLog
from deltalog import actions as A
from deltalog.storage.uri import store_for
from tests.storage.servers import (
    BUCKET,
    CONTAINER,
    azure_options,
    azurite_server,
    moto_server,
    s3_options,
    unique,
)
from tests.tiers import backends

__all__ = ["azurite_server", "moto_server"]

SCHEMA = pa.schema([("id", pa.int64())])
CONF = {"delta.checkpointInterval": "5"}
Location = tuple[str, dict[str, Any]]


@pytest.fixture(params=backends("s3", "azure"))
def new_location(request: pytest.FixtureRequest) -> Callable[[], Location]:
    if request.param == "s3":
        endpoint = request.getfixturevalue("moto_server").endpoint
        return lambda: (f"s3://{BUCKET}/{unique()}", s3_options(endpoint))
    endpoint = request.getfixturevalue("azurite_server").endpoint
    return lambda: (f"abfs://{CONTAINER}/{unique()}", azure_options(endpoint))


def add(name: str) -> A.Add:
    return A.Add(path=f"{name}.parquet", partition_values={}, size=1, modification_time=0, data_change=True)


def latest_paths(location: str, options: dict[str, Any]) -> set[str]:
    return set(DeltaLog.for_table(location, options).snapshot().files().column("path").to_pylist())


def assert_deltalake_agrees(location: str, options: dict[str, Any]) -> None:
    """deltalake's live adds of the latest version are deltalog's (S3: the options are deltalake's spelling)."""
    if not location.startswith("s3://"):
        return  # deltalake's Azure client takes no connection string for an emulator on a random port
    from deltalake import DeltaTable

    dt = DeltaTable(location, storage_options=options)
    snap = DeltaLog.for_table(location, options).snapshot()
    assert dt.version() == snap.version
    assert set(dt.get_add_actions(flatten=True).column("path").to_pylist()) == latest_paths(location, options)


def test_warm_appends_trust_their_own_commits(
    new_location: Callable[[], Location], caplog: pytest.LogCaptureFixture
) -> None:
    location, options = new_location()
    log = DeltaLog.for_table(location, options, auto_checkpoint=False)
    log.create(SCHEMA)
    with caplog.at_level(logging.INFO, logger="deltalog.table.refresh"):
        for i in range(4):
            txn = log.start_transaction()
            assert txn.read_version == i
            txn.commit([add(f"f{i}")])
    reloads = [r.getMessage() for r in caplog.records if "no longer lists" in r.getMessage()]
    assert reloads == []  # the listing after each write gave the times the next refresh compares
    assert latest_paths(location, options) == {f"f{i}.parquet" for i in range(4)}
    assert_deltalake_agrees(location, options)


def test_a_slow_writer_into_a_cleaned_up_log_is_never_acknowledged(new_location: Callable[[], Location]) -> None:
    location, options = new_location()
    DeltaLog.for_table(location, options).create(SCHEMA, configuration=CONF)
    DeltaLog.for_table(location, options).start_transaction().commit([add("a")])
    slow = DeltaLog.for_table(location, options).start_transaction()  # reads version 1
    for i in range(11):  # 2..12, checkpoints at 5 and 10
        DeltaLog.for_table(location, options).start_transaction().commit([add(f"b{i}")])
    ahead = DeltaLog.for_table(location, options, clock=lambda: time.time() + 3 * 86_400)
    ahead.cleanup(retention=0, dry_run=False)
    before = latest_paths(location, options)

    # Within the same second the store's times cannot show which came first: then the outcome is unknown,
    # never a success.
    with pytest.raises((CommitNotReachableError, CommitStateUnknownError)):
        slow.commit([add("slow")])
    assert latest_paths(location, options) == before
    assert DeltaLog.for_table(location, options).snapshot().version == 12
    assert_deltalake_agrees(location, options)


def test_a_table_recreated_under_a_cached_log_is_read_from_the_log(new_location: Callable[[], Location]) -> None:
    """Once the cached log's last commit is no longer young (docs/commits.md), the listing before the
    transaction shows the new table and the append goes onto it."""
    location, options = new_location()
    offset = [0.0]
    log = DeltaLog.for_table(location, options, clock=lambda: time.time() + offset[0])
    log.create(SCHEMA)
    for i in range(3):
        log.start_transaction().commit([add(f"old{i}")])
    store = store_for(location, options)
    for info in list(store.list_from("_delta_log/")):
        store.delete(f"_delta_log/{info.name}")
    other = DeltaLog.for_table(location, options)
    other.create(SCHEMA)
    other.start_transaction().commit([add("new")])

    offset[0] = 30 * 86_400  # a month later by the writer's clock: the last commit is old
    result = log.start_transaction().commit([add("after")])
    assert result.version == 2
    assert latest_paths(location, options) == {"new.parquet", "after.parquet"}
    assert_deltalake_agrees(location, options)
