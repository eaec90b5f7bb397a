"""Putting a document (see :mod:`deltalog.cli.documents`) on stdout, for people or for programs.

Three formats, all drawn from the same document, so they never disagree: ``json`` writes the document
itself (the contract in docs/cli.md), ``csv`` writes the rows of a listing verb (one header line, then
one line per row, raw values: ISO instants, empty for null, ``true``/``false``), and ``table`` lays the
document out for people with :class:`~deltalog.cli.layout.Screen`, which folds long values rather than
cutting them and writes rows as it goes. Results go to stdout only; anything transient (a progress bar,
a log record) goes to stderr, so that a JSON or CSV result stays one parseable document.
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import orjson

from deltalog.cli.documents import Document
from deltalog.cli.layout import NULL, Column, Screen, cell

Renderer = Callable[[Document, Screen], None]

#: a dry run (or any deletion listing) longer than this shows its first SUMMARY_ROWS files unless asked
SUMMARY_THRESHOLD = 50
SUMMARY_ROWS = 20


@dataclass(frozen=True)
class Listing:
    """The rows of a listing verb: ``columns`` for people, ``names`` for CSV headers, raw ``rows``."""

    columns: tuple[Column, ...]
    names: tuple[str, ...]
    rows: Sequence[Sequence[Any]]


def show(renderer: Renderer, doc: Document, stream: TextIO | None = None) -> None:
    """Render ``doc`` for people on ``stream`` (stdout): folded to a terminal's width, else unwrapped."""
    renderer(doc, Screen(stream))


def write_json(doc: Document, stream: TextIO | None = None) -> None:
    out = stream if stream is not None else sys.stdout
    out.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")


