"""Which client serves an s3:// or Azure table, and how the options reach obstore.

obstore (Rust ``object_store``) is the default when it is installed; ``deltalog_backend`` (or the environment's
``DELTALOG_STORE_BACKEND``) picks ``fsspec`` or ``obstore`` by name, and asking for obstore without it, or with
an option it cannot honour, is a typed error naming what to do. The options keep their meaning on both
clients: deltalake's names and fsspec's are translated once and mapped to object_store's keys, secrets kept
out of every ``repr`` and message.
"""

from __future__ import annotations

import sys

import pytest
from obstore.exceptions import AlreadyExistsError, GenericError, PermissionDeniedError

from deltalog.errors import InvalidArgumentError, StorageError
from deltalog.storage.azure import AzureLogStore
from deltalog.storage.gcs import GcsLogStore
from deltalog.storage.obstore_errors import is_already_exists, typed_error
from deltalog.storage.obstore_options import ObstoreConfig, obstore_config
from deltalog.storage.obstore_store import ObstoreLogStore
from deltalog.storage.options import BACKEND_ENV, EMULATOR_KEY, emulator_connection_string, parse_options
from deltalog.storage.s3 import S3LogStore
from deltalog.storage.uri import store_for

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
S3 = {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_ENDPOINT_URL": "http://127.0.0.1:1"}
AZURE = {"connection_string": emulator_connection_string("http://127.0.0.1:1")}


def test_obstore_serves_s3_and_azure_by_default_and_gcs_stays_on_gcsfs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    for uri, options in [("s3://b/t", S3), ("s3a://b/t", S3), ("abfs://c/t", AZURE), ("az://c/t", AZURE)]:
        store = store_for(uri, options)
        assert isinstance(store, ObstoreLogStore) and store.backend == "obstore"
        assert store.root == uri
        assert store.capabilities.atomic_put_if_absent is True
        assert SECRET not in repr(store) and EMULATOR_KEY not in repr(store)
    gcs = store_for("gs://b/t", {"endpoint_url": "http://127.0.0.1:1", "token": "anon", "project": "p"})
    assert isinstance(gcs, GcsLogStore)


def test_the_option_or_the_environment_picks_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    assert isinstance(store_for("s3://b/t", {**S3, "deltalog_backend": "fsspec"}), S3LogStore)
    assert isinstance(store_for("abfs://c/t", {**AZURE, "DELTALOG_BACKEND": "FSSPEC"}), AzureLogStore)
    monkeypatch.setenv(BACKEND_ENV, "fsspec")
    assert isinstance(store_for("s3://b/t", S3), S3LogStore)
    assert isinstance(store_for("s3://b/t", {**S3, "deltalog_backend": "obstore"}), ObstoreLogStore)  # option wins
    monkeypatch.setenv(BACKEND_ENV, "rust")
    with pytest.raises(InvalidArgumentError, match=f"{BACKEND_ENV} must be one of obstore, fsspec"):
        store_for("s3://b/t", S3)
    monkeypatch.delenv(BACKEND_ENV)
    with pytest.raises(InvalidArgumentError, match="deltalog_backend must be one of obstore, fsspec"):
        store_for("s3://b/t", {**S3, "deltalog_backend": "boto"})


def test_asking_for_obstore_when_it_is_not_installed_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "obstore", None)  # import obstore now raises ImportError
    with pytest.raises(InvalidArgumentError, match=r"pip install 'deltalog\[s3\]' \(it brings obstore\)"):
        store_for("s3://b/t", {**S3, "deltalog_backend": "obstore"})
    assert isinstance(store_for("s3://b/t", S3), S3LogStore)  # not asked for: the fsspec client, quietly
    assert isinstance(store_for("abfs://c/t", AZURE), AzureLogStore)


def test_an_option_obstore_cannot_honour_keeps_fsspec_or_is_refused_when_obstore_was_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    profiled = {**S3, "AWS_PROFILE": "dev"}
    assert isinstance(store_for("s3://b/t", profiled), S3LogStore)
    with pytest.raises(InvalidArgumentError, match="'profile' has no obstore equivalent"):
        store_for("s3://b/t", {**profiled, "deltalog_backend": "obstore"})


def test_deltalake_and_fsspec_names_map_to_object_store_keys() -> None:
    s3 = parse_options("s3", {**S3, "aws_region": "eu-west-1", "AWS_SESSION_TOKEN": "tok", "AWS_ALLOW_HTTP": "true"})
    config = obstore_config("s3", s3.fs_kwargs)
    assert isinstance(config, ObstoreConfig)
    assert config.config == {
        "access_key_id": "AKIAEXAMPLE",
        "secret_access_key": SECRET,
        "token": "tok",
        "endpoint": "http://127.0.0.1:1",
        "region": "eu-west-1",
    }
    assert config.client_options == {"allow_http": True}  # an http:// endpoint is used as given
    assert SECRET not in repr(config)
    virtual = obstore_config("s3", parse_options("s3", {"aws_virtual_hosted_style_request": "true"}).fs_kwargs)
    assert isinstance(virtual, ObstoreConfig) and virtual.config == {"virtual_hosted_style_request": True}

    azure = obstore_config("azure", parse_options("azure", {"azure_storage_use_emulator": "true"}).fs_kwargs)
    assert isinstance(azure, ObstoreConfig)
    assert azure.config == {
        "account_name": "devstoreaccount1",
        "account_key": EMULATOR_KEY,
        "endpoint": "http://127.0.0.1:10000/devstoreaccount1",
    }
    assert azure.client_options == {"allow_http": True}
    sas = obstore_config(
        "azure", parse_options("azure", {"account_name": "a", "sas_token": "?sv=1&sig=s3cr3tsig%3D"}).fs_kwargs
    )
    assert isinstance(sas, ObstoreConfig)
    assert sas.config == {"account_name": "a", "sas_key": "sv=1&sig=s3cr3tsig%3D"}
    assert sas.secrets == ("s3cr3tsig=",)  # the signature alone is scrubbed from messages too
    assert "no AccountName" in str(obstore_config("azure", {"connection_string": "AccountKey=k;BlobEndpoint=x"}))


@pytest.mark.parametrize(
    ("error", "retryable", "says"),
    [
        (
            GenericError("Error performing GET http://h/b/k - Server returned non-2xx status code: 503 Slow Down"),
            True,
            "HTTP 503",
        ),
        (GenericError("Error after 3 retries: error sending request for url (http://h/b/k)"), True, "GenericError"),
        (GenericError("status code: 400 Bad Request: InvalidArgument"), False, "HTTP 400"),
        (PermissionDeniedError("status code: 403 Forbidden: SignatureDoesNotMatch"), False, "access denied"),
        (FileNotFoundError("status code: 404 Not Found: <Code>NoSuchBucket</Code>"), False, "does not exist"),
    ],
)
def test_obstore_errors_become_typed_errors_naming_the_path(error: BaseException, retryable: bool, says: str) -> None:
    typed = typed_error("s3", "read", "s3://b/t", "b", "_delta_log/0.json", error, (SECRET,))
    assert isinstance(typed, StorageError) and typed.retryable is retryable
    assert says in str(typed) and "s3://b/t/_delta_log/0.json" in str(typed) and typed.path == "_delta_log/0.json"
    assert is_already_exists(AlreadyExistsError("412 Precondition Failed")) and not is_already_exists(error)
