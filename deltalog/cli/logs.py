"""Where the command's log records go: warnings on stderr by default, more when asked.

Why: the library only logs (a corrupt checkpoint it fell back past, an ignored storage option, an engine
that cannot share the store), through a ``NullHandler``. Without a handler here an operator never sees
any of it. So the command shows WARNING and above from ``deltalog.*`` on stderr: rich-formatted on a
terminal, one plain ``LEVEL logger: message`` line per record when stderr is piped (logs, CI). ``-v``
adds INFO, ``-vv`` DEBUG, ``--log-level`` sets a level (``DEBUG``, or ``NAME=LEVEL`` for one logger,
repeatable), ``--quiet`` shows only errors.

Some libraries log secrets at DEBUG: botocore signs requests with session tokens and logs them, azure's
HTTP logging policy prints headers, urllib3 prints URLs with SAS tokens. They stay at WARNING whatever
``-vv`` or ``--log-level root=DEBUG`` say, unless named on their own (``--log-level botocore=DEBUG``).
A traceback attached to a record is shown only at DEBUG; otherwise its last line stands in for it, so a
warning stays one line.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO

import click

LIBRARY = "deltalog"
#: loggers that can print credentials at DEBUG or INFO: kept at WARNING unless named explicitly
GUARDED = (
    "botocore",
    "aiobotocore",
    "boto3",
    "s3transfer",
    "s3fs",
    "urllib3",
    "azure",
    "adlfs",
)
_LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG")


@dataclass
class LogSettings:
    """What the options asked for, gathered from the group and the verb (either may carry them)."""

    verbose: int = 0
    quiet: bool = False
    library_level: str | None = None
    named: dict[str, str] = field(default_factory=dict)

    def levels(self) -> dict[str, int]:
        """Logger name -> level (root included) for these settings."""
        if self.library_level is not None:
            library = self.library_level
        elif self.quiet:
            library = "ERROR"
        else:
            library = ("WARNING", "INFO", "DEBUG")[min(self.verbose, 2)]
        out = {"": logging.WARNING, LIBRARY: getattr(logging, library)}
        out.update(dict.fromkeys(GUARDED, logging.WARNING))
        for name, level in self.named.items():
            out["" if name == "root" else name] = getattr(logging, level)
        return out


class OneLineFormatter(logging.Formatter):
    """``LEVEL logger: message``; a record's traceback only when the record's logger is at DEBUG."""

    def __init__(self, with_level: bool = True) -> None:
        super().__init__("%(levelname)s %(name)s: %(message)s" if with_level else "%(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info and not logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
            exc = record.exc_info[1]
            record = logging.makeLogRecord(record.__dict__)
            summary = f"{type(exc).__name__}: {exc}" if exc is not None else ""
            record.msg, record.args = f"{record.getMessage()} ({' '.join(summary.split())})", None
            record.exc_info = record.exc_text = None
        return super().format(record)


#: the handler this module installed on the root logger, and the levels it replaced (restored by reset)
_installed: list[logging.Handler] = []
_replaced: dict[str, int] = {}


def handler(stream: TextIO | None = None) -> logging.Handler:
    """The handler for ``stream`` (stderr): rich on a terminal, one plain line per record otherwise."""
    stream = stream if stream is not None else sys.stderr
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    if terminal:
        from rich.console import Console
        from rich.logging import RichHandler

        rich = RichHandler(
            console=Console(file=stream),
            show_time=False,
            show_path=False,
            markup=False,
            rich_tracebacks=False,
        )
        rich.setFormatter(OneLineFormatter(with_level=False))
        return rich
    plain = logging.StreamHandler(stream)
    plain.setFormatter(OneLineFormatter())
    return plain


def configure(settings: LogSettings) -> None:
    """Install one stderr handler on the root logger and set the levels ``settings`` ask for."""
    root = logging.getLogger()
    for old in _installed:
        root.removeHandler(old)
    _installed.clear()
    installed = handler()
    root.addHandler(installed)
    _installed.append(installed)
    for name, level in settings.levels().items():
        logger = logging.getLogger(name or None)
        _replaced.setdefault(name, logger.level)
        logger.setLevel(level)


def _settings(ctx: click.Context) -> LogSettings:
    root = ctx.find_root()
    return root.meta.setdefault("deltalog.log_settings", LogSettings())  # type: ignore[no-any-return]


def _parse_level(ctx: click.Context, param: click.Parameter, values: Sequence[str]) -> None:
    settings = _settings(ctx)
    for item in values:
        name, sep, level = item.rpartition("=")
        level = level.strip().upper()
        if level not in _LEVELS or (sep and not name.strip()):
            raise click.BadParameter(f"{item!r} is not LEVEL or NAME=LEVEL (LEVEL: {', '.join(_LEVELS)})", ctx, param)
        if sep:
            settings.named[name.strip()] = level
        else:
            settings.library_level = level
    if values:
        configure(settings)


def _count_verbose(ctx: click.Context, param: click.Parameter, value: int) -> None:
    if value:
        settings = _settings(ctx)
        settings.verbose += value
        _check(ctx, settings)
        configure(settings)


def _set_quiet(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        settings = _settings(ctx)
        settings.quiet = True
        _check(ctx, settings)
        configure(settings)


def _check(ctx: click.Context, settings: LogSettings) -> None:
    if settings.quiet and settings.verbose:
        raise click.UsageError("--quiet and -v cannot be used together", ctx)


def logging_options() -> list[click.Option]:
    """The options, as objects: the group and every verb get their own copies, so both spellings work."""
    return [
        click.Option(
            ["-v", "--verbose"],
            count=True,
            expose_value=False,
            callback=_count_verbose,
            help="Show more of deltalog's log on stderr: -v info, -vv debug (default: warnings and errors).",
        ),
        click.Option(
            ["-q", "--quiet"],
            is_flag=True,
            expose_value=False,
            callback=_set_quiet,
            help="Show only errors on stderr, no warnings.",
        ),
        click.Option(
            ["--log-level"],
            multiple=True,
            metavar="[NAME=]LEVEL",
            expose_value=False,
            callback=_parse_level,
            help="deltalog's log level, or one logger's (e.g. botocore=DEBUG, which -vv never turns on); repeatable.",
        ),
    ]


def reset() -> None:
    """Undo :func:`configure`: the handler comes off the root logger and every level it set is restored.

    The command calls this when it ends, so running it inside another program (or a test) leaves that
    program's logging as it was.
    """
    root = logging.getLogger()
    for old in _installed:
        root.removeHandler(old)
    _installed.clear()
    for name, level in _replaced.items():
        logging.getLogger(name or None).setLevel(level)
    _replaced.clear()


__all__ = [
    "GUARDED",
    "LIBRARY",
    "LogSettings",
    "OneLineFormatter",
    "configure",
    "handler",
    "logging_options",
    "reset",
]
