"""``deltalog docs [TOPIC]``: the manual, from the installed package.

Why in the command: help texts used to point at ``docs/cli.md``, a file of the source tree that a wheel
does not carry, so an operator on a server had a pointer to nothing. The wheel now ships the Markdown
pages (``deltalog/_docs``, copied from ``docs/`` at build time, see pyproject.toml), and this verb prints
one: through a pager on a terminal, as is when piped (``deltalog docs cli | grep -- --limit``). Running
from a source checkout, it reads ``docs/`` itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

import deltalog

#: topic -> (file under docs/, what it covers); the order is the order of ``--list``
TOPICS: dict[str, tuple[str, str]] = {
    "start": ("index.md", "getting started: a first table, install, the log itself, the demo"),
    "deltalake": ("deltalake.md", "coming from deltalake: its calls in deltalog's names, what is not supported yet"),
    "data": ("data.md", "reading and writing data: snapshots, files, commits, time travel"),
    "merge": ("merge.md", "MERGE and UPDATE: upserts by deletion vectors, Delta Spark's semantics, bounded memory"),
    "expressions": ("expressions.md", "Spark SQL expressions and filters: forms, functions, semantics, time zone"),
    "cli": ("cli.md", "the deltalog command: every verb, its options, its --json documents"),
    "storage": ("storage.md", "where tables live, storage options and credentials, safe stores, doctor"),
    "spark": ("spark.md", "Spark writes, reads and checkpoints (deltalog.spark)"),
    "operations": ("operations.md", "checkpoints, log cleanup, vacuum, restore, the checkpoint job, logging"),
    "concurrency": ("concurrency.md", "concurrent writers, isolation levels, conflicts, intents"),
    "protocol": ("protocol.md", "where the protocol or the peers disagree, and what deltalog chose"),
}


def docs_dir() -> Path | None:
    """The Markdown pages: inside the installed package, else the source tree's ``docs/``."""
    package = Path(deltalog.__file__).resolve().parent
    for candidate in (package / "_docs", package.parent / "docs"):
        if (candidate / "cli.md").is_file():
            return candidate
    return None


def topic_text(topic: str) -> str:
    """The page for ``topic``; a ``click.ClickException`` (one line, exit 1) when it is missing."""
    root = docs_dir()
    if root is None:
        raise click.ClickException("the documentation is not installed with this copy of deltalog")
    return (root / TOPICS[topic][0]).read_text(encoding="utf-8")


@click.command("docs")
@click.argument("topic", required=False, type=click.Choice(list(TOPICS)), metavar="[TOPIC]")
@click.option("--list", "list_topics", is_flag=True, help="List the topics.")
def docs_cmd(topic: str | None, list_topics: bool) -> None:
    """Print the manual's page on TOPIC (default: start); 'deltalog docs --list' names the topics."""
    if list_topics:
        width = max(len(t) for t in TOPICS)
        click.echo("\n".join(f"{name:<{width}}  {about}" for name, (_, about) in TOPICS.items()))
        return
    text = topic_text(topic or "start")
    if sys.stdout.isatty():
        click.echo_via_pager(text)
    else:
        click.echo(text, nl=False)


__all__ = ["TOPICS", "docs_cmd", "docs_dir", "topic_text"]
