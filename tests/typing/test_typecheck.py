"""scripts/typecheck (which scripts/test runs beside ruff) fails on a type error: run on a small copy of the
tree (the project's pyproject.toml and one real module of deltalog/), it passes, and with a type error put
into that module it fails, naming the line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULE = "deltalog/core/log/paths.py"  # pure, imports only the stdlib: a copy type-checks on its own


def typecheck(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DELTALOG_VENV": sys.prefix}  # the interpreter running the tests, with mypy
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "typecheck"), str(tree)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def tree_with(tmp_path: Path, extra: str) -> Path:
    tree = tmp_path / "tree"
    (tree / MODULE).parent.mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    package = (tree / MODULE).parent
    while package != tree:  # an empty __init__.py in each package folder of the module
        (package / "__init__.py").write_text("")
        package = package.parent
    (tree / MODULE).write_text((ROOT / MODULE).read_text() + extra)
    return tree


def test_the_copy_type_checks(tmp_path: Path) -> None:
    done = typecheck(tree_with(tmp_path, ""))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Success: no issues found in {len(Path(MODULE).parts)} source files" in done.stdout  # and the __init__s


def test_a_type_error_fails_the_check(tmp_path: Path) -> None:
    lines = len((ROOT / MODULE).read_text().splitlines())
    done = typecheck(tree_with(tmp_path, '\n\ndef broken() -> int:\n    return "seven"\n'))
    assert done.returncode == 1
    expected = f'{MODULE}:{lines + 4}: error: Incompatible return value type (got "str", expected "int")'
    assert expected in done.stdout
