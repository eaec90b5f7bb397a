"""``deltalog scan TABLE``: the table's live rows, as a reader of the table sees them.

Registered on the main group by :mod:`deltalog.cli.main`. The rows come from :meth:`deltalog.Snapshot.scan`
(deletion vectors applied, column mapping resolved, partition values typed); ``--where`` takes
Spark SQL (:mod:`deltalog.expr`), evaluated with Spark's ANSI semantics, files being pruned and
skipped first by what it implies (:mod:`deltalog.data.predicate`). ``--limit N`` stops reading after N rows.

CSV is written as the rows come (any table size); the table and JSON formats hold the rows they print, so
``--limit`` is the way to look at a large table there. Values print as JSON does: instants in ISO-8601,
decimals as text (exactly), binary as base64, maps as objects when their keys are strings.
"""

from __future__ import annotations

import base64
import csv
import datetime as dt
import math
import sys
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any

import click
import pyarrow as pa

from deltalog import Snapshot
from deltalog.cli import render
from deltalog.cli.documents import Document
from deltalog.cli.layout import Column, Screen
from deltalog.cli.options import limit_option, open_snapshot, output_format, table_argument, time_travel
from deltalog.core.schema import top_level_fields
from deltalog.data.predicate import RowFilter, row_filter
from deltalog.errors import InvalidArgumentError


def plain(value: Any) -> Any:
    """A row value as JSON and CSV carry it."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):  # a map's entries
            keys = [k for k, _ in value]
            if all(isinstance(k, str) for k in keys) and len(set(keys)) == len(keys):
                return {k: plain(v) for k, v in value}
            return [[plain(k), plain(v)] for k, v in value]
        return [plain(v) for v in value]
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return value


def _columns(given: str | None, snap: Snapshot) -> list[str] | None:
    if given is None:
        return None
    names = [c.strip() for c in given.split(",")]
    if not all(names):
        raise click.BadParameter(f"{given!r} is not a comma-separated list of column names", param_hint="--columns")
    known = {f["name"] for f in top_level_fields(snap.schema_json)}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InvalidArgumentError(f"unknown column {unknown[0]!r}; the table has {sorted(known)}")
    return names


def rows_of(
    snap: Snapshot, columns: Sequence[str] | None, where: RowFilter | None, limit: int | None
) -> Iterator[pa.RecordBatch]:
    """The live rows, filtered by ``where`` (files pruned by what it implies first), at most ``limit``."""
    wanted = list(columns) if columns is not None else [f["name"] for f in top_level_fields(snap.schema_json)]
    read = wanted if where is None else list(dict.fromkeys([*wanted, *where.columns]))
    return limited(snap.scan(read, where.pruning if where is not None else None), wanted, where, limit)


def limited(
    reader: pa.RecordBatchReader, wanted: Sequence[str], where: RowFilter | None, limit: int | None
) -> Iterator[pa.RecordBatch]:
    """``reader``'s rows where ``where`` is true, columns ``wanted``, at most ``limit``; the reader is closed
    once they are out (or the caller stops)."""
    left = limit
    try:
        for batch in reader:
            if where is not None:
                batch = batch.filter(where.mask(batch))
            if left is not None:
                batch = batch.slice(0, left)
                left -= batch.num_rows
            if batch.num_rows:
                yield batch.select(list(wanted))
            if left == 0:
                return
    finally:
        reader.close()


def stream_csv(names: Sequence[str], batches: Iterator[pa.RecordBatch]) -> None:
    """The rows as CSV on stdout, written as they come (values as :func:`plain` gives them)."""
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(names)
    for batch in batches:
        for row in batch.to_pylist():
            writer.writerow([render.csv_value(plain(row[n])) for n in names])


def scan_document(
    snap: Snapshot, names: Sequence[str], where: str | None, batches: Iterator[pa.RecordBatch]
) -> Document:
    rows = [{k: plain(v) for k, v in r.items()} for b in batches for r in b.to_pylist()]
    return {
        "table": snap.context.location,
        "version": snap.version,
        "columns": list(names),
        "where": where,
        "num_rows": len(rows),
        "rows": rows,
    }


def render_scan(doc: Document, screen: Screen) -> None:
    show_rows(f"Rows of {doc['table']} at version {doc['version']}", doc, screen)


def show_rows(title: str, doc: Document, screen: Screen) -> None:
    """A document's ``rows`` as a table under ``title`` (plus its ``where``), and how many there are."""
    title += f" where {doc['where']}" if doc["where"] else ""
    columns = [Column(n, fold=True) for n in doc["columns"]]
    screen.table(title, columns, [[r[n] for n in doc["columns"]] for r in doc["rows"]])
    screen.line(render.count(doc["num_rows"], "row"))


@click.command("scan")
@table_argument
@time_travel
@click.option("--columns", metavar="A,B", help="Only these columns, in this order (default: all).")
@click.option(
    "--where",
    metavar="EXPR",
    help="Only rows where the Spark SQL predicate EXPR is true: comparisons, AND/OR/NOT, IS [NOT] NULL, IN, "
    "BETWEEN, + - * (e.g. \"region = 'eu' AND amount > 10\").",
)
@limit_option
@output_format(csv=True)
def scan_cmd(
    table: str,
    version: int | None,
    timestamp: str | None,
    columns: str | None,
    where: str | None,
    limit: int | None,
    fmt: str,
) -> None:
    """Live rows of TABLE (deletion vectors applied, column mapping resolved)."""
    snap = open_snapshot(table, version, timestamp)
    names = _columns(columns, snap) or [f["name"] for f in top_level_fields(snap.schema_json)]
    chosen = row_filter(where, snap.schema_json, snap.partition_columns) if where is not None else None
    batches = rows_of(snap, names, chosen, limit)
    if fmt == "csv":
        stream_csv(names, batches)
        return
    doc = scan_document(snap, names, where, batches)
    if fmt == "json":
        render.write_json(doc)
    else:
        render.show(render_scan, doc)


__all__ = [
    "limited",
    "plain",
    "render_scan",
    "rows_of",
    "scan_cmd",
    "scan_document",
    "show_rows",
    "stream_csv",
]
