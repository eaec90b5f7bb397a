"""The command's log: warnings on stderr by default, plain when piped and rich on a terminal; -v, -vv,
--log-level and --quiet; loggers that print credentials stay quiet unless named; the library never prints.

The warning comes from the real code path an operator meets: a ``_last_checkpoint`` that is not JSON, which
the reader ignores (listing the log instead) and says so.
"""

from __future__ import annotations

import ast
import io
import logging
import os
import pty
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from rich.logging import RichHandler

import deltalog
from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.cli import logs
from deltalog.cli.main import cli
from tests.peers import deltalake_view, duckdb_view
from tests.unit.cli_terminal import in_terminal

WARNING = "WARNING deltalog.checkpoint.hint: ignoring "


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """Twelve appends of one real parquet file each (an automatic checkpoint at 10), then a torn hint."""
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(pa.schema([("id", pa.int64())]))
    for i in range(12):
        pq.write_table(pa.table({"id": pa.array([i], pa.int64())}), root / f"{i}.parquet")
        size = (root / f"{i}.parquet").stat().st_size
        add = A.Add(path=f"{i}.parquet", partition_values={}, size=size, modification_time=1, data_change=True)
        log.start_transaction().commit([add], operation="WRITE")
    files = {f"{i}.parquet" for i in range(12)}
    assert deltalake_view(root).files == files and duckdb_view(root).files == files
    (root / "_delta_log" / "_last_checkpoint").write_text("{torn")
    return root


def run(*args: Any) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_warnings_reach_stderr_by_default_and_stdout_stays_clean(table: Path) -> None:
    code, out, err = run("snapshot", table, "--json")
    assert code == 0
    assert out.startswith("{")  # the JSON document alone
    (line,) = err.splitlines()
    assert line.startswith(WARNING + f"{table}/_delta_log/_last_checkpoint: not valid JSON")


@pytest.mark.parametrize("spelling", [["-q", "snapshot", "{t}"], ["snapshot", "{t}", "--quiet"]])
def test_quiet_hides_warnings(table: Path, spelling: list[str]) -> None:
    assert run(*[str(table) if a == "{t}" else a for a in spelling], "--json")[2] == ""


def test_verbose_levels(table: Path) -> None:
    _, _, err = run("-v", "checkpoint", table, "--version", "10", "--json")  # 10 exists: said at INFO
    assert "INFO deltalog.checkpoint.writer: version 10 already has a complete classic checkpoint" in err
    assert "DEBUG" not in err
    _, _, err = run("snapshot", table, "--version", "3", "-vv", "--json")
    assert f"DEBUG deltalog.table.listing: listed versions 0..3 of {table} to rebuild version 3" in err
    _, _, err = run("snapshot", table, "--version", "3", "--log-level", "debug", "--json")
    assert "DEBUG deltalog.table.listing" in err
    _, _, err = run("snapshot", table, "--log-level", "ERROR", "--json")
    assert err == ""


def test_credential_loggers_stay_quiet_unless_named() -> None:
    noisy = logs.LogSettings(verbose=2, named={"root": "DEBUG"}).levels()
    for name in logs.GUARDED:
        assert noisy[name] == logging.WARNING
    assert noisy["deltalog"] == logging.DEBUG and noisy[""] == logging.DEBUG
    asked = logs.LogSettings(named={"botocore": "DEBUG"}).levels()
    assert asked["botocore"] == logging.DEBUG and asked["deltalog"] == logging.WARNING


def test_guarded_logger_records_are_dropped_at_vv_and_shown_when_named(table: Path) -> None:
    """A botocore DEBUG record emitted while the command runs (as S3 requests would)."""

    def emit_during(*args: str) -> str:
        def record(*_: Any) -> Any:
            logging.getLogger("botocore.endpoint").debug("Sending http request: x-amz-security-token=SECRET")
            raise deltalog.TableNotFoundError("no Delta table at s3://b/t")

        mp = pytest.MonkeyPatch()
        mp.setattr(DeltaLog, "for_table", record)
        try:
            return run(*args, "history", table)[2]
        finally:
            mp.undo()

    assert "SECRET" not in emit_during("-vv")
    assert "SECRET" not in emit_during("--log-level", "root=DEBUG")
    assert "DEBUG botocore.endpoint: Sending http request" in emit_during("--log-level", "botocore=DEBUG")


def test_logging_is_left_as_found(table: Path) -> None:
    root = logging.getLogger()
    handlers, levels = list(root.handlers), {n: logging.getLogger(n).level for n in ("deltalog", "botocore")}
    run("-vv", "snapshot", table, "--json")
    assert list(root.handlers) == handlers
    assert {n: logging.getLogger(n).level for n in ("deltalog", "botocore")} == levels


def test_tracebacks_only_at_debug() -> None:
    try:
        raise OSError("disk on fire")
    except OSError:
        record = logging.LogRecord("deltalog.log", logging.ERROR, __file__, 1, "checkpoint failed", None, None)
        record.exc_info = sys.exc_info()
    line = logs.OneLineFormatter().format(record)
    assert line == "ERROR deltalog.log: checkpoint failed (OSError: disk on fire)"


def test_rich_on_a_terminal_plain_when_piped(table: Path) -> None:
    master, slave = pty.openpty()
    try:
        with os.fdopen(slave, "w", closefd=False) as tty:
            assert isinstance(logs.handler(tty), RichHandler)
    finally:
        os.close(slave)
        os.close(master)
    assert not isinstance(logs.handler(io.StringIO()), RichHandler)
    result = in_terminal(["snapshot", table], 100)  # stdout on a terminal, stderr piped: plain records
    assert result.err.startswith(WARNING)


def test_the_library_never_prints() -> None:
    """No ``print(`` outside the command line: a library writes to logs, the application decides."""
    package = Path(deltalog.__file__).parent
    offenders = []
    for path in package.rglob("*.py"):
        if "cli" in path.relative_to(package).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                offenders.append(f"{path.relative_to(package)}:{node.lineno}")
    assert offenders == []
