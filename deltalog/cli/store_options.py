"""``--storage-option KEY=VALUE`` (repeatable), ``--storage-options-file FILE.json`` and ``--profile NAME`` on the
group and every verb.

Why every verb: a table on S3 behind a custom endpoint, or on Azurite, is unreachable without options, and a
command that can only ``doctor`` such a table is no use for reading it. Both spellings of the names work
(deltalake's ``AWS_ENDPOINT_URL``, ``azure_storage_account_key``, ... or fsspec's), as in the Python API
(:mod:`deltalog.storage.options`). The file holds one JSON object; options given on the command line win over
the file's, and a verb's over the group's (``deltalog --storage-option K=V files T`` and ``deltalog files T
--storage-option K=V`` both work, as the logging options do).

A profile names a set of options kept in ``$XDG_CONFIG_HOME/deltalog/profiles.toml`` (``~/.config/...`` when
XDG_CONFIG_HOME is not set), one TOML table per profile, so a table on MinIO is ``deltalog files s3://b/t
--profile minio`` instead of four ``--storage-option`` flags on every call; ``DELTALOG_PROFILE`` names one for
every command. A profile's options are the weakest: the file's and the command line's win over them, and the
environment (``AWS_*``, ``AZURE_STORAGE_*``, ``GOOGLE_*``, read by the stores) fills in only what none gives.

Secrets are never echoed: a malformed ``--storage-option`` is reported without its text (it may be a secret
typed without its key), a bad file by its name and the position of the problem only, and the stores scrub
secret values from every message and log record (:mod:`deltalog.storage.redaction`). Nothing here prints
the options, and no ``--json`` document contains them.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import orjson

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 (the tomli dependency is declared for it)
    import tomli as tomllib

_META = "deltalog.storage_options"
#: the environment variable that picks a profile for every command (``--profile`` wins over it)
PROFILE_ENV = "DELTALOG_PROFILE"


@dataclass
class StorageSettings:
    """What the options asked for, gathered from the group and the verb."""

    given: dict[str, Any] = field(default_factory=dict)
    from_file: dict[str, Any] = field(default_factory=dict)
    from_profile: dict[str, Any] = field(default_factory=dict)
    profile: str | None = None  # the profile read (given on the command line, or by DELTALOG_PROFILE)

    def options(self) -> dict[str, Any] | None:
        merged = {**self.from_profile, **self.from_file, **self.given}
        return merged or None


def profiles_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the profiles live: ``$XDG_CONFIG_HOME/deltalog/profiles.toml``, else under ``~/.config``."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "deltalog" / "profiles.toml"


def read_profile(name: str, path: Path | None = None) -> dict[str, str]:
    """Profile ``name``'s options from the profiles file (values as text, as storage options are given).

    Errors name the file and the profile, never a value: the file holds secrets.
    """
    path = profiles_path() if path is None else path
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise click.BadParameter(f"profile {name!r}: there is no profiles file at {path}") from None
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path}: {exc.strerror or type(exc).__name__}") from None
    try:
        profiles = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        line = re.search(r"\bline (\d+)", str(exc))  # the position only: the text may hold a secret
        raise click.BadParameter(f"{path} is not valid TOML{f' (line {line[1]})' if line else ''}") from None
    profile = profiles.get(name)
    if not isinstance(profile, dict):
        known = ", ".join(sorted(k for k, v in profiles.items() if isinstance(v, dict))) or "none"
        raise click.BadParameter(f"no profile {name!r} in {path} (its profiles: {known})")
    nested = sorted(k for k, v in profile.items() if isinstance(v, (dict, list)))
    if nested:
        raise click.BadParameter(f"profile {name!r} in {path}: {nested} must be plain values, not tables or lists")
    return {k: _text(v) for k, v in profile.items()}


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


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


def _parse_profile(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """``--profile NAME``: the verb's wins over the group's; ``DELTALOG_PROFILE`` is read only when the command
    asks for its options and no ``--profile`` was given (:func:`given_storage_options`)."""
    if value is None:
        return
    try:
        options = read_profile(value)
    except click.BadParameter as exc:
        raise click.BadParameter(exc.message, ctx, param) from None
    settings = _settings(ctx)
    settings.from_profile, settings.profile = options, value


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
        click.Option(
            ["--profile"],
            expose_value=False,
            callback=_parse_profile,
            metavar="NAME",
            help=f"Storage options from profile NAME in {_shown(profiles_path())} (also ${PROFILE_ENV}); the "
            "options above win over it.",
        ),
    ]


def _shown(path: Path) -> str:
    home = os.path.expanduser("~")
    text = str(path)
    return "~" + text[len(home) :] if home and text.startswith(home + os.sep) else text


def given_storage_options() -> dict[str, Any] | None:
    """The storage options of the running command (``None`` when it has none, or outside a command)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return None
    settings = _settings(ctx)
    named = os.environ.get(PROFILE_ENV)
    if settings.profile is None and named:
        try:
            settings.from_profile, settings.profile = read_profile(named), named
        except click.BadParameter as exc:
            raise click.UsageError(f"{exc.message} ({PROFILE_ENV}={named})", ctx) from None
    return settings.options()


__all__ = [
    "PROFILE_ENV",
    "StorageSettings",
    "given_storage_options",
    "profiles_path",
    "read_profile",
    "storage_option_params",
]
