"""The ``deltalog`` command: the click group, its verbs, and how failures reach the user.

Contract with the shell: a usage mistake (exit 2) or a :class:`~deltalog.DeltaLogError` (exit 1) prints
exactly one line, ``error: <what is wrong>``, to stderr and nothing to stdout. A person reads that line,
and a script can rely on stdout holding either a complete result or nothing. Ctrl-C exits 130, the
shell's code for an interrupt, with one line too. Anything else is a bug in deltalog and keeps its
traceback, because that is what a bug report needs.

Log records (warnings by default) also go to stderr; :mod:`deltalog.cli.logs` says how, and which
options change it. Every verb accepts those options as well as the group, so ``deltalog -v files T``
and ``deltalog files T -v`` both work.

The verbs are thin: open the snapshot, build a document (:mod:`deltalog.cli.documents`), render it
(:mod:`deltalog.cli.render`). A slow step added later gets a rich progress bar on a stderr console
around the engine call here, leaving stdout to the result.

The read verbs live here; ``commit`` (:mod:`deltalog.cli.commit_cmd`), ``checkpoint``/``compact``
(:mod:`deltalog.cli.checkpoint_cmd`), the maintenance verbs (:mod:`deltalog.cli.maintenance`),
``doctor`` (:mod:`deltalog.cli.doctor`) and the data verbs ``scan`` and ``write``
(:mod:`deltalog.cli.scan_cmd`, :mod:`deltalog.cli.write_cmd`) register themselves on the group.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import click

from deltalog import (
    ConcurrentModificationError,
    DeltaLogError,
    InvalidCommitError,
    __version__,
)
from deltalog.cli import documents, logs, render
from deltalog.cli.options import (
    emit,
    json_flag,
    limit_option,
    open_log,
    open_snapshot,
    open_table,
    output_format,
    parse_where,
    table_argument,
    time_travel,
)
from deltalog.cli.store_options import storage_option_params

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for a command stopped by Ctrl-C


def one_line(text: str) -> str:
    """Fold a message onto one line: the contract is one line even when a message embeds newlines."""
    return " ".join(text.split())


def _fail(message: str, code: int) -> int:
    click.echo(f"error: {one_line(message)}", err=True)
    return code


class Interrupted(Exception):
    """Ctrl-C while a verb ran."""


class DeltalogGroup(click.Group):
    """A group whose standalone run turns user errors into one stderr line and an exit code.

    Overriding :meth:`main` rather than wrapping the entry point keeps the contract for every caller,
    ``CliRunner`` included. Callers passing ``standalone_mode=False`` get click's own exceptions.
    """

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        def run() -> Any:
            return super(DeltalogGroup, self).main(args, prog_name, complete_var, standalone_mode=False, **extra)

        logs.configure(logs.LogSettings())
        try:
            if not standalone_mode:
                return run()
            code = _exit_code(run)
        finally:
            logs.reset()
        sys.exit(code)

    def invoke(self, ctx: click.Context) -> Any:
        """Let Ctrl-C through as :class:`Interrupted`: click would turn it into ``Abort`` (exit 1)."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise Interrupted from None

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        """Register a verb, giving it its own copy of the logging and storage options (see the module docstring)."""
        cmd.params.extend(logs.logging_options())
        cmd.params.extend(storage_option_params())
        super().add_command(cmd, name)


def _exit_code(run: Callable[[], Any]) -> int:
    try:
        rv = run()
    except click.UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        return _fail(exc.format_message() + hint, EXIT_USAGE)
    except click.ClickException as exc:
        return _fail(exc.format_message(), exc.exit_code)
    except click.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):
            return _fail("interrupted", EXIT_INTERRUPTED)
        return _fail("aborted", EXIT_ERROR)
    except (Interrupted, KeyboardInterrupt):
        if sys.stderr.isatty():
            click.echo(err=True)  # past the ^C the terminal echoed
        return _fail("interrupted", EXIT_INTERRUPTED)
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


# ---------------------------------------------------------------------------------------------- verbs


@click.group(
    "deltalog",
    cls=DeltalogGroup,
    no_args_is_help=False,  # a bare ``deltalog`` is a usage error like any other: one line, exit 2
    params=[*logs.logging_options(), *storage_option_params()],
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, "--version", "-V", prog_name="deltalog", message="%(prog)s %(version)s")
def cli() -> None:
    """Inspect a Delta Lake table through its transaction log, and commit actions to it.

    TABLE is a directory or a URI (file://, s3://, abfss://, gs://, ... with the package for the scheme
    installed). Read the manual with 'deltalog docs' (topics: 'deltalog docs --list').
    """


@cli.command()
@table_argument
@time_travel
@json_flag
def describe(table: str, version: int | None, timestamp: str | None, fmt: str) -> None:
    """Protocol, metadata, schema and totals of TABLE, and the features it actively uses."""
    emit(documents.describe(open_snapshot(table, version, timestamp)), fmt, render.describe)


@cli.command()
@table_argument
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="Show only the N newest commits.")
@output_format(csv=True)
def history(table: str, limit: int | None, fmt: str) -> None:
    """Commits of TABLE, newest first (the timestamps are what --timestamp takes)."""
    doc = documents.history(open_log(table), limit)
    emit(doc, fmt, render.history, render.history_listing)


@cli.command()
@table_argument
@time_travel
@click.option(
    "--where",
    "where",
    multiple=True,
    callback=parse_where,
    metavar="COLUMN=VALUE",
    help="Only files whose partition COLUMN equals VALUE (repeatable; an empty VALUE matches null).",
)
@click.option("--stats", is_flag=True, help="Include each file's statistics.")
@limit_option
@output_format(csv=True)
def files(
    table: str,
    version: int | None,
    timestamp: str | None,
    where: dict[str, str],
    stats: bool,
    limit: int | None,
    fmt: str,
) -> None:
    """Live data files of TABLE, sorted by path."""
    doc = documents.files(open_snapshot(table, version, timestamp), where, stats, limit)
    emit(doc, fmt, render.files, render.files_listing)


@cli.command()
@table_argument
@time_travel
@json_flag
def snapshot(table: str, version: int | None, timestamp: str | None, fmt: str) -> None:
    """Short summary of TABLE at one version."""
    log, snap = open_table(table, version, timestamp)
    emit(documents.snapshot(snap, log), fmt, render.snapshot)


def main() -> None:
    """Console-script entry point (``deltalog = "deltalog.cli.main:main"`` in pyproject.toml)."""
    cli(prog_name="deltalog")


# The other verbs live in their own modules and are registered here, after ``cli`` exists.
from deltalog.cli import (  # noqa: E402
    checkpoint_cmd,
    commit_cmd,
    compact_log_cmd,
    dml_cmd,
    docs_cmd,
    doctor,
    intents,
    maintenance,
    scan_cmd,
    write_cmd,
)

for _module in (
    commit_cmd,
    checkpoint_cmd,
    compact_log_cmd,
    maintenance,
    doctor,
    intents,
    scan_cmd,
    write_cmd,
    dml_cmd,
    docs_cmd,
):
    _module.register(cli)

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "DeltalogGroup",
    "cli",
    "error_text",
    "main",
    "one_line",
]
