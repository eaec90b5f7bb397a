"""The demo's ingest pipeline: build a small Delta table through deltalog's own write path.

A pipeline that writes Delta without Spark does three things: write parquet files, describe each with an
add action whose statistics let readers skip it, and commit the adds atomically. This module does exactly
that with pyarrow and deltalog (no ``deltalake``: the demo runs on the runtime dependencies alone), and
then exercises the rest of the write API a real table meets: an exactly-once rerun, a partition delete,
and a schema change.

Commit times are pinned one minute apart (a fixed clock for what the engine stamps, and ``os.utime`` on
each commit file, since without in-commit timestamps a commit's time *is* its file's mtime), so history
and timestamp time travel print the same on every run.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltalog import CommitResult, DeltaLog
from deltalog.actions import Add

PARTITION = "date"
APP_ID = "demo-ingest"
#: the table's schema at creation; hive-style data files hold every column but the partition column
SCHEMA = pa.schema([("id", pa.int64()), ("city", pa.string()), ("amount", pa.float64()), (PARTITION, pa.date32())])
#: the column the schema-evolution step adds
NEW_COLUMN = pa.field("channel", pa.string())
FIRST_COMMIT_MS = 1_793_520_000_000  # 2026-11-01T08:00:00Z
COMMIT_SPACING_MS = 60_000
CITIES = ("Lisbon", "Oslo", "Kyoto", "Lima", "Accra")
CHANNELS = ("web", "store", None)  # a null among them, so nullCount means something

#: the ingest batches: batch number -> (partition date, first id, row count) per file
BATCHES: dict[int, list[tuple[str, int, int]]] = {
    1: [("2026-11-01", 0, 3), ("2026-11-02", 3, 2)],
    2: [("2026-11-02", 5, 2), ("2026-11-03", 7, 4)],
    3: [("2026-11-03", 11, 2), ("2026-11-04", 13, 3)],
}
DELETED_DAY = "2026-11-01"


@dataclass(frozen=True)
class Step:
    """One pipeline step as the demo reports it; ``version`` is None when nothing was committed."""

    version: int | None
    operation: str
    detail: str


def commit_time(version: int) -> dt.datetime:
    """When the demo dates ``version``'s commit (UTC)."""
    return dt.datetime.fromtimestamp(_commit_ms(version) / 1000, dt.timezone.utc)


def _commit_ms(version: int) -> int:
    return FIRST_COMMIT_MS + version * COMMIT_SPACING_MS


class CommitClock:
    """The engine's clock, set to the planned time of the next commit (commitInfo, txn, remove times)."""

    def __init__(self) -> None:
        self.ms = FIRST_COMMIT_MS

    def __call__(self) -> float:
        return self.ms / 1000


