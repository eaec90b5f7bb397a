"""The verbs that read a table's log: ``describe``, ``history``, ``files`` and ``snapshot``.

Each opens the snapshot, builds a document (:mod:`deltalog.cli.documents`) and renders it
(:mod:`deltalog.cli.render`); :mod:`deltalog.cli.main` loads this module when one of them runs.
"""

from __future__ import annotations

import click

from deltalog.cli import documents, render
from deltalog.cli.options import (
    emit,
    json_flag,
    limit_option,
    open_log,
    open_snapshot,
    open_table,
    output_format,
    parse_where,
    table_argument,
    time_travel,
)


@click.command()
@table_argument
@time_travel
@json_flag
def describe(table: str, version: int | None, timestamp: str | None, fmt: str) -> None:
    """Protocol, metadata, schema and totals of TABLE, and the features it actively uses."""
    emit(documents.describe(open_snapshot(table, version, timestamp)), fmt, render.describe)


@click.command()
@table_argument
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="Show only the N newest commits.")
@output_format(csv=True)
def history(table: str, limit: int | None, fmt: str) -> None:
    """Commits of TABLE, newest first (the timestamps are what --timestamp takes)."""
    doc = documents.history(open_log(table), limit)
    emit(doc, fmt, render.history, render.history_listing)


@click.command()
@table_argument
@time_travel
@click.option(
    "--where",
    "where",
    multiple=True,
    callback=parse_where,
    metavar="COLUMN=VALUE",
    help="Only files whose partition COLUMN equals VALUE (repeatable; an empty VALUE matches null).",
)
@click.option("--stats", is_flag=True, help="Include each file's statistics.")
@limit_option
@output_format(csv=True)
def files(
    table: str,
    version: int | None,
    timestamp: str | None,
    where: dict[str, str],
    stats: bool,
    limit: int | None,
    fmt: str,
) -> None:
    """Live data files of TABLE, sorted by path."""
    doc = documents.files(open_snapshot(table, version, timestamp), where, stats, limit)
    emit(doc, fmt, render.files, render.files_listing)


@click.command()
@table_argument
@time_travel
@json_flag
def snapshot(table: str, version: int | None, timestamp: str | None, fmt: str) -> None:
    """Short summary of TABLE at one version."""
    log, snap = open_table(table, version, timestamp)
    emit(documents.snapshot(snap, log), fmt, render.snapshot)


__all__ = ["describe", "files", "history", "snapshot"]
