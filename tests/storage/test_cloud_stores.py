"""What the cloud stores add beyond the contract: bounded listings, and the refusal to commit unsafely.

A listing from version N must cost what lies after N (user need 10): on S3 one ListObjectsV2 call with
``StartAfter``; on Azure a few prefix listings. And a store that cannot put-if-absent atomically must not be
committed through unless the user said so explicitly (user need 2).
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.errors import CommitStateUnknownError, StorageError
from deltalog.storage.azure import AzureLogStore
from deltalog.storage.faults import FaultyStore, fail_before
from deltalog.storage.local import LocalLogStore
from deltalog.storage.options import UNSAFE_OPT_IN
from deltalog.storage.s3 import S3LogStore
from deltalog.storage.uri import store_for
from tests.storage.servers import BUCKET, CONTAINER, FSSPEC, Server, azure_options, s3_options, unique

SCHEMA = pa.schema([("id", pa.int64())])
VERSIONS = 1005  # more than one ListObjectsV2 page (1000 keys)
AZURE_VERSIONS = 300


def add(name: str) -> A.Add:
    return A.Add(path=name, partition_values={}, size=1, modification_time=0, data_change=True)


def fill_log(store: Any, versions: int) -> None:
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda v: store.put_if_absent(f"_delta_log/{v:020d}.json", b"{}\n"), range(versions)))


def test_s3_list_from_starts_after_and_pages(moto_server: Server) -> None:
    # a bucket of its own: moto lists a bucket by scanning all its keys, and these would slow every other test
    bucket = unique("listing")
    store = store_for(f"s3://{bucket}/t", s3_options(moto_server.endpoint, skip_instance_cache=True, **FSSPEC))
    assert isinstance(store, S3LogStore)
    store.fs.call_s3("create_bucket", Bucket=bucket)
    fill_log(store, VERSIONS)
    calls: list[dict[str, Any]] = []
    keys: list[int] = []
    real = store.fs.call_s3

    def counting(method: str, **kwargs: Any) -> Any:
        out = real(method, **kwargs)
        if method == "list_objects_v2":
            calls.append(kwargs)
            keys.append(len(out.get("Contents") or ()))
        return out

    store.fs.call_s3 = counting
    try:
        tail = [f.name for f in store.list_from(f"_delta_log/{VERSIONS - 5:020d}.")]
        assert tail == [f"{v:020d}.json" for v in range(VERSIONS - 5, VERSIONS)]
        assert len(calls) == 1 and keys == [5]  # the listing cost what lies after the start
        assert calls[0]["StartAfter"].endswith(f"{VERSIONS - 5:020d}-")  # just below "<v>."
        calls.clear()
        keys.clear()
        everything = [f.name for f in store.list_from("_delta_log/")]
        assert everything == [f"{v:020d}.json" for v in range(VERSIONS)]
        assert len(calls) == 2 and keys == [1000, VERSIONS - 1000]  # paged, nothing lost at the page edge
    finally:
        del store.fs.call_s3


def test_azure_list_from_is_bounded_by_version_prefixes(azurite_server: Server) -> None:
    store = store_for(f"abfs://{CONTAINER}/{unique()}", {**azure_options(azurite_server.endpoint), **FSSPEC})
    assert isinstance(store, AzureLogStore)
    fill_log(store, AZURE_VERSIONS)
    listed: list[int] = []
    real = store._children

    async def counting(prefix: str) -> Any:
        out = await real(prefix)
        listed.append(len(out))
        return out

    store._children = counting  # type: ignore[method-assign]
    tail = [f.name for f in store.list_from(f"_delta_log/{AZURE_VERSIONS - 5:020d}.")]
    assert tail == [f"{v:020d}.json" for v in range(AZURE_VERSIONS - 5, AZURE_VERSIONS)]
    assert len(listed) <= 2 and sum(listed) <= 30  # never the 1100-blob directory
    listed.clear()
    assert [f.name for f in store.list_from(f"_delta_log/{AZURE_VERSIONS:020d}.")] == []  # "anything new?"
    assert len(listed) <= 2 and sum(listed) <= 30
    listed.clear()
    assert len(list(store.list_from("_delta_log/"))) == AZURE_VERSIONS
    assert listed == [AZURE_VERSIONS]


def test_a_deltalog_on_each_cloud_reads_what_it_wrote(moto_server: Server, azurite_server: Server) -> None:
    for location, options in [
        (f"s3a://{BUCKET}/{unique()}", s3_options(moto_server.endpoint)),
        (f"abfss://{CONTAINER}/{unique()}", azure_options(azurite_server.endpoint)),
    ]:
        log = DeltaLog.for_table(location, options)
        log.create(SCHEMA)
        for i in range(12):  # through an automatic checkpoint at version 10
            log.start_transaction().commit([add(f"f{i}.parquet")])
        fresh = DeltaLog.for_table(location, options)
        snap = fresh.snapshot()
        assert (snap.version, snap.num_files) == (12, 12)
        assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 10
        assert [h.version for h in fresh.history(limit=3)] == [12, 11, 10]


# ---------------------------------------------------------------------------------------------- unsafe stores
def test_a_store_without_atomic_put_if_absent_refuses_to_commit(tmp_path: Path) -> None:
    location = f"local://{tmp_path / 'table'}"
    log = DeltaLog.for_table(location, {"auto_mkdir": True})
    with pytest.raises(StorageError) as info:
        log.create(SCHEMA)
    message = str(info.value)
    assert UNSAFE_OPT_IN in message and "concurrent writers" in message and location in message
    assert not (tmp_path / "table" / "_delta_log" / "00000000000000000000.json").exists()


def test_the_explicit_opt_in_allows_commits_and_reads_need_none(tmp_path: Path) -> None:
    location = f"local://{tmp_path / 'table'}"
    opted = DeltaLog.for_table(location, {"auto_mkdir": True, "DELTALOG_ALLOW_UNSAFE_COMMITS": "true"})
    opted.create(SCHEMA)
    assert opted.start_transaction().commit([add("a.parquet")]).version == 1
    reader = DeltaLog.for_table(location, {"auto_mkdir": True})  # reading never needs the opt-in
    assert reader.snapshot().num_files == 1
    with pytest.raises(StorageError, match=UNSAFE_OPT_IN):
        reader.start_transaction().commit([add("b.parquet")])
    assert reader.snapshot().num_files == 1


def test_a_rejected_write_is_raised_at_once_not_reported_as_unknown(tmp_path: Path) -> None:
    denied = functools.partial(StorageError, "access denied (AccessDenied) for put_if_absent", retryable=False)
    store = FaultyStore(LocalLogStore(str(tmp_path)), sleep=lambda s: None)
    log = DeltaLog(store, str(tmp_path))
    log.create(SCHEMA)
    store.arm(fail_before("put_if_absent", "_delta_log/*1.json", error=lambda op, path: denied(path=path)))
    with pytest.raises(StorageError, match="access denied") as info:
        log.start_transaction().commit([add("a.parquet")])
    assert not isinstance(info.value, CommitStateUnknownError)
    assert len(store.calls_to("put_if_absent", "_delta_log/*1.json")) == 1  # no retries of a refusal


def test_a_missing_server_binary_fails_and_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.storage import servers

    monkeypatch.setattr(servers, "AZURITE_BIN", tmp_path / "no-azurite-here")
    with pytest.raises(pytest.fail.Exception, match="scripts/test"):
        servers.start_azurite(tmp_path)
