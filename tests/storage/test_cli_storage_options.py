"""Every ``deltalog`` verb reaches tables on S3 (moto) and Azure (Azurite) through ``--storage-option KEY=VALUE``
and ``--storage-options-file FILE.json``, in deltalake's names or fsspec's, and no secret ever reaches stdout,
stderr or a ``--json`` document (with ``-vv`` too).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import orjson
import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.cli.main import cli
from deltalog.cli.store_options import StorageSettings
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
    ctx = click.Context(cli)
    names = cli.list_commands(ctx)  # type: ignore[attr-defined]
    assert {"describe", "scan", "write", "vacuum", "checkpoint-job"} <= set(names)
    for name in names:
        command = cli.get_command(ctx, name)  # type: ignore[attr-defined]
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
    for verb in (["vacuum", "--dry-run"], ["cleanup", "--dry-run"], ["checkpoint"], ["checkpoint-job"]):
        result = run(*verb, location, "--storage-options-file", str(path), "--json")
        assert result.exit_code == 0, (verb, result.output)
        no_secret(result, *secrets)
    # the command line wins over the file: a wrong key in the file, the right one given
    wrong = {**options, next(k for k in options if "secret" in k.lower() or "account_key" in k): "d3Jvbmc="}
    path.write_text(json.dumps(wrong))
    good = run("snapshot", location, "--storage-options-file", str(path), *pairs(options), "--json")
    assert good.exit_code == 0, good.output


def write_profiles(config: Path, text: str) -> Path:
    path = config / "deltalog" / "profiles.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def toml_table(name: str, options: dict[str, Any]) -> str:
    return f"[{name}]\n" + "".join(f"{k} = {json.dumps(str(v))}\n" for k, v in options.items())


def test_a_profile_holds_the_options(
    table: tuple[str, dict[str, Any], tuple[str, ...]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    location, options, secrets = table
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("DELTALOG_PROFILE", raising=False)
    wrong = {**options, next(k for k in options if "secret" in k.lower() or "account_key" in k): "d3Jvbmc="}
    write_profiles(tmp_path / "config", toml_table("lake", options) + toml_table("stale", wrong))
    result = run("snapshot", location, "--profile", "lake", "--json", "-vv")
    assert result.exit_code == 0, result.output
    assert orjson.loads(result.stdout)["version"] == 3
    no_secret(result, *secrets)
    assert run("--profile", "lake", "history", location, "--json").exit_code == 0  # the group's spelling
    monkeypatch.setenv("DELTALOG_PROFILE", "lake")  # one profile for every command
    assert run("files", location, "--json").exit_code == 0
    # the command line wins over the profile (a stale key in it is overridden)
    assert run("snapshot", location, "--profile", "stale", *pairs(options), "--json").exit_code == 0


def test_the_command_line_wins_over_the_file_and_the_file_over_the_profile() -> None:
    settings = StorageSettings(
        given={"a": "line"}, from_file={"a": "file", "b": "file"}, from_profile={"a": "p", "b": "p", "c": "p"}
    )
    assert settings.options() == {"a": "line", "b": "file", "c": "p"}


def test_profile_mistakes_name_the_file_and_never_a_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("DELTALOG_PROFILE", raising=False)
    path = tmp_path / "config" / "deltalog" / "profiles.toml"
    result = run("snapshot", str(tmp_path), "--profile", "lake")
    assert result.exit_code == 2 and f"there is no profiles file at {path}" in result.stderr
    write_profiles(tmp_path / "config", f'[lake]\nAWS_SECRET_ACCESS_KEY = "{secret}"\n[minio]\nAWS_REGION = "x"\n')
    result = run("snapshot", str(tmp_path), "--profile", "prod")
    assert result.exit_code == 2 and f"no profile 'prod' in {path} (its profiles: lake, minio)" in result.stderr
    monkeypatch.setenv("DELTALOG_PROFILE", "prod")
    assert "(DELTALOG_PROFILE=prod)" in run("snapshot", str(tmp_path)).stderr
    write_profiles(tmp_path / "config", f'[lake]\nAWS_SECRET_ACCESS_KEY = "{secret}\n')  # unterminated
    result = run("snapshot", str(tmp_path), "--profile", "lake")
    assert result.exit_code == 2 and f"{path} is not valid TOML (line 2)" in result.stderr
    assert secret not in result.stderr + result.stdout and len(result.stderr.splitlines()) == 1


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


@pytest.mark.parametrize("backend", ["obstore", "fsspec"])
def test_refused_credentials_are_said_once_naming_the_flags(moto_auth_server: Server, backend: str) -> None:
    """One line, in the command's words: before, the refused read of ``_last_checkpoint`` was logged as a
    warning and the listing's refusal printed again as the error, both naming ``storage_options``."""
    options = {**s3_options(moto_auth_server.endpoint), "deltalog_backend": backend}
    result = run("snapshot", f"s3://{BUCKET}/{unique()}", *pairs(options))
    assert result.exit_code == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: access denied (")
    assert "check the credentials (--storage-option (or --profile) key/secret or AWS_ACCESS_KEY_ID" in line
