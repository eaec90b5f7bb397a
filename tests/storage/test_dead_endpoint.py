"""An endpoint that stops answering is a typed, retryable ``StorageError`` in bounded time, never a hang (issue 23).

The Azure SDK's own retry policy (15 s, 18 s, 24 s between its tries) multiplied by deltalog's attempts kept
``snapshot()`` on an endpoint refusing connections waiting for minutes with the fsspec (adlfs) client. The
stores now give the SDK a short policy, bound every retried call by a deadline whatever the client does inside
(:mod:`deltalog.storage.retry`), and the commit loop bounds the time it spends resolving an unknown outcome.

The ``timeout`` marks are the hang guard (pytest-timeout fails a test that has not returned), generous on
purpose: they say "returns", not "returns fast". Each case uses a port of 127.0.0.1 where nothing listens, a
listening socket that never answers, or the counting proxy in front of a real server, stopped mid-way.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from benchmarks.proxy import LatencyProxy
from deltalog import CommitStateUnknownError, DeltaLog
from deltalog import actions as A
from deltalog.errors import StorageError
from deltalog.storage.options import EMULATOR_ACCOUNT, EMULATOR_KEY
from deltalog.storage.retry import RetryBudget, remaining, with_retries
from deltalog.storage.uri import store_for
from tests.storage.servers import BUCKET, CONTAINER, Server, azure_options, free_port, s3_options, unique

#: the S3 and Azure clients, each waiting out a dead endpoint's deadline (tens of seconds, no CPU): the cloud tier
pytestmark = pytest.mark.cloud

SCHEMA = pa.schema([("id", pa.int64())])
#: a SAS token of the right shape: the endpoint never gets to judge it
SAS = "sv=2022-11-02&ss=b&srt=sco&sp=rwdl&se=2099-01-01T00:00:00Z&sig=bm90LWEtcmVhbC1zaWduYXR1cmU%3D"


def location(credential: str, endpoint: str, backend: str) -> tuple[str, dict[str, Any]]:
    """A table on ``endpoint`` with an account key, a SAS token (Azure) or keys (S3), through ``backend``."""
    if credential == "s3":
        return f"s3://{BUCKET}/{unique()}", s3_options(endpoint, deltalog_backend=backend)
    options: dict[str, Any] = {
        "azure_storage_account_name": EMULATOR_ACCOUNT,
        "azure_storage_endpoint": f"{endpoint}/{EMULATOR_ACCOUNT}",
        "deltalog_backend": backend,
    }
    if credential == "azure-key":
        options["azure_storage_account_key"] = EMULATOR_KEY
    else:
        options["azure_storage_sas_token"] = SAS
    return f"abfs://{CONTAINER}/{unique()}", options


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """A port that accepts connections (the kernel's backlog does) and never answers a request."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("backend", ["obstore", "fsspec"])
@pytest.mark.parametrize("credential", ["azure-key", "azure-sas", "s3"])
def test_a_snapshot_on_an_endpoint_refusing_connections_fails_typed(credential: str, backend: str) -> None:
    uri, options = location(credential, f"http://127.0.0.1:{free_port()}", backend)
    with pytest.raises(StorageError) as info:
        DeltaLog.for_table(uri, options).snapshot()
    assert info.value.retryable is True  # the endpoint may come back: a caller may try again
    assert uri in str(info.value)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("backend", ["obstore", "fsspec"])
@pytest.mark.parametrize("credential", ["azure-key", "s3"])
def test_the_deadline_bounds_a_call_whatever_the_client_waits_for(
    credential: str, backend: str, silent_endpoint: str
) -> None:
    """The clients wait a minute or more for an answer that never comes, per try; the store's deadline (here 3 s,
    60 s by default) cancels the request and ends the call with a retryable error naming it."""
    uri, options = location(credential, silent_endpoint, backend)
    store = store_for(uri, options)
    store.retry = RetryBudget(deadline_s=3.0)  # type: ignore[attr-defined]
    with pytest.raises(StorageError) as info:
        DeltaLog(store, store.root).snapshot()
    assert info.value.retryable is True
    assert "_delta_log" in str(info.value)


@pytest.mark.timeout(150)
def test_a_commit_whose_endpoint_dies_ends_in_an_unknown_outcome_not_a_hang(azurite_server: Server) -> None:
    """The endpoint stops answering after the transaction read the table: the write's outcome cannot be
    resolved, so the commit says so (typed, with its txnId to look for) once its resolution time is spent."""
    with LatencyProxy(azurite_server.endpoint) as proxy:
        uri = f"abfs://{CONTAINER}/{unique()}"
        log = DeltaLog.for_table(uri, {**azure_options(proxy.endpoint), "deltalog_backend": "fsspec"})
        log.create(SCHEMA)
        txn = log.start_transaction()
        txn.read()
        proxy.stop()  # its port now refuses connections
        with pytest.raises(CommitStateUnknownError) as info:
            txn.commit([A.Add("a.parquet", {}, 1, 0, True)])
    assert txn.txn_id in str(info.value)
    assert DeltaLog.for_table(uri, azure_options(azurite_server.endpoint)).snapshot().version == 0


def test_no_retry_starts_that_the_deadline_would_cut_short() -> None:
    """The budget's attempts stop when the wait before the next would reach the deadline; inside a call, what
    is left of it is what a store bounds its request by (a nested call never extends it)."""
    calls: list[float | None] = []
    slept: list[float] = []

    def failing() -> None:
        calls.append(remaining())
        with_retries("inner", lambda: calls.append(remaining()), RetryBudget(deadline_s=1_000.0))
        raise StorageError("busy", retryable=True)

    budget = RetryBudget(attempts=5, base_s=10.0, max_s=10.0, deadline_s=2.0, sleep=slept.append)
    with pytest.raises(StorageError, match="busy"):
        with_retries("outer", failing, budget)
    assert slept == []  # a 5-10 s wait would pass the 2 s deadline: no retry was started
    outer, inner = calls
    assert outer is not None and inner is not None and 0 < inner <= outer <= 2.0
    assert remaining() is None  # outside any call
