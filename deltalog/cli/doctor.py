"""``deltalog doctor TABLE``: is it safe for several writers to commit to this table's store? Exit 0 yes, 1 no.

Registered on the main group by :mod:`deltalog.cli.main` (one line at its end), kept apart so that module stays
small. The probes live in :mod:`deltalog.maintenance.doctor`; this verb opens the store with the user's
``--option KEY=VALUE`` storage options, runs them and prints a verdict a person can act on: which check failed
and what to change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from deltalog import DeltaLog
from deltalog.cli import render
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


def render_report(report: DoctorReport) -> str:
    lines = [f"deltalog doctor {report.location}", f"store: {report.store}", ""]
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
    help="A storage option (fsspec or deltalake name, e.g. AWS_ENDPOINT_URL=http://...); repeatable.",
)
@click.option("--threads", type=click.IntRange(2, 256), default=16, show_default=True, help="Writers per race.")
@click.option("--rounds", type=click.IntRange(1, 100), default=3, show_default=True, help="Races to run.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of text.")
def doctor_cmd(table: str, options: dict[str, Any], threads: int, rounds: int, as_json: bool) -> int:
    """Self-test the table's store in a scratch prefix: can concurrent writers lose commits here?"""
    log = DeltaLog.for_table(table, storage_options=options or None)
    report = diagnose(log.store, log.location, history=lambda n: log.history(limit=n), threads=threads, rounds=rounds)
    if as_json:
        render.write_json(report.document())
    else:
        click.echo(render_report(report))
    return 0 if report.safe else EXIT_UNSAFE


def register(group: click.Group) -> None:
    group.add_command(doctor_cmd)


__all__ = ["EXIT_UNSAFE", "doctor_cmd", "register", "render_report"]
