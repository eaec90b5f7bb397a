"""Where the conformance corpus is: ``$DELTALOG_CORPUS``, else ``../shared/conformance`` beside the checkout;
``DELTALOG_CORPUS=none`` runs as a fresh clone does, without one.

Tests over the corpus carry ``@pytest.mark.corpus`` and are parametrized by what this finds; without a corpus
they are deselected (``tests/conftest.py``: no case is ever reported as skipped, and ``scripts/test`` says in one
line what did not run), while every other test still runs.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parent.parent
NO_CORPUS = "none"  # the value of DELTALOG_CORPUS that means: no corpus, even if ../shared/conformance is there


def corpus_dir() -> Path | None:
    env = os.environ.get("DELTALOG_CORPUS")
    if env == NO_CORPUS:
        return None
    candidate = Path(env) if env else REPO.parent / "shared" / "conformance"
    if (candidate / "manifest.json").is_file():
        return candidate
    if env:
        raise RuntimeError(f"DELTALOG_CORPUS={env} has no manifest.json")
    return None


def corpus_entries() -> list[dict[str, Any]]:
    root = corpus_dir()
    if root is None:
        return []
    manifest: dict[str, Any] = orjson.loads((root / "manifest.json").read_bytes())
    return list(manifest["tables"])


def table_path(name: str) -> Path:
    root = corpus_dir()
    assert root is not None, f"no conformance corpus for {name}: a test that reads one is marked corpus"
    return root / "tables" / name


def writable_copy(name: str, dest: Path) -> Path:
    """A copy of a corpus table whose files and directories can be changed (the corpus is read-only)."""
    shutil.copytree(table_path(name), dest)
    for p in [dest, *dest.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return dest
