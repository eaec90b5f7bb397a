"""``deltalog changes TABLE --from V``: what changed in a range of versions (the change data feed).

Registered on the main group by :mod:`deltalog.cli.main`. The rows come from :meth:`deltalog.DeltaLog.changes`:
the table's columns in its latest schema, then ``_change_type``, ``_commit_version`` and ``_commit_timestamp``.
``--from`` and ``--to`` take a version or an ISO-8601 timestamp (time travel's clock). ``--where`` takes Spark SQL
as ``scan --where`` does (:mod:`deltalog.data.predicate`), over the table's columns and the three change columns;
what it implies prunes the files first. Output is as ``scan``'s: CSV as rows come, the table and JSON formats
holding the rows they print (``--limit N`` stops after N rows).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import click
import pyarrow as pa

from deltalog import DeltaLog
from deltalog.cli import render
from deltalog.cli.documents import Document
from deltalog.cli.layout import Screen
from deltalog.cli.options import limit_option, open_log, output_format, table_argument
from deltalog.cli.scan_cmd import limited, plain, show_rows, stream_csv
from deltalog.core.change_feed import CHANGE_COLUMNS
from deltalog.core.schema import top_level_fields
from deltalog.data.changes import with_change_columns
from deltalog.data.predicate import RowFilter, row_filter
from deltalog.errors import InvalidArgumentError


def _bound(value: str | None) -> dict[str, Any]:
    """``--from``/``--to``: a version when it is a whole number, else a timestamp."""
    if value is None:
        return {}
    text = value.strip()
    return {"version": int(text)} if text.isdigit() else {"timestamp": text}


def _columns(given: str | None, schema: dict[str, Any]) -> list[str]:
    names = [f["name"] for f in top_level_fields(schema)]
    if given is None:
        return names
    chosen = [c.strip() for c in given.split(",")]
    if not all(chosen):
        raise click.BadParameter(f"{given!r} is not a comma-separated list of column names", param_hint="--columns")
    unknown = [n for n in chosen if n not in names and n not in CHANGE_COLUMNS]
    if unknown:
        raise InvalidArgumentError(f"unknown column {unknown[0]!r}; the table has {sorted(names)}")
    return chosen


def change_rows(
    log: DeltaLog,
    bounds: tuple[dict[str, Any], dict[str, Any]],
    columns: Sequence[str],
    where: RowFilter | None,
    limit: int | None,
) -> Iterator[pa.RecordBatch]:
    """The change rows of the range, ``where`` true, ``columns`` (table and change columns) in that order."""
    start, end = bounds
    table_columns = [c for c in [*columns, *(where.columns if where else ())] if c not in CHANGE_COLUMNS]
    reader = log.changes(
        start.get("version"),
        end.get("version"),
        starting_timestamp=start.get("timestamp"),
        ending_timestamp=end.get("timestamp"),
        columns=list(dict.fromkeys(table_columns)),
        filter=where.pruning if where is not None else None,
    )
    return limited(reader, columns, where, limit)


def _shown(bound: dict[str, Any]) -> int | str | None:
    return bound.get("version", bound.get("timestamp"))


def changes_document(
    log: DeltaLog, bounds: tuple[dict[str, Any], dict[str, Any]], names: Sequence[str], where: str | None, batches: Any
) -> Document:
    rows = [{k: plain(v) for k, v in r.items()} for b in batches for r in b.to_pylist()]
    return {
        "table": log.location,
        "from": _shown(bounds[0]),
        "to": _shown(bounds[1]),
        "columns": list(names),
        "where": where,
        "num_rows": len(rows),
        "rows": rows,
    }


def render_changes(doc: Document, screen: Screen) -> None:
    span = f"from {doc['from']}" + (f" to {doc['to']}" if doc["to"] is not None else "")
    show_rows(f"Changes of {doc['table']} {span}", doc, screen)


@click.command("changes")
@table_argument
@click.option(
    "--from", "start", metavar="V|T", default="0", show_default=True, help="First version (or ISO-8601 timestamp)."
)
@click.option("--to", "end", metavar="V|T", help="Last version (or timestamp); default: the latest.")
@click.option("--columns", metavar="A,B", help="Only these columns, in this order (change columns included).")
@click.option(
    "--where",
    metavar="EXPR",
    help="Only rows where the Spark SQL predicate EXPR is true; it may name _change_type, _commit_version and "
    "_commit_timestamp (e.g. \"_change_type = 'delete'\").",
)
@limit_option
@output_format(csv=True)
def changes_cmd(
    table: str, start: str, end: str | None, columns: str | None, where: str | None, limit: int | None, fmt: str
) -> None:
    """What changed in TABLE from one version to another (change data feed)."""
    log = open_log(table)
    snap = log.snapshot()
    names = _columns(columns, snap.schema_json)
    if columns is None:
        names += list(CHANGE_COLUMNS)
    schema = with_change_columns(snap.schema_json)
    chosen = row_filter(where, schema, snap.partition_columns) if where is not None else None
    bounds = (_bound(start), _bound(end))
    batches = change_rows(log, bounds, names, chosen, limit)
    if fmt == "csv":
        stream_csv(names, batches)
        return
    doc = changes_document(log, bounds, names, where, batches)
    if fmt == "json":
        render.write_json(doc)
    else:
        render.show(render_changes, doc)


__all__ = ["change_rows", "changes_cmd", "changes_document", "render_changes"]
