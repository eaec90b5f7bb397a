"""The public API as a user's type checker sees it: ``user_script.py`` (README.md's calls) checked by mypy
``--strict`` against the installed package (``py.typed``), from a directory away from the source tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent

# what a user of an untyped pyarrow writes too: pyarrow ships no annotations
CONFIG = """\
[mypy]
strict = true
python_version = 3.10

[mypy-pyarrow.*]
ignore_missing_imports = true
"""


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for both checks: the second reuses what the first learnt of the package."""
    return tmp_path_factory.mktemp("mypy_cache")


def mypy(cwd: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    (cwd / "mypy.ini").write_text(CONFIG)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache), "--config-file", "mypy.ini", "user_script.py"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_readme_calls_type_check_strictly_against_the_installed_package(tmp_path: Path, cache: Path) -> None:
    shutil.copy(HERE / "user_script.py", tmp_path / "user_script.py")
    done = mypy(tmp_path, cache)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found in 1 source file" in done.stdout


def test_a_misused_public_type_fails_the_check(tmp_path: Path, cache: Path) -> None:
    """The check sees real types: a version is an int, not a str, and a misspelt name of the package is no name
    (were either Any, this would pass)."""
    script = (HERE / "user_script.py").read_text() + (
        "\n\ndef wrong(log: DeltaLog) -> str:\n    return log.snapshot().version\n"
        "\n\ndef typo() -> None:\n    deltalog.wirte(None, 'path')\n"
    )
    (tmp_path / "user_script.py").write_text(script)
    done = mypy(tmp_path, cache)
    assert done.returncode == 1
    assert 'Incompatible return value type (got "int", expected "str")' in done.stdout
    assert 'Module has no attribute "wirte"' in done.stdout
