"""The maintenance verbs: ``cleanup``, ``vacuum`` and ``restore``, registered on the main group.

They live apart from :mod:`deltalog.cli.main` so that module stays small and other verbs can be added to
it concurrently; ``main`` calls :func:`register` once at import. Each verb builds one document (the
``--json`` contract, described in docs/cli.md) and renders the same document for people. ``cleanup`` and
``vacuum`` are dry runs unless ``--apply`` is given: deleting is the one thing here that cannot be undone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from deltalog import DeltaLog
from deltalog.cli import render
from deltalog.cli.documents import Document, iso_ms
from deltalog.cli.options import emit
from deltalog.core.retention import resolve_retention
from deltalog.errors import InvalidArgumentError
from deltalog.maintenance.cleanup import CleanupResult
from deltalog.maintenance.restore import RestoreResult
from deltalog.maintenance.vacuum import VacuumProgress, VacuumResult


def _instant(key: str, ms: int | None) -> Document:
    return {key: iso_ms(ms), f"{key}_ms": ms}


def duration(ms: int) -> str:
    """A retention for people: ``30d``, ``1d 12h``, ``90s``, ``250ms`` (the JSON keeps exact milliseconds)."""
    if ms == 0:
        return "0"
    parts = []
    rest = ms
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        n, rest = divmod(rest, size)
        if n:
            parts.append(f"{n}{unit}")
    return " ".join(parts)


def _check_retention(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A retention that cannot mean anything is a usage mistake (exit 2), caught before the table is opened."""
    if value is not None:
        try:
            resolve_retention(value, {}, "", "0 ms")
        except InvalidArgumentError as exc:
            raise click.BadParameter(str(exc), ctx, param) from None
    return value


# ---------------------------------------------------------------------------------------------- documents


def cleanup_document(log: DeltaLog, result: CleanupResult) -> Document:
    plan = result.plan
    h = plan.horizon
    return {
        "table": log.location,
        "dry_run": result.dry_run,
        "retention_ms": plan.retention_ms,
        **_instant("cutoff", plan.cutoff_ms),
        "boundary_version": plan.boundary,
        "horizon": None if h is None else {"version": h.version, **_instant("timestamp", h.timestamp)},
        "reason": plan.reason,
        "num_files": len(plan.deletions),
        "total_bytes": plan.total_bytes,
        "files": [
            {
                "path": p,
                "kind": d.kind,
                "version": d.version,
                "size": d.size,
                **_instant("modification_time", d.time),
            }
            for p, d in zip(result.paths, plan.deletions, strict=True)
        ],
        "deleted": list(result.deleted),
    }


def vacuum_document(log: DeltaLog, result: VacuumResult) -> Document:
    plan = result.plan
    return {
        "table": log.location,
        "version": result.version,
        "dry_run": result.dry_run,
        "retention_ms": plan.retention_ms,
        **_instant("cutoff", plan.cutoff_ms),
        "scanned": plan.scanned,
        "protected": plan.protected,
        "too_recent": plan.too_recent,
        "num_files": len(plan.deletions),
        "total_bytes": plan.total_bytes,
        "files": [{"path": f.path, "size": f.size, **_instant("modification_time", f.mtime)} for f in plan.deletions],
        "deleted": list(result.deleted),
    }


def restore_document(log: DeltaLog, result: RestoreResult) -> Document:
    return {
        "table": log.location,
        "version": result.version,
        "restored_version": result.restored_version,
        "read_version": result.read_version,
        "num_removed": result.num_removed,
        "num_restored": result.num_restored,
        "removed_bytes": result.removed_bytes,
        "restored_bytes": result.restored_bytes,
        "metadata_restored": result.metadata_restored,
        "protocol_upgraded": result.protocol_upgraded,
        "skipped_missing": list(result.skipped_missing),
        "txn_id": result.commit.txn_id,
    }


# ---------------------------------------------------------------------------------------------- rendering


def _mode(doc: Document) -> str:
    n = doc["num_files"]
    if doc["dry_run"]:
        return f"dry run: {n} file{'' if n == 1 else 's'} would be deleted (--apply deletes them)"
    return f"deleted {len(doc['deleted'])} file{'' if len(doc['deleted']) == 1 else 's'}"


def render_cleanup(doc: Document, con: Console) -> None:
    h = doc["horizon"]
    horizon = "-" if h is None else f"version {h['version']}" + (f" ({h['timestamp']})" if h["timestamp"] else "")
    con.print(
        render.key_values(
            "Log cleanup",
            [
                ("location", doc["table"]),
                ("result", _mode(doc)),
                ("retention", duration(doc["retention_ms"])),
                ("cutoff", doc["cutoff"]),
                ("boundary checkpoint", doc["boundary_version"]),
                ("time-travel horizon", Text(horizon)),
                ("reason", doc["reason"]),
                ("bytes", doc["total_bytes"]),
            ],
        )
    )
    if doc["files"]:
        rows = [(f["path"], f["kind"], f["version"], f["size"], f["modification_time"]) for f in doc["files"]]
        con.print(render.grid("Files", ["path", "kind", "version", "size", "modified"], rows))


