"""Options and small pieces every verb of the ``deltalog`` command shares.

One spelling of ``--version``/``--timestamp``, ``--where`` and ``--json`` across verbs, and one way to
print a verb's document (the JSON contract, or the same document rendered for people).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click
import orjson

from deltalog import DeltaLog, Snapshot
from deltalog.cli import render
from deltalog.cli.documents import Document


def parse_where(ctx: click.Context, param: click.Parameter, values: Sequence[str]) -> dict[str, str]:
    where: dict[str, str] = {}
    for item in values:
        column, sep, value = item.partition("=")
        if not sep or not column:
            raise click.BadParameter(f"{item!r} is not COLUMN=VALUE", ctx, param)
        if column in where:
            raise click.BadParameter(
                f"column {column!r} is given twice; a file has one value per partition column", ctx, param
            )
        where[column] = value
    return where


def parse_read_where(ctx: click.Context, param: click.Parameter, values: Sequence[str]) -> dict[str, str | list[str]]:
    """``--where`` grammar, except that a column given again widens to IN: a read of several partitions."""
    where: dict[str, str | list[str]] = {}
    for item in values:
        column, sep, value = item.partition("=")
        if not sep or not column:
            raise click.BadParameter(f"{item!r} is not COLUMN=VALUE", ctx, param)
        prior = where.get(column)
        if prior is None:
            where[column] = value
        elif isinstance(prior, list):
            prior.append(value)
        else:
            where[column] = [prior, value]
    return where


def parse_json_object(ctx: click.Context, param: click.Parameter, value: str | None) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON ({exc})", ctx, param) from None
    if not isinstance(parsed, dict):
        raise click.BadParameter("must be a JSON object", ctx, param)
    return parsed


def time_travel(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option(
        "--timestamp",
        "timestamp",
        metavar="T",
        help="Table as of ISO-8601 time T (no zone means UTC): the latest commit at or before T.",
    )(f)
    return click.option(
        "--version",
        "version",
        type=click.IntRange(min=0),
        metavar="N",
        help="Table as of version N (default: the latest).",
    )(f)


def json_flag(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON document instead of tables (shapes: docs/cli.md)."
    )(f)


table_argument = click.argument("table", metavar="TABLE")


def open_snapshot(table: str, version: int | None, timestamp: str | None) -> Snapshot:
    if version is not None and timestamp is not None:
        raise click.UsageError("--version and --timestamp cannot be used together", click.get_current_context())
    return DeltaLog.for_table(table).snapshot(version=version, timestamp=timestamp)


def emit(doc: Document, as_json: bool, human: render.Renderer) -> None:
    if as_json:
        render.write_json(doc)
    else:
        render.show(human, doc)


__all__ = [
    "emit",
    "json_flag",
    "open_snapshot",
    "parse_json_object",
    "parse_read_where",
    "parse_where",
    "table_argument",
    "time_travel",
]
