"""The ``deltalog`` command: the click group, its verbs, and how failures reach the user.

Contract with the shell: a usage mistake (exit 2) or a :class:`~deltalog.DeltaLogError` (exit 1) prints
exactly one line, ``error: <what is wrong>``, to stderr and nothing to stdout. A person reads that line,
and a script can rely on stdout holding either a complete result or nothing. Anything else is a bug in
deltalog and keeps its traceback, because that is what a bug report needs.

The verbs are thin: open the snapshot, build a document (:mod:`deltalog.cli.documents`), render it
(:mod:`deltalog.cli.render`). A slow step added later gets a rich progress bar on a stderr console
around the engine call here, leaving stdout to the result.

``commit`` is the one verb that writes. Its input is a file of actions in the log's own JSON spelling,
checked line by line here before the engine sees it: the codec reads leniently (as a log reader must),
so a value of the wrong JSON type would otherwise be written into the log as given.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import click
import orjson

from deltalog import (
    ConcurrentModificationError,
    DeltaLog,
    DeltaLogError,
    InvalidArgumentError,
    InvalidCommitError,
    Snapshot,
)
from deltalog.actions import Action
from deltalog.cli import documents, render
from deltalog.cli.documents import Document
from deltalog.core.codec import ActionDecodeError, decode_line
from deltalog.core.conflicts import ISOLATION_LEVELS

EXIT_ERROR = 1
EXIT_USAGE = 2


def one_line(text: str) -> str:
    """Fold a message onto one line: the contract is one line even when a message embeds newlines."""
    return " ".join(text.split())


def _fail(message: str, code: int) -> int:
    click.echo(f"error: {one_line(message)}", err=True)
    return code


class DeltalogGroup(click.Group):
    """A group whose standalone run turns user errors into one stderr line and an exit code.

    Overriding :meth:`main` rather than wrapping the entry point keeps the contract for every caller,
    ``CliRunner`` included. Callers passing ``standalone_mode=False`` get click's own exceptions.
    """

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        def run() -> Any:
            return super(DeltalogGroup, self).main(args, prog_name, complete_var, standalone_mode=False, **extra)

        if not standalone_mode:
            return run()
        sys.exit(_exit_code(run))


def _exit_code(run: Callable[[], Any]) -> int:
    try:
        rv = run()
    except click.UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        return _fail(exc.format_message() + hint, EXIT_USAGE)
    except click.ClickException as exc:
        return _fail(exc.format_message(), exc.exit_code)
    except click.Abort:
        return _fail("aborted", EXIT_ERROR)
    except DeltaLogError as exc:
        return _fail(error_text(exc), EXIT_ERROR)
    except BrokenPipeError:
        _silence_stdout()  # the reader went away (``| head``): nothing left to say, and no one to say it to
        return EXIT_ERROR
    # A verb returns None; click hands back the code of an explicit ``ctx.exit(code)`` (``--help``: 0).
    return rv if isinstance(rv, int) else 0


def error_text(exc: DeltaLogError) -> str:
    """The message, plus what a caller acts on: the rule a commit broke, or that it lost to another writer."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, InvalidCommitError):
        return f"{text} (rule: {exc.rule}; nothing was written)"
    if isinstance(exc, ConcurrentModificationError):
        return f"conflict ({type(exc).__name__}): {text}; nothing was written"
    return text


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail on the broken pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


# ---------------------------------------------------------------------------------------------- options


def _parse_where(ctx: click.Context, param: click.Parameter, values: Sequence[str]) -> dict[str, str]:
    where: dict[str, str] = {}
    for item in values:
        column, sep, value = item.partition("=")
        if not sep or not column:
            raise click.BadParameter(f"{item!r} is not COLUMN=VALUE", ctx, param)
        if column in where:
            raise click.BadParameter(
                f"column {column!r} is given twice; a file has one value per partition column", ctx, param
            )
        where[column] = value
    return where