def csv_value(value: Any) -> str:
    """A raw value for CSV: empty for null, ``true``/``false``, compact JSON for containers."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    return str(value)


def write_csv(listing: Listing, stream: TextIO | None = None) -> None:
    """The listing as CSV (RFC 4180 quoting, ``\\n`` line ends), written row by row."""
    out = stream if stream is not None else sys.stdout
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(listing.names)
    for row in listing.rows:
        writer.writerow([csv_value(v) for v in row])


def pairs(mapping: Any) -> str:
    """``k=v, k=v``: how operation parameters read best inside one cell (anything else as JSON)."""
    if not isinstance(mapping, Mapping):
        return cell(mapping)
    if not mapping:
        return NULL
    return ", ".join(f"{k}={v if isinstance(v, str) else cell(v)}" for k, v in mapping.items())


def features(values: Sequence[str] | None) -> str:
    return ", ".join(values) if values else NULL


def count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


#: one line of a verb's result: its label, and the document key it shows or how it is worked out from the document
Field = tuple[str, str | Callable[[Document], Any]]


def result(screen: Screen, title: str, doc: Document, fields: Sequence[Field]) -> None:
    """A verb's result as label and value pairs under ``title``: every verb that reports one outcome (checkpoint,
    cleanup, vacuum, restore, write) shows it the same way, and a long value (a path) folds whole at one column
    instead of breaking a sentence."""
    screen.pairs(title, [(label, doc[how] if isinstance(how, str) else how(doc)) for label, how in fields])


def shown_note(screen: Screen, shown: int, total: int, noun: str, how: str) -> None:
    """Say how many of ``total`` rows the table left out, and how to see them."""
    if shown < total:
        screen.line(f"{count(shown, noun)} of {total:,} shown; {how}")


# ---------------------------------------------------------------------------------------------- listings


def history_listing(doc: Document) -> Listing:
    rows = [
        (
            c["version"],
            c["timestamp"],
            c["operation"],
            c["operation_parameters"],
            c["read_version"],
            c["is_blind_append"],
            c["engine_info"],
        )
        for c in doc["commits"]
    ]
    columns = (
        Column("version", right=True),
        Column("timestamp"),
        Column("operation"),
        Column("parameters", fold=True),
        Column("read version", right=True),
        Column("blind append"),
        Column("engine", fold=True),
    )
    names = ("version", "timestamp", "operation", "operation_parameters", "read_version", "is_blind_append")
    return Listing(columns, (*names, "engine_info"), rows)


def files_listing(doc: Document) -> Listing:
    """One column per partition column, so a partition reads like a table column rather than a blob."""
    partition_columns = doc["partition_columns"]
    with_stats = any("stats" in f for f in doc["files"])
    columns = [
        Column("path", fold=True),
        *(Column(p, fold=True) for p in partition_columns),
        Column("size", right=True),
        Column("modified"),
        Column("deletion vector"),
    ]
    names = ["path", *partition_columns, "size", "modification_time", "deletion_vector"]
    if with_stats:
        columns.append(Column("stats", fold=True))
        names.append("stats")
    rows = []
    for f in doc["files"]:
        values = f["partition_values"]
        row = [f["path"], *(values.get(p) for p in partition_columns), f["size"], f["modification_time"]]
        row.append(f["deletion_vector"])
        if with_stats:
            row.append(f["stats"])
        rows.append(row)
    return Listing(tuple(columns), tuple(names), rows)


# ---------------------------------------------------------------------------------------------- verbs


def _protocol_rows(p: Document) -> list[tuple[str, Any]]:
    return [
        ("reader version", p["min_reader_version"]),
        ("writer version", p["min_writer_version"]),
        ("reader features", features(p["reader_features"])),
        ("writer features", features(p["writer_features"])),
        ("features", features(p["features"])),
    ]


def describe(doc: Document, screen: Screen) -> None:
    meta = doc["metadata"]
    screen.pairs(
        "Table",
        [
            ("location", doc["table"]),
            ("version", doc["version"]),
            ("files", doc["num_files"]),
            ("total size", doc["total_size"]),
            ("column mapping", doc["column_mapping_mode"]),
        ],
    )
    screen.line()
    screen.pairs("Protocol (what the table may use)", _protocol_rows(doc["protocol"]))
    screen.line()
    in_use = doc["features_in_use"]
    if in_use:
        rows = [(f["feature"], f["evidence"] + ("" if f["supported"] else " (not in the protocol)")) for f in in_use]
        screen.table("Features in use", (Column("feature"), Column("evidence", fold=True)), rows)
    else:
        screen.line("Features in use: none")
    screen.line()
    screen.pairs(
        "Metadata",
        [
            ("id", meta["id"]),
            ("name", meta["name"]),
            ("description", meta["description"]),
            ("format", meta["format"]["provider"]),
            ("partition columns", features(meta["partition_columns"])),
            ("created", meta["created_time"]),
        ],
    )
    if meta["configuration"]:
        screen.line()
        screen.table(
            "Configuration",
            (Column("property", fold=True), Column("value", fold=True)),
            list(meta["configuration"].items()),
        )
    screen.line()
    screen.table(
        "Schema",
        (Column("column", fold=True), Column("type", fold=True), Column("nullable")),
        [(c["name"], c["type"], c["nullable"]) for c in doc["schema"]],
    )
    if doc["app_transactions"]:
        screen.line()
        screen.table(
            "App transactions",
            (Column("app id", fold=True), Column("version", right=True), Column("last updated")),
            [(t["app_id"], t["version"], t["last_updated"]) for t in doc["app_transactions"]],
        )


def history(doc: Document, screen: Screen) -> None:
    listing = history_listing(doc)
    rows = [(*r[:3], pairs(r[3]), *r[4:]) for r in listing.rows]
    screen.table(f"History of {doc['table']}", listing.columns, rows)


def files(doc: Document, screen: Screen) -> None:
    listing = files_listing(doc)
    where = " and ".join(f"{k}={v}" for k, v in doc["where"].items())
    title = f"Files of {doc['table']} at version {doc['version']}" + (f" where {where}" if where else "")
    screen.table(title, listing.columns, listing.rows)
    shown_note(screen, len(doc["files"]), doc["num_files"], "file", "--limit N shows the first N by path")
    screen.line(f"{count(doc['num_files'], 'file')}, {count(doc['total_size'], 'byte')}")


SNAPSHOT_FIELDS: tuple[Field, ...] = (
    ("location", "table"),
    ("version", "version"),
    ("timestamp", "timestamp"),
    ("files", "num_files"),
    ("total size", "total_size"),
    (
        "protocol",
        lambda doc: f"reader {doc['protocol']['min_reader_version']}, writer {doc['protocol']['min_writer_version']}",
    ),
    ("features", lambda doc: features(doc["protocol"]["features"])),
    ("partition columns", lambda doc: features(doc["partition_columns"])),
)


def snapshot(doc: Document, screen: Screen) -> None:
    result(screen, "Snapshot", doc, SNAPSHOT_FIELDS)


COMMIT_FIELDS: tuple[Field, ...] = (
    ("location", "table"),
    ("version", "version"),
    ("operation", "operation"),
    ("actions", "num_actions"),
    ("read version", "read_version"),
    ("isolation", "isolation_level"),
    ("attempts", "attempts"),
    ("winners", lambda doc: ", ".join(str(v) for v in doc["winners"]) or NULL),
    ("txn id", "txn_id"),
)


def commit(
    doc: Document,
    screen: Screen,
    app_id: str | None = None,
    app_version: int | None = None,
    reached: int | None = None,
) -> None:
    """A committed version as a short summary; a skipped exactly-once commit as one sentence.

    The application (its id, the version asked for, the version it had reached) is passed in, bound with
    ``functools.partial``, because the skip sentence names it and the JSON document, whose shape is fixed,
    does not carry it.
    """
    if doc["skipped"]:
        asked = f" (asked for {app_version})" if app_version != reached else ""
        screen.line(
            f"skipped: application {app_id} already reached version {reached}{asked}; nothing was written "
            f"({doc['table']} stays at version {doc['read_version']})"
        )
        return
    result(screen, "Committed", doc, COMMIT_FIELDS)


def deletion_kind(path: str) -> str:
    """What an unreferenced file found by vacuum is, from its name: people ask before deleting DV files."""
    name = path.rsplit("/", 1)[-1]
    if path.startswith("_change_data/") or "/_change_data/" in path:
        return "change data"
    if name.startswith("deletion_vector_") and name.endswith(".bin"):
        return "deletion vector"
    return "data"


def limited(rows: Iterable[Any], limit: int | None) -> list[Any]:
    items = list(rows)
    return items if limit is None else items[:limit]


__all__ = [
    "SUMMARY_ROWS",
    "SUMMARY_THRESHOLD",
    "Listing",
    "Field",
    "Renderer",
    "cell",
    "commit",
    "count",
    "csv_value",
    "deletion_kind",
    "describe",
    "features",
    "files",
    "files_listing",
    "history",
    "history_listing",
    "limited",
    "pairs",
    "result",
    "show",
    "shown_note",
    "snapshot",
    "write_csv",
    "write_json",
]
