"""Every user mistake the command can meet gets one line on stderr, the right exit code and no traceback.

The mistakes are the ones operators made (issue 17): a scheme whose package is missing or that nobody knows,
Spark without pyspark or Java, a mistyped path given to ``doctor``, a retention said in the wrong units,
Ctrl-C, contradictory options. Missing packages are made missing for real (``sys.modules[name] = None``
makes ``import name`` fail as it does where the package is not installed); Java is made missing by running
the demo with an empty PATH.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import deltalog
from deltalog import DeltaLog
from deltalog.cli import documents
from deltalog.cli.main import EXIT_INTERRUPTED, cli

ROOT = Path(__file__).resolve().parents[3]


def one_line(args: list[Any], code: int) -> str:
    """Run; assert the exit code, nothing on stdout, exactly one ``error:`` line on stderr; return it."""
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == code, (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in lines[0]
    return lines[0]


@pytest.fixture
def table(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    DeltaLog.for_table(root).create(pa.schema([("id", pa.int64())]))
    return root


# ---------------------------------------------------------------------------------------------- locations


@pytest.mark.parametrize("scheme", ["gs", "gcs"])
def test_gcs_without_gcsfs_names_the_extra(monkeypatch: pytest.MonkeyPatch, scheme: str) -> None:
    for name in [m for m in sys.modules if m == "gcsfs" or m.startswith("gcsfs.")] + ["gcsfs"]:
        monkeypatch.setitem(sys.modules, name, None)  # submodules too: an import finds "gcsfs.core" first
    monkeypatch.delitem(sys.modules, "deltalog.storage.gcs", raising=False)  # imported by an earlier test
    assert one_line(["describe", f"{scheme}://bucket/table"], 1) == (
        f"error: {scheme}:// tables need a package that is not installed: pip install 'deltalog[gcs]'"
    )


def test_unknown_scheme() -> None:
    assert one_line(["files", "nosuch://bucket/table"], 1) == (
        "error: unknown scheme nosuch:// in nosuch://bucket/table: use a path, file://, s3://, abfss://, gs:// "
        "or another scheme fsspec knows"
    )


def test_unknown_scheme_never_echoes_credentials() -> None:
    line = one_line(["history", "nosuch://user:hunter2@host/table"], 1)
    assert "hunter2" not in line and "nosuch://host/table" in line


def test_doctor_on_a_mistyped_path_creates_nothing(tmp_path: Path) -> None:
    line = one_line(["doctor", tmp_path / "typo"], 1)
    assert line.startswith(f"error: {tmp_path / 'typo'} does not exist")
    assert not (tmp_path / "typo").exists()


# ---------------------------------------------------------------------------------------------- Spark


def test_spark_engine_without_pyspark(monkeypatch: pytest.MonkeyPatch, table: Path) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)
    assert one_line(["checkpoint", table, "--engine", "spark"], 1) == (
        "error: deltalog checkpoint --engine spark needs pyspark, which is not installed: pip install 'deltalog[spark]'"
    )


def test_spark_engine_on_a_missing_table_fails_before_spark_starts(tmp_path: Path) -> None:
    line = one_line(["checkpoint", tmp_path / "nowhere", "--engine", "spark"], 1)
    assert line.startswith("error: no Delta table at")


def _demo(args: list[str], **env: str | None) -> subprocess.CompletedProcess[str]:
    """scripts/demo.py with ``env`` changed (``None``: unset)."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    for key, value in env.items():
        if value is None:
            environment.pop(key, None)
        else:
            environment[key] = value
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py"), *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


#: where pyspark is not installed (the Python 3.10 run has only the test group) the demo says that first
NO_PYSPARK = None if importlib.util.find_spec("pyspark") else "error: the demo needs pyspark, which is not installed"


def test_demo_without_java_keeps_the_previous_table(table: Path) -> None:
    before = sorted(p.name for p in (table / "_delta_log").iterdir())
    done = _demo(["--dir", str(table)], JAVA_HOME=None, PATH=str(table.parent / "empty-path"))  # no java on it
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        NO_PYSPARK or "error: Spark needs Java 17, and no java is on PATH (and JAVA_HOME is not set)"
    )
    assert sorted(p.name for p in (table / "_delta_log").iterdir()) == before


def test_demo_with_a_wrong_java_home(table: Path) -> None:
    done = _demo(["--dir", str(table)], JAVA_HOME=str(table.parent / "no-jdk"))
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    wrong = f"error: JAVA_HOME is {table.parent / 'no-jdk'}, which has no bin/java: Spark needs Java 17; fix or unset"
    assert line.startswith(NO_PYSPARK or wrong)


# ---------------------------------------------------------------------------------------------- units and flags


