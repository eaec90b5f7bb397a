"""What each verb reports, as plain JSON-ready values.

Both outputs are drawn from these documents: ``--json`` prints one verbatim, the rich tables lay the same
values out for people. Building them once keeps the two from ever disagreeing, and makes the JSON shape
the contract. Keys are snake_case and always present (``null`` when a value is unknown), except
``files[].stats``, present only with ``--stats``. An instant is given twice: ``X`` as ISO-8601 UTC with
milliseconds (``2026-01-01T00:00:00.000Z``, ``null`` when not representable) and ``X_ms`` as the exact
epoch milliseconds the log holds.

``describe``::

    {"table": str, "version": int,
     "protocol": PROTOCOL,
     "metadata": {"id": str, "name": str|null, "description": str|null,
                  "format": {"provider": str, "options": {str: str}},
                  "partition_columns": [str], "configuration": {str: str} (sorted by key),
                  "created_time": ISO|null, "created_time_ms": int|null},
     "schema": [{"name": str, "type": str, "nullable": bool}],
     "num_files": int, "total_size": int, "column_mapping_mode": "none"|"name"|"id",
     "features_in_use": [{"feature": str, "evidence": str, "supported": bool}] (sorted by feature),
     "app_transactions": [{"app_id": str, "version": int,
                           "last_updated": ISO|null, "last_updated_ms": int|null}] (sorted by app_id)}

    PROTOCOL = {"min_reader_version": int, "min_writer_version": int,
                "reader_features": [str]|null, "writer_features": [str]|null,
                "features": [str] (every feature supported, listed or implied by legacy versions; sorted)}

``protocol.features`` is what the protocol *allows*; ``features_in_use`` what the table actively uses,
with the evidence (a property, columns, a domain, a count of files; see :mod:`deltalog.cli.feature_use`).
``schema[].type`` is the Delta type name (``long``, ``decimal(10,2)``); nested types read
``struct<a: long, b: string>``, ``array<string>``, ``map<string, long>``.

``history`` (newest first; commitInfo fields as the writer wrote them, ``null`` when absent)::

    {"table": str,
     "commits": [{"version": int, "timestamp": ISO|null, "timestamp_ms": int, "operation": str|null,
                  "operation_parameters": {...}|null, "read_version": int|null,
                  "is_blind_append": bool|null, "engine_info": str|null}]}

``files`` (sorted by path; with ``--limit N`` only the first N, while ``num_files`` and ``total_size``
still count every file selected)::

    {"table": str, "version": int, "partition_columns": [str], "where": {str: str},
     "num_files": int, "total_size": int,
     "files": [{"path": str, "partition_values": {str: str|null}, "size": int,
                "modification_time": ISO|null, "modification_time_ms": int,
                "deletion_vector": bool,
                "stats": {...}|str|null}]}

``stats`` is the file's statistics object, ``null`` when the log has none, or the raw text when it is not
valid JSON. ``partition_values`` uses logical column names (column mapping undone).

``snapshot``::

    {"table": str, "version": int, "timestamp": ISO|null, "timestamp_ms": int|null,
     "num_files": int, "total_size": int, "protocol": PROTOCOL, "partition_columns": [str]}

``timestamp`` is the commit time of ``version`` as time travel sees it (``null`` when that commit file
is gone and only a checkpoint remains).

``commit``::

    {"table": str, "version": int|null, "attempts": int, "winners": [int], "txn_id": str,
     "operation": str, "skipped": bool, "read_version": int, "isolation_level": str, "num_actions": int}

``version`` is ``null`` (and ``skipped`` true, ``attempts`` 0, ``num_actions`` 0) when an exactly-once
commit found its application already at that version. ``num_actions`` counts the actions written besides
commitInfo (the txn action of ``--app-id`` included).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from deltalog import CommitResult, DeltaLog, InvalidArgumentError, Snapshot, TableNotFoundError
from deltalog.actions import Protocol
from deltalog.cli.feature_use import features_in_use

Document = dict[str, Any]


def iso_ms(ms: int | None) -> str | None:
    """ISO-8601 UTC with milliseconds; ``None`` for values a datetime cannot hold (corrupt logs have them)."""
    if ms is None:
        return None
    try:
        when = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _instant(key: str, ms: int | None) -> Document:
    return {key: iso_ms(ms), f"{key}_ms": ms}


def type_string(t: Any) -> str:
    """A Delta type as one readable string; nested types spelled out so one column is one line."""
    if isinstance(t, str):
        return t
    if not isinstance(t, Mapping):
        return str(t)
    kind = t.get("type")
    if kind == "struct":
        inner = ", ".join(f"{f.get('name')}: {type_string(f.get('type'))}" for f in t.get("fields") or [])
        return f"struct<{inner}>"
    if kind == "array":
        return f"array<{type_string(t.get('elementType'))}>"
    if kind == "map":
        return f"map<{type_string(t.get('keyType'))}, {type_string(t.get('valueType'))}>"
    return str(kind)


def protocol_document(protocol: Protocol, features: Iterable[str]) -> Document:
    return {
        "min_reader_version": protocol.min_reader_version,
        "min_writer_version": protocol.min_writer_version,
        "reader_features": None if protocol.reader_features is None else list(protocol.reader_features),
        "writer_features": None if protocol.writer_features is None else list(protocol.writer_features),
        "features": sorted(features),
    }


def _total_size(files: pa.Table) -> int:
    total = pc.sum(files.column("size")).as_py() if files.num_rows else 0
    return int(total or 0)


def describe(snap: Snapshot) -> Document:
    meta = snap.metadata
    schema = snap.schema_json
    return {
        "table": snap.context.location,
        "version": snap.version,
        "protocol": protocol_document(snap.protocol, snap.features),
        "metadata": {
            "id": meta.id,
            "name": meta.name,
            "description": meta.description,
            "format": {"provider": meta.format.provider, "options": dict(meta.format.options)},
            "partition_columns": list(meta.partition_columns),
            "configuration": dict(sorted(meta.configuration.items())),
            **_instant("created_time", meta.created_time),
        },
        "schema": [
            {"name": f.get("name"), "type": type_string(f.get("type")), "nullable": bool(f.get("nullable", True))}
            for f in schema.get("fields") or []
        ],
        "num_files": snap.num_files,
        "total_size": _total_size(snap.files()),
        "column_mapping_mode": snap.column_mapping_mode,
        "features_in_use": features_in_use(snap),
        "app_transactions": [
            {"app_id": t.app_id, "version": t.version, **_instant("last_updated", t.last_updated)}
            for _, t in sorted(snap.txns.items())
        ],
    }


def history(log: DeltaLog, limit: int | None) -> Document:
    commits = []
    for entry in log.history(limit=limit):
        commits.append(
            {
                "version": entry.version,
                **_instant("timestamp", entry.timestamp),
                "operation": entry.operation,
                "operation_parameters": entry.operation_parameters,
                "read_version": entry.read_version,
                "is_blind_append": entry.is_blind_append,
                "engine_info": entry.engine_info,
                "user_id": entry.user_id,
                "user_name": entry.user_name,
                "isolation_level": entry.isolation_level,
                "operation_metrics": entry.operation_metrics,
                "user_metadata": entry.user_metadata,
                "cluster_id": entry.cluster_id,
                "job": entry.job,
                "notebook": entry.notebook,
                "in_commit_timestamp": entry.in_commit_timestamp,
            }
        )
    return {"table": log.location, "commits": commits}


def check_partition_filter(snap: Snapshot, where: Mapping[str, str]) -> None:
    """Refuse ``--where`` on a data column: the engine would keep every file, which reads as a match.

    Columns the table does not have at all are left to the engine, whose message lists the columns.
    """
    columns = {f.get("name") for f in snap.schema_json.get("fields") or []}
    partition = snap.partition_columns
    for column in where:
        if column in columns and column not in partition:
            by = ", ".join(repr(p) for p in partition) if partition else "nothing (it is not partitioned)"
            raise InvalidArgumentError(
                f"--where {column}: {column!r} is not a partition column; the table is partitioned by {by}"
            )


def _stats_value(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def files(snap: Snapshot, where: Mapping[str, str], stats: bool, limit: int | None = None) -> Document:
    check_partition_filter(snap, where)
    table = snap.files(where=dict(where) or None, stats=stats)
    num_files, total_size = table.num_rows, _total_size(table)
    table = table.take(pc.sort_indices(table, [("path", "ascending")]))
    if limit is not None:
        table = table.slice(0, limit)
    rows = []
    for r in table.to_pylist():
        row: Document = {
            "path": r["path"],
            "partition_values": dict(r["partition_values"] or []),
            "size": r["size"],
            **_instant("modification_time", r["modification_time"]),
            "deletion_vector": r["deletion_vector"] is not None,
        }
        if stats:
            row["stats"] = _stats_value(r["stats"])
        rows.append(row)
    return {
        "table": snap.context.location,
        "version": snap.version,
        "partition_columns": snap.partition_columns,
        "where": dict(where),
        "num_files": num_files,
        "total_size": total_size,
        "files": rows,
    }


def commit_time(log: DeltaLog, version: int) -> int | None:
    """The time travel sees for ``version``; ``None`` when its commit file was cleaned up."""
    try:
        timeline = log.commit_timeline()
    except TableNotFoundError:  # only checkpoints left: the table exists, its commit times do not
        return None
    return dict(timeline).get(version)


def snapshot(snap: Snapshot, log: DeltaLog) -> Document:
    """``snap`` summarised; ``log`` (the table it came from) gives its commit time as time travel sees it."""
    return {
        "table": snap.context.location,
        "version": snap.version,
        **_instant("timestamp", commit_time(log, snap.version)),
        "num_files": snap.num_files,
        "total_size": _total_size(snap.files()),
        "protocol": protocol_document(snap.protocol, snap.features),
        "partition_columns": snap.partition_columns,
    }


def commit(log: DeltaLog, result: CommitResult) -> Document:
    """What a commit did; a skipped exactly-once commit reads ``version: null`` rather than an error."""
    return {
        "table": log.location,
        "version": result.version,
        "attempts": result.attempts,
        "winners": list(result.winners),
        "txn_id": result.txn_id,
        "operation": result.operation,
        "skipped": result.skipped,
        "read_version": result.read_version,
        "isolation_level": result.isolation_level,
        "num_actions": len(result.actions),
    }


__all__ = [
    "Document",
    "check_partition_filter",
    "commit",
    "commit_time",
    "describe",
    "files",
    "history",
    "iso_ms",
    "protocol_document",
    "snapshot",
    "type_string",
]
