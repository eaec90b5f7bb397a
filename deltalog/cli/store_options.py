"""``--storage-option KEY=VALUE`` (repeatable) and ``--storage-options-file FILE.json`` on the group and every verb.

Why every verb: a table on S3 behind a custom endpoint, or on Azurite, is unreachable without options, and a
command that can only ``doctor`` such a table is no use for reading it. Both spellings of the names work
(deltalake's ``AWS_ENDPOINT_URL``, ``azure_storage_account_key``, ... or fsspec's), as in the Python API
(:mod:`deltalog.storage.options`). The file holds one JSON object; options given on the command line win over
the file's, and a verb's over the group's (``deltalog --storage-option K=V files T`` and ``deltalog files T
--storage-option K=V`` both work, as the logging options do).

Secrets are never echoed: a malformed ``--storage-option`` is reported without its text (it may be a secret
typed without its key), a bad file by its name and the position of the problem only, and the stores scrub
secret values from every message and log record (:mod:`deltalog.storage.redaction`). Nothing here prints
the options, and no ``--json`` document contains them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import click
import orjson

_META = "deltalog.storage_options"


@dataclass
class StorageSettings:
    """What the options asked for, gathered from the group and the verb."""

    given: dict[str, Any] = field(default_factory=dict)
    from_file: dict[str, Any] = field(default_factory=dict)

    def options(self) -> dict[str, Any] | None:
        merged = {**self.from_file, **self.given}
        return merged or None


def _settings(ctx: click.Context) -> StorageSettings:
    return ctx.find_root().meta.setdefault(_META, StorageSettings())  # type: ignore[no-any-return]


def _parse_pairs(ctx: click.Context, param: click.Parameter, values: Sequence[str]) -> None:
    settings = _settings(ctx)
    for n, item in enumerate(values, 1):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            # never the text itself: it may be a secret given without its key
            raise click.BadParameter(f"option {n} is not KEY=VALUE (its text is not shown)", ctx, param)
        settings.given[key.strip()] = value


def _parse_file(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is None:
        return
    try:
        with open(value, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise click.BadParameter(f"cannot read {value}: {exc.strerror or type(exc).__name__}", ctx, param) from None
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise click.BadParameter(f"{value} is not valid JSON ({where})", ctx, param) from None
    if not isinstance(parsed, dict):
        raise click.BadParameter(f"{value} must hold one JSON object of option names and values", ctx, param)
    _settings(ctx).from_file.update(parsed)


def storage_option_params() -> list[click.Option]:
    """The options, as objects: the group and every verb get their own copies, so both spellings work."""
    return [
        click.Option(
            ["--storage-option"],
            multiple=True,
            expose_value=False,
            callback=_parse_pairs,
            metavar="KEY=VALUE",
            help="A storage option, deltalake's or fsspec's name (e.g. AWS_ENDPOINT_URL=http://..., "
            "azure_storage_account_key=...); repeatable. Values are never printed.",
        ),
        click.Option(
            ["--storage-options-file"],
            expose_value=False,
            callback=_parse_file,
            metavar="FILE.json",
            help="Storage options from a JSON object in FILE (--storage-option wins over it).",
        ),
    ]


def given_storage_options() -> dict[str, Any] | None:
    """The storage options of the running command (``None`` when it has none, or outside a command)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return None
    settings = ctx.find_root().meta.get(_META)
    return settings.options() if isinstance(settings, StorageSettings) else None


__all__ = ["StorageSettings", "given_storage_options", "storage_option_params"]
