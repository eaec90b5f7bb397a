"""``deltalog update TABLE --set COL=EXPR ... [--where EXPR]`` and ``deltalog merge TABLE SOURCE --on EXPR``.

Listed in :data:`deltalog.cli.main.VERBS`, imported when one of them runs. Both are :meth:`deltalog.DeltaLog.update` and
:meth:`deltalog.DeltaLog.merge`, one commit each, and show Delta Spark's metrics of the commit. ``merge``
reads its source from a parquet or CSV file (streamed, as ``write`` reads one; the merge materializes it, in
memory up to its budget and spilled beyond) under the alias ``s``, the table being ``t``; ``--update-all``,
``--insert-all`` and ``--delete-matched`` are its clauses (``UPDATE SET *``, ``INSERT *``, ``DELETE``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

import deltalog
from deltalog.cli import render
from deltalog.cli.documents import Document
from deltalog.cli.layout import Screen
from deltalog.cli.options import json_flag, open_log, table_argument
from deltalog.cli.write_cmd import open_input


def dml_document(table: str, result: deltalog.CommitResult) -> Document:
    return {
        "table": table,
        "operation": result.operation,
        "version": result.version,
        "skipped": result.skipped,
        "metrics": {k: int(v) if str(v).lstrip("-").isdigit() else v for k, v in result.metrics.items()},
    }


def _n(doc: Document, *keys: str) -> int:
    return sum(int(doc["metrics"].get(k, 0)) for k in keys)


MERGE_FIELDS: tuple[render.Field, ...] = (
    ("location", "table"),
    ("committed version", "version"),
    ("source", lambda doc: render.count(_n(doc, "numSourceRows"), "row")),
    ("updated", lambda doc: render.count(_n(doc, "numTargetRowsUpdated"), "row")),
    ("inserted", lambda doc: render.count(_n(doc, "numTargetRowsInserted"), "row")),
    ("deleted", lambda doc: render.count(_n(doc, "numTargetRowsDeleted"), "row")),
    ("copied", lambda doc: render.count(_n(doc, "numTargetRowsCopied"), "row")),
    (
        "files",
        lambda doc: (
            f"{_n(doc, 'numTargetFilesAdded')} added, {_n(doc, 'numTargetFilesRemoved')} removed, "
            f"{render.count(_n(doc, 'numTargetDeletionVectorsAdded'), 'deletion vector')} added"
        ),
    ),
)
UPDATE_FIELDS: tuple[render.Field, ...] = (
    ("location", "table"),
    ("committed version", "version"),
    ("updated", lambda doc: render.count(_n(doc, "numUpdatedRows"), "row")),
    ("copied", lambda doc: render.count(_n(doc, "numCopiedRows"), "row")),
    (
        "files",
        lambda doc: (
            f"{_n(doc, 'numAddedFiles')} added, {_n(doc, 'numRemovedFiles')} removed, "
            f"{render.count(_n(doc, 'numDeletionVectorsAdded'), 'deletion vector')} added"
        ),
    ),
)


def render_dml(doc: Document, screen: Screen) -> None:
    if doc["skipped"]:
        screen.line(f"nothing changed: no row of {doc['table']} matched, so nothing was committed")
        return
    merge = doc["operation"] == "MERGE"
    render.result(screen, "Merge" if merge else "Update", doc, MERGE_FIELDS if merge else UPDATE_FIELDS)


def _emit(table: str, result: deltalog.CommitResult, fmt: str) -> None:
    doc = dml_document(table, result)
    if fmt == "json":
        render.write_json(doc)
    else:
        render.show(render_dml, doc)


def _assignments(pairs: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        column, sep, value = pair.partition("=")
        if not sep or not column.strip() or not value.strip():
            raise click.BadParameter(f"{pair!r}: expected COLUMN=EXPR", param_hint="--set")
        if column.strip() in out:
            raise click.BadParameter(f"column {column.strip()!r} is set twice", param_hint="--set")
        out[column.strip()] = value.strip()
    return out


@click.command("update")
@table_argument
@click.option("--set", "sets", multiple=True, required=True, metavar="COL=EXPR", help="A column and its new value.")
@click.option("--where", metavar="EXPR", help="Update only the rows where EXPR (Spark SQL) is true.")
@json_flag
def update_cmd(table: str, sets: tuple[str, ...], where: str | None, fmt: str) -> None:
    """Set columns of TABLE's rows (all, or those --where matches) to Spark SQL values, as one commit."""
    log = open_log(table)
    result = log.update(_assignments(sets), where)
    _emit(log.location, result, fmt)


@click.command("merge")
@table_argument
@click.argument(
    "source", metavar="SOURCE.parquet|SOURCE.csv", type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option("--on", "condition", required=True, metavar="EXPR", help="The merge condition over t and s.")
@click.option("--update-all", is_flag=True, help="WHEN MATCHED THEN UPDATE SET *.")
@click.option("--delete-matched", is_flag=True, help="WHEN MATCHED THEN DELETE.")
@click.option("--insert-all", is_flag=True, help="WHEN NOT MATCHED THEN INSERT *.")
@json_flag
def merge_cmd(
    table: str, source: Path, condition: str, update_all: bool, delete_matched: bool, insert_all: bool, fmt: str
) -> None:
    """Merge the rows of SOURCE (parquet or CSV, alias s) into TABLE (alias t) on EXPR, as one commit."""
    if not (update_all or delete_matched or insert_all):
        raise click.UsageError("give at least one of --update-all, --delete-matched, --insert-all")
    if update_all and delete_matched:
        raise click.UsageError("--update-all and --delete-matched are both unconditional WHEN MATCHED clauses")
    log = open_log(table)
    builder = log.merge(open_input(source, log), condition)
    if update_all:
        builder = builder.when_matched_update_all()
    if delete_matched:
        builder = builder.when_matched_delete()
    if insert_all:
        builder = builder.when_not_matched_insert_all()
    _emit(log.location, builder.execute(), fmt)


__all__ = ["dml_document", "merge_cmd", "render_dml", "update_cmd"]
