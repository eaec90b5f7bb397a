"""Transient failures on the cloud read path are retried within a budget; lasting ones become typed errors.

The clients retry inside a call already; what still reaches the store (a read timeout after the client's own
attempts, a connection dropped mid-body) used to fail a snapshot load at once. Real servers answer; the
failures are injected by :class:`~tests.storage.flaky.FlakyFs` around the real s3fs / adlfs file system.
"""

from __future__ import annotations

from typing import Any

import botocore.exceptions
import pyarrow as pa
import pytest
from azure.core import exceptions as az

from deltalog import DeltaLog
from deltalog.errors import StorageError
from deltalog.storage.azure import AzureLogStore
from deltalog.storage.base import LogStore
from deltalog.storage.s3 import S3LogStore
from deltalog.storage.uri import store_for
from tests.storage.flaky import FlakyFs
from tests.storage.servers import BUCKET, CONTAINER, FSSPEC, Server, azure_options, s3_options, unique

SCHEMA = pa.schema([("id", pa.int64())])


def created(uri: str, options: dict[str, Any]) -> tuple[LogStore, str]:
    """A table created at ``uri`` (version 0) by deltalog; its real store and its key prefix."""
    DeltaLog.for_table(uri, options).create(SCHEMA)
    return store_for(uri, {**options, **FSSPEC}), uri.split("://", 1)[1].split("/", 1)[1]


def test_s3_reads_survive_transient_timeouts(moto_server: Server) -> None:
    uri = f"s3://{BUCKET}/{unique()}"
    real, prefix = created(uri, s3_options(moto_server.endpoint))
    assert isinstance(real, S3LogStore)
    flaky = FlakyFs(real.fs, "_call_s3", 2, lambda: botocore.exceptions.ReadTimeoutError(endpoint_url="http://x"))
    store = S3LogStore(BUCKET, prefix, fs=flaky)
    assert DeltaLog(store, store.root).snapshot().version == 0
    assert flaky.left == 0  # both timeouts happened, and were absorbed
    stuck = FlakyFs(real.fs, "_call_s3", 100, lambda: botocore.exceptions.ReadTimeoutError(endpoint_url="http://x"))
    store = S3LogStore(BUCKET, prefix, fs=stuck)
    with pytest.raises(StorageError) as info:
        store.read("_delta_log/00000000000000000000.json")
    assert info.value.retryable is True and stuck.calls == store.retry.attempts
    assert f"{uri}/_delta_log/00000000000000000000.json" in str(info.value)


def test_azure_reads_survive_a_dropped_response(azurite_server: Server) -> None:
    real, prefix = created(f"abfs://{CONTAINER}/{unique()}", azure_options(azurite_server.endpoint))
    assert isinstance(real, AzureLogStore)
    flaky = FlakyFs(real.fs, "service_client", 1, lambda: az.ServiceResponseError("connection reset while reading"))
    store = AzureLogStore(CONTAINER, prefix, fs=flaky)
    assert DeltaLog(store, store.root).snapshot().version == 0
    assert flaky.left == 0
