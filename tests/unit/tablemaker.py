"""Hand-written Delta tables for tests: a ``_delta_log`` of JSON commits, nothing else.

Tests that check what a reader *shows* need logs whose every byte they control (odd partition values,
deletion vectors, missing commitInfo, corrupt lines) and commit times they can travel to. So each commit
is a list of action dicts written as newline-delimited JSON, or raw bytes written verbatim, and each
commit file's modification time is set to a known instant: without in-commit timestamps that mtime *is*
the commit time time travel sees.

    root = make_table(tmp_path / "t", [[add("a.parquet", size=10)], [remove("a.parquet")]])

writes version 0 (protocol + metaData, added because the first commit has neither) plus the two commits
as versions 1 and 2, one minute apart from :data:`T0`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

#: 2026-01-01T00:00:00Z: version ``v`` is committed at ``T0 + v * STEP_MS`` unless told otherwise.
T0 = 1_767_225_600_000
STEP_MS = 60_000
TABLE_ID = "00000000-0000-4000-8000-000000000000"

Action = Mapping[str, Any]
Commit = Sequence[Action] | bytes


def commit_time(version: int) -> int:
    """The default commit time (epoch ms) :func:`make_table` gives ``version``."""
    return T0 + version * STEP_MS


def protocol(
    reader: int = 1,
    writer: int = 2,
    reader_features: Sequence[str] | None = None,
    writer_features: Sequence[str] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": writer}
    if reader_features is not None:
        body["readerFeatures"] = list(reader_features)
    if writer_features is not None:
        body["writerFeatures"] = list(writer_features)
    return {"protocol": body}


def schema_string(
    columns: Mapping[str, Any],
    nullable: Mapping[str, bool] | None = None,
    field_metadata: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """A Delta schema string for ``{name: delta type}`` (a type may be a nested type dict).

    ``field_metadata`` gives a column its field metadata (column mapping ids and physical names).
    """
    fields = [
        {
            "name": name,
            "type": t,
            "nullable": (nullable or {}).get(name, True),
            "metadata": dict((field_metadata or {}).get(name, {})),
        }
        for name, t in columns.items()
    ]
    return orjson.dumps({"type": "struct", "fields": fields}).decode()


def metadata(
    columns: Mapping[str, Any] | None = None,
    partition_columns: Sequence[str] = (),
    configuration: Mapping[str, str] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    table_id: str = TABLE_ID,
    created_time: int | None = T0,
    nullable: Mapping[str, bool] | None = None,
    field_metadata: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """A metaData action; partition columns missing from ``columns`` are added as strings."""
    cols = dict(columns if columns is not None else {"id": "long", "value": "string"})
    for p in partition_columns:
        cols.setdefault(p, "string")
    body: dict[str, Any] = {
        "id": table_id,
        "format": {"provider": "parquet", "options": {}},
        "schemaString": schema_string(cols, nullable, field_metadata),
        "partitionColumns": list(partition_columns),
        "configuration": dict(configuration or {}),
    }
    if name is not None:
        body["name"] = name
    if description is not None:
        body["description"] = description
    if created_time is not None:
        body["createdTime"] = created_time
    return {"metaData": body}


def add(
    path: str,
    size: int = 100,
    partition: Mapping[str, str | None] | None = None,
    *,
    modification_time: int = T0,
    data_change: bool = True,
    stats: Mapping[str, Any] | str | None = None,
    deletion_vector: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An add action; ``stats`` may be a dict (encoded to the JSON string Delta stores) or raw text."""
    body: dict[str, Any] = {
        "path": path,
        "partitionValues": dict(partition or {}),
        "size": size,
        "modificationTime": modification_time,
        "dataChange": data_change,
    }
    if stats is not None:
        body["stats"] = stats if isinstance(stats, str) else orjson.dumps(stats).decode()
    if deletion_vector is not None:
        body["deletionVector"] = dict(deletion_vector)
    return {"add": body}


def inline_dv(cardinality: int = 1) -> dict[str, Any]:
    """A syntactically valid inline deletion-vector descriptor (the log never decodes its bits)."""
    return {
        "storageType": "i",
        "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
        "sizeInBytes": 40,
        "cardinality": cardinality,
    }


def remove(path: str, deletion_timestamp: int = T0, data_change: bool = True) -> dict[str, Any]:
    return {"remove": {"path": path, "deletionTimestamp": deletion_timestamp, "dataChange": data_change}}


def txn(app_id: str, version: int, last_updated: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"appId": app_id, "version": version}
    if last_updated is not None:
        body["lastUpdated"] = last_updated
    return {"txn": body}


def commit_info(
    operation: str = "WRITE",
    parameters: Mapping[str, Any] | None = None,
    *,
    timestamp: int | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A commitInfo action; with ``timestamp=None``, :func:`make_table` fills in the commit's time.

    Extra keyword fields are written as given (``readVersion=0``, ``isBlindAppend=True``, ...).
    """
    body: dict[str, Any] = {"operation": operation, "operationParameters": dict(parameters or {}), **fields}
    if timestamp is not None:
        body["timestamp"] = timestamp
    return {"commitInfo": body}


def make_table(
    location: str | os.PathLike[str],
    commits: Sequence[Commit],
    *,
    partition_columns: Sequence[str] = (),
    columns: Mapping[str, Any] | None = None,
    configuration: Mapping[str, str] | None = None,
    commit_times: Sequence[int] | None = None,
) -> Path:
    """Write ``commits`` as versions 0, 1, ... of a table at ``location`` and return its root.

    When the first commit is a list without a protocol or metaData action, a version 0 holding
    ``protocol()`` and ``metadata(columns, partition_columns, configuration)`` is written first and the
    given commits follow it. A commitInfo without a timestamp gets its commit's time. ``commit_times``
    (epoch ms, one per written version) overrides :func:`commit_time`.
    """
    root = Path(location)
    log_dir = root / "_delta_log"
    log_dir.mkdir(parents=True, exist_ok=True)
    all_commits: list[Commit] = list(commits)
    first = all_commits[0] if all_commits else []
    if not isinstance(first, bytes) and not any("protocol" in a or "metaData" in a for a in first):
        all_commits.insert(0, [protocol(), metadata(columns, partition_columns, configuration)])
    if commit_times is not None and len(commit_times) != len(all_commits):
        raise ValueError(f"{len(commit_times)} commit times for {len(all_commits)} versions")
    for version, commit in enumerate(all_commits):
        when = commit_times[version] if commit_times is not None else commit_time(version)
        path = log_dir / f"{version:020d}.json"
        path.write_bytes(commit if isinstance(commit, bytes) else _encode(commit, when))
        os.utime(path, ns=(when * 1_000_000, when * 1_000_000))
    return root


def _encode(actions: Sequence[Action], when: int) -> bytes:
    lines = []
    for action in actions:
        info = action.get("commitInfo")
        if isinstance(info, Mapping) and "timestamp" not in info:
            action = {"commitInfo": {"timestamp": when, **info}}
        lines.append(orjson.dumps(action))
    return b"".join(line + b"\n" for line in lines)


__all__ = [
    "STEP_MS",
    "T0",
    "TABLE_ID",
    "add",
    "commit_info",
    "commit_time",
    "inline_dv",
    "make_table",
    "metadata",
    "protocol",
    "remove",
    "schema_string",
    "txn",
]
