"""Tables for the OPTIMIZE tests: many small files, in every kind of table deltalog writes, and what every reader
must agree on before and after.

Each table is built by ``deltalog.write`` in many small appends (so there is something to compact), with
deletion vectors, column mapping, row tracking, change data feed or clustering switched on as its kind says;
:func:`assert_same_rows` is the oracle: the protocol checker passes and deltalog, deltalake's SQL path and duckdb
all read the rows the table held before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import deltalog
from deltalog import DeltaLog
from tests.integration.dml_kit import enable_deletion_vectors
from tests.integration.restore_kit import duck_rows, lake_rows
from tests.protocol_checker import assert_valid

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string()), ("a", pa.int64()), ("b", pa.float64())])
KINDS = ("plain", "partitioned", "dv", "column_mapped", "row_tracking", "cdf", "clustered")
ROW_TRACKING = {"delta.enableRowTracking": "true"}


def batch(start: int, n: int, parts: int = 2) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "part": pa.array([f"p{i % parts}" for i in ids]),
            "a": (ids * 7919) % 1000,
            "b": ids * 0.5,
        },
        schema=SCHEMA,
    )


def build(root: Path, kind: str, appends: int = 8, rows_per_append: int = 25) -> DeltaLog:
    """A table of ``kind`` holding ``appends`` small appends (two partitions each when partitioned)."""
    log = DeltaLog.for_table(root)
    partition = ["part"] if kind in ("partitioned", "dv", "column_mapped", "row_tracking", "cdf") else []
    conf: dict[str, str] = {}
    if kind == "column_mapped":
        conf["delta.columnMapping.mode"] = "name"
    if kind == "row_tracking":
        conf.update(ROW_TRACKING)
    if kind == "cdf":
        conf["delta.enableChangeDataFeed"] = "true"
    log.create(
        SCHEMA,
        partition_columns=partition,
        configuration=conf,
        clustering_columns=["a", "id"] if kind == "clustered" else None,
    )
    if kind == "dv":
        enable_deletion_vectors(log)
    for i in range(appends):
        deltalog.write(batch(i * rows_per_append, rows_per_append), root)
    if kind == "dv":
        log.delete(pc.field("id").isin(pa.array(range(0, appends * rows_per_append, 5), pa.int64())))
    return log


def ordered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def table_rows(root: Path) -> list[dict[str, Any]]:
    return ordered(DeltaLog.for_table(root).snapshot().to_arrow().to_pylist())


def assert_same_rows(root: Path, expected: list[dict[str, Any]]) -> None:
    """The protocol checker passes and deltalog, deltalake's SQL path and duckdb read exactly ``expected``.

    duckdb 1.5.5 reads the partition columns of a name-mapped table as null (a peer limitation, see
    ``test_dml_write.py``): on such a table it is compared on the data columns only."""
    assert_valid(root)
    assert table_rows(root) == expected
    assert ordered(lake_rows(root)) == expected
    snap = DeltaLog.for_table(root).snapshot()
    hidden = set(snap.partition_columns) if snap.column_mapping_mode != "none" else set()
    shown = [{k: v for k, v in r.items() if k not in hidden} for r in expected]
    assert ordered([{k: v for k, v in r.items() if k not in hidden} for r in duck_rows(root)]) == ordered(shown)


def stable_row_ids(root: Path) -> dict[int, tuple[int, int]]:
    """id -> (row id, row commit version), read independently of deltalog's reader: each live file's parquet
    (its materialized columns where it has them, else baseRowId + position and defaultRowCommitVersion), rows
    its deletion vector deletes left out by deltalog's scan of the same ids."""
    log = DeltaLog.for_table(root)
    snap = log.snapshot()
    conf = snap.configuration
    id_col = conf["delta.rowTracking.materializedRowIdColumnName"]
    version_col = conf["delta.rowTracking.materializedRowCommitVersionColumnName"]
    live = set(snap.to_arrow(columns=["id"]).column("id").to_pylist())
    out: dict[int, tuple[int, int]] = {}
    for add in snap.add_actions():
        data = pq.read_table(root / add.path)
        for position, row in enumerate(_rows(data, id_col, version_col)):
            key, stored_id, stored_version = row
            if key not in live:
                continue
            assert add.base_row_id is not None and add.default_row_commit_version is not None
            row_id = stored_id if stored_id is not None else add.base_row_id + position
            version = stored_version if stored_version is not None else add.default_row_commit_version
            assert key not in out, f"id {key} is live twice"
            out[key] = (row_id, version)
    return out


def _rows(data: pa.Table, id_col: str, version_col: str) -> Iterator[tuple[int, int | None, int | None]]:
    n = data.num_rows
    ids = data.column("id").to_pylist()
    stored = data.column(id_col).to_pylist() if id_col in data.column_names else [None] * n
    versions = data.column(version_col).to_pylist() if version_col in data.column_names else [None] * n
    yield from zip(ids, stored, versions, strict=True)


__all__ = [
    "KINDS",
    "ROW_TRACKING",
    "SCHEMA",
    "assert_same_rows",
    "batch",
    "build",
    "ordered",
    "stable_row_ids",
    "table_rows",
]
