"""``deltalog doctor``: real stores report safe, stores without a real put-if-absent and mixed engines unsafe."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from click.testing import CliRunner

from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.cli.main import cli
from deltalog.core.commit.engine_safety import engine_infos, engine_risk, first_unsafe
from deltalog.errors import FileAlreadyExistsError
from deltalog.maintenance.doctor import SCRATCH, diagnose
from deltalog.storage.s3 import S3LogStore
from deltalog.storage.uri import store_for
from tests.storage.servers import BUCKET, CONTAINER, FSSPEC, Server, azure_options, gcs_options, s3_options, unique

SPARK = "Apache-Spark/3.5.1 Delta-Lake/3.2.0"
SCHEMA = pa.schema([("id", pa.int64())])


def cli_options(options: dict[str, Any]) -> list[str]:
    return [arg for k, v in options.items() for arg in ("-o", f"{k}={v}")]


class ExistsThenPut(S3LogStore):
    """The classic unsafe put-if-absent: check, then write. Two writers can both pass the check."""

    def put_if_absent(self, path: str, data: bytes) -> None:
        if self.exists(path):
            raise FileAlreadyExistsError(f"{path} exists", path=path)
        self.put(path, data)


class IgnoresIfNoneMatch(S3LogStore):
    """An S3-compatible server that accepts If-None-Match and overwrites anyway."""

    def put_if_absent(self, path: str, data: bytes) -> None:
        self.put(path, data)


#: both clients of the S3 and Azure stores (docs/storage.md "Backends"): the default one and fsspec
CLIENTS = pytest.mark.parametrize("client", [{}, FSSPEC], ids=["default", "fsspec"])


@CLIENTS
def test_moto_s3_is_safe(moto_server: Server, client: dict[str, str]) -> None:
    location, options = f"s3://{BUCKET}/{unique()}", {**s3_options(moto_server.endpoint), **client}
    result = CliRunner().invoke(cli, ["doctor", location, *cli_options(options)])
    assert result.exit_code == 0, result.output
    assert "verdict: SAFE" in result.output
    assert "FAIL" not in result.output
    assert options["AWS_SECRET_ACCESS_KEY"] not in result.output
    assert list(store_for(location, options).walk(SCRATCH)) == []  # the scratch prefix is gone


@CLIENTS
def test_azurite_is_safe(azurite_server: Server, client: dict[str, str]) -> None:
    location, options = f"abfs://{CONTAINER}/{unique()}", {**azure_options(azurite_server.endpoint), **client}
    result = CliRunner().invoke(cli, ["doctor", location, "--json", *cli_options(options)])
    assert result.exit_code == 0, result.output
    doc = orjson.loads(result.output)
    assert doc["safe"] is True
    assert {c["name"]: c["ok"] for c in doc["checks"]} == {
        "declared": True,
        "exclusive": True,
        "race": True,
        "visibility": True,
        "listing": True,
    }
    assert doc["leftovers"] == []
    assert list(store_for(location, options).walk(SCRATCH)) == []


@pytest.mark.parametrize(("cls", "failing"), [(ExistsThenPut, "race"), (IgnoresIfNoneMatch, "exclusive")])
def test_s3_store_without_a_real_put_if_absent_is_unsafe(moto_server: Server, cls: type, failing: str) -> None:
    real = store_for(f"s3://{BUCKET}/{unique()}", {**s3_options(moto_server.endpoint), **FSSPEC})
    assert isinstance(real, S3LogStore)
    prefix = real.root.split("/", 3)[3]
    racy = cls(BUCKET, prefix, fs=real.fs)
    report = diagnose(racy, threads=16, rounds=3)
    assert report.safe is False
    failed = {c.name: c for c in report.checks if not c.ok}
    assert failing in failed
    assert "put-if-absent" in (failed[failing].fix or "")
    assert report.checks[0].name == "declared" and report.checks[0].ok  # it claims to be safe: doctor checks


def test_fsspec_store_over_a_local_file_system_is_unsafe(tmp_path: Path) -> None:
    location = f"local://{tmp_path / 't'}"
    result = CliRunner().invoke(cli, ["doctor", location, "-o", "auto_mkdir=true"])
    assert result.exit_code == 1, result.output
    assert "FAIL  declared" in result.output
    assert "verdict: UNSAFE" in result.output
    assert "atomic put-if-absent" in result.output  # what to change


def test_a_local_directory_is_safe_and_left_as_found(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    result = CliRunner().invoke(cli, ["doctor", str(tmp_path / "t")])
    assert result.exit_code == 0, result.output
    assert "note: no Delta table at" in result.output and "verdict: SAFE" in result.output
    assert list((tmp_path / "t").iterdir()) == []


def test_a_mistyped_local_path_is_refused_and_not_created(tmp_path: Path) -> None:
    """Probing would create the directory, and a typo would read SAFE: a verdict about nothing."""
    result = CliRunner().invoke(cli, ["doctor", str(tmp_path / "typo")])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'typo'} does not exist: doctor probes the store of an existing table or directory "
        "and creates nothing outside its scratch prefix; check the path"
    ]
    assert list(tmp_path.iterdir()) == []


def _spark_commit(version: int) -> bytes:
    info = {"commitInfo": {"timestamp": 1, "operation": "WRITE", "engineInfo": SPARK, "txnId": "t"}}
    add = {
        "add": {"path": "spark.parquet", "partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": True}
    }
    return orjson.dumps(info) + b"\n" + orjson.dumps(add) + b"\n"


def test_spark_commits_on_s3_are_reported(moto_server: Server, caplog: pytest.LogCaptureFixture) -> None:
    location, options = f"s3://{BUCKET}/{unique()}", s3_options(moto_server.endpoint)
    log = DeltaLog.for_table(location, options)
    log.create(SCHEMA)
    log.store.put_if_absent("_delta_log/00000000000000000001.json", _spark_commit(1))
    log.start_transaction().commit([A.Add("ours.parquet", {}, 1, 0, True)])
    assert any("Delta Spark" in r.getMessage() for r in caplog.records)  # the writer was told too
    caplog.clear()
    reader = DeltaLog.for_table(location, options)
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        assert reader.snapshot().num_files == 2
        list(reader.history())
        reader.snapshot(version=1)
    warnings = [r for r in caplog.records if "Delta Spark" in r.getMessage()]
    assert len(warnings) == 1  # once per DeltaLog
    assert location in warnings[0].getMessage() and "version 1" in warnings[0].getMessage()

    result = CliRunner().invoke(cli, ["doctor", location, *cli_options(options)])
    assert result.exit_code == 1, result.output
    assert "FAIL  engines" in result.output
    assert SPARK in result.output and "S3DynamoDBLogStore" in result.output


def test_spark_commits_on_azure_are_fine(azurite_server: Server, caplog: pytest.LogCaptureFixture) -> None:
    location, options = f"abfs://{CONTAINER}/{unique()}", azure_options(azurite_server.endpoint)
    log = DeltaLog.for_table(location, options)
    log.create(SCHEMA)
    log.store.put_if_absent("_delta_log/00000000000000000001.json", _spark_commit(1))
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        assert DeltaLog.for_table(location, options).snapshot().num_files == 1
    assert "Delta Spark" not in caplog.text
    result = CliRunner().invoke(cli, ["doctor", location, *cli_options(options)])
    assert result.exit_code == 0, result.output


# ---------------------------------------------------------------------------------------------- the pure rules
@pytest.mark.parametrize(
    ("engine", "location", "unsafe"),
    [
        (SPARK, "s3://b/t", True),
        (SPARK, "s3a://b/t", True),
        ("Databricks-Runtime/15.4", "s3://b/t", True),
        (SPARK, "abfss://c@a.dfs.core.windows.net/t", False),
        (SPARK, "/data/t", False),
        ("delta-rs:py-1.6.6", "s3://b/t", False),
        ("deltalog/0.1.0", "s3://b/t", False),
        (None, "s3://b/t", False),
        ("", "s3://b/t", False),
    ],
)
def test_engine_rules(engine: str | None, location: str, unsafe: bool) -> None:
    assert (engine_risk(engine, location) is not None) is unsafe


def test_engine_info_is_found_in_commit_bytes() -> None:
    data = b'{"commitInfo":{"engineInfo":"Apache-Spark/3.5 \\"x\\"","operation":"WRITE"}}\n{"add":{}}\n'
    assert engine_infos(data) == ['Apache-Spark/3.5 "x"']
    assert engine_infos(b'{"add":{}}\n') == []
    risk = first_unsafe("s3://b/t", [(3, b'{"commitInfo":{"engineInfo":"delta-rs:py-1.6.6"}}'), (4, data)])
    assert risk is not None and risk.version == 4
    assert first_unsafe("/local/t", [(4, data)]) is None


def test_a_store_that_cannot_be_reached_is_an_error_not_a_verdict(moto_server: Server) -> None:
    options = s3_options(moto_server.endpoint)
    result = CliRunner().invoke(cli, ["doctor", "s3://no-such-bucket-for-deltalog/t", *cli_options(options)])
    assert result.exit_code == 1
    assert result.output.startswith("error: bucket 'no-such-bucket-for-deltalog' does not exist")
    assert "verdict" not in result.output


def test_gcs_emulator_is_safe(gcs_server: Server) -> None:
    """fake-gcs-server honours ifGenerationMatch=0, so a gs:// table commits through a real put-if-absent."""
    location, options = f"gs://{BUCKET}/{unique()}", gcs_options(gcs_server.endpoint)
    args = [arg for k, v in options.items() for arg in ("--storage-option", f"{k}={v}")]
    result = CliRunner().invoke(cli, ["doctor", location, "--json", *args])
    assert result.exit_code == 0, result.output
    doc = orjson.loads(result.output)
    assert doc["safe"] is True and all(c["ok"] for c in doc["checks"])
    assert list(store_for(location, options).walk(SCRATCH)) == []