def test_vacuum_retention_guard_speaks_hours_and_flags(table: Path) -> None:
    line = one_line(["vacuum", table, "--retention", "36h"], 1)
    assert line == (
        "error: --retention 36h (1d 12h) is shorter than the table's delta.deletedFileRetentionDuration (7d): files "
        "that time travel or running writers still need could be deleted; add --force if that is intended"
    )
    assert "force=True" not in line and " ms" not in line
    line = one_line(["vacuum", table, "--retention", "3600000"], 1)
    assert line.startswith("error: --retention 3600000 (1h) is shorter than the table's")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["files", "{t}", "--json", "--format", "csv"], "error: --json and --format csv cannot be used together"),
        (["describe", "{t}", "--format", "csv"], "error: Invalid value for '--format': 'csv' is not one of"),
        (["vacuum", "{t}", "--limit", "3", "--all"], "error: --limit and --all cannot be used together"),
        (["files", "{t}", "--log-level", "LOUD"], "error: Invalid value for '--log-level': 'LOUD' is not LEVEL"),
        (["-q", "-v", "files", "{t}"], "error: --quiet and -v cannot be used together"),
        (["files", "{t}", "--limit", "0"], "error: Invalid value for '--limit': 0 is not in the range x>=1."),
        (["docs", "nosuchtopic"], "error: Invalid value for '[TOPIC]': 'nosuchtopic' is not one of"),
    ],
)
def test_contradictory_or_bad_options_exit_2(table: Path, args: list[str], expected: str) -> None:
    assert one_line([a.replace("{t}", str(table)) for a in args], 2).startswith(expected)


# ---------------------------------------------------------------------------------------------- Ctrl-C


def partitioned(root: Path) -> Path:
    deltalog.write(pa.table({"id": [1, 2], "region": ["eu", "us"]}), root, partition_by=["region"])
    return root


def test_where_names_the_column_without_the_spaces_around_it(tmp_path: Path) -> None:
    root = partitioned(tmp_path / "p")
    assert one_line(["files", root, "--where", "nope = 1"], 1) == (
        "error: unknown column 'nope'; the table has ['id', 'region']"
    )
    shown = CliRunner().invoke(cli, ["files", str(root), "--where", "region = eu", "--json"])
    assert shown.exit_code == 0 and '"region": "eu"' in shown.stdout  # `a = b` reads as a=b
    assert "'region >= eu' is not COLUMN=VALUE" in one_line(["files", root, "--where", "region >= eu"], 2)


def test_a_bad_timestamp_shows_one_that_is_accepted(table: Path) -> None:
    assert one_line(["snapshot", table, "--timestamp", "yesterday"], 1) == (
        "error: not an ISO-8601 timestamp: 'yesterday' (e.g. 2026-11-01, 2026-11-01T10:00:00Z or "
        "'2026-11-01 10:00:00+02:00'; no zone means UTC)"
    )


def test_errors_name_the_flags_not_the_python_parameters(tmp_path: Path) -> None:
    root = partitioned(tmp_path / "p")
    data = tmp_path / "more.parquet"
    pq.write_table(pa.table({"id": [3], "region": ["eu"], "note": ["x"]}), data)
    assert one_line(["write", root, data, "--partition-by", "id"], 1) == (
        "error: --partition-by ['id'] differs from the table's partition columns ['region']"
    )
    assert one_line(["write", root, data], 1).endswith("; --merge-schema adds them")
    assert one_line(["write", root, data, "--mode", "error"], 1).endswith("(--mode error)")


def test_compact_log_with_nothing_to_compact_says_so(table: Path) -> None:
    assert one_line(["compact-log", table], 1) == (
        f"error: nothing to compact in {table}/_delta_log: the log holds 1 commit, and a log compaction file "
        "covers at least 2"
    )


def test_interrupt_in_process_exits_130(monkeypatch: pytest.MonkeyPatch, table: Path) -> None:
    def interrupted(*_: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(documents, "files", interrupted)
    assert one_line(["files", table], EXIT_INTERRUPTED) == "error: interrupted"


CHILD = """
import os, signal, sys
import deltalog.cli.main as m

# a command started from a terminal gets Python's SIGINT handler; one started under a runner that ignores SIGINT
# (a background job of a non-interactive shell, as in scripts/test) would inherit the ignoring instead
signal.signal(signal.SIGINT, signal.default_int_handler)

class Stdin:  # says when the command is blocked reading its actions, then blocks on the real stdin
    class buffer:
        @staticmethod
        def read():
            os.write(2, b"reading\\n")
            return sys.__stdin__.buffer.read()

sys.stdin = Stdin
m.main()
"""


def test_ctrl_c_exits_130_with_one_line(table: Path) -> None:
    """A real SIGINT, delivered while the command waits on stdin (``commit --actions -``)."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, "commit", str(table), "--actions", "-", "--operation", "WRITE"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stderr is not None
    assert child.stderr.readline() == b"reading\n"  # from here on the command is running: SIGINT is its to handle
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == EXIT_INTERRUPTED
    assert (out, err) == (b"", b"error: interrupted\n")
    assert DeltaLog.for_table(table).latest_version() == 0  # nothing was committed
