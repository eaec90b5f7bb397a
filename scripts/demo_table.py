"""A tiny Delta table written by hand, for the demo only.

deltalog has no write path yet, and the demo must run with runtime dependencies alone (no ``deltalake``),
so this writes hive-partitioned parquet files with pyarrow and the matching ``_delta_log`` commits as
JSON lines. It stays deliberately small and separate from the demo: the write path will replace it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

PARTITION = "date"
DATA_SCHEMA = pa.schema([("id", pa.int64()), ("city", pa.string()), ("amount", pa.float64())])
# The Delta schema names the partition column too; the data files (hive style) do not carry it.
SCHEMA_STRING = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "city", "type": "string", "nullable": True, "metadata": {}},
            {"name": "amount", "type": "double", "nullable": True, "metadata": {}},
            {"name": PARTITION, "type": "date", "nullable": True, "metadata": {}},
        ],
    }
)
#: Commit times: one minute apart, starting here, so history and timestamp travel read plainly.
FIRST_COMMIT_MS = 1_793_520_000_000  # 2026-11-01T08:00:00Z
COMMIT_SPACING_MS = 60_000


@dataclass(frozen=True)
class Commit:
    """What one demo commit did, for the demo to report."""

    version: int
    operation: str
    added: list[str]
    removed: list[str]


def build(root: Path) -> list[Commit]:
    """(Re)create the demo table at ``root``: five commits, the fourth removes a file."""
    _reset(root)
    (root / "_delta_log").mkdir(parents=True)
    first = _add(root, "2026-11-01", 0, 3)
    commits = [
        _commit(root, 0, "CREATE TABLE", [_protocol(), _metadata(), first, _add(root, "2026-11-02", 3, 2)]),
        _commit(root, 1, "WRITE", [_add(root, "2026-11-02", 5, 2)]),
        _commit(root, 2, "WRITE", [_add(root, "2026-11-03", 7, 4)]),
        _commit(root, 3, "DELETE", [_remove(first, 3)]),
        _commit(root, 4, "WRITE", [_add(root, "2026-11-03", 11, 2), _add(root, "2026-11-04", 13, 3)]),
    ]
    return commits


def _reset(root: Path) -> None:
    """Delete an earlier demo table, refusing any directory that is not one (``--dir`` could be a typo)."""
    if not root.exists():
        return
    if any(root.iterdir()) and not (root / "_delta_log").is_dir():
        raise SystemExit(f"{root} exists and is not a Delta table; refusing to replace it")
    shutil.rmtree(root)


def _rows(start: int, count: int) -> pa.Table:
    cities = ["Lisbon", "Oslo", "Kyoto", "Lima", "Accra"]
    return pa.table(
        {
            "id": pa.array(range(start, start + count), pa.int64()),
            "city": pa.array([cities[i % len(cities)] for i in range(start, start + count)]),
            "amount": pa.array([round(10.5 * (i + 1), 2) for i in range(start, start + count)]),
        },
        schema=DATA_SCHEMA,
    )


def _stats(table: pa.Table) -> str:
    """The add's stats JSON: what a reader needs to skip files without opening them."""
    mins, maxs, nulls = {}, {}, {}
    for name in table.column_names:
        col = table.column(name)
        bounds = pc.min_max(col)
        mins[name], maxs[name] = bounds["min"].as_py(), bounds["max"].as_py()
        nulls[name] = col.null_count
    return json.dumps({"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls})


def _add(root: Path, date: str, start: int, count: int) -> dict[str, Any]:
    """Write one parquet file into the ``date=`` directory and return its add action."""
    rows = _rows(start, count)
    relative = f"{PARTITION}={date}/part-{start:05d}-{uuid.uuid4()}.c000.snappy.parquet"
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows, target, compression="snappy")
    return {
        "add": {
            "path": quote(relative, safe="/="),  # percent-encoded as a URI path, like Spark
            "partitionValues": {PARTITION: date},
            "size": target.stat().st_size,
            "modificationTime": int(target.stat().st_mtime * 1000),
            "dataChange": True,
            "stats": _stats(rows),
        }
    }


def _remove(add: dict[str, Any], version: int) -> dict[str, Any]:
    body = add["add"]
    return {
        "remove": {
            "path": body["path"],
            "deletionTimestamp": FIRST_COMMIT_MS + version * COMMIT_SPACING_MS,
            "dataChange": True,
            "extendedFileMetadata": True,
            "partitionValues": body["partitionValues"],
            "size": body["size"],
        }
    }


def _protocol() -> dict[str, Any]:
    return {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}


def _metadata() -> dict[str, Any]:
    return {
        "metaData": {
            "id": str(uuid.uuid4()),
            "name": "demo_sales",
            "description": "deltalog demo table",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": SCHEMA_STRING,
            "partitionColumns": [PARTITION],
            "configuration": {},
            "createdTime": FIRST_COMMIT_MS,
        }
    }


def _commit(root: Path, version: int, operation: str, actions: list[dict[str, Any]]) -> Commit:
    """Write ``<version>.json`` (commitInfo first, as Delta writers do) and date it for time travel."""
    when = FIRST_COMMIT_MS + version * COMMIT_SPACING_MS
    info: dict[str, Any] = {
        "timestamp": when,
        "operation": operation,
        "operationParameters": {},
        "isBlindAppend": operation == "WRITE",
        "engineInfo": "deltalog-demo",
    }
    if version:
        info["readVersion"] = version - 1
    path = root / "_delta_log" / f"{version:020d}.json"
    with path.open("x", encoding="utf-8") as out:  # "x": a commit file is never overwritten
        out.writelines(json.dumps(a) + "\n" for a in [{"commitInfo": info}, *actions])
    # Without in-commit timestamps, a commit's time is its file's mtime.
    os.utime(path, ns=(when * 1_000_000, when * 1_000_000))
    return Commit(
        version=version,
        operation=operation,
        added=[a["add"]["path"] for a in actions if "add" in a],
        removed=[a["remove"]["path"] for a in actions if "remove" in a],
    )


def commit_time(version: int) -> dt.datetime:
    """When the demo dated ``version``'s commit (UTC)."""
    return dt.datetime.fromtimestamp((FIRST_COMMIT_MS + version * COMMIT_SPACING_MS) / 1000, dt.timezone.utc)


__all__ = ["Commit", "build", "commit_time"]
