"""``deltalog intents TABLE``: the declared intents of long-running writers, live and stale.

Registered on the main group by :mod:`deltalog.cli.main`. Read-only: it lists ``_delta_log/_intents`` and
judges each file's age by this machine's clock against the intent's own timeout (writers judge by the
store's clock, see :mod:`deltalog.intents`, so a skewed clock here can show an intent a writer would still
honour as stale, or the reverse). ``deltalog cleanup --apply`` deletes intents stale by more than a margin.
"""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console

from deltalog import DeltaLog
from deltalog.cli import render
from deltalog.cli.documents import Document, iso_ms
from deltalog.core import intents as core
from deltalog.intents import list_intents


def intents_document(log: DeltaLog) -> Document:
    now = log.now_ms()
    default_timeout = int(core.DEFAULT_TIMEOUT_S * 1000)
    rows: list[dict[str, Any]] = []
    for o in list_intents(log.store):
        rec = o.record
        rows.append(
            {
                "path": o.path,
                "txn_id": rec.txn_id if rec else o.txn_id,
                "status": "live" if o.live(now, default_timeout) else "stale",
                "readable": rec is not None,
                "error": o.error,
                "owner": rec.owner if rec else None,
                "operation": rec.operation if rec else None,
                "predicate": rec.predicate_text() if rec else None,
                "files": list(rec.files) if rec else None,
                "read_version": rec.read_version if rec else None,
                "is_compaction": rec.is_compaction if rec else None,
                "declared_at": iso_ms(rec.declared_at) if rec else None,
                "heartbeat": iso_ms(o.mtime_ms),
                "heartbeat_ms": o.mtime_ms,
                "age_ms": now - o.mtime_ms,
                "timeout_ms": o.timeout_ms(default_timeout),
            }
        )
    return {
        "table": log.location,
        "now": iso_ms(now),
        "num_live": sum(r["status"] == "live" for r in rows),
        "num_stale": sum(r["status"] == "stale" for r in rows),
        "intents": rows,
    }


def _age(ms: int) -> str:
    return f"{ms / 1000:.1f}s"


def render_intents(doc: Document, con: Console) -> None:
    con.print(
        render.key_values(
            "Intents",
            [("location", doc["table"]), ("now", doc["now"]), ("live", doc["num_live"]), ("stale", doc["num_stale"])],
        )
    )
    if doc["intents"]:
        rows = [
            (
                r["txn_id"],
                r["status"] if r["readable"] else f"{r['status']} (unreadable)",
                r["owner"] or "-",
                r["operation"] or "-",
                r["predicate"] or "-",
                _age(r["age_ms"]),
                _age(r["timeout_ms"]),
            )
            for r in doc["intents"]
        ]
        headers = ["txn id", "status", "owner", "operation", "predicate", "age", "timeout"]
        con.print(render.grid("Declared intents", headers, rows))


@click.command("intents")
@click.argument("table", metavar="TABLE")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of text.")
def intents_cmd(table: str, as_json: bool) -> None:
    """List the intents long-running writers declared on TABLE (live and stale)."""
    doc = intents_document(DeltaLog.for_table(table))
    if as_json:
        render.write_json(doc)
    else:
        render.show(render_intents, doc)


def register(group: click.Group) -> None:
    group.add_command(intents_cmd)


__all__ = ["intents_cmd", "intents_document", "register", "render_intents"]
