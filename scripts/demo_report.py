"""What the demo shows after the pipeline ran: history, the final snapshot, and Spark's reads.

Everything here reads the table through a fresh ``DeltaLog`` (nothing cached from the writers), so the
summary is what any other reader would see: the latest snapshot starts from the Spark job's checkpoint.
Row counts come from the add actions' stats (no data file opened); Spark's counts are shown next to them,
so a reader can see the log and the data agree.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import orjson
import pyarrow.compute as pc
from demo_pipeline import ReadBack
from rich.console import Console
from rich.table import Table

from deltalog import DeltaLog, Snapshot
from deltalog.cli import documents, render
from deltalog.cli.layout import Screen


def show_history(root: Path, console: Console) -> None:
    """The table's history as ``deltalog history`` prints it: whole timestamps, long parameters folded
    to the terminal's width (records on a narrow one) rather than cut."""
    console.file.flush()
    screen = Screen(console.file, width=console.width if console.is_terminal else None, color=console.is_terminal)
    render.history(documents.history(DeltaLog.for_table(root), None), screen)


def rows_by_partition(snap: Snapshot) -> dict[str, tuple[int, int]]:
    """partition -> (files, rows by their stats)."""
    out: dict[str, tuple[int, int]] = {}
    files = snap.files(stats=True)
    for values, stats in zip(files["partition_values"].to_pylist(), files["stats"].to_pylist(), strict=True):
        key = ", ".join(f"{k}={v}" for k, v in values)
        count = orjson.loads(stats)["numRecords"] if stats else 0
        n, total = out.get(key, (0, 0))
        out[key] = (n + 1, total + count)
    return dict(sorted(out.items()))


def show_snapshot(root: Path, console: Console) -> Snapshot:
    snap = DeltaLog.for_table(root).snapshot()
    segment = snap.segment
    start = f"checkpoint v{segment.checkpoint.version}" if segment.checkpoint is not None else "no checkpoint"
    by_partition = rows_by_partition(snap)
    total_rows = sum(rows for _, rows in by_partition.values())
    txns = ", ".join(f"{t.app_id}={t.version}" for t in snap.txns.values()) or "-"
    loaded = f"loaded from {start} + {len(segment.commits)} commit(s)"
    console.print(f"\n[bold]Latest snapshot[/bold]: version {snap.version} ({loaded})")
    console.print(
        f"    {snap.num_files} live files, {total_rows} rows (from the files' stats), {len(by_partition)} partitions; "
        f"app transactions: {txns}",
        markup=False,
    )
    table = Table(title="Partitions", title_justify="left")
    table.add_column("partition")
    table.add_column("files", justify="right")
    table.add_column("rows", justify="right")
    for key, (files, rows) in by_partition.items():
        table.add_row(key, str(files), str(rows))
    console.print(table)
    return snap


@dataclass(frozen=True)
class Scanned:
    """The Python reader's view: every live row, and the rows of one day above an amount, by city."""

    rows: int
    day: str
    above: float
    by_city: dict[str, int]


def scan(root: Path, day: str, above: float) -> Scanned:
    """The table read in Python with ``Snapshot.to_arrow`` (no Spark): all rows, then a filtered scan that
    opens only ``day``'s files (partition pruning) and counts rows per city."""
    snap = DeltaLog.for_table(root).snapshot()
    total = snap.to_arrow(columns=["id"]).num_rows
    wanted = (pc.field("day") == dt.date.fromisoformat(day)) & (pc.field("amount") > above)
    picked = snap.to_arrow(columns=["city"], filter=wanted)
    counts = picked.group_by("city").aggregate([("city", "count")]).to_pylist()
    return Scanned(total, day, above, dict(sorted((r["city"], r["city_count"]) for r in counts)))


def show_scan(scanned: Scanned, console: Console) -> None:
    console.print("\n[bold]Python reads[/bold] (Snapshot.to_arrow, deletion vectors and partitions handled)")
    console.print(f"    every live row: {scanned.rows} rows")
    per_city = ", ".join(f"{city}={n}" for city, n in scanned.by_city.items())
    console.print(f"    day {scanned.day}, amount > {scanned.above}: {per_city}", markup=False)


def show_reads(back: ReadBack, console: Console) -> None:
    console.print("\n[bold]Spark reads[/bold] (deltalog.spark.reader)")
    per_day = ", ".join(f"{day}={n}" for day, n in back.rows_per_day.items())
    console.print(f"    latest (v{back.latest_version}): {back.latest_rows} rows; per day: {per_day}")
    console.print(f"    time travel to v{back.earlier_version}: {back.earlier_rows} rows")


__all__ = ["Scanned", "rows_by_partition", "scan", "show_history", "show_reads", "show_scan", "show_snapshot"]
