"""The ``checkpoint`` and ``checkpoint-job`` verbs.

``checkpoint`` writes one checkpoint now; ``checkpoint-job`` checkpoints every table of many that needs one
(:mod:`deltalog.maintenance.checkpoint_job`). Both feed the checkpoint writer's progress to a bar on stderr.

``compact`` is ``checkpoint-job``'s old name, kept one release with a warning: every Delta user reads
"compact" as data-file compaction (Delta's OPTIMIZE), which is what the name will mean.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from deltalog.checkpoint.writer import CheckpointResult
from deltalog.cli import render
from deltalog.cli.documents import Document
from deltalog.cli.layout import Column, Screen
from deltalog.cli.options import emit, json_flag, limit_option, open_log, output_format, table_argument
from deltalog.cli.store_options import given_storage_options
from deltalog.maintenance.checkpoint_job import (
    TableCompaction,
    TableProgress,
    compact_tables,
    discover_tables,
    summarize,
)

EXIT_ERROR = 1


@contextlib.contextmanager
def checkpoint_progress(console: Console | None = None) -> Iterator[TableProgress]:
    """A progress bar on stderr, one task per (table, stage) the writer reports; drawn on a terminal only."""
    con = console if console is not None else Console(stderr=True)
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=con,
        transient=True,
        disable=not con.is_terminal,
    )
    tasks: dict[tuple[str, str], Any] = {}

    def tick(table: str, stage: str, done: int, total: int) -> None:
        key = (table, stage)
        if key not in tasks:
            tasks[key] = bar.add_task(f"{table}: checkpoint {stage}", total=total or None)
        bar.update(tasks[key], completed=done, total=total or None)

    with bar:
        yield tick


def _checkpoint_fields(result: CheckpointResult) -> Document:
    return {
        "version": result.version,
        "kind": result.kind,
        "files": list(result.files),
        "num_actions": result.num_actions,
        "num_add_files": result.num_add_files,
        "size_in_bytes": result.size_in_bytes,
        "already_existed": result.already_existed,
        "seconds": round(result.seconds, 3),
    }


def checkpoint_document(table: str, result: CheckpointResult) -> Document:
    return {"table": table, **_checkpoint_fields(result)}


def compact_document(results: Sequence[TableCompaction], min_commits: int) -> Document:
    counts = summarize(results)
    return {
        "min_commits": min_commits,
        "tables": [
            {
                "table": r.location,
                "status": r.status,
                "version": r.version,
                "last_checkpoint": r.last_checkpoint,
                "commits_since_checkpoint": r.commits_since,
                "checkpoint": _checkpoint_fields(r.checkpoint) if r.checkpoint is not None else None,
                "error": r.error,
                "error_type": r.error_type,
            }
            for r in results
        ],
        "num_checkpointed": counts["checkpointed"],
        "num_skipped": counts["skipped"],
        "num_failed": counts["failed"],
    }


CHECKPOINT_FIELDS: tuple[render.Field, ...] = (
    ("location", "table"),
    ("version", "version"),
    ("kind", "kind"),
    ("files", lambda doc: "\n".join(doc["files"])),
    ("actions", "num_actions"),
    ("add files", "num_add_files"),
    ("size", "size_in_bytes"),
    ("already existed", "already_existed"),
)


def render_checkpoint(doc: Document, screen: Screen) -> None:
    render.result(screen, "Checkpoint", doc, CHECKPOINT_FIELDS)


def compact_listing(doc: Document) -> render.Listing:
    columns = (
        Column("table", fold=True),
        Column("status"),
        Column("version", right=True),
        Column("last checkpoint", right=True),
        Column("commits since", right=True),
        Column("written"),
        Column("error", fold=True),
    )
    names = ("table", "status", "version", "last_checkpoint", "commits_since_checkpoint", "written", "error")
    rows = []
    for t in doc["tables"]:
        cp = t["checkpoint"]
        written = None
        if cp is not None:
            written = f"{cp['kind']} v{cp['version']}" + (" (existed)" if cp["already_existed"] else "")
        since = t["commits_since_checkpoint"]
        rows.append((t["table"], t["status"], t["version"], t["last_checkpoint"], since, written, t["error"]))
    return render.Listing(columns, names, rows)


def render_compact(doc: Document, screen: Screen) -> None:
    listing = compact_listing(doc)
    screen.table("Checkpoint job", listing.columns, listing.rows)
    total = doc["num_checkpointed"] + doc["num_skipped"] + doc["num_failed"]
    render.shown_note(screen, len(doc["tables"]), total, "table", "--limit N shows the first N")
    screen.line(
        f"{doc['num_checkpointed']} checkpointed, {doc['num_skipped']} skipped, {doc['num_failed']} failed "
        f"(min commits {doc['min_commits']})"
    )


_parts_option = click.option(
    "--parts",
    type=click.IntRange(min=1),
    metavar="K",
    help="Write a classic multi-part checkpoint of K files (refused on v2Checkpoint tables; default: one file).",
)


@click.command("checkpoint")
@table_argument
@click.option(
    "--version", "version", type=click.IntRange(min=0), metavar="N", help="Checkpoint version N (default: the latest)."
)
@_parts_option
@click.option(
    "--engine",
    type=click.Choice(["local", "spark"]),
    default="local",
    show_default=True,
    help="spark: reconcile and write the parts on Spark executors (deltalog.spark.checkpoint; needs pyspark).",
)
@click.option("--master", default="local[2]", show_default=True, help="Spark master URL for --engine spark.")
@json_flag
def checkpoint_cmd(table: str, version: int | None, parts: int | None, engine: str, master: str, fmt: str) -> None:
    """Write a checkpoint of TABLE and move _last_checkpoint forward."""
    if engine == "spark":
        log = open_log(table)  # a wrong location fails here, before a JVM is started
        log.latest_version()
        result = spark_engine_checkpoint(table, master, version, parts)
        emit(checkpoint_document(log.location, result), fmt, render_checkpoint)
        return
    log = open_log(table, auto_checkpoint=False)
    with checkpoint_progress() as tick:
        result = log.checkpoint(
            version=version, parts=parts, progress=lambda stage, done, total: tick(table, stage, done, total)
        )
    emit(checkpoint_document(log.location, result), fmt, render_checkpoint)


def spark_engine_checkpoint(table: str, master: str, version: int | None, parts: int | None) -> CheckpointResult:
    """``--engine spark``: a session on ``master``, then :func:`deltalog.spark.checkpoint`.

    What a missing pyspark, a missing Java or executors without deltalog look like is decided in
    :mod:`deltalog.spark.session`; they arrive here as one-line :class:`~deltalog.DeltaLogError` s.
    """
    from deltalog.spark.session import get_session, require_pyspark

    require_pyspark("deltalog checkpoint --engine spark")
    from deltalog.spark import checkpoint as spark_checkpoint

    spark = get_session(master, "deltalog-checkpoint")
    # Spark's own log (task failures with worker tracebacks) would bury the one line this command prints
    # for a failure; -v and -vv let it through.
    library = logging.getLogger("deltalog")
    level = "INFO" if library.isEnabledFor(logging.DEBUG) else "WARN" if library.isEnabledFor(logging.INFO) else "OFF"
    spark.sparkContext.setLogLevel(level)
    return spark_checkpoint(spark, table, version=version, parts=parts, storage_options=given_storage_options())


@click.command("checkpoint-job")
@click.argument("tables", nargs=-1, metavar="[TABLE]...")
@click.option(
    "--prefix", metavar="DIR", help="Also every Delta table under DIR (a folder holding _delta_log), searched."
)
@click.option(
    "--min-commits",
    "min_commits",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    metavar="N",
    help="Checkpoint a table when a reader replays N or more commits after its newest usable checkpoint.",
)
@_parts_option
@limit_option
@output_format(csv=True)
def checkpoint_job_cmd(
    tables: tuple[str, ...], prefix: str | None, min_commits: int, parts: int | None, limit: int | None, fmt: str
) -> None:
    """The checkpoint job: checkpoint each TABLE (and each table under --prefix) that needs one."""
    ctx = click.get_current_context()
    if not tables and prefix is None:
        raise click.UsageError("give at least one TABLE or --prefix DIR", ctx)
    options = given_storage_options()
    locations = list(tables) + (discover_tables(prefix, options) if prefix is not None else [])
    with checkpoint_progress() as tick:
        results = compact_tables(
            locations, min_commits=min_commits, parts=parts, progress=tick, storage_options=options
        )
    doc = compact_document(results, min_commits)
    if limit is not None:
        doc = {**doc, "tables": doc["tables"][:limit]}
    emit(doc, fmt, render_compact, compact_listing)
    failed = [r for r in results if r.failed]
    if failed:
        click.echo(
            f"error: checkpoints failed for {len(failed)} of {len(results)} tables: "
            + "; ".join(f"{r.location} ({r.error_type})" for r in failed),
            err=True,
        )
        ctx.exit(EXIT_ERROR)


#: what the deprecated ``compact`` says on every run
COMPACT_DEPRECATED = (
    "'deltalog compact' is now 'deltalog checkpoint-job' (it writes checkpoints); the old name goes in the next "
    "release, and 'compact' will then mean data-file compaction (OPTIMIZE)"
)


def _compact(**kwargs: Any) -> None:
    logging.getLogger(__name__).warning(COMPACT_DEPRECATED)
    click.get_current_context().invoke(checkpoint_job_cmd, **kwargs)


compact_cmd = click.Command(
    "compact",
    callback=_compact,
    params=list(checkpoint_job_cmd.params),
    help=f"Deprecated: {COMPACT_DEPRECATED}.",
    short_help="Deprecated name of checkpoint-job.",
    hidden=True,
)


__all__ = [
    "checkpoint_document",
    "checkpoint_progress",
    "compact_document",
    "compact_listing",
    "checkpoint_job_cmd",
    "COMPACT_DEPRECATED",
    "compact_cmd",
    "spark_engine_checkpoint",
]