def render_vacuum(doc: Document, con: Console) -> None:
    con.print(
        render.key_values(
            "Vacuum",
            [
                ("location", doc["table"]),
                ("version", doc["version"]),
                ("result", _mode(doc)),
                ("retention", duration(doc["retention_ms"])),
                ("cutoff", doc["cutoff"]),
                ("files scanned", doc["scanned"]),
                ("referenced", doc["protected"]),
                ("unreferenced, too recent", doc["too_recent"]),
                ("bytes", doc["total_bytes"]),
            ],
        )
    )
    if doc["files"]:
        rows = [(f["path"], f["size"], f["modification_time"]) for f in doc["files"]]
        con.print(render.grid("Files", ["path", "size", "modified"], rows))


def render_restore(doc: Document, con: Console) -> None:
    con.print(
        render.key_values(
            "Restore",
            [
                ("location", doc["table"]),
                ("committed version", doc["version"]),
                ("restored version", doc["restored_version"]),
                ("files removed", doc["num_removed"]),
                ("files restored", doc["num_restored"]),
                ("metadata restored", "yes" if doc["metadata_restored"] else "no (unchanged)"),
                ("skipped (missing)", len(doc["skipped_missing"])),
                ("txn id", doc["txn_id"]),
            ],
        )
    )


@contextmanager
def _progress_bar() -> Iterator[VacuumProgress]:
    """A progress bar on stderr (only on a terminal: stdout keeps the one result, logs stay clean)."""
    console = Console(stderr=True)
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
    tasks: dict[str, Any] = {}

    def tick(stage: str, done: int, total: int) -> None:
        label = "listing files" if stage == "list" else "deleting files"
        if stage not in tasks:
            tasks[stage] = bar.add_task(label, total=total or None)
        bar.update(tasks[stage], completed=done, total=total or None)

    with bar:
        yield tick


# ---------------------------------------------------------------------------------------------- verbs

_json_flag = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON document instead of tables (shapes: docs/cli.md)."
)
_dry_run = click.option(
    "--dry-run/--apply",
    "dry_run",
    default=True,
    show_default=True,
    help="Only show what would be deleted (the default), or delete it.",
)


@click.command("cleanup")
@click.argument("table", metavar="TABLE")
@click.option(
    "--retention",
    callback=_check_retention,
    metavar="INTERVAL",
    help="Keep log files younger than this (30d, 'interval 30 days', or ms); default delta.logRetentionDuration.",
)
@_dry_run
@_json_flag
def cleanup_cmd(table: str, retention: str | None, dry_run: bool, as_json: bool) -> None:
    """Delete expired log files below a checkpoint; shows the earliest version that stays reachable."""
    log = DeltaLog.for_table(table)
    emit(cleanup_document(log, log.cleanup(retention=retention, dry_run=dry_run)), as_json, render_cleanup)


@click.command("vacuum")
@click.argument("table", metavar="TABLE")
@click.option(
    "--retention",
    callback=_check_retention,
    metavar="INTERVAL",
    help="Delete unreferenced files older than this (7d, ...); default delta.deletedFileRetentionDuration.",
)
@_dry_run
@click.option("--force", is_flag=True, help="Allow a retention shorter than delta.deletedFileRetentionDuration.")
@_json_flag
def vacuum_cmd(table: str, retention: str | None, dry_run: bool, force: bool, as_json: bool) -> None:
    """Delete data files that no version within the retention references."""
    log = DeltaLog.for_table(table)
    with _progress_bar() as tick:
        result = log.vacuum(retention=retention, dry_run=dry_run, force=force, progress=tick)
    emit(vacuum_document(log, result), as_json, render_vacuum)


@click.command("restore")
@click.argument("table", metavar="TABLE")
@click.option("--version", "version", type=click.IntRange(min=0), metavar="N", help="Restore version N.")
@click.option("--timestamp", "timestamp", metavar="T", help="Restore the version as of ISO-8601 time T (UTC).")
@click.option(
    "--ignore-missing-files",
    "--no-check-files",
    "ignore_missing",
    is_flag=True,
    help="Restore without the version's files that are gone from storage (their rows stay lost).",
)
@click.option("--force", is_flag=True, help="Allow a version older than delta.deletedFileRetentionDuration.")
@_json_flag
def restore_cmd(
    table: str, version: int | None, timestamp: str | None, ignore_missing: bool, force: bool, as_json: bool
) -> None:
    """Make an older version current again: its files, schema, partitioning and properties (a new version)."""
    ctx = click.get_current_context()
    if (version is None) == (timestamp is None):
        raise click.UsageError("give exactly one of --version and --timestamp", ctx)
    log = DeltaLog.for_table(table)
    result = log.restore(version=version, timestamp=timestamp, force=force, ignore_missing_files=ignore_missing)
    emit(restore_document(log, result), as_json, render_restore)


def register(group: click.Group) -> None:
    """Add the maintenance verbs to ``group`` (the ``deltalog`` command)."""
    for command in (cleanup_cmd, vacuum_cmd, restore_cmd):
        group.add_command(command)


__all__ = ["cleanup_document", "duration", "register", "restore_document", "vacuum_document"]
