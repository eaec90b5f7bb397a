"""The manual ships with the command (``deltalog docs``), and ``deltalog --version`` says which one it is."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import deltalog
from deltalog.cli import docs_cmd
from deltalog.cli.main import cli

DOCS = Path(__file__).resolve().parents[3] / "docs"


def ok(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, (result.output, result.exception)
    assert result.stderr == ""
    return result.stdout


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag: str) -> None:
    assert ok(flag) == f"deltalog {deltalog.__version__}\n"


def test_every_topic_prints_its_page() -> None:
    for topic, (name, _) in docs_cmd.TOPICS.items():
        assert ok("docs", topic) == (DOCS / name).read_text(encoding="utf-8")
    assert ok("docs") == (DOCS / "index.md").read_text(encoding="utf-8")


def test_topics_are_listed() -> None:
    listed = [line.split()[0] for line in ok("docs", "--list").splitlines()]
    assert listed == list(docs_cmd.TOPICS)


def test_help_points_to_the_packaged_docs() -> None:
    assert "deltalog docs" in ok("--help")
    assert "docs/cli.md" not in ok("files", "--help")
    assert "'deltalog docs cli'" in " ".join(ok("files", "--help").split())
    for verb in ("describe", "history", "files", "snapshot", "commit", "checkpoint", "compact", "cleanup"):
        assert verb in ok("--help")
    for verb in ("vacuum", "restore", "doctor", "intents", "docs"):
        assert verb in ok("--help")
