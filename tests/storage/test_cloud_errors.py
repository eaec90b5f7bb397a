"""Bad input and failures on the cloud stores: typed errors that name the table, say what to fix, keep secrets.

Real servers answer the cases they can produce (wrong credentials, a missing bucket or container, nobody
listening); the HTTP answers a local server cannot be made to give (409 ConditionalRequestConflict, 503
SlowDown, a read timeout) are raised by a stand-in file system so their mapping to ``retryable`` is pinned too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import botocore.exceptions
import pyarrow as pa
import pytest
from azure.core import exceptions as az

from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.errors import FileAlreadyExistsError, StorageError, TableNotFoundError
from deltalog.storage.azure import AzureLogStore
from deltalog.storage.options import EMULATOR_ACCOUNT, emulator_connection_string
from deltalog.storage.s3 import S3LogStore
from deltalog.storage.uri import store_for
from tests.storage.servers import BUCKET, CONTAINER, S3_SECRET, Server, azure_options, free_port, s3_options, unique

WRONG_SECRET = "not-the-right-secret-7f3a9c1e5b"
WRONG_KEY = "d3Jvbmcta2V5LXRoYXQtbXVzdC1uZXZlci1hcHBlYXItaW4tbG9ncw=="
SCHEMA = pa.schema([("id", pa.int64())])


def _assert_clear(exc: StorageError, uri: str, *hints: str, secrets: tuple[str, ...] = ()) -> None:
    text = str(exc)
    assert uri in text
    for hint in hints:
        assert hint in text, text
    for secret in secrets:
        assert secret not in text and secret not in repr(exc)


# ---------------------------------------------------------------------------------------------- real servers
def test_s3_wrong_credentials(moto_auth_server: Server) -> None:
    uri = f"s3://{BUCKET}/{unique()}"
    options = s3_options(
        moto_auth_server.endpoint, AWS_ACCESS_KEY_ID="AKIAWRONGWRONGWRONG", AWS_SECRET_ACCESS_KEY=WRONG_SECRET
    )
    log = DeltaLog.for_table(uri, options)
    with pytest.raises(StorageError) as info:
        log.snapshot()
    _assert_clear(info.value, uri, "access denied", "AWS_ACCESS_KEY_ID", secrets=(WRONG_SECRET,))
    assert info.value.retryable is False
    with pytest.raises(StorageError) as info:
        log.store.put_if_absent("_delta_log/00000000000000000000.json", b"{}")
    _assert_clear(info.value, uri, "access denied", secrets=(WRONG_SECRET,))
    with pytest.raises(StorageError) as info:
        log.create(SCHEMA)  # refused outright: neither retried nor reported as an unknown outcome
    assert not isinstance(info.value, FileAlreadyExistsError) and info.value.retryable is False


def test_s3_missing_bucket(moto_server: Server) -> None:
    uri = "s3://no-such-bucket-for-deltalog/t"
    log = DeltaLog.for_table(uri, s3_options(moto_server.endpoint))
    for call in (log.snapshot, lambda: log.create(SCHEMA), lambda: log.store.read("_delta_log/_last_checkpoint")):
        with pytest.raises(StorageError) as info:
            call()
        _assert_clear(
            info.value, "s3://no-such-bucket-for-deltalog", "does not exist", "create it", secrets=(S3_SECRET,)
        )
        assert info.value.retryable is False


def test_no_table_at_an_existing_location(moto_server: Server, azurite_server: Server) -> None:
    for location, options in [
        (f"s3://{BUCKET}/{unique()}", s3_options(moto_server.endpoint)),
        (f"abfs://{CONTAINER}/{unique()}", azure_options(azurite_server.endpoint)),
    ]:
        with pytest.raises(TableNotFoundError, match=location):
            DeltaLog.for_table(location, options).snapshot()


def test_s3_nobody_listening_is_retryable() -> None:
    uri = f"s3://{BUCKET}/t"
    options = s3_options(f"http://127.0.0.1:{free_port()}", config_kwargs={"retries": {"max_attempts": 1}})
    store = store_for(uri, options)
    with pytest.raises(StorageError) as info:
        list(store.list_from("_delta_log/"))
    assert info.value.retryable is True
    _assert_clear(info.value, uri, secrets=(S3_SECRET,))


def test_azure_wrong_key(azurite_server: Server) -> None:
    uri = f"abfs://{CONTAINER}/{unique()}"
    cs = emulator_connection_string(azurite_server.endpoint, EMULATOR_ACCOUNT, WRONG_KEY)
    log = DeltaLog.for_table(uri, {"AZURE_STORAGE_CONNECTION_STRING": cs})
    with pytest.raises(StorageError) as info:
        log.snapshot()
    _assert_clear(info.value, uri, "access denied", "account_key", secrets=(WRONG_KEY,))
    assert info.value.retryable is False
    with pytest.raises(StorageError) as info:
        log.create(SCHEMA)
    _assert_clear(info.value, uri, "access denied", secrets=(WRONG_KEY,))


def test_azure_missing_container(azurite_server: Server) -> None:
    uri = "abfs://no-such-container/t"
    log = DeltaLog.for_table(uri, azure_options(azurite_server.endpoint))
    for call in (log.snapshot, lambda: log.create(SCHEMA), lambda: log.store.read("_delta_log/_last_checkpoint")):
        with pytest.raises(StorageError) as info:
            call()
        _assert_clear(info.value, "abfs://no-such-container", "container", "does not exist", "create it")


def test_secrets_never_reach_logs_reprs_or_errors(
    moto_server: Server, moto_auth_server: Server, azurite_server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    s3_good = s3_options(moto_server.endpoint)
    s3_bad = s3_options(moto_auth_server.endpoint, AWS_SECRET_ACCESS_KEY=WRONG_SECRET)
    az_bad = {"connection_string": emulator_connection_string(azurite_server.endpoint, EMULATOR_ACCOUNT, WRONG_KEY)}
    texts: list[str] = []
    with caplog.at_level(logging.DEBUG):
        good = DeltaLog.for_table(f"s3://{BUCKET}/{unique()}", s3_good)
        good.create(SCHEMA)
        good.start_transaction().commit([A.Add("a.parquet", {}, 1, 0, True)])
        texts += [repr(good), repr(good.store), good.store.root, str(good.snapshot().version)]
        for location, options in [
            (f"s3://{BUCKET}/{unique()}", s3_bad),
            ("s3://no-such-bucket-for-deltalog/t", s3_good),
            (f"abfs://{CONTAINER}/{unique()}", az_bad),
        ]:
            log = DeltaLog.for_table(location, options)
            texts += [repr(log), repr(log.store)]
            with pytest.raises(StorageError) as info:
                log.create(SCHEMA)
            texts += [str(info.value), repr(info.value)]
    everything = "\n".join(texts) + caplog.text
    assert "access denied" in everything  # the failures did happen and were reported
    for secret in (S3_SECRET, WRONG_SECRET, WRONG_KEY):
        assert secret not in everything


# ------------------------------------------------------------------------------ answers a test server cannot give
class RaisingFs:
    """Stands in for s3fs/adlfs: every write raises what the test says."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.loop = None

    def pipe_file(self, *args: Any, **kwargs: Any) -> None:
        raise self.error

    def cat_file(self, *args: Any, **kwargs: Any) -> bytes:
        raise self.error


