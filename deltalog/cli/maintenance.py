"""The maintenance verbs: ``cleanup``, ``vacuum`` and ``restore``, loaded by :mod:`deltalog.cli.main` when one
of them runs. Each verb builds one document (the
``--json`` contract, described in docs/cli.md) and renders the same document for people.

One rule for the verbs that delete files or take the table back: ``cleanup``, ``vacuum`` and ``restore`` show
what they would do unless ``--apply`` is given. Verbs that only add (``write``, ``commit``, ``checkpoint``,
``compact-log``) act at once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from deltalog import DeltaLog
from deltalog.cli import render
from deltalog.cli.documents import Document, iso_ms
from deltalog.cli.layout import Column, Screen
from deltalog.cli.options import emit, json_flag, limit_option, open_log, output_format
from deltalog.core.cleanup_plan import resolve_retention
from deltalog.core.properties import DEFAULT_DELETED_FILE_RETENTION
from deltalog.errors import InvalidArgumentError
from deltalog.maintenance.cleanup import CleanupResult
from deltalog.maintenance.restore import RestoreResult
from deltalog.maintenance.vacuum import DELETED_FILE_RETENTION_KEY, VacuumProgress, VacuumResult


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
        "compat_checkpoint": result.compat_checkpoint,
        "refusal": result.refusal,
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
        "mode": "lite" if result.lite else "full",
        "refusal": result.refusal,
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
        "txn_id": result.commit.txn_id if result.commit is not None else None,
        "dry_run": result.dry_run,
    }


# ---------------------------------------------------------------------------------------------- rendering


def _mode(doc: Document) -> str:
    n = doc["num_files"]
    if doc["dry_run"]:
        return f"dry run: {render.count(n, 'file')} would be deleted (--apply deletes them)"
    return f"deleted {render.count(len(doc['deleted']), 'file')}"


def cleanup_listing(doc: Document) -> render.Listing:
    columns = (
        Column("path", fold=True),
        Column("kind"),
        Column("version", right=True),
        Column("size", right=True),
        Column("modified"),
    )
    names = ("path", "kind", "version", "size", "modification_time")
    rows = [(f["path"], f["kind"], f["version"], f["size"], f["modification_time"]) for f in doc["files"]]
    return render.Listing(columns, names, rows)


def vacuum_listing(doc: Document) -> render.Listing:
    columns = (Column("path", fold=True), Column("kind"), Column("size", right=True), Column("modified"))
    names = ("path", "kind", "size", "modification_time")
    rows = [(f["path"], render.deletion_kind(f["path"]), f["size"], f["modification_time"]) for f in doc["files"]]
    return render.Listing(columns, names, rows)


def _file_rows(doc: Document, screen: Screen, listing: render.Listing, show_all: bool) -> None:
    """The files, or past :data:`render.SUMMARY_THRESHOLD` of them the first few and how to see the rest."""
    rows = listing.rows
    if not rows:
        return
    cut = not show_all and len(rows) > render.SUMMARY_THRESHOLD
    screen.line()
    screen.table("Files", listing.columns, rows[: render.SUMMARY_ROWS] if cut else rows)
    shown = render.SUMMARY_ROWS if cut else len(rows)
    how = "--all lists every one" if cut else "--limit N lists the first N"
    render.shown_note(screen, shown, doc["num_files"], "file", how + "; --json or --format csv for a script")


def _horizon(doc: Document) -> str:
    h = doc["horizon"]
    return "-" if h is None else f"version {h['version']}" + (f" ({h['timestamp']})" if h["timestamp"] else "")


CLEANUP_FIELDS: tuple[render.Field, ...] = (
    ("location", "table"),
    ("result", _mode),
    ("retention", lambda doc: duration(doc["retention_ms"])),
    ("cutoff", "cutoff"),
    ("boundary checkpoint", "boundary_version"),
    ("time-travel horizon", _horizon),
    ("reason", "reason"),
    ("bytes", "total_bytes"),
)


def render_cleanup(doc: Document, screen: Screen, show_all: bool = False) -> None:
    render.result(screen, "Log cleanup", doc, CLEANUP_FIELDS)
    _file_rows(doc, screen, cleanup_listing(doc), show_all)


def _kinds(doc: Document) -> str:
    counts: dict[str, int] = {}
    for f in doc["files"]:
        kind = render.deletion_kind(f["path"])
        counts[kind] = counts.get(kind, 0) + 1
    text = ", ".join(f"{n:,} {kind}" for kind, n in sorted(counts.items())) or "-"
    return text if len(doc["files"]) == doc["num_files"] else f"{text} (among the first {len(doc['files']):,})"


VACUUM_FIELDS: tuple[render.Field, ...] = (
    ("location", "table"),
    ("version", "version"),
    ("result", _mode),
    ("retention", lambda doc: duration(doc["retention_ms"])),
    ("cutoff", "cutoff"),
    ("files scanned", "scanned"),
    ("referenced", "protected"),
    ("unreferenced, too recent", "too_recent"),
    ("bytes", "total_bytes"),
    ("candidates by kind", _kinds),
)


def render_vacuum(doc: Document, screen: Screen, show_all: bool = False) -> None:
    render.result(screen, "Vacuum", doc, VACUUM_FIELDS)
    _file_rows(doc, screen, vacuum_listing(doc), show_all)


RESTORE_FIELDS: tuple[render.Field, ...] = (
    ("location", "table"),
    (
        "committed version",
        lambda doc: (
            f"dry run: nothing committed (--apply commits version {doc['read_version'] + 1} or later)"
            if doc["dry_run"]
            else doc["version"]
        ),
    ),
    ("restored version", "restored_version"),
    ("files removed", "num_removed"),
    ("files restored", "num_restored"),
    ("metadata restored", lambda doc: "yes" if doc["metadata_restored"] else "no (unchanged)"),
    ("skipped (missing)", lambda doc: len(doc["skipped_missing"])),
    ("txn id", lambda doc: doc["txn_id"] or "-"),
)


def render_restore(doc: Document, screen: Screen) -> None:
    render.result(screen, "Restore", doc, RESTORE_FIELDS)


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

_dry_run = click.option(
    "--dry-run/--apply",
    "dry_run",
    default=True,
    show_default=True,
    help="Only show what would be deleted (the default), or delete it.",
)
_all_option = click.option(
    "--all",
    "show_all",
    is_flag=True,
    help=f"List every file in the table output (past {render.SUMMARY_THRESHOLD} files it shows the first "
    f"{render.SUMMARY_ROWS}).",
)


def _emit_deletions(
    doc: Document,
    fmt: str,
    human: Callable[..., None],
    listing: Callable[[Document], render.Listing],
    limit: int | None,
    show_all: bool,
) -> None:
    if limit is not None and show_all:
        raise click.UsageError("--limit and --all cannot be used together")
    if limit is not None:
        doc = {**doc, "files": doc["files"][:limit]}
    emit(doc, fmt, functools.partial(human, show_all=show_all or limit is not None), listing)


@click.command("cleanup")
@click.argument("table", metavar="TABLE")
@click.option(
    "--retention",
    callback=_check_retention,
    metavar="INTERVAL",
    help="Keep log files younger than this (30d, 'interval 30 days', or ms); default delta.logRetentionDuration.",
)
@_dry_run
@limit_option
@_all_option
@output_format(csv=True)
def cleanup_cmd(table: str, retention: str | None, dry_run: bool, limit: int | None, show_all: bool, fmt: str) -> None:
    """Delete expired log files below a checkpoint; shows the earliest version that stays reachable."""
    log = open_log(table)
    doc = cleanup_document(log, log.cleanup(retention=retention, dry_run=dry_run))
    _emit_deletions(doc, fmt, render_cleanup, cleanup_listing, limit, show_all)


def check_vacuum_retention(log: DeltaLog, retention: str | None, force: bool) -> None:
    """The library's retention guard, said in the command's terms: hours or days, and ``--force``.

    The library raises the same refusal with milliseconds and ``force=True``, which is what a Python
    caller types; a shell user types ``--retention 1h`` and ``--force``.
    """
    if retention is None or force:
        return
    conf = log.snapshot().configuration
    table_ms = resolve_retention(None, conf, DELETED_FILE_RETENTION_KEY, DEFAULT_DELETED_FILE_RETENTION)
    asked_ms = resolve_retention(retention, conf, DELETED_FILE_RETENTION_KEY, DEFAULT_DELETED_FILE_RETENTION)
    if asked_ms < table_ms:
        asked = retention if retention.strip() == duration(asked_ms) else f"{retention} ({duration(asked_ms)})"
        raise InvalidArgumentError(
            f"--retention {asked} is shorter than the table's "
            f"{DELETED_FILE_RETENTION_KEY} ({duration(table_ms)}): files that time travel or running writers "
            "still need could be deleted; add --force if that is intended"
        )


@click.command("vacuum")
@click.argument("table", metavar="TABLE")
@click.option(
    "--retention",
    callback=_check_retention,
    metavar="INTERVAL",
    help="Delete unreferenced files older than this (7d, 36h, ...); default delta.deletedFileRetentionDuration.",
)
@_dry_run
@click.option("--force", is_flag=True, help="Allow a retention shorter than delta.deletedFileRetentionDuration.")
@click.option(
    "--lite",
    is_flag=True,
    help="Take candidates from the expired removes in the log instead of listing the table (VACUUM LITE): "
    "fast on object stores; files no commit named need a full vacuum.",
)
@limit_option
@_all_option
@output_format(csv=True)
def vacuum_cmd(
    table: str,
    retention: str | None,
    dry_run: bool,
    force: bool,
    lite: bool,
    limit: int | None,
    show_all: bool,
    fmt: str,
) -> None:
    """Delete data files (and deletion vectors, change data files) no version within the retention needs."""
    log = open_log(table)
    check_vacuum_retention(log, retention, force)
    with _progress_bar() as tick:
        result = log.vacuum(retention=retention, dry_run=dry_run, force=force, progress=tick, lite=lite)
    _emit_deletions(vacuum_document(log, result), fmt, render_vacuum, vacuum_listing, limit, show_all)


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
@click.option(
    "--dry-run/--apply",
    "dry_run",
    default=True,
    show_default=True,
    help="Only show what the restore would commit (the default), or commit it.",
)
@json_flag
def restore_cmd(
    table: str,
    version: int | None,
    timestamp: str | None,
    ignore_missing: bool,
    force: bool,
    dry_run: bool,
    fmt: str,
) -> None:
    """Make an older version current again: its files, schema, partitioning and properties (a new version)."""
    ctx = click.get_current_context()
    if (version is None) == (timestamp is None):
        raise click.UsageError("give exactly one of --version and --timestamp", ctx)
    log = open_log(table)
    what = {"force": force, "ignore_missing_files": ignore_missing, "dry_run": dry_run}
    result = log.restore(version=version, timestamp=timestamp, **what)
    emit(restore_document(log, result), fmt, render_restore)


__all__ = [
    "check_vacuum_retention",
    "cleanup_cmd",
    "cleanup_document",
    "cleanup_listing",
    "duration",
    "restore_cmd",
    "restore_document",
    "vacuum_cmd",
    "vacuum_document",
    "vacuum_listing",
]
