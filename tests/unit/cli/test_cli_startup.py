"""``deltalog --version`` and ``deltalog --help`` answer at once: they import click and deltalog's errors, and no
verb's dependencies (pyarrow, pandas, rich), which load only when their verb runs.

Counted by module, not timed (``python -X importtime`` lists every module a run imports): a time would fail on
a busy machine and pass a regression on a quiet one. Before verbs loaded lazily, ``--version`` imported about
890 modules (pyarrow.dataset and pandas among them) and took seconds.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from deltalog.cli.main import VERBS, cli

#: modules a run of ``--version`` or ``--help`` may import (about 125 today; the interpreter alone: about 25)
BUDGET = 160
#: what only a verb needs
NEVER = ("pyarrow", "pandas", "numpy", "rich", "fsspec", "pyroaring", "deltalog.log", "deltalog.data")


def script() -> str:
    found = shutil.which("deltalog", path=str(Path(sys.executable).parent))
    assert found is not None, "the deltalog console script is not installed next to this interpreter"
    return found


def imported(*args: str) -> list[str]:
    """Every module ``deltalog ARGS`` imports, in order, as ``-X importtime`` reports them."""
    run = subprocess.run(
        [sys.executable, "-X", "importtime", script(), *args], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return [line.rsplit("|", 1)[1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")][1:]


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["-V"]])
def test_version_and_help_import_no_verbs_dependencies(args: list[str]) -> None:
    modules = imported(*args)
    heavy = sorted({m for m in modules if any(m == n or m.startswith(n + ".") for n in NEVER)})
    assert heavy == []
    assert len(modules) <= BUDGET, f"{len(modules)} modules: {modules}"


def loaded_by(*args: str) -> list[str]:
    """``sys.modules`` after ``deltalog ARGS`` (verbs load through importlib, which ``-X importtime`` omits)."""
    code = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))\n"
        f"sys.argv = ['deltalog', *{list(args)!r}]\n"
        "from deltalog.cli.main import main\n"
        "main()\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return list(json.loads(run.stderr.strip().splitlines()[-1]))


def test_a_verbs_help_loads_that_verb_only() -> None:
    modules = loaded_by("docs", "--help")
    assert "deltalog.cli.docs_cmd" in modules and "deltalog.cli.scan_cmd" not in modules
    assert not any(m == "pandas" or m.startswith("pyarrow") for m in modules)
    scan = loaded_by("scan", "--help")
    assert "deltalog.cli.scan_cmd" in scan and "deltalog.cli.maintenance" not in scan


def test_the_help_lists_every_verb_by_its_own_summary() -> None:
    """The group lists verbs without importing them, by the summaries in ``VERBS``: they must stay the
    verbs' own first sentences."""
    ctx = click.Context(cli)
    for name, verb in VERBS.items():
        command = cli.get_command(ctx, name)  # type: ignore[attr-defined]
        assert command is not None and command.name == name
        assert command.get_short_help_str(limit=500) == verb.summary, name
        assert command.hidden == verb.hidden, name