def client_error(code: str, status: int, **error: str) -> botocore.exceptions.ClientError:
    return botocore.exceptions.ClientError(
        {
            "Error": {"Code": code, "Message": f"{code} says no", **error},
            "ResponseMetadata": {"HTTPStatusCode": status},
        },
        "PutObject",
    )


def as_s3fs_raises(exc: BaseException) -> BaseException:
    """s3fs re-raises a ClientError as an OSError whose cause is the ClientError."""
    wrapped = OSError(5, str(exc))
    wrapped.__cause__ = exc
    return wrapped


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (client_error("ConditionalRequestConflict", 409), True),
        (client_error("SlowDown", 503), True),
        (client_error("InternalError", 500), True),
        (client_error("AccessDenied", 403), False),
        (client_error("InvalidArgument", 400), False),
        (botocore.exceptions.ReadTimeoutError(endpoint_url="http://x"), True),
        (botocore.exceptions.EndpointConnectionError(endpoint_url="http://x"), True),
        (TimeoutError("read timed out"), True),
    ],
    ids=["409-conflict", "503-slowdown", "500", "403", "400", "read-timeout", "connect-error", "timeout"],
)
@pytest.mark.parametrize("wrap", [False, True], ids=["raw", "via-s3fs"])
def test_s3_error_mapping(error: BaseException, retryable: bool, wrap: bool) -> None:
    raised = as_s3fs_raises(error) if wrap and isinstance(error, botocore.exceptions.ClientError) else error
    store = S3LogStore("bkt", "t", fs=RaisingFs(raised), secrets=("s3cr3t-value",))
    with pytest.raises(StorageError) as info:
        store.put_if_absent("_delta_log/00000000000000000001.json", b"x")
    assert not isinstance(info.value, FileAlreadyExistsError)
    assert info.value.retryable is retryable
    assert "s3://bkt/t/_delta_log/00000000000000000001.json" in str(info.value)


