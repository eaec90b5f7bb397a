"""Every ``deltalog`` verb reaches tables on S3 (moto) and Azure (Azurite) through ``--storage-option KEY=VALUE``
and ``--storage-options-file FILE.json``, in deltalake's names or fsspec's, and no secret ever reaches stdout,
stderr or a ``--json`` document (with ``-vv`` too).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.cli.main import cli
from deltalog.storage.options import EMULATOR_KEY
from tests.storage.servers import BUCKET, CONTAINER, S3_SECRET, Server, s3_options, unique
from tests.tiers import backends

SCHEMA = pa.schema([("id", pa.int64())])
#: verbs that take no table (or none that a storage option applies to)
NO_TABLE = {"docs"}


def pairs(options: dict[str, Any]) -> list[str]:
    return [arg for k, v in options.items() for arg in ("--storage-option", f"{k}={v}")]


def azure_deltalake_options(server: Server) -> dict[str, str]:
    """What a deltalake user passes for Azurite: the account, its key, and the http endpoint."""
    return {
        "azure_storage_account_name": "devstoreaccount1",
        "azure_storage_account_key": EMULATOR_KEY,
        "azure_storage_endpoint": f"{server.endpoint}/devstoreaccount1",
        "allow_http": "true",
    }


def make_table(location: str, options: dict[str, Any]) -> None:
    log = DeltaLog.for_table(location, options)
    log.create(SCHEMA)
    for i in range(3):
        add = A.Add(path=f"part-{i}.parquet", partition_values={}, size=10, modification_time=1, data_change=True)
        log.start_transaction().commit([add])


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def no_secret(result: Result, *secrets: str) -> None:
    text = result.stdout + result.stderr
    for secret in secrets:
        assert secret not in text


@pytest.fixture(params=backends("s3", "azure"))
def table(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any], tuple[str, ...]]:
    """(location, deltalake-style options, the secrets among them) of a 3-commit table."""
    if request.param == "s3":
        server: Server = request.getfixturevalue("moto_server")
        location, options = f"s3://{BUCKET}/{unique()}", s3_options(server.endpoint)
        secrets: tuple[str, ...] = (S3_SECRET,)
    else:
        server = request.getfixturevalue("azurite_server")
        location, options = f"abfs://{CONTAINER}/{unique()}", azure_deltalake_options(server)
        secrets = (EMULATOR_KEY,)
    make_table(location, options)
    return location, options, secrets


def test_every_verb_takes_the_storage_options() -> None:
    for name, command in cli.commands.items():  # type: ignore[attr-defined]
        flags = {opt for p in command.params for opt in getattr(p, "opts", ())}
        assert {"--storage-option", "--storage-options-file"} <= flags, name
    group_flags = {opt for p in cli.params for opt in getattr(p, "opts", ())}
    assert {"--storage-option", "--storage-options-file"} <= group_flags


def test_read_verbs_reach_the_table_with_options(table: tuple[str, dict[str, Any], tuple[str, ...]]) -> None:
    location, options, secrets = table
    for verb in (["describe"], ["snapshot"], ["files"], ["history"], ["intents"]):
        result = run(*verb, location, "--json", "-vv", *pairs(options))
        assert result.exit_code == 0, (verb, result.output)
        no_secret(result, *secrets)
        orjson.loads(result.stdout)
    files = orjson.loads(run("files", location, "--json", *pairs(options)).stdout)
    assert sorted(f["path"] for f in files["files"]) == [f"part-{i}.parquet" for i in range(3)]
    history = orjson.loads(run(*pairs(options), "history", location, "--json").stdout)  # the group's spelling
    assert [c["version"] for c in history["commits"]] == [3, 2, 1, 0]


def test_the_options_file_and_the_group_spelling(
    table: tuple[str, dict[str, Any], tuple[str, ...]], tmp_path: Path
) -> None:
    location, options, secrets = table
    path = tmp_path / "options.json"
    path.write_text(json.dumps(options))
    result = run("--storage-options-file", str(path), "snapshot", location, "--json")
    assert result.exit_code == 0, result.output
    assert orjson.loads(result.stdout)["version"] == 3
    for verb in (["vacuum", "--dry-run"], ["cleanup", "--dry-run"], ["checkpoint"], ["compact"]):
        result = run(*verb, location, "--storage-options-file", str(path), "--json")
        assert result.exit_code == 0, (verb, result.output)
        no_secret(result, *secrets)
    # the command line wins over the file: a wrong key in the file, the right one given
    wrong = {**options, next(k for k in options if "secret" in k.lower() or "account_key" in k): "d3Jvbmc="}
    path.write_text(json.dumps(wrong))
    good = run("snapshot", location, "--storage-options-file", str(path), *pairs(options), "--json")
    assert good.exit_code == 0, good.output


def test_without_options_the_table_is_out_of_reach(table: tuple[str, dict[str, Any], tuple[str, ...]]) -> None:
    location, _options, _secrets = table
    result = run("snapshot", location)
    assert result.exit_code != 0 and result.stdout == ""


def test_malformed_options_are_refused_without_echoing_them(tmp_path: Path) -> None:
    secret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
    result = run("snapshot", str(tmp_path), "--storage-option", secret)
    assert result.exit_code == 2
    assert "not KEY=VALUE" in result.stderr and secret not in result.stderr + result.stdout
    bad = tmp_path / "bad.json"
    bad.write_text('{"AWS_SECRET_ACCESS_KEY": "' + secret + '",,}')
    result = run("snapshot", str(tmp_path), "--storage-options-file", str(bad))
    assert result.exit_code == 2 and "not valid JSON" in result.stderr and str(bad) in result.stderr
    assert secret not in result.stderr + result.stdout
    bad.write_text(json.dumps([secret]))
    result = run("snapshot", str(tmp_path), "--storage-options-file", str(bad))
    assert result.exit_code == 2 and "one JSON object" in result.stderr and secret not in result.stderr
    result = run("snapshot", str(tmp_path), "--storage-options-file", str(tmp_path / "missing.json"))
    assert result.exit_code == 2 and "cannot read" in result.stderr


def test_a_rejected_secret_is_not_echoed(moto_auth_server: Server) -> None:
    secret = "not-the-secret-0123456789abcdef"
    options = s3_options(moto_auth_server.endpoint, AWS_SECRET_ACCESS_KEY=secret)
    result = run("snapshot", f"s3://{BUCKET}/{unique()}", "-vv", *pairs(options))
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1].startswith("error: access denied")
    no_secret(result, secret)
