"""Object-store options from the environment, as deltalake users set them (``AWS_ENDPOINT_URL``,
``AWS_ALLOW_HTTP``, keys, region; ``AZURE_STORAGE_*``; ``GOOGLE_*``), on both S3 clients, under whatever
``storage_options`` say explicitly.

Before, the obstore client read ``AWS_ENDPOINT_URL`` from the environment itself but not ``AWS_ALLOW_HTTP``, and
failed every request to an http endpoint with "HTTP error: builder error" (three retries first).
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable

import deltalog
from deltalog import DeltaLog
from deltalog.cli.main import cli
from deltalog.storage.obstore_store import ObstoreLogStore
from deltalog.storage.options import BACKEND_ENV, environment_options, parse_options
from deltalog.storage.s3 import S3LogStore
from deltalog.storage.typed import TypedStore
from deltalog.storage.uri import store_for
from tests.storage.servers import BUCKET, S3_SECRET, Server, s3_options, unique


def set_environment(monkeypatch: pytest.MonkeyPatch, options: dict[str, str]) -> None:
    for key, value in options.items():
        monkeypatch.setenv(key, value)


@pytest.mark.parametrize("backend", ["obstore", "fsspec"])
def test_a_moto_table_opens_with_only_the_environment_set(
    moto_server: Server, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    location = f"s3://{BUCKET}/{unique()}"
    set_environment(monkeypatch, s3_options(moto_server.endpoint))  # exactly what a deltalake user exports
    monkeypatch.setenv(BACKEND_ENV, backend)
    log = DeltaLog.for_table(location)  # no storage_options at all
    store = log.store.inner if isinstance(log.store, TypedStore) else log.store  # errors typed around the client
    assert isinstance(store, ObstoreLogStore if backend == "obstore" else S3LogStore)
    assert deltalog.write(pa.table({"id": [1, 2, 3]}), location).version == 0
    assert DeltaLog.for_table(location).snapshot().to_arrow().column("id").to_pylist() == [1, 2, 3]
    lake = DeltaTable(location)  # deltalake, from the same environment
    assert lake.version() == 0 and sorted(lake.to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3]
    result = CliRunner().invoke(cli, ["files", location, "--json"])
    assert result.exit_code == 0, result.output
    assert S3_SECRET not in result.output


def test_explicit_options_win_over_the_environment(moto_server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment points at a port nothing listens on; the endpoint given explicitly (in fsspec's spelling,
    deltalake's in the environment) is the one used, on both clients."""
    location = f"s3://{BUCKET}/{unique()}"
    set_environment(monkeypatch, s3_options("http://127.0.0.1:1"))
    for backend in ("obstore", "fsspec"):
        monkeypatch.setenv(BACKEND_ENV, backend)
        explicit = {"endpoint_url": moto_server.endpoint}
        assert deltalog.write(pa.table({"id": [1]}), f"{location}-{backend}", storage_options=explicit).version == 0
        assert DeltaLog.for_table(f"{location}-{backend}", explicit).latest_version() == 0
    parsed = parse_options("s3", {"endpoint_url": moto_server.endpoint, "AWS_REGION": "eu-west-1"})
    assert parsed.fs_kwargs["endpoint_url"] == moto_server.endpoint
    assert parsed.fs_kwargs["client_kwargs"]["region_name"] == "eu-west-1"
    assert parsed.fs_kwargs["key"] == s3_options("x")["AWS_ACCESS_KEY_ID"]  # what the caller left to the environment


def test_which_environment_names_are_read() -> None:
    env = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_ALLOW_HTTP": "true",
        "AWS_PROFILE": "dev",  # botocore reads it itself; obstore has no profiles
        "AWS_S3_LOCKING_PROVIDER": "dynamodb",  # deltalake's locking: not deltalog's business
        "aws_region": "lower-case names are no environment convention",
        "AWS_REGION": "",  # empty: not set
        "AZURE_STORAGE_ACCOUNT_NAME": "acct",
        "AZURE_STORAGE_ACCOUNT_KEY": "a2V5",
        "AZURE_CLIENT_ID": "an identity's, not storage's",
        "GOOGLE_SERVICE_ACCOUNT": "/keys/sa.json",
    }
    assert environment_options("s3", env) == {"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_ALLOW_HTTP": "true"}
    assert environment_options("azure", env) == {
        "AZURE_STORAGE_ACCOUNT_NAME": "acct",
        "AZURE_STORAGE_ACCOUNT_KEY": "a2V5",
    }
    assert environment_options("gcs", env) == {"GOOGLE_SERVICE_ACCOUNT": "/keys/sa.json"}
    assert environment_options("memory", env) == {}


def test_environment_secrets_are_scrubbed_like_given_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret-0123456789abcdef")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    parsed = parse_options("s3", {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE"})
    assert parsed.fs_kwargs["secret"] == "env-secret-0123456789abcdef" and parsed.fs_kwargs["key"] == "AKIAEXAMPLE"
    assert "env-secret-0123456789abcdef" in parsed.secrets
    store = store_for("s3://b/t", {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE"})
    assert "env-secret" not in repr(store)
