"""Where the conformance corpus is: ``$DELTALOG_CORPUS``, else ``../shared/conformance`` beside the checkout.

Tests over the corpus are parametrized by what this finds; without a corpus they have no cases (and
``scripts/test`` says so), while every other test still runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parent.parent


def corpus_dir() -> Path | None:
    env = os.environ.get("DELTALOG_CORPUS")
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
    assert root is not None
    return root / "tables" / name