@pytest.mark.parametrize(
    "error",
    [as_s3fs_raises(client_error("PreconditionFailed", 412)), FileExistsError("exists")],
    ids=["412-without-condition", "s3fs-file-exists"],
)
def test_s3_precondition_failed_means_the_name_is_taken(error: BaseException) -> None:
    store = S3LogStore("bkt", "t", fs=RaisingFs(error))
    with pytest.raises(FileAlreadyExistsError):
        store.put_if_absent("_delta_log/00000000000000000001.json", b"x")


def _http_error(cls: type[az.HttpResponseError], status: int, code: str) -> az.HttpResponseError:
    err = cls(message=f"{code} says no")
    err.status_code = status
    err.error_code = code
    return err


AZURE_CASES: list[tuple[Callable[[], BaseException], bool]] = [
    (lambda: _http_error(az.HttpResponseError, 503, "ServerBusy"), True),
    (lambda: _http_error(az.HttpResponseError, 500, "InternalError"), True),
    (lambda: _http_error(az.HttpResponseError, 429, "TooManyRequests"), True),
    (lambda: _http_error(az.HttpResponseError, 403, "AuthorizationFailure"), False),
    (lambda: _http_error(az.HttpResponseError, 400, "InvalidInput"), False),
    (lambda: az.ServiceRequestError("connection refused"), True),
    (lambda: az.ServiceResponseError("connection reset while reading"), True),
]


@pytest.mark.parametrize(
    ("make", "retryable"), AZURE_CASES, ids=["503", "500", "429", "403", "400", "request", "response"]
)
def test_azure_error_mapping(make: Callable[[], BaseException], retryable: bool) -> None:
    store = AzureLogStore("cont", "t", fs=RaisingFs(make()))
    with pytest.raises(StorageError) as info:
        store.put_if_absent("_delta_log/00000000000000000001.json", b"x")
    assert not isinstance(info.value, FileAlreadyExistsError)
    assert info.value.retryable is retryable
    assert "abfs://cont/t/_delta_log/00000000000000000001.json" in str(info.value)
    existing = AzureLogStore("cont", "t", fs=RaisingFs(_http_error(az.ResourceExistsError, 409, "BlobAlreadyExists")))
    with pytest.raises(FileAlreadyExistsError):
        existing.put_if_absent("_delta_log/00000000000000000001.json", b"x")