class Pipeline:
    """The demo table's writer: each method is one pipeline step, committed through deltalog."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.clock = CommitClock()
        self.log = DeltaLog.for_table(root, clock=self.clock)

    def create(self) -> Step:
        self.clock.ms = _commit_ms(0)
        result = self.log.create(
            SCHEMA, partition_columns=[PARTITION], name="demo_sales", description="deltalog demo table"
        )
        return self._step(result, f"schema {', '.join(SCHEMA.names)}, partitioned by {PARTITION}")

    def ingest(self, batch: int) -> Step:
        """Write batch ``batch``'s files and commit them exactly once (``app_version`` is the batch number).

        The transaction starts before any file is written, so a batch the table already holds is skipped
        without leaving data files that no commit references.
        """
        self._next_commit()
        txn = self.log.start_transaction(app_id=APP_ID, app_version=batch)
        if txn.already_committed:
            assert txn.commit(operation="WRITE").skipped  # writes nothing
            reached = txn.snapshot.app_version(APP_ID)
            return Step(None, "WRITE", f"batch {batch} again: skipped, {APP_ID} already reached version {reached}")
        schema = txn.snapshot.schema
        adds = [write_file(self.root, day, _rows(schema, start, count)) for day, start, count in BATCHES[batch]]
        params = {"mode": "Append", "partitionBy": [PARTITION]}
        result = txn.commit(adds, operation="WRITE", operation_parameters=params)
        rows = sum(count for _, _, count in BATCHES[batch])
        return self._step(result, f"batch {batch}: {len(adds)} file(s), {rows} rows")

    def delete_day(self, day: str) -> Step:
        """Delete one partition by removing its files; the read is recorded, so a concurrent append there conflicts."""
        self._next_commit()
        txn = self.log.start_transaction()
        removes = txn.remove_where({PARTITION: day})
        result = txn.commit(operation="DELETE", operation_parameters={"predicate": f"{PARTITION} = '{day}'"})
        return self._step(result, f"{PARTITION}={day}: removed {len(removes)} file(s)")

    def add_column(self, field: pa.Field) -> Step:
        """Schema evolution: a new nullable column; files written before it read it as null."""
        self._next_commit()
        return self._step(self.log.add_columns([field]), f"added column {field.name}: {field.type}")

    def _next_commit(self) -> None:
        self.clock.ms = _commit_ms(self.log.snapshot().version + 1)

    def _step(self, result: CommitResult, detail: str) -> Step:
        """Date the new commit file (time travel reads its mtime) and describe the step."""
        assert result.version is not None
        when_ns = _commit_ms(result.version) * 1_000_000
        os.utime(self.root / "_delta_log" / f"{result.version:020d}.json", ns=(when_ns, when_ns))
        return Step(result.version, result.operation, detail)


def build(root: Path) -> list[Step]:
    """(Re)create the demo table at ``root`` and run the pipeline on it; one :class:`Step` per step."""
    _reset(root)
    pipeline = Pipeline(root)
    steps = [pipeline.create()]
    steps += [pipeline.ingest(batch) for batch in (1, 2, 2)]  # batch 2 twice: the rerun is skipped
    steps.append(pipeline.delete_day(DELETED_DAY))
    steps.append(pipeline.add_column(NEW_COLUMN))
    steps.append(pipeline.ingest(3))
    return steps


# ---------------------------------------------------------------------------------------------- data files


def _rows(schema: pa.Schema, start: int, count: int) -> pa.Table:
    """Rows ``start..start+count`` for the data columns of ``schema`` (the partition column is the path)."""
    ids = range(start, start + count)
    columns: dict[str, Any] = {
        "id": list(ids),
        "city": [CITIES[i % len(CITIES)] for i in ids],
        "amount": [round(10.5 * (i + 1), 2) for i in ids],
        NEW_COLUMN.name: [CHANNELS[i % len(CHANNELS)] for i in ids],
    }
    data_schema = pa.schema([f for f in schema if f.name != PARTITION])
    return pa.table({f.name: columns[f.name] for f in data_schema}, schema=data_schema)


def write_file(root: Path, day: str, rows: pa.Table) -> Add:
    """Write ``rows`` as one parquet file in the ``date=`` directory and describe it as an add action."""
    relative = f"{PARTITION}={day}/part-{uuid.uuid4()}.parquet"
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows, target, compression="snappy")
    info = target.stat()
    return Add(
        path=quote(relative, safe="/="),  # the log holds paths as URI-encoded relative paths, like Spark
        partition_values={PARTITION: day},
        size=info.st_size,
        modification_time=info.st_mtime_ns // 1_000_000,
        data_change=True,
        stats=stats_json(rows),
    )


def stats_json(rows: pa.Table, columns: Sequence[str] | None = None) -> str:
    """The add's statistics: row count, and per column min, max and null count, so readers can skip the file.

    A column with no non-null value has no min or max; Delta leaves it out rather than writing null.
    """
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for name in columns or rows.column_names:
        column = rows.column(name)
        nulls[name] = column.null_count
        bounds = pc.min_max(column)
        if bounds["min"].is_valid:
            mins[name], maxs[name] = bounds["min"].as_py(), bounds["max"].as_py()
    doc = {"numRecords": rows.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    return orjson.dumps(doc).decode()


def _reset(root: Path) -> None:
    """Delete an earlier demo table, refusing any directory that is not one (``--dir`` could be a typo)."""
    if not root.exists():
        return
    if any(root.iterdir()) and not (root / "_delta_log").is_dir():
        raise SystemExit(f"{root} exists and is not a Delta table; refusing to replace it")
    shutil.rmtree(root)


__all__ = ["APP_ID", "BATCHES", "Pipeline", "Step", "build", "commit_time", "stats_json", "write_file"]
