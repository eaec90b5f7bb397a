"""Schema-change verbs: ``rename-column``, ``drop-columns`` and ``change-column-type``.

Each may upgrade the table's protocol, which can stop other engines from writing it, so each shows its plan
first (the old and new protocol, the peers that will no longer write the table) and commits only with
``--apply``, as the other verbs that cannot be undone do.
"""

from __future__ import annotations

from typing import Any

import click

from deltalog import DeltaLog
from deltalog.cli import render
from deltalog.cli.documents import Document
from deltalog.cli.layout import Screen
from deltalog.cli.options import emit, json_flag, open_log
from deltalog.core.actions import Protocol
from deltalog.table.schema_change import SchemaChange


def _protocol(p: Protocol) -> dict[str, Any]:
    return {
        "min_reader_version": p.min_reader_version,
        "min_writer_version": p.min_writer_version,
        "reader_features": list(p.reader_features) if p.reader_features is not None else None,
        "writer_features": list(p.writer_features) if p.writer_features is not None else None,
    }


def schema_change_document(log: DeltaLog, change: SchemaChange) -> Document:
    return {
        "table": log.location,
        "operation": change.operation,
        "version": change.version,
        "read_version": change.read_version,
        "dry_run": change.dry_run,
        "old_protocol": _protocol(change.old_protocol),
        "new_protocol": _protocol(change.new_protocol),
        "protocol_upgraded": change.protocol_upgraded,
        "writers_lost": dict(change.writers_lost),
        "columns": [f["name"] for f in change.schema.get("fields") or ()],
    }


def _versions(p: dict[str, Any]) -> str:
    features = sorted(set(p["reader_features"] or ()) | set(p["writer_features"] or ()))
    listed = f" [{', '.join(features)}]" if features else ""
    return f"({p['min_reader_version']},{p['min_writer_version']}){listed}"


FIELDS: tuple[render.Field, ...] = (
    ("location", "table"),
    ("operation", "operation"),
    (
        "committed version",
        lambda doc: (
            f"dry run: nothing committed (--apply commits version {doc['read_version'] + 1} or later)"
            if doc["dry_run"]
            else doc["version"]
        ),
    ),
    ("protocol now", lambda doc: _versions(doc["old_protocol"])),
    (
        "protocol after",
        lambda doc: _versions(doc["new_protocol"]) if doc["protocol_upgraded"] else "unchanged",
    ),
    (
        "no longer written by",
        lambda doc: "; ".join(f"{peer}: {why}" for peer, why in sorted(doc["writers_lost"].items())) or "-",
    ),
    ("columns", lambda doc: ", ".join(doc["columns"])),
)


def render_schema_change(doc: Document, screen: Screen) -> None:
    render.result(screen, "Schema change", doc, FIELDS)


_apply = click.option(
    "--dry-run/--apply",
    "dry_run",
    default=True,
    show_default=True,
    help="Only show the change and the protocol it needs (the default), or commit it.",
)
_enable = click.option(
    "--enable-column-mapping",
    is_flag=True,
    help="Turn on column mapping (name mode, a protocol upgrade) in the same commit if the table has none.",
)


@click.command("rename-column")
@click.argument("table", metavar="TABLE")
@click.argument("column", metavar="COLUMN")
@click.argument("new_name", metavar="NEW_NAME")
@_enable
@_apply
@json_flag
def rename_column_cmd(
    table: str, column: str, new_name: str, enable_column_mapping: bool, dry_run: bool, fmt: str
) -> None:
    """Rename COLUMN of TABLE (a.b for a nested field) through column mapping: no data file is rewritten."""
    log = open_log(table)
    change = log.rename_column(column, new_name, enable_column_mapping=enable_column_mapping, dry_run=dry_run)
    emit(schema_change_document(log, change), fmt, render_schema_change)


@click.command("drop-columns")
@click.argument("table", metavar="TABLE")
@click.argument("columns", metavar="COLUMN...", nargs=-1, required=True)
@_enable
@_apply
@json_flag
def drop_columns_cmd(
    table: str, columns: tuple[str, ...], enable_column_mapping: bool, dry_run: bool, fmt: str
) -> None:
    """Drop COLUMNs of TABLE through column mapping: the data stays in the files, unread."""
    log = open_log(table)
    change = log.drop_columns(list(columns), enable_column_mapping=enable_column_mapping, dry_run=dry_run)
    emit(schema_change_document(log, change), fmt, render_schema_change)


@click.command("change-column-type")
@click.argument("table", metavar="TABLE")
@click.argument("column", metavar="COLUMN")
@click.argument("new_type", metavar="TYPE")
@click.option(
    "--enable-type-widening",
    is_flag=True,
    help="Set delta.enableTypeWidening=true (and the typeWidening feature) in the same commit if it is not set.",
)
@_apply
@json_flag
def change_column_type_cmd(
    table: str, column: str, new_type: str, enable_type_widening: bool, dry_run: bool, fmt: str
) -> None:
    """Widen the type of COLUMN of TABLE (type widening: int to long, float to double, ...); no file is rewritten."""
    log = open_log(table)
    change = log.change_column_type(column, new_type, enable_type_widening=enable_type_widening, dry_run=dry_run)
    emit(schema_change_document(log, change), fmt, render_schema_change)


__all__ = [
    "change_column_type_cmd",
    "drop_columns_cmd",
    "rename_column_cmd",
    "render_schema_change",
    "schema_change_document",
]
