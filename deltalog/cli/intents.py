"""``deltalog intents TABLE``: the declared intents of long-running writers, live and stale.

Registered on the main group by :mod:`deltalog.cli.main`. Read-only: it lists ``_delta_log/_intents`` and
judges each file's age by this machine's clock against the intent's own timeout (writers judge by the
store's clock, see :mod:`deltalog.table.declared_intents`, so a skewed clock here can show an intent a
writer would still honour as stale, or the reverse). ``deltalog cleanup --apply`` deletes intents stale by
more than a margin.
"""

from __future__ import annotations

from typing import Any

import click

from deltalog import DeltaLog
from deltalog.cli import render
from deltalog.cli.documents import Document, iso_ms
from deltalog.cli.layout import Column, Screen
from deltalog.cli.options import emit, limit_option, open_log, output_format
from deltalog.core import declared_intents as core
from deltalog.table.declared_intents import list_intents


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


def intents_listing(doc: Document) -> render.Listing:
    columns = (
        Column("txn id"),
        Column("status"),
        Column("owner", fold=True),
        Column("operation"),
        Column("predicate", fold=True),
        Column("age", right=True),
        Column("timeout", right=True),
    )
    names = ("txn_id", "status", "owner", "operation", "predicate", "age_ms", "timeout_ms")
    rows = [
        (
            r["txn_id"],
            r["status"] if r["readable"] else f"{r['status']} (unreadable)",
            r["owner"],
            r["operation"],
            r["predicate"],
            r["age_ms"],
            r["timeout_ms"],
        )
        for r in doc["intents"]
    ]
    return render.Listing(columns, names, rows)


def render_intents(doc: Document, screen: Screen) -> None:
    screen.pairs(
        "Intents",
        [("location", doc["table"]), ("now", doc["now"]), ("live", doc["num_live"]), ("stale", doc["num_stale"])],
    )
    if doc["intents"]:
        listing = intents_listing(doc)
        rows = [(*r[:5], _age(r[5]), _age(r[6])) for r in listing.rows]
        screen.line()
        screen.table("Declared intents", listing.columns, rows)
        total = doc["num_live"] + doc["num_stale"]
        render.shown_note(screen, len(doc["intents"]), total, "intent", "--limit N shows the first N")


@click.command("intents")
@click.argument("table", metavar="TABLE")
@limit_option
@output_format(csv=True)
def intents_cmd(table: str, limit: int | None, fmt: str) -> None:
    """List the intents long-running writers declared on TABLE (live and stale)."""
    doc = intents_document(open_log(table))
    if limit is not None:
        doc = {**doc, "intents": doc["intents"][:limit]}
    emit(doc, fmt, render_intents, intents_listing)


__all__ = ["intents_cmd", "intents_document", "intents_listing", "render_intents"]
