"""Running the ``deltalog`` command in-process and checking its contract with the shell.

``ok`` is a run that succeeds with nothing on stderr; ``fails`` one that keeps the failure contract: its exit
code, nothing on stdout, exactly one ``error:`` line on stderr, never a traceback.
"""

from __future__ import annotations

from typing import Any

import orjson
from click.testing import CliRunner, Result

from deltalog.cli.main import cli


def run(*args: Any) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def ok(*args: Any) -> str:
    result = run(*args)
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    assert result.stderr == ""
    return result.stdout


def as_json(*args: Any) -> Any:
    return orjson.loads(ok(*args, "--json"))


def fails(*args: Any, code: int = 1) -> str:
    """A failing command: nothing on stdout, one ``error:`` line on stderr; returns that line."""
    result = run(*args)
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


__all__ = ["as_json", "fails", "ok", "run"]
