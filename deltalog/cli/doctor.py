"""``deltalog doctor TABLE``: is it safe for several writers to commit to this table's store? Exit 0 yes, 1 no.

Registered on the main group by :mod:`deltalog.cli.main` (one line at its end), kept apart so that module stays
small. The probes live in :mod:`deltalog.maintenance.doctor`; this verb opens the store with the user's
``--option KEY=VALUE`` storage options, runs them and prints a verdict a person can act on: which check failed
and what to change.

A local directory that does not exist is refused before anything is written: probing would create it (and a
``_delta_log`` in it), and a mistyped path would then read SAFE, a verdict about a directory nobody uses.
Object stores have no directories, so a prefix without a table is probed, and the report says there is no
table there yet.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import click

from deltalog import DeltaLog, InvalidArgumentError, TableNotFoundError
from deltalog.cli import render
from deltalog.cli.options import json_flag
from deltalog.cli.store_options import given_storage_options
from deltalog.maintenance.doctor import DoctorReport, diagnose

EXIT_UNSAFE = 1


def _parse_options(ctx: click.Context, param: click.Parameter, values: Sequence[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{key or item!r} is not KEY=VALUE", ctx, param)  # never echo a value
        options[key] = value
    return options


def render_report(report: DoctorReport, has_table: bool = True) -> str:
    lines = [f"deltalog doctor {report.location}", f"store: {report.store}", ""]
    if not has_table:
        lines[-1:] = [f"note: no Delta table at {report.location} yet; the store was probed there all the same", ""]
    for c in report.checks:
        lines.append(f"  {'PASS' if c.ok else 'FAIL'}  {c.name:<11} {c.detail}")
    if report.engines:
        lines.append(f"  FAIL  {'engines':<11} another engine that cannot share this store has committed here")
    else:
        lines.append(f"  PASS  {'engines':<11} no commit in recent history comes from an engine unsafe on this store")
    lines.append("")
    if report.safe:
        lines.append("verdict: SAFE: concurrent deltalog (and delta-rs) writers cannot lose commits on this store")
    else:
        lines.append("verdict: UNSAFE for concurrent writers. What to change:")
        fixes = dict.fromkeys(c.fix for c in report.checks if not c.ok and c.fix)
        lines.extend(f"  - {fix}" for fix in fixes)
        lines.extend(f"  - {e.message(report.location)}" for e in report.engines)
    if report.leftovers:
        lines.append(f"note: could not delete {len(report.leftovers)} scratch file(s), e.g. {report.leftovers[0]}")
    return "\n".join(lines)


@click.command("doctor")
@click.argument("table", metavar="TABLE")
@click.option(
    "--option",
    "-o",
    "options",
    multiple=True,
    callback=_parse_options,
    metavar="KEY=VALUE",
    help="Same as --storage-option KEY=VALUE (kept for compatibility); repeatable.",
)
@click.option("--threads", type=click.IntRange(2, 256), default=16, show_default=True, help="Writers per race.")
@click.option("--rounds", type=click.IntRange(1, 100), default=3, show_default=True, help="Races to run.")
@json_flag
def doctor_cmd(table: str, options: dict[str, Any], threads: int, rounds: int, fmt: str) -> int:
    """Self-test the table's store in a scratch prefix: can concurrent writers lose commits here?"""
    log = DeltaLog.for_table(table, storage_options={**(given_storage_options() or {}), **options} or None)
    check_location(log)
    report = diagnose(log.store, log.location, history=lambda n: log.history(limit=n), threads=threads, rounds=rounds)
    if fmt == "json":
        render.write_json(report.document())
    else:
        click.echo(render_report(report, has_table=_has_table(log)))
    return 0 if report.safe else EXIT_UNSAFE


def check_location(log: DeltaLog) -> None:
    """Refuse a local location that is not an existing directory (see the module docstring)."""
    if not log.store.capabilities.local:
        return
    root = log.store.root
    if not os.path.isdir(root):
        what = "is not a directory" if os.path.exists(root) else "does not exist"
        raise InvalidArgumentError(
            f"{log.location} {what}: doctor probes the store of an existing table or directory and creates "
            "nothing outside its scratch prefix; check the path"
        )


def _has_table(log: DeltaLog) -> bool:
    try:
        log.latest_version()
    except TableNotFoundError:
        return False
    return True


__all__ = ["EXIT_UNSAFE", "check_location", "doctor_cmd", "render_report"]
