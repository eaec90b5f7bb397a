"""Building blocks for the RESTORE tests: real parquet and deletion-vector files, hand-written commits, and
the rows both peers read back.

Hand-written commits stand in for what deltalog's API cannot produce (a protocol that lost a feature, a
column mapping mode that changed, a clustered table); their data files are real parquet so duckdb reads
them, and deletion vectors are real files in the protocol's format so both peers apply them.
"""

from __future__ import annotations

import json
import os
import struct
import urllib.parse
import uuid
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, QueryBuilder

from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.core.plans.vacuum import Z85_ALPHABET, dv_file_key
from tests.peers import deltalake_view, duckdb_connection

DAY = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
DV_MAGIC = 1681511377  # the RoaringBitmapArray format's magic number (PROTOCOL.md, Deletion Vector Format)


def clocked(root: Path, now_ms: int) -> DeltaLog:
    """A DeltaLog whose clock reads ``now_ms``: retention is judged against the commit times tests set."""
    return DeltaLog.for_table(root, clock=lambda: now_ms / 1000)


def set_commit_times(root: Path, first_ms: int, step_ms: int = DAY) -> None:
    """Commit ``v``'s file modification time = ``first_ms + v * step_ms`` (time travel's commit time)."""
    for path in sorted((root / "_delta_log").glob("*.json")):
        ms = first_ms + int(path.name.split(".")[0]) * step_ms
        os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


# ---------------------------------------------------------------------------------------------- files
def data_file(root: Path, name: str, table: pa.Table, partition: dict[str, str | None] | None = None) -> A.Add:
    """Write ``table`` as parquet at ``root/name`` and return its add action (with ``numRecords``)."""
    path = root / urllib.parse.unquote(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    stats = json.dumps({"numRecords": table.num_rows})
    return A.Add(name, partition or {}, path.stat().st_size, T0, True, stats=stats)


def _z85(data: bytes) -> str:
    out = []
    for i in range(0, len(data), 4):
        n = int.from_bytes(data[i : i + 4], "big")
        chunk = ""
        for _ in range(5):
            n, r = divmod(n, 85)
            chunk = Z85_ALPHABET[r] + chunk
        out.append(chunk)
    return "".join(out)


def _roaring32(values: list[int]) -> bytes:
    """A 32-bit roaring bitmap in the portable format, array containers only (small row sets)."""
    buckets: dict[int, list[int]] = {}
    for v in sorted(values):
        buckets.setdefault(v >> 16, []).append(v & 0xFFFF)
    head = struct.pack("<II", 12346, len(buckets))
    head += b"".join(struct.pack("<HH", k, len(low) - 1) for k, low in buckets.items())
    offset = len(head) + 4 * len(buckets)
    offsets, body = b"", b""
    for low in buckets.values():
        offsets += struct.pack("<I", offset + len(body))
        body += b"".join(struct.pack("<H", x) for x in low)
    return head + offsets + body


def dv_file(root: Path, rows: list[int]) -> A.DeletionVector:
    """Write a deletion vector marking ``rows`` deleted as ``deletion_vector_<uuid>.bin``; storage type ``u``."""
    ident = uuid.uuid4()
    bitmap = struct.pack("<IQI", DV_MAGIC, 1, 0) + _roaring32(rows)
    blob = b"\x01" + struct.pack(">I", len(bitmap)) + bitmap + struct.pack(">I", zlib.crc32(bitmap))
    (root / f"deletion_vector_{ident}.bin").write_bytes(blob)
    return A.DeletionVector("u", _z85(ident.bytes), len(bitmap), len(rows), offset=1)


def dv_path(root: Path, dv: A.DeletionVector) -> Path:
    key = dv_file_key(dv.storage_type, dv.path_or_inline_dv, str(root))
    assert key is not None
    return root / key


# ---------------------------------------------------------------------------------------------- logs
def write_commit(root: Path, version: int, actions: list[dict[str, Any]]) -> None:
    """Write one commit file as another engine would, with a commitInfo first."""
    log_dir = root / "_delta_log"
    log_dir.mkdir(parents=True, exist_ok=True)
    info = {"commitInfo": {"timestamp": T0 + version * DAY, "operation": "WRITE", "engineInfo": "hand-written"}}
    lines = [json.dumps(a) for a in [info, *actions]]
    (log_dir / f"{version:020d}.json").write_text("\n".join(lines) + "\n")


def commit_actions(root: Path, version: int) -> list[dict[str, Any]]:
    """The actions of one commit file, parsed."""
    text = (root / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def add_json(add: A.Add) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": add.path,
        "partitionValues": dict(add.partition_values),
        "size": add.size,
        "modificationTime": add.modification_time,
        "dataChange": True,
        "stats": add.stats,
    }
    if add.deletion_vector is not None:
        dv = add.deletion_vector
        out["deletionVector"] = {
            "storageType": dv.storage_type,
            "pathOrInlineDv": dv.path_or_inline_dv,
            "sizeInBytes": dv.size_in_bytes,
            "cardinality": dv.cardinality,
            "offset": dv.offset,
        }
    return {"add": out}


def metadata_json(
    schema: dict[str, Any], partition_columns: list[str], configuration: dict[str, str]
) -> dict[str, Any]:
    return {
        "metaData": {
            "id": "11111111-2222-3333-4444-555555555555",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(schema),
            "partitionColumns": partition_columns,
            "configuration": configuration,
            "createdTime": T0,
        }
    }


def field(name: str, kind: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "type": kind, "nullable": True, "metadata": metadata or {}}


def struct_type(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": list(fields)}


# ---------------------------------------------------------------------------------------------- peers
def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def lake_rows(root: Path, version: int | None = None) -> list[dict[str, Any]]:
    """Every row deltalake's SQL engine reads (it applies deletion vectors), sorted."""
    table = DeltaTable(str(root), version=version)
    result = pa.table(QueryBuilder().register("t", table).execute("select * from t").read_all())
    return _sorted(result.to_pylist())


def duck_rows(root: Path) -> list[dict[str, Any]]:
    """Every row duckdb's delta_scan reads at the latest version, sorted."""
    con = duckdb_connection()
    try:
        cursor = con.execute(f"SELECT * FROM delta_scan('{root}')")
        names = [d[0] for d in cursor.description]
        return _sorted([dict(zip(names, row, strict=True)) for row in cursor.fetchall()])
    finally:
        con.close()


def assert_peers_read(root: Path, expected: list[dict[str, Any]]) -> None:
    """Both peers read exactly ``expected`` at the latest version, and deltalake's live files are deltalog's."""
    assert lake_rows(root) == expected
    assert duck_rows(root) == expected
    live = {urllib.parse.unquote(a.path) for a in DeltaLog.for_table(root).snapshot().add_actions()}
    assert deltalake_view(root, rows=False).files == live


__all__ = [
    "DAY",
    "T0",
    "add_json",
    "assert_peers_read",
    "clocked",
    "commit_actions",
    "data_file",
    "duck_rows",
    "dv_file",
    "dv_path",
    "field",
    "lake_rows",
    "metadata_json",
    "set_commit_times",
    "struct_type",
    "write_commit",
]
