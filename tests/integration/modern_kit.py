"""Helpers for the modern-table commit tests (issue 14): tables made and appended to with deltalog, every
commit checked by the independent protocol checker, rows read back by both peers.

The peers read rows, not the log: duckdb's ``delta_scan`` applies deletion vectors and column mapping, and
deltalake's SQL ``QueryBuilder`` does too (its ``count()`` does not apply DVs, ``to_pyarrow_table()`` refuses
DV tables: ``../shared/docs/delta-write-rules.md`` section 16), so both are asked for the same ``ids``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder

from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.core.features.clustering import parse
from deltalog.data.files import WriteTarget, write_files
from tests.peers import duckdb_connection
from tests.protocol_checker import assert_valid

IDS = pa.schema([("id", pa.int64()), ("s", pa.string())])

#: the kinds of table every schema operation of issue 29 is proven on (each also partitioned by its tests): the
#: properties that turn each on when the table is created
KINDS: dict[str, dict[str, str]] = {
    "plain": {},
    "deletion vectors": {"delta.enableDeletionVectors": "true"},
    "change data feed": {"delta.enableChangeDataFeed": "true"},
    "row tracking": {"delta.enableRowTracking": "true"},
    "column mapping": {"delta.columnMapping.mode": "name"},
}


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "s": [f"s{i}" for i in ids]})


def files_for(log: DeltaLog, data: pa.Table) -> list[A.Add]:
    """Data files for ``data`` written by deltalog's data-file writer for the latest snapshot (physical names,
    statistics, the clustering columns' statistics)."""
    snap = log.snapshot()
    domain = snap.domain_metadata.get("delta.clustering")
    clustering = parse(domain.configuration) if domain is not None else ()
    return write_files(log.store, data, WriteTarget.of(snap, clustering))


def append(log: DeltaLog, data: pa.Table, **declared: Any) -> int:
    version = log.start_transaction().commit(files_for(log, data), **declared).version
    assert version is not None
    return version


def log_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "_delta_log").iterdir())


def duckdb_ids(root: Path, column: str = "id") -> list[Any]:
    con = duckdb_connection()
    try:
        return [r[0] for r in con.execute(f"SELECT {column} FROM delta_scan('{root}') ORDER BY 1").fetchall()]
    finally:
        con.close()


def deltalake_ids(root: Path, column: str = "id") -> list[Any]:
    dt = DeltaTable(str(root))
    out = QueryBuilder().register("t", dt).execute(f"select {column} as v from t order by 1").read_all()
    return out.column("v").to_pylist()


def checked(root: Path, ids: list[Any] | None = None, column: str = "id", *, deltalake: bool = True) -> None:
    """The protocol checker finds nothing (strict), and both peers read ``ids`` from ``column`` (sorted, nulls
    last)."""
    assert_valid(root)
    if ids is None:
        return
    expected = sorted(ids, key=lambda v: (v is None, v if v is not None else 0))
    assert duckdb_ids(root, column) == expected
    if deltalake:
        assert deltalake_ids(root, column) == expected


__all__ = ["IDS", "KINDS", "append", "checked", "deltalake_ids", "duckdb_ids", "files_for", "log_files", "rows"]
