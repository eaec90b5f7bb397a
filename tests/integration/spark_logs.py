"""Synthetic Delta logs for the checkpoint tests and benchmark: many files, tombstones, txns, an old checkpoint.

Commit files are written directly (no data files: a checkpoint only reads the log), which builds a
100k-file log in seconds. Paths contain a space (``%20`` in the log), so keys must be decoded once.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import orjson

DAY_MS = 86_400_000
SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        {"name": "p", "type": "string", "nullable": True, "metadata": {}},
    ],
}


def _add(version: int, i: int, now_ms: int) -> dict[str, object]:
    p = f"{version % 7}"
    path = f"p={p}/part-{version:06d}-{i:05d} x.snappy.parquet"
    stats = {
        "numRecords": 100 + i,
        "minValues": {"id": version * 100_000 + i, "name": f"name-{version}-{i}"},
        "maxValues": {"id": version * 100_000 + i + 99, "name": f"name-{version}-{i}-zzzz"},
        "nullCount": {"id": 0, "name": i % 3},
    }
    return {
        "path": quote(path, safe="/="),
        "partitionValues": {"p": p},
        "size": 1000 + i,
        "modificationTime": now_ms - DAY_MS,
        "dataChange": True,
        "stats": orjson.dumps(stats).decode(),
    }


def build_log(root: Path, commits: int, per_commit: int, now_ms: int, removes_per_commit: int = 5) -> int:
    """Write versions 0..commits; returns the number of live files at the last version."""
    log_dir = root / "_delta_log"
    log_dir.mkdir(parents=True, exist_ok=True)
    header = [
        {"commitInfo": {"timestamp": now_ms - 2 * DAY_MS, "operation": "CREATE TABLE"}},
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "00000000-0000-0000-0000-000000000001",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": orjson.dumps(SCHEMA).decode(),
                "partitionColumns": ["p"],
                "configuration": {"delta.deletedFileRetentionDuration": "interval 7 days"},
                "createdTime": now_ms - 2 * DAY_MS,
            }
        },
    ]
    (log_dir / f"{0:020d}.json").write_bytes(b"\n".join(orjson.dumps(a) for a in header) + b"\n")
    live = 0
    for v in range(1, commits + 1):
        actions: list[dict[str, object]] = [{"commitInfo": {"timestamp": now_ms - DAY_MS + v, "operation": "WRITE"}}]
        adds = [_add(v, i, now_ms) for i in range(per_commit)]
        actions += [{"add": a} for a in adds]
        live += per_commit
        if v > 1:
            # remove a few files of the previous commit: half the tombstones are expired (older than 7 days)
            for i in range(min(removes_per_commit, per_commit)):
                old = _add(v - 1, i, now_ms)
                ts = now_ms - (30 * DAY_MS if i % 2 else DAY_MS)
                actions.append({"remove": {"path": old["path"], "deletionTimestamp": ts, "dataChange": True}})
                live -= 1
        actions.append({"txn": {"appId": "ingest", "version": v, "lastUpdated": now_ms - DAY_MS + v}})
        if v % 10 == 0:
            actions.append({"txn": {"appId": f"app-{v}", "version": 1, "lastUpdated": now_ms}})
        (log_dir / f"{v:020d}.json").write_bytes(b"\n".join(orjson.dumps(a) for a in actions) + b"\n")
    return live


__all__ = ["build_log"]
