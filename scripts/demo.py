"""The deltalog demo: build a small Delta table through deltalog's write path, then read it back.

Run through ``scripts/demo``, which prepares the virtualenv. The pipeline (:mod:`demo_table`) writes parquet
with pyarrow and commits through ``DeltaLog``; everything read back here goes through the public read API
(``Snapshot``, time travel, ``history``), and the last step checks the log against the data files with
plain pyarrow. So a green run shows the write and read paths agree end to end on a machine with nothing
but the runtime dependencies. It exits non-zero when the check fails.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from urllib.parse import unquote

import demo_table  # a sibling file: running this script puts scripts/ first on sys.path
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from deltalog import DeltaLog, Snapshot

DEFAULT_DIR = Path(__file__).resolve().parent.parent / "demo-table"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Build a small Delta table and read it back with deltalog.")
    parser.add_argument(
        "--dir",
        type=Path,
        default=DEFAULT_DIR,
        help=f"where to (re)create the demo table (default: {DEFAULT_DIR})",
    )
    return parser.parse_args(argv)


def utc(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat(timespec="seconds")


def rows(files: pa.Table) -> int:
    """Row count from the add stats: the log knows it without opening a data file."""
    return sum(orjson.loads(s)["numRecords"] for s in files["stats"].to_pylist() if s)


def show_files(files: pa.Table, indent: str = "    ") -> None:
    for row in files.sort_by("path").to_pylist():
        parts = ", ".join(f"{k}={v}" for k, v in row["partition_values"])
        print(f"{indent}{row['path']}  ({row['size']} bytes; {parts})")


def show_schema(snap: Snapshot, indent: str = "    ") -> None:
    for field in snap.schema:
        print(f"{indent}{field.name}: {field.type}")


def show_snapshot(snap: Snapshot) -> None:
    meta = snap.metadata
    print(f"latest version:    {snap.version}")
    print(f"table:             {meta.name} ({meta.description}), id {meta.id}")
    print(f"protocol:          reader {snap.protocol.min_reader_version}, writer {snap.protocol.min_writer_version}")
    print("schema:")
    show_schema(snap)
    print(f"partition columns: {snap.partition_columns}")
    print(f"app transactions:  {', '.join(f'{t.app_id}={t.version}' for t in snap.txns.values()) or '-'}")
    live = snap.files(stats=True)
    print(f"live files:        {snap.num_files} ({rows(live)} rows by their stats)")
    show_files(live)


def verify(root: Path, snap: Snapshot) -> list[str]:
    """Open every live file with plain pyarrow and compare its row count with the log's stats.

    Returns the mismatches (empty when the log and the data agree).
    """
    problems = []
    for row in snap.files(stats=True).sort_by("path").to_pylist():
        expected = orjson.loads(row["stats"])["numRecords"]
        path = root / unquote(row["path"])
        actual = pq.ParquetFile(path).metadata.num_rows
        status = "ok" if actual == expected else "MISMATCH"
        print(f"    {row['path']}: {actual} rows in the file, {expected} in the stats  {status}")
        if actual != expected:
            problems.append(f"{row['path']}: {actual} rows, stats say {expected}")
    return problems


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    root = args.dir.resolve()

    print(f"== building the demo table at {root} (deltalog's write path)")
    steps = demo_table.build(root)
    for step in steps:
        version = f"v{step.version}" if step.version is not None else "--"
        print(f"    {version:<3} {step.operation:<12} {step.detail}")

    log = DeltaLog.for_table(root)  # a fresh reader: nothing cached from the writer

    print("\n== the latest snapshot")
    latest = log.snapshot()
    show_snapshot(latest)

    day = "2026-11-03"
    print(f"\n== files(where={{'date': '{day}'}})")
    show_files(latest.files(where={"date": day}))

    print("\n== time travel: version 1")
    v1 = log.snapshot(version=1)
    print(f"    version {v1.version}: {v1.num_files} files, {rows(v1.files(stats=True))} rows")
    show_files(v1.files())

    before = next(s.version for s in steps if s.operation == "ADD COLUMNS" and s.version) - 1
    print(f"\n== time travel: the schema at version {before}, before the new column")
    show_schema(log.snapshot(version=before))

    when = demo_table.commit_time(2).isoformat().replace("+00:00", "Z")
    as_of = log.snapshot(timestamp=when)
    print(f"\n== time travel: as of {when}")
    print(f"    resolves to version {as_of.version}: {as_of.num_files} files")

    print("\n== history (newest first)")
    for entry in log.history():
        params = entry.commit_info.get("operationParameters") or {}
        shown = ", ".join(f"{k}={v}" for k, v in params.items() if v not in (None, "null", "[]", "{}"))
        print(f"    v{entry.version}  {utc(entry.timestamp)}  {entry.operation:<12} {shown}".rstrip())

    print("\n== check: live files read with plain pyarrow against the log's stats")
    problems = verify(root, latest)
    total = sum(pq.ParquetFile(root / unquote(p)).metadata.num_rows for p in latest.files().column("path").to_pylist())
    print(f"    {total} rows in {latest.num_files} files; the stats say {rows(latest.files(stats=True))}")
    if problems:
        print("FAILED: " + "; ".join(problems), file=sys.stderr)
        return 1
    print("    the log and the data files agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
