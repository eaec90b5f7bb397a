"""``deltalog optimize TABLE``: compact small files, Z-order, cluster, or purge deletion vectors.

One verb for :meth:`deltalog.DeltaLog.optimize` and (with ``--purge``)
:meth:`~deltalog.DeltaLog.purge_deletion_vectors`, which report the same result, so one document (the ``--json``
contract in docs/cli.md) serves both. ``--where`` takes the partition predicate as SQL text
(``part = '2024-01-01'``); sizes take a unit (``128MB``, ``1GiB``; decimal and binary units both count in powers
of 1024, as Spark's byte-size settings do).
"""

from __future__ import annotations

import re
from dataclasses import asdict

import click

from deltalog.cli import render
from deltalog.cli.documents import Document
from deltalog.cli.layout import Screen
from deltalog.cli.options import emit, json_flag, open_log
from deltalog.dml.optimize import OptimizeResult

_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)


def parse_size(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """``128MB``, ``128m``, ``1GiB`` or plain bytes, as a positive number of bytes."""
    if value is None:
        return None
    found = _SIZE.match(value)
    if found is None or int(found.group(1)) <= 0:
        raise click.BadParameter(f"{value!r} is not a size such as 134217728, 128MB or 1GiB", ctx, param)
    return int(found.group(1)) * _UNITS[found.group(2).lower()]


def _columns(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...]:
    if value is None:
        return ()
    columns = tuple(c.strip() for c in value.split(","))
    if not all(columns):
        raise click.BadParameter(f"{value!r} is not a comma-separated list of columns", ctx, param)
    return columns


def optimize_document(location: str, result: OptimizeResult) -> Document:
    return {"table": location, **asdict(result), "versions": list(result.versions)}


OPTIMIZE_FIELDS: tuple[render.Field, ...] = (
    ("location", "table"),
    ("operation", "operation"),
    ("committed version", lambda doc: doc["version"] if doc["version"] is not None else "none (nothing committed)"),
    ("files removed", "num_files_removed"),
    ("files added", "num_files_added"),
    ("bytes removed", "bytes_removed"),
    ("bytes added", "bytes_added"),
    ("partitions", "partitions_optimized"),
    ("files considered", "files_considered"),
    ("files skipped", "files_skipped"),
    ("deletion vectors purged", "deletion_vectors_purged"),
    ("batches", "num_batches"),
)


def render_optimize(doc: Document, screen: Screen) -> None:
    title = "Optimize (dry run: nothing written)" if doc["dry_run"] else "Optimize"
    render.result(screen, title, doc, OPTIMIZE_FIELDS)


@click.command("optimize")
@click.argument("table", metavar="TABLE")
@click.option("--where", "where", metavar="EXPR", help="Only these partitions: SQL on partition columns.")
@click.option("--zorder-by", "zorder", metavar="A,B", callback=_columns, help="Z-order by these columns.")
@click.option("--target-size", metavar="SIZE", callback=parse_size, help="Output file size (e.g. 128MB).")
@click.option("--min-file-size", metavar="SIZE", callback=parse_size, help="Compact files below this size.")
@click.option("--purge", is_flag=True, help="REORG ... APPLY (PURGE): rewrite files with deletion vectors.")
@click.option("--dry-run", is_flag=True, help="Report what would be rewritten; write nothing.")
@json_flag
def optimize_cmd(
    table: str,
    where: str | None,
    zorder: tuple[str, ...],
    target_size: int | None,
    min_file_size: int | None,
    purge: bool,
    dry_run: bool,
    fmt: str,
) -> None:
    """Compact small files into larger ones (or Z-order, cluster, purge deletion vectors) as one commit with
    dataChange=false: concurrent appends are not disturbed."""
    ctx = click.get_current_context()
    if purge and (zorder or target_size is not None or min_file_size is not None):
        raise click.UsageError("--purge rewrites files as they are: it takes only --where and --dry-run", ctx)
    log = open_log(table)
    if purge:
        result = log.purge_deletion_vectors(where=where, dry_run=dry_run)
    else:
        result = log.optimize(
            where=where, target_size=target_size, z_order_by=zorder, min_file_size=min_file_size, dry_run=dry_run
        )
    emit(optimize_document(log.location, result), fmt, render_optimize)


__all__ = ["optimize_cmd", "optimize_document", "parse_size", "render_optimize"]
