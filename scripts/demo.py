"""The deltalog demo: build a small local Delta table, then read it back with deltalog.

Run through ``scripts/demo``, which prepares the virtualenv. Everything the demo reads goes through the
public API (``DeltaLog``, ``Snapshot``, ``history``), so its output is a quick check that the read path
works end to end on a machine with nothing but the runtime dependencies.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

import demo_table  # a sibling file: running this script puts scripts/ first on sys.path
import pyarrow as pa

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
    return sum(json.loads(s)["numRecords"] for s in files["stats"].to_pylist() if s)


def show_files(files: pa.Table, indent: str = "    ") -> None:
    for row in files.sort_by("path").to_pylist():
        parts = ", ".join(f"{k}={v}" for k, v in row["partition_values"])
        print(f"{indent}{row['path']}  ({row['size']} bytes; {parts})")


def show_snapshot(snap: Snapshot) -> None:
    meta = snap.metadata
    print(f"latest version:    {snap.version}")
    print(f"table:             {meta.name} ({meta.description}), id {meta.id}")
    print(f"protocol:          reader {snap.protocol.min_reader_version}, writer {snap.protocol.min_writer_version}")
    print("schema:")
    for field in snap.schema:
        print(f"    {field.name}: {field.type}")
    print(f"partition columns: {snap.partition_columns}")
    live = snap.files(stats=True)
    print(f"live files:        {snap.num_files} ({rows(live)} rows by their stats)")
    show_files(live)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    root = args.dir.resolve()

    print(f"== building the demo table at {root}")
    for commit in demo_table.build(root):
        removed = f", removed {len(commit.removed)}" if commit.removed else ""
        print(f"    v{commit.version} {commit.operation:<12} added {len(commit.added)} file(s){removed}")

    log = DeltaLog.for_table(root)

    print("\n== the latest snapshot")
    show_snapshot(log.snapshot())

    day = "2026-11-03"
    print(f"\n== files(where={{'date': '{day}'}})")
    show_files(log.snapshot().files(where={"date": day}))

    print("\n== time travel: version 1")
    v1 = log.snapshot(version=1)
    print(f"    version {v1.version}: {v1.num_files} files, {rows(v1.files(stats=True))} rows")
    show_files(v1.files())

    when = demo_table.commit_time(2).isoformat().replace("+00:00", "Z")
    as_of = log.snapshot(timestamp=when)
    print(f"\n== time travel: as of {when}")
    print(f"    resolves to version {as_of.version}: {as_of.num_files} files")

    print("\n== history (newest first)")
    for entry in log.history():
        print(f"    v{entry.version}  {utc(entry.timestamp)}  {entry.operation}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
