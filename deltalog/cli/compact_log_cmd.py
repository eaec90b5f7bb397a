"""The ``compact-log`` verb: write one log compaction file (PROTOCOL "Log Compaction Files").

It writes (a compaction file replaces nothing and deletes nothing), so unlike ``cleanup`` and ``vacuum`` it is
not a dry run by default; ``--dry-run`` plans the range and the content without writing.
"""

from __future__ import annotations

import click

from deltalog.cli import render
from deltalog.cli.documents import Document
from deltalog.cli.layout import Screen
from deltalog.cli.options import emit, json_flag, open_log
from deltalog.maintenance.log_compaction import LogCompactionResult


def compact_log_document(location: str, result: LogCompactionResult) -> Document:
    return {
        "table": location,
        "dry_run": result.dry_run,
        "from_version": result.start,
        "to_version": result.end,
        "num_commits": result.num_commits,
        "path": result.path,
        "num_actions": result.num_actions,
        "bytes": result.bytes,
        "written": result.written,
        "existed": result.existed,
        "identical": result.identical,
        "reason": result.reason,
    }


def render_compact_log(doc: Document, screen: Screen) -> None:
    screen.pairs(
        "Log compaction",
        [
            ("location", doc["table"]),
            (
                "versions",
                f"{doc['from_version']} .. {doc['to_version']} ({render.count(doc['num_commits'], 'commit')})",
            ),
            ("file", doc["path"]),
            ("actions", doc["num_actions"]),
            ("bytes", doc["bytes"]),
            ("result", doc["reason"]),
        ],
    )


@click.command("compact-log")
@click.argument("table", metavar="TABLE")
@click.option(
    "--from",
    "start",
    type=click.IntRange(min=0),
    metavar="V",
    help="First commit (default: after the newest checkpoint or compaction file).",
)
@click.option("--to", "end", type=click.IntRange(min=0), metavar="V", help="Last commit (default: the latest).")
@click.option("--dry-run", is_flag=True, help="Plan the range and the content without writing.")
@json_flag
def compact_log_cmd(table: str, start: int | None, end: int | None, dry_run: bool, fmt: str) -> None:
    """Write the log compaction file of a range of commits (Delta Spark reads it instead of the commits)."""
    log = open_log(table)
    result = log.compact_log(start=start, end=end, dry_run=dry_run)
    emit(compact_log_document(log.location, result), fmt, render_compact_log)


__all__ = ["compact_log_cmd", "compact_log_document", "render_compact_log"]
