"""Locations and ``storage_options``: which store a URI gets, and how deltalake-style names are translated."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from deltalog.errors import InvalidArgumentError
from deltalog.storage.azure import AzureLogStore
from deltalog.storage.fsspec_store import FsspecLogStore
from deltalog.storage.local import LocalLogStore
from deltalog.storage.options import (
    EMULATOR_ACCOUNT,
    UNSAFE_OPT_IN,
    parse_options,
    scrub,
    unsafe_commits_allowed,
)
from deltalog.storage.s3 import S3LogStore, conditional_put_supported
from deltalog.storage.uri import store_for
from tests.storage.servers import FSSPEC

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
ACCOUNT_KEY = "c2VjcmV0LWFjY291bnQta2V5LXRoYXQtbXVzdC1uZXZlci1sZWFr"


def test_deltalake_s3_names_are_translated_case_insensitively() -> None:
    opts = parse_options(
        "s3",
        {
            "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
            "aws_secret_access_key": SECRET,
            "Aws_Session_Token": "session-token-value",
            "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
            "AWS_REGION": "eu-west-1",
            "AWS_ALLOW_HTTP": "true",
            "AWS_S3_ALLOW_UNSAFE_RENAME": "true",
            "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
        },
    )
    assert opts.fs_kwargs == {
        "key": "AKIAEXAMPLE",
        "secret": SECRET,
        "token": "session-token-value",
        "endpoint_url": "http://127.0.0.1:9000",
        "client_kwargs": {"region_name": "eu-west-1"},
        "config_kwargs": {"s3": {"addressing_style": "path"}},
    }
    assert SECRET in opts.secrets and "session-token-value" in opts.secrets
    assert opts.allow_unsafe_commits is False


def test_fsspec_names_pass_through_and_region_joins_client_kwargs() -> None:
    opts = parse_options(
        "s3", {"key": "k", "secret": "s3cr3t", "endpoint_url": "http://x", "client_kwargs": {"verify": False}}
    )
    assert opts.fs_kwargs == {
        "key": "k",
        "secret": "s3cr3t",
        "endpoint_url": "http://x",
        "client_kwargs": {"verify": False},
    }
    with_region = parse_options("s3", {"client_kwargs": {"verify": False}, "region": "us-west-2"})
    assert with_region.fs_kwargs["client_kwargs"] == {"verify": False, "region_name": "us-west-2"}


def test_azure_names_and_the_emulator() -> None:
    opts = parse_options(
        "azure", {"AZURE_STORAGE_ACCOUNT_NAME": "acct", "AZURE_STORAGE_ACCOUNT_KEY": ACCOUNT_KEY, "sas_key": "sv=1"}
    )
    assert opts.fs_kwargs == {"account_name": "acct", "account_key": ACCOUNT_KEY, "sas_token": "sv=1"}
    assert ACCOUNT_KEY in opts.secrets
    emu = parse_options("azure", {"azure_storage_use_emulator": "true", "AZURE_STORAGE_ENDPOINT": "http://127.0.0.1:1"})
    cs = emu.fs_kwargs["connection_string"]
    assert f"AccountName={EMULATOR_ACCOUNT};" in cs
    assert f"BlobEndpoint=http://127.0.0.1:1/{EMULATOR_ACCOUNT};" in cs
    cs_opts = parse_options("azure", {"AZURE_STORAGE_CONNECTION_STRING": f"AccountName=a;AccountKey={ACCOUNT_KEY};"})
    assert ACCOUNT_KEY in cs_opts.secrets  # the key inside a connection string is scrubbed on its own too


def test_deltalog_switches_and_bad_values() -> None:
    assert parse_options("memory", {UNSAFE_OPT_IN: "TRUE"}).allow_unsafe_commits is True
    assert parse_options("memory", {"DELTALOG_ALLOW_UNSAFE_COMMITS": "false"}).allow_unsafe_commits is False
    with pytest.raises(InvalidArgumentError, match="deltalog_allow_unsafe_commits"):
        parse_options("s3", {"deltalog_allow_unsafe_commit": "true"})  # a typo is an error, not ignored
    with pytest.raises(InvalidArgumentError, match="true or false"):
        parse_options("s3", {UNSAFE_OPT_IN: "maybe"})


def test_locking_options_warn_that_dynamodb_writers_are_not_safe(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        opts = parse_options("s3", {"AWS_S3_LOCKING_PROVIDER": "dynamodb", "DELTA_DYNAMO_TABLE_NAME": "tbl-x9q"})
    assert opts.fs_kwargs == {}
    assert "DynamoDB" in caplog.text and "AWS_S3_LOCKING_PROVIDER" in caplog.text
    assert "tbl-x9q" not in caplog.text and "dynamodb" not in caplog.text  # option values are never logged


def test_repr_and_scrub_hide_secrets() -> None:
    opts = parse_options("s3", {"AWS_SECRET_ACCESS_KEY": SECRET, "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE"})
    assert SECRET not in repr(opts)
    assert scrub(f"denied for {SECRET} and {SECRET[:10]}", opts.secrets) == f"denied for *** and {SECRET[:10]}"


@pytest.mark.parametrize(
    ("uri", "bucket_root"),
    [("s3://bkt/a/table", "s3://bkt/a/table"), ("s3a://bkt/t/", "s3a://bkt/t"), ("s3://bkt", "s3://bkt")],
)
def test_s3_uris(uri: str, bucket_root: str) -> None:
    store = store_for(uri, {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": SECRET, **FSSPEC})
    assert isinstance(store, S3LogStore)
    assert store.root == bucket_root
    assert store.capabilities.atomic_put_if_absent is True
    assert SECRET not in repr(store)


@pytest.mark.parametrize(
    ("uri", "root", "account"),
    [
        ("abfs://cont/t", "abfs://cont/t", "acct"),
        ("abfss://cont@other.dfs.core.windows.net/dir/t", "abfss://cont@other.dfs.core.windows.net/dir/t", "other"),
        ("az://cont/t", "az://cont/t", "acct"),
    ],
)
def test_azure_uris(uri: str, root: str, account: str) -> None:
    options = {"AZURE_STORAGE_ACCOUNT_KEY": ACCOUNT_KEY}
    if "@" not in uri:
        options["azure_storage_account_name"] = "acct"
    store = store_for(uri, {**options, **FSSPEC})
    assert isinstance(store, AzureLogStore)
    assert store.root == root
    assert store.fs.account_name == account
    assert ACCOUNT_KEY not in repr(store)


def test_local_paths_and_other_fsspec_urls(tmp_path: Path) -> None:
    assert isinstance(store_for(tmp_path), LocalLogStore)
    assert isinstance(store_for(f"file://{tmp_path}"), LocalLogStore)
    generic = store_for(f"local://{tmp_path}")
    assert isinstance(generic, FsspecLogStore)
    assert generic.capabilities.atomic_put_if_absent is False
    assert unsafe_commits_allowed(generic) is False
    opted = store_for(f"local://{tmp_path}", {UNSAFE_OPT_IN: "true"})
    assert unsafe_commits_allowed(opted) is True


def test_uris_without_a_bucket_or_container_are_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="bucket"):
        store_for("s3:///just/a/path")
    with pytest.raises(InvalidArgumentError, match="container"):
        store_for("abfss://@acct.dfs.core.windows.net/t")


def test_installed_s3fs_and_botocore_can_send_conditional_puts() -> None:
    assert conditional_put_supported() is None


def test_an_http_azure_endpoint_stays_http() -> None:
    """deltalake's ``azure_storage_endpoint`` + ``allow_http``: the http endpoint must be reached over http (adlfs's
    ``account_host`` would make it https, and the store timed out)."""
    opts = parse_options(
        "azure",
        {
            "azure_storage_account_name": "devstoreaccount1",
            "azure_storage_account_key": ACCOUNT_KEY,
            "azure_storage_endpoint": "http://127.0.0.1:10000/devstoreaccount1/",
            "allow_http": "true",
        },
    )
    cs = opts.fs_kwargs["connection_string"]
    assert "DefaultEndpointsProtocol=http;" in cs and "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;" in cs
    assert f"AccountKey={ACCOUNT_KEY};" in cs and "account_host" not in opts.fs_kwargs
    assert ACCOUNT_KEY in opts.secrets
    sas = parse_options("azure", {"account_name": "a", "sas_token": "?sv=1&sig=abc", "azure_endpoint": "http://h:1/a"})
    assert "SharedAccessSignature=sv=1&sig=abc;" in sas.fs_kwargs["connection_string"]
    https = parse_options("azure", {"account_name": "a", "azure_storage_endpoint": "https://gw.example:8443/a"})
    assert https.fs_kwargs["account_host"] == "gw.example:8443/a"
    with pytest.raises(InvalidArgumentError, match="https only"):
        parse_options("azure", {"account_name": "a", "client_secret": "x" * 20, "azure_endpoint": "http://h:1/a"})


def test_the_concurrency_switch() -> None:
    opts = parse_options("s3", {"DELTALOG_MAX_CONCURRENCY": "200"})
    assert (opts.max_concurrency, opts.fs_kwargs) == (200, {})
    for bad in ("0", "-3", "many"):
        with pytest.raises(InvalidArgumentError, match="positive integer"):
            parse_options("s3", {"deltalog_max_concurrency": bad})
    store = store_for("s3://b/t", {"deltalog_max_concurrency": "7", "AWS_ENDPOINT_URL": "http://127.0.0.1:1", **FSSPEC})
    assert store.capabilities.read_concurrency == 7
    assert store.fs.config_kwargs["max_pool_connections"] == 7  # type: ignore[attr-defined]