def _parse_read_where(ctx: click.Context, param: click.Parameter, values: Sequence[str]) -> dict[str, str | list[str]]:
    """``--where`` grammar, except that a column given again widens to IN: a read of several partitions."""
    where: dict[str, str | list[str]] = {}
    for item in values:
        column, sep, value = item.partition("=")
        if not sep or not column:
            raise click.BadParameter(f"{item!r} is not COLUMN=VALUE", ctx, param)
        prior = where.get(column)
        if prior is None:
            where[column] = value
        elif isinstance(prior, list):
            prior.append(value)
        else:
            where[column] = [prior, value]
    return where


def _parse_json_object(ctx: click.Context, param: click.Parameter, value: str | None) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON ({exc})", ctx, param) from None
    if not isinstance(parsed, dict):
        raise click.BadParameter("must be a JSON object", ctx, param)
    return parsed


def _time_travel(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option(
        "--timestamp",
        "timestamp",
        metavar="T",
        help="Table as of ISO-8601 time T (no zone means UTC): the latest commit at or before T.",
    )(f)
    return click.option(
        "--version",
        "version",
        type=click.IntRange(min=0),
        metavar="N",
        help="Table as of version N (default: the latest).",
    )(f)


def _json_flag(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON document instead of tables (shapes: docs/cli.md)."
    )(f)


_table_argument = click.argument("table", metavar="TABLE")


def _snapshot(table: str, version: int | None, timestamp: str | None) -> Snapshot:
    if version is not None and timestamp is not None:
        raise click.UsageError("--version and --timestamp cannot be used together", click.get_current_context())
    return DeltaLog.for_table(table).snapshot(version=version, timestamp=timestamp)


def _emit(doc: Document, as_json: bool, human: render.Renderer) -> None:
    if as_json:
        render.write_json(doc)
    else:
        render.show(human, doc)


# ---------------------------------------------------------------------------------------------- verbs


@click.group(
    "deltalog",
    cls=DeltalogGroup,
    no_args_is_help=False,  # a bare ``deltalog`` is a usage error like any other: one line, exit 2
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
def cli() -> None:
    """Inspect a Delta Lake table through its transaction log, and commit actions to it.

    TABLE is a directory or a URI (file://, and the cloud schemes whose fsspec package is installed).
    """


@cli.command()
@_table_argument
@_time_travel
@_json_flag
def describe(table: str, version: int | None, timestamp: str | None, as_json: bool) -> None:
    """Protocol, metadata, schema and totals of TABLE."""
    _emit(documents.describe(_snapshot(table, version, timestamp)), as_json, render.describe)


@cli.command()
@_table_argument
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="Show only the N newest commits.")
@_json_flag
def history(table: str, limit: int | None, as_json: bool) -> None:
    """Commits of TABLE, newest first."""
    _emit(documents.history(DeltaLog.for_table(table), limit), as_json, render.history)


@cli.command()
@_table_argument
@_time_travel
@click.option(
    "--where",
    "where",
    multiple=True,
    callback=_parse_where,
    metavar="COLUMN=VALUE",
    help="Only files whose partition COLUMN equals VALUE (repeatable; an empty VALUE matches null).",
)
@click.option("--stats", is_flag=True, help="Include each file's statistics.")
@_json_flag
def files(
    table: str, version: int | None, timestamp: str | None, where: dict[str, str], stats: bool, as_json: bool
) -> None:
    """Live data files of TABLE, sorted by path."""
    _emit(documents.files(_snapshot(table, version, timestamp), where, stats), as_json, render.files)


@cli.command()
@_table_argument
@_time_travel
@_json_flag
def snapshot(table: str, version: int | None, timestamp: str | None, as_json: bool) -> None:
    """Short summary of TABLE at one version."""
    _emit(documents.snapshot(_snapshot(table, version, timestamp)), as_json, render.snapshot)


@cli.command()
@_table_argument
@click.option(
    "--actions",
    "actions_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
    metavar="FILE",
    help='Actions to commit, one JSON object per line as the log spells them ({"add": {...}}); - is stdin.',
)
@click.option("--operation", required=True, metavar="OP", help="Operation name for commitInfo (WRITE, DELETE, ...).")
@click.option(
    "--operation-parameters",
    "operation_parameters",
    callback=_parse_json_object,
    metavar="JSON",
    help="Operation parameters for commitInfo, a JSON object.",
)
@click.option("--app-id", "app_id", metavar="ID", help="Commit exactly once per application ID and version.")
@click.option("--app-version", "app_version", type=click.IntRange(min=0), metavar="N", help="The version for --app-id.")
@click.option(
    "--isolation",
    type=click.Choice(ISOLATION_LEVELS),
    help="Isolation level (default: the table's delta.isolationLevel, else Serializable).",
)
@click.option(
    "--read-where",
    "read_where",
    multiple=True,
    callback=_parse_read_where,
    metavar="COLUMN=VALUE",
    help="Record a read of these partitions, so a concurrent append into them conflicts (repeatable; "
    "a column given again reads each value).",
)
@_json_flag
def commit(
    table: str,
    actions_path: str,
    operation: str,
    operation_parameters: dict[str, Any] | None,
    app_id: str | None,
    app_version: int | None,
    isolation: str | None,
    read_where: dict[str, str | list[str]],
    as_json: bool,
) -> None:
    """Commit the actions in FILE to TABLE as one new version."""
    if (app_id is None) != (app_version is None):
        raise click.UsageError("--app-id and --app-version must be given together", click.get_current_context())
    actions = read_actions(actions_path)  # before the table is opened: a bad file costs no listing
    log = DeltaLog.for_table(table)
    txn = log.start_transaction(isolation, app_id=app_id, app_version=app_version)
    if read_where:
        txn.read(where=read_where)
    result = txn.commit(actions, operation=operation, operation_parameters=operation_parameters)
    reached = txn.snapshot.app_version(app_id) if app_id is not None else None
    human = functools.partial(render.commit, app_id=app_id, app_version=app_version, reached=reached)
    _emit(documents.commit(log, result), as_json, human)


# ---------------------------------------------------------------------------------------------- actions file

#: lines a commit file may not hold, and why
_RESERVED = {
    "commitInfo": "a commitInfo line cannot be committed: the transaction writes its own",
    "checkpointMetadata": "a checkpointMetadata line cannot be committed: it belongs only in checkpoints",
    "sidecar": "a sidecar line cannot be committed: it belongs only in checkpoints",
}

_STR, _INT, _BOOL, _OBJ = "a string", "an integer", "true or false", "an object"
_STR_MAP, _NULLABLE_STR_MAP, _STR_LIST = "an object of strings", "an object of strings or nulls", "an array of strings"

#: the JSON type of every field an action line may carry (absent or null is left to the engine's rules)
_FIELD_TYPES: dict[str, dict[str, str]] = {
    "add": {
        "path": _STR,
        "partitionValues": _NULLABLE_STR_MAP,
        "size": _INT,
        "modificationTime": _INT,
        "dataChange": _BOOL,
        "stats": _STR,
        "tags": _NULLABLE_STR_MAP,
        "deletionVector": _OBJ,
        "baseRowId": _INT,
        "defaultRowCommitVersion": _INT,
        "clusteringProvider": _STR,
    },
    "remove": {
        "path": _STR,
        "deletionTimestamp": _INT,
        "dataChange": _BOOL,
        "extendedFileMetadata": _BOOL,
        "partitionValues": _NULLABLE_STR_MAP,
        "size": _INT,
        "stats": _STR,
        "tags": _NULLABLE_STR_MAP,
        "deletionVector": _OBJ,
        "baseRowId": _INT,
        "defaultRowCommitVersion": _INT,
    },
    "metaData": {
        "id": _STR,
        "name": _STR,
        "description": _STR,
        "format": _OBJ,
        "schemaString": _STR,
        "partitionColumns": _STR_LIST,
        "configuration": _STR_MAP,
        "createdTime": _INT,
    },
    "protocol": {
        "minReaderVersion": _INT,
        "minWriterVersion": _INT,
        "readerFeatures": _STR_LIST,
        "writerFeatures": _STR_LIST,
    },
    "txn": {"appId": _STR, "version": _INT, "lastUpdated": _INT},
    "domainMetadata": {"domain": _STR, "configuration": _STR, "removed": _BOOL},
    "cdc": {"path": _STR, "partitionValues": _NULLABLE_STR_MAP, "size": _INT, "dataChange": _BOOL, "tags": _OBJ},
}


def _is(value: Any, kind: str) -> bool:
    if kind == _STR:
        return isinstance(value, str)
    if kind == _INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == _BOOL:
        return isinstance(value, bool)
    if kind == _OBJ:
        return isinstance(value, dict)
    if kind == _STR_LIST:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    nullable = kind == _NULLABLE_STR_MAP
    return isinstance(value, dict) and all(isinstance(v, str) or (nullable and v is None) for v in value.values())


def _check_line(obj: Any) -> str | None:
    """Why ``obj`` cannot be a committable action line, or None when its shape is sound."""
    if not isinstance(obj, dict) or len(obj) != 1:
        return "a line must be a JSON object holding exactly one action"
    ((key, body),) = obj.items()
    fields = _FIELD_TYPES.get(key)
    if fields is None:
        return f"unknown action {key!r} (expected one of {', '.join(sorted(_FIELD_TYPES))})"
    if not isinstance(body, dict):
        return f"{key} must be a JSON object"
    for name, kind in fields.items():
        value = body.get(name)
        if value is not None and not _is(value, kind):
            return f"{key}.{name} must be {kind}, not {orjson.dumps(value).decode()[:40]}"
    if key in ("add", "remove", "cdc") and body.get("path") == "":
        return f"{key}.path is empty"
    return None


def parse_actions(data: bytes, label: str) -> list[Action]:
    """The actions of a commit file; errors name ``label`` and the 1-based line at fault."""
    actions: list[Action] = []
    for line_no, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise InvalidArgumentError(f"{label}:{line_no}: malformed JSON at column {exc.colno} ({exc.msg})") from None
        key = next(iter(obj)) if isinstance(obj, dict) and len(obj) == 1 else None
        if key in _RESERVED:
            raise InvalidCommitError(f"{label}:{line_no}: {_RESERVED[key]}", rule="no-reserved-actions")
        problem = _check_line(obj)
        if problem is None:
            try:
                decoded = decode_line(raw)
            except ActionDecodeError as exc:
                problem = str(exc)
        if problem is not None:
            raise InvalidArgumentError(f"{label}:{line_no}: {problem}")
        actions.extend(decoded)
    if not actions:
        # An empty file is far more often a producer that failed than a wish for an empty commit, and with
        # --app-id it would mark the batch done. A deliberate no-op can commit its txn line explicitly.
        raise InvalidArgumentError(f"{label} holds no actions: nothing to commit")
    return actions


def read_actions(path: str) -> list[Action]:
    """Read and parse ``--actions`` (``-``: stdin, read to its end before anything is committed)."""
    if path == "-":
        return parse_actions(sys.stdin.buffer.read(), "<stdin>")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise click.FileError(path, exc.strerror or str(exc)) from None
    return parse_actions(data, path)


def main() -> None:
    """Console-script entry point (``deltalog = "deltalog.cli.main:main"`` in pyproject.toml)."""
    cli(prog_name="deltalog")


__all__ = [
    "EXIT_ERROR",
    "EXIT_USAGE",
    "DeltalogGroup",
    "cli",
    "error_text",
    "main",
    "one_line",
    "parse_actions",
    "read_actions",
]


# ---------------------------------------------------------------------------------------------- maintenance verbs
# cleanup, vacuum and restore live in deltalog/cli/maintenance.py; imported last, after ``cli`` exists.
from deltalog.cli import maintenance as _maintenance  # noqa: E402

_maintenance.register(cli)


# ---------------------------------------------------------------------------------------------- checkpoint, compact
# ``checkpoint`` writes one checkpoint now; ``compact`` is the compaction job over many tables
# (:mod:`deltalog.maintenance.compaction`). Both feed the checkpoint writer's progress to a bar on stderr.
import contextlib  # noqa: E402
from collections.abc import Iterator  # noqa: E402

from rich.console import Console  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: E402
from rich.text import Text  # noqa: E402

from deltalog.checkpoint.writer import CheckpointResult  # noqa: E402
from deltalog.maintenance.compaction import (  # noqa: E402
    TableCompaction,
    TableProgress,
    compact_tables,
    discover_tables,
    summarize,
)


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


def render_checkpoint(doc: Document, con: Console) -> None:
    con.print(
        render.key_values(
            "Checkpoint",
            [
                ("location", doc["table"]),
                ("version", doc["version"]),
                ("kind", doc["kind"]),
                ("files", Text("\n".join(doc["files"]))),
                ("actions", doc["num_actions"]),
                ("add files", doc["num_add_files"]),
                ("size", doc["size_in_bytes"]),
                ("already existed", doc["already_existed"]),
            ],
        )
    )


def render_compact(doc: Document, con: Console) -> None:
    rows = []
    for t in doc["tables"]:
        cp = t["checkpoint"]
        written = None
        if cp is not None:
            written = f"{cp['kind']} v{cp['version']}" + (" (existed)" if cp["already_existed"] else "")
        since = t["commits_since_checkpoint"]
        rows.append((t["table"], t["status"], t["version"], t["last_checkpoint"], since, written, t["error"]))
    con.print(
        render.grid(
            "Compaction",
            ["table", "status", "version", "last checkpoint", "commits since", "written", "error"],
            rows,
        )
    )
    con.print(
        Text(
            f"{doc['num_checkpointed']} checkpointed, {doc['num_skipped']} skipped, {doc['num_failed']} failed "
            f"(min commits {doc['min_commits']})"
        )
    )


_parts_option = click.option(
    "--parts",
    type=click.IntRange(min=1),
    metavar="K",
    help="Write a classic multi-part checkpoint of K files (refused on v2Checkpoint tables; default: one file).",
)


@cli.command("checkpoint")
@_table_argument
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
@_json_flag
def checkpoint_cmd(table: str, version: int | None, parts: int | None, engine: str, master: str, as_json: bool) -> None:
    """Write a checkpoint of TABLE and move _last_checkpoint forward."""
    if engine == "spark":
        from deltalog.spark.checkpoint import checkpoint as spark_checkpoint
        from deltalog.spark.session import get_session

        spark = get_session(master, "deltalog-checkpoint")
        result = spark_checkpoint(spark, table, version=version, parts=parts)
        _emit(checkpoint_document(DeltaLog.for_table(table).location, result), as_json, render_checkpoint)
        return
    log = DeltaLog.for_table(table, auto_checkpoint=False)
    with checkpoint_progress() as tick:
        result = log.checkpoint(
            version=version, parts=parts, progress=lambda stage, done, total: tick(table, stage, done, total)
        )
    _emit(checkpoint_document(log.location, result), as_json, render_checkpoint)


@cli.command("compact")
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
@_json_flag
def compact_cmd(
    tables: tuple[str, ...], prefix: str | None, min_commits: int, parts: int | None, as_json: bool
) -> None:
    """The compaction job: checkpoint each TABLE (and each table under --prefix) that needs one."""
    ctx = click.get_current_context()
    if not tables and prefix is None:
        raise click.UsageError("give at least one TABLE or --prefix DIR", ctx)
    locations = list(tables) + (discover_tables(prefix) if prefix is not None else [])
    with checkpoint_progress() as tick:
        results = compact_tables(locations, min_commits=min_commits, parts=parts, progress=tick)
    _emit(compact_document(results, min_commits), as_json, render_compact)
    failed = [r for r in results if r.failed]
    if failed:
        click.echo(
            f"error: compaction failed for {len(failed)} of {len(results)} tables: "
            + "; ".join(f"{r.location} ({r.error_type})" for r in failed),
            err=True,
        )
        ctx.exit(EXIT_ERROR)


# ---------------------------------------------------------------------------------------------- doctor
# ``doctor`` (store self-test for concurrent writers) lives in deltalog/cli/doctor.py.
from deltalog.cli import doctor as _doctor  # noqa: E402

_doctor.register(cli)
