"""Putting a document (see :mod:`deltalog.cli.documents`) on stdout, for people or for programs.

``--json`` writes the document itself, so a script reads exactly what the tables show. The tables are
built from the same document and never consult the table again.

Every cell, header and title is a :class:`rich.text.Text`, never a str: rich would read ``[...]`` in a
path or a property value as markup and swallow or reject it. When stdout is not a terminal the tables
are laid out very wide and trailing blanks dropped, because a piped table wrapped at 80 columns breaks
``grep`` and ``cut``. Results go to stdout only;
anything transient (a progress bar, later) belongs on a stderr console, so that ``--json`` output stays
one parseable document.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TextIO

import orjson
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from deltalog.cli.documents import Document

Renderer = Callable[[Document, Console], None]

#: width for output that is not a terminal: wide enough that no real table wraps
PIPE_WIDTH = 100_000
NULL = "-"


def show(renderer: Renderer, doc: Document, stream: TextIO | None = None) -> None:
    """Render ``doc`` to ``stream`` (stdout): live to a terminal, else unwrapped and without trailing blanks."""
    out = stream if stream is not None else sys.stdout
    if out.isatty():
        renderer(doc, Console(file=out, highlight=False))
        return
    buffer = io.StringIO()
    renderer(doc, Console(file=buffer, width=PIPE_WIDTH, highlight=False, color_system=None))
    out.write("".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines()))


def write_json(doc: Document, stream: TextIO | None = None) -> None:
    out = stream if stream is not None else sys.stdout
    out.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")


def cell(value: Any) -> Text:
    """One value as table text: ``-`` for null, yes/no for booleans, compact JSON for containers."""
    if value is None:
        return Text(NULL)
    if isinstance(value, bool):
        return Text("yes" if value else "no")
    if isinstance(value, (dict, list)):
        return Text(orjson.dumps(value).decode())
    return Text(str(value))


def pairs(mapping: Any) -> Text:
    """``k=v, k=v``: how operation parameters read best inside one cell (anything else as JSON)."""
    if not isinstance(mapping, Mapping):
        return cell(mapping)
    if not mapping:
        return Text(NULL)
    return Text(", ".join(f"{k}={v if isinstance(v, str) else cell(v).plain}" for k, v in mapping.items()))


def key_values(title: str, rows: Iterable[tuple[str, Any]]) -> Table:
    table = Table(title=Text(title), title_justify="left", show_header=False, box=None, padding=(0, 2, 0, 0))
    table.add_column(style="bold")
    table.add_column()
    for key, value in rows:
        table.add_row(Text(key), value if isinstance(value, Text) else cell(value))
    return table


def grid(title: str, headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> Table:
    table = Table(title=Text(title), title_justify="left", box=box.SIMPLE_HEAD, header_style="bold", show_edge=False)
    for h in headers:
        table.add_column(Text(h))
    for row in rows:
        table.add_row(*(v if isinstance(v, Text) else cell(v) for v in row))
    return table


def _features(values: Sequence[str] | None) -> Text:
    return Text(", ".join(values)) if values else Text(NULL)


def _protocol_rows(p: Document) -> list[tuple[str, Any]]:
    return [
        ("reader version", p["min_reader_version"]),
        ("writer version", p["min_writer_version"]),
        ("reader features", _features(p["reader_features"])),
        ("writer features", _features(p["writer_features"])),
        ("features", _features(p["features"])),
    ]


def describe(doc: Document, con: Console) -> None:
    meta = doc["metadata"]
    con.print(
        key_values(
            "Table",
            [
                ("location", doc["table"]),
                ("version", doc["version"]),
                ("files", doc["num_files"]),
                ("total size", doc["total_size"]),
                ("column mapping", doc["column_mapping_mode"]),
            ],
        )
    )
    con.print()
    con.print(key_values("Protocol", _protocol_rows(doc["protocol"])))
    con.print()
    con.print(
        key_values(
            "Metadata",
            [
                ("id", meta["id"]),
                ("name", meta["name"]),
                ("description", meta["description"]),
                ("format", meta["format"]["provider"]),
                ("partition columns", _features(meta["partition_columns"])),
                ("created", meta["created_time"]),
            ],
        )
    )
    if meta["configuration"]:
        con.print()
        con.print(grid("Configuration", ["property", "value"], meta["configuration"].items()))
    con.print()
    con.print(
        grid("Schema", ["column", "type", "nullable"], [(c["name"], c["type"], c["nullable"]) for c in doc["schema"]])
    )
    if doc["app_transactions"]:
        con.print()
        con.print(
            grid(
                "App transactions",
                ["app id", "version", "last updated"],
                [(t["app_id"], t["version"], t["last_updated"]) for t in doc["app_transactions"]],
            )
        )


def history(doc: Document, con: Console) -> None:
    rows = [
        (
            c["version"],
            c["timestamp"],
            c["operation"],
            pairs(c["operation_parameters"]),
            c["read_version"],
            c["is_blind_append"],
            c["engine_info"],
        )
        for c in doc["commits"]
    ]
    headers = ["version", "timestamp", "operation", "parameters", "read version", "blind append", "engine"]
    con.print(grid(f"History of {doc['table']}", headers, rows))


def files(doc: Document, con: Console) -> None:
    """One column per partition column, so a partition reads like a table column rather than a blob."""
    partition_columns = doc["partition_columns"]
    with_stats = any("stats" in f for f in doc["files"])
    headers = ["path", *partition_columns, "size", "modified", "deletion vector"]
    if with_stats:
        headers.append("stats")
    rows = []
    for f in doc["files"]:
        values = f["partition_values"]
        row = [
            f["path"],
            *(values.get(p) for p in partition_columns),
            f["size"],
            f["modification_time"],
            f["deletion_vector"],
        ]
        if with_stats:
            row.append(f["stats"])
        rows.append(row)
    where = " and ".join(f"{k}={v}" for k, v in doc["where"].items())
    title = f"Files of {doc['table']} at version {doc['version']}" + (f" where {where}" if where else "")
    con.print(grid(title, headers, rows))
    con.print(Text(f"{_count(doc['num_files'], 'file')}, {_count(doc['total_size'], 'byte')}"))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def snapshot(doc: Document, con: Console) -> None:
    p = doc["protocol"]
    con.print(
        key_values(
            "Snapshot",
            [
                ("location", doc["table"]),
                ("version", doc["version"]),
                ("timestamp", doc["timestamp"]),
                ("files", doc["num_files"]),
                ("total size", doc["total_size"]),
                ("protocol", f"reader {p['min_reader_version']}, writer {p['min_writer_version']}"),
                ("features", _features(p["features"])),
                ("partition columns", _features(doc["partition_columns"])),
            ],
        )
    )


def commit(
    doc: Document, con: Console, app_id: str | None = None, app_version: int | None = None, reached: int | None = None
) -> None:
    """A committed version as a short summary; a skipped exactly-once commit as one sentence.

    The application (its id, the version asked for, the version it had reached) is passed in, bound with
    ``functools.partial``, because the skip sentence names it and the JSON document, whose shape is fixed,
    does not carry it.
    """
    if doc["skipped"]:
        asked = f" (asked for {app_version})" if app_version != reached else ""
        con.print(
            Text(
                f"skipped: application {app_id} already reached version {reached}{asked}; nothing was written "
                f"({doc['table']} stays at version {doc['read_version']})"
            )
        )
        return
    winners = ", ".join(str(v) for v in doc["winners"])
    con.print(
        key_values(
            "Committed",
            [
                ("location", doc["table"]),
                ("version", doc["version"]),
                ("operation", doc["operation"]),
                ("actions", doc["num_actions"]),
                ("read version", doc["read_version"]),
                ("isolation", doc["isolation_level"]),
                ("attempts", doc["attempts"]),
                ("winners", Text(winners or NULL)),
                ("txn id", doc["txn_id"]),
            ],
        )
    )


__all__ = [
    "Renderer",
    "cell",
    "commit",
    "describe",
    "files",
    "grid",
    "history",
    "key_values",
    "pairs",
    "show",
    "snapshot",
    "write_json",
]
