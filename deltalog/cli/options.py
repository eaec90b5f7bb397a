"""Options and small pieces every verb of the ``deltalog`` command shares.

One spelling of ``--version``/``--timestamp``, ``--where``, ``--limit`` and the output format
(``--format table|json|csv``; ``--json`` and ``--csv`` are short for the last two) across verbs, and one way
to print a verb's document (the JSON contract, the rows of a listing as CSV, or the document laid out for
people).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import click
import orjson

from deltalog import DeltaLog, Snapshot
from deltalog.cli import render
from deltalog.cli.documents import Document
from deltalog.cli.store_options import given_storage_options


def _column_value(item: str) -> tuple[str, str] | None:
    """``COLUMN=VALUE`` split, the column without the spaces around it (``day = 2026-11-01`` names ``day``); the
    value keeps its own spaces (a partition value may be ``" "``) but for the one after a spaced ``=``. None when
    it is not that form: no ``=``, no column, or a comparison (``day >= x``: only equality selects files)."""
    column, sep, value = item.partition("=")
    if column.endswith(" ") and value.startswith(" "):
        value = value[1:]
    column = column.strip()
    if not sep or not column or column[-1] in "<>!":
        return None
    return column, value


def parse_where(ctx: click.Context, param: click.Parameter, values: Sequence[str]) -> dict[str, str]:
    where: dict[str, str] = {}
    for item in values:
        split = _column_value(item)
        if split is None:
            raise click.BadParameter(f"{item!r} is not COLUMN=VALUE", ctx, param)
        column, value = split
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
        split = _column_value(item)
        if split is None:
            raise click.BadParameter(f"{item!r} is not COLUMN=VALUE", ctx, param)
        column, value = split
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


def output_format(*, csv: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--format`` (table, json, and csv for listing verbs) and ``--json``; the verb receives ``fmt``."""
    choices = ["table", "json", "csv"] if csv else ["table", "json"]

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def verb(*args: Any, fmt: str | None, as_json: bool, as_csv: bool = False, **kwargs: Any) -> Any:
            flags = [name for name, on in (("json", as_json), ("csv", as_csv)) if on]
            if len(flags) > 1 or (flags and fmt not in (None, flags[0])):
                given = [f"--{n}" for n in flags] + ([f"--format {fmt}"] if fmt else [])
                raise click.UsageError(f"{' and '.join(given)} cannot be used together")
            return f(*args, fmt=flags[0] if flags else fmt or "table", **kwargs)

        verb = click.option(
            "--format",
            "fmt",
            type=click.Choice(choices),
            help="Output: table (for people, the default), json (one document, the contract in "
            "'deltalog docs cli')" + (", csv (the rows, for spreadsheets)." if csv else "."),
        )(verb)
        if csv:
            verb = click.option("--csv", "as_csv", is_flag=True, help="Same as --format csv.")(verb)
        return click.option("--json", "as_json", is_flag=True, help="Same as --format json.")(verb)

    return decorate


json_flag = output_format()

limit_option = click.option(
    "--limit", type=click.IntRange(min=1), metavar="N", help="Show only the first N rows (counts still cover all)."
)


table_argument = click.argument("table", metavar="TABLE")


def open_log(table: str, **kwargs: Any) -> DeltaLog:
    """The table, opened with the command's ``--storage-option``/``--storage-options-file`` options."""
    return DeltaLog.for_table(table, given_storage_options(), **kwargs)


def open_table(table: str, version: int | None, timestamp: str | None) -> tuple[DeltaLog, Snapshot]:
    """The table and its snapshot at ``version`` or ``timestamp`` (the latest without either)."""
    if version is not None and timestamp is not None:
        raise click.UsageError("--version and --timestamp cannot be used together", click.get_current_context())
    log = open_log(table)
    return log, log.snapshot(version=version, timestamp=timestamp)


def open_snapshot(table: str, version: int | None, timestamp: str | None) -> Snapshot:
    return open_table(table, version, timestamp)[1]


def emit(
    doc: Document,
    fmt: str,
    human: render.Renderer,
    listing: Callable[[Document], render.Listing] | None = None,
) -> None:
    """Print ``doc`` in ``fmt``: the JSON document, the rows of ``listing(doc)`` as CSV, or ``human``."""
    if fmt == "json":
        render.write_json(doc)
    elif fmt == "csv":
        assert listing is not None, "csv is offered only by verbs that have a listing"
        render.write_csv(listing(doc))
    else:
        render.show(human, doc)


__all__ = [
    "emit",
    "json_flag",
    "limit_option",
    "open_log",
    "output_format",
    "open_snapshot",
    "open_table",
    "parse_json_object",
    "parse_read_where",
    "parse_where",
    "table_argument",
    "time_travel",
]
