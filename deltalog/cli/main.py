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
(:mod:`deltalog.cli.render`). A slow step gets a rich progress bar on a stderr console around the engine
call, leaving stdout to the result.

Each verb lives in its own module (:data:`VERBS`), imported only when that verb runs or its help is asked
for: ``deltalog --version`` and ``deltalog --help`` load click and deltalog's errors, not pyarrow, pandas or
rich (``tests/unit/cli/test_cli_startup.py`` counts the modules). The group's help lists each verb by the summary
given here, which a test keeps equal to the verb's own.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import click

from deltalog import __version__
from deltalog.cli import logs
from deltalog.cli.store_options import storage_option_params
from deltalog.errors import ConcurrentModificationError, DeltaLogError, InvalidCommitError

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


class Verb(NamedTuple):
    """Where a verb's click command lives, and what ``deltalog --help`` says of it without importing it."""

    module: str
    command: str
    summary: str
    hidden: bool = False


VERBS: dict[str, Verb] = {
    "describe": Verb(
        "deltalog.cli.inspect_cmd",
        "describe",
        "Protocol, metadata, schema and totals of TABLE, and the features it actively uses.",
    ),
    "history": Verb(
        "deltalog.cli.inspect_cmd",
        "history",
        "Commits of TABLE, newest first (the timestamps are what --timestamp takes).",
    ),
    "files": Verb("deltalog.cli.inspect_cmd", "files", "Live data files of TABLE, sorted by path."),
    "snapshot": Verb("deltalog.cli.inspect_cmd", "snapshot", "Short summary of TABLE at one version."),
    "scan": Verb(
        "deltalog.cli.scan_cmd", "scan_cmd", "Live rows of TABLE (deletion vectors applied, column mapping resolved)."
    ),
    "changes": Verb(
        "deltalog.cli.changes_cmd",
        "changes_cmd",
        "What changed in TABLE from one version to another (change data feed).",
    ),
    "write": Verb(
        "deltalog.cli.write_cmd",
        "write_cmd",
        "Write the rows of FILE (parquet or CSV) to TABLE as one commit, creating the table if there is none.",
    ),
    "update": Verb(
        "deltalog.cli.dml_cmd",
        "update_cmd",
        "Set columns of TABLE's rows (all, or those --where matches) to Spark SQL values, as one commit.",
    ),
    "merge": Verb(
        "deltalog.cli.dml_cmd",
        "merge_cmd",
        "Merge the rows of SOURCE (parquet or CSV, alias s) into TABLE (alias t) on EXPR, as one commit.",
    ),
    "commit": Verb("deltalog.cli.commit_cmd", "commit", "Commit the actions in FILE to TABLE as one new version."),
    "intents": Verb(
        "deltalog.cli.intents",
        "intents_cmd",
        "List the intents long-running writers declared on TABLE (live and stale).",
    ),
    "checkpoint": Verb(
        "deltalog.cli.checkpoint_cmd",
        "checkpoint_cmd",
        "Write a checkpoint of TABLE and move _last_checkpoint forward.",
    ),
    "checkpoint-job": Verb(
        "deltalog.cli.checkpoint_cmd",
        "checkpoint_job_cmd",
        "The checkpoint job: checkpoint each TABLE (and each table under --prefix) that needs one.",
    ),
    "compact": Verb("deltalog.cli.checkpoint_cmd", "compact_cmd", "Deprecated name of checkpoint-job.", hidden=True),
    "compact-log": Verb(
        "deltalog.cli.compact_log_cmd",
        "compact_log_cmd",
        "Write the log compaction file of a range of commits (Delta Spark reads it instead of the commits).",
    ),
    "optimize": Verb(
        "deltalog.cli.optimize_cmd",
        "optimize_cmd",
        "Compact small files into larger ones (or Z-order, cluster, purge deletion vectors) as one commit with "
        "dataChange=false: concurrent appends are not disturbed.",
    ),
    "cleanup": Verb(
        "deltalog.cli.maintenance",
        "cleanup_cmd",
        "Delete expired log files below a checkpoint; shows the earliest version that stays reachable.",
    ),
    "vacuum": Verb(
        "deltalog.cli.maintenance",
        "vacuum_cmd",
        "Delete data files (and deletion vectors, change data files) no version within the retention needs.",
    ),
    "restore": Verb(
        "deltalog.cli.maintenance",
        "restore_cmd",
        "Make an older version current again: its files, schema, partitioning and properties (a new version).",
    ),
    "rename-column": Verb(
        "deltalog.cli.schema_cmd",
        "rename_column_cmd",
        "Rename COLUMN of TABLE (a.b for a nested field) through column mapping: no data file is rewritten.",
    ),
    "drop-columns": Verb(
        "deltalog.cli.schema_cmd",
        "drop_columns_cmd",
        "Drop COLUMNs of TABLE through column mapping: the data stays in the files, unread.",
    ),
    "change-column-type": Verb(
        "deltalog.cli.schema_cmd",
        "change_column_type_cmd",
        "Widen the type of COLUMN of TABLE (type widening: int to long, float to double, ...); no file is rewritten.",
    ),
    "doctor": Verb(
        "deltalog.cli.doctor",
        "doctor_cmd",
        "Self-test the table's store in a scratch prefix: can concurrent writers lose commits here?",
    ),
    "docs": Verb(
        "deltalog.cli.docs_cmd",
        "docs_cmd",
        "Print the manual's page on TOPIC (default: start); 'deltalog docs --list' names the topics.",
    ),
}


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

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(VERBS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The verb's command, its module imported now; given its own copy of the logging and storage
        options once (so ``deltalog -v files T`` and ``deltalog files T -v`` both work)."""
        verb = VERBS.get(cmd_name)
        if verb is None:
            return None
        command: click.Command = getattr(importlib.import_module(verb.module), verb.command)
        if not any(getattr(p, "name", None) == "storage_option" for p in command.params):
            command.params.extend(logs.logging_options())
            command.params.extend(storage_option_params())
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The verbs and their summaries, as :data:`VERBS` gives them: listing them imports none."""
        shown = sorted((name, verb) for name, verb in VERBS.items() if not verb.hidden)
        limit = formatter.width - 6 - max(len(name) for name, _ in shown)  # as click shortens a command's help
        rows = [(name, click.Command(name, help=verb.summary).get_short_help_str(limit)) for name, verb in shown]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


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


#: the library's words for what the command spells as flags: errors are worded for Python callers
#: (``partition_by``, ``schema_mode='merge'``), and a shell user must be told what to type
FLAG_WORDS = (
    (re.compile(r"\bstorage_options\b"), "--storage-option (or --profile)"),
    (re.compile(r"\bpartition_by\b"), "--partition-by"),
    (re.compile(r"\bschema_mode='merge'"), "--merge-schema"),
    (re.compile(r"\breplace_where\b"), "--replace-where"),
    (re.compile(r"\bmode='(\w+)'"), r"--mode \1"),
    (re.compile(r"\bforce=True\b"), "--force"),
    (re.compile(r"\bignore_missing_files\b"), "--ignore-missing-files"),
    (re.compile(r"\benforce_retention_duration=False\b"), "--force"),
)


def flag_words(text: str) -> str:
    """``text`` with the library's parameter names replaced by the command's flags (:data:`FLAG_WORDS`)."""
    for pattern, flag in FLAG_WORDS:
        text = pattern.sub(flag, text)
    return text


def error_text(exc: DeltaLogError) -> str:
    """The message in the command's words (:func:`flag_words`), plus what a caller acts on: the rule a commit
    broke, or that it lost to another writer."""
    text = flag_words(str(exc) or type(exc).__name__)
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


def main() -> None:
    """Console-script entry point (``deltalog = "deltalog.cli.main:main"`` in pyproject.toml)."""
    cli(prog_name="deltalog")


__all__ = [
    "VERBS",
    "Verb",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "DeltalogGroup",
    "cli",
    "error_text",
    "flag_words",
    "main",
    "one_line",
]
