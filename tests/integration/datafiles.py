"""Real parquet data files for log tests, and the check that both peers read the table as deltalog does.

duckdb reads data, so the tables these tests write carry a real one-row parquet file behind every add.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog import DeltaLog
from deltalog import actions as A
from tests.peers import deltalake_view, duckdb_view

SCHEMA = pa.schema([("id", pa.int64())])


def data_file(root: Path, name: str, rows: int = 1) -> A.Add:
    """Write ``<name>.parquet`` under ``root`` (``rows`` rows of ``id``) and return its add."""
    rel = f"{name}.parquet"
    pq.write_table(pa.table({"id": pa.array(range(rows), pa.int64())}), root / rel)
    return A.Add(
        path=rel,
        partition_values={},
        size=(root / rel).stat().st_size,
        modification_time=1_700_000_000_000,
        data_change=True,
        stats=f'{{"numRecords":{rows}}}',
    )


def live_paths(root: Path) -> list[str]:
    """The latest version's live files as a fresh deltalog reads them."""
    return sorted(DeltaLog.for_table(root).snapshot().files().column("path").to_pylist())


def assert_peers_agree(root: Path) -> None:
    """deltalake and duckdb open the latest version and see exactly deltalog's live files and their rows."""
    snap = DeltaLog.for_table(root).snapshot()
    ours = set(snap.files().column("path").to_pylist())
    rows = sum(pq.ParquetFile(root / p).metadata.num_rows for p in ours)
    lake = deltalake_view(root)
    assert lake.version == snap.version
    assert lake.files == ours
    assert lake.rows == rows
    duck = duckdb_view(root)
    assert duck.rows == rows
    assert duck.files == ours  # every file holds rows


def log_files(root: Path) -> dict[str, bytes]:
    """Every file directly in ``_delta_log`` with its bytes: to show a refused commit changed nothing."""
    return {p.name: p.read_bytes() for p in (root / "_delta_log").iterdir() if p.is_file()}
