"""Deletion vectors written by deltalog.data.dv, read by both peers: exactly the surviving rows, also after a merge.

deltalog makes the table and its data files; the DV commits are written by hand here (deltalog refuses to set
``delta.enableDeletionVectors`` until the modern-tables work lands, and the DV delete operation is a later
step): protocol (3, 7) with ``deletionVectors``, the property, then ``remove(old logical file with its old DV)``
+ ``add(same path, the new DV, tightBounds false)`` per Delta Spark's ``removeRows``. duckdb's ``delta_scan``
and deltalake's SQL path must return exactly the rows the DV leaves, and deltalog's own file reader the same.
The rows deleted include long runs, so the peers also read the run containers ``pyroaring`` writes.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.data.dv import inline_deletion_vector, merge_deletion_vector, read_deletion_vector, write_deletion_vector
from deltalog.data.read import DataFile, read_file, read_schema
from tests.integration.dml_kit import enable_deletion_vectors, hand_commit
from tests.integration.restore_kit import duck_rows, lake_rows
from tests.peers import deltalake_view, duckdb_view

ROWS = 5000


def _table(root: Path) -> DeltaLog:
    """A deltalog-made table: two real parquet files, one in a partition whose directory has a space."""
    log = DeltaLog.for_table(root)
    log.create(pa.schema([("id", pa.int64()), ("part", pa.string())]), partition_columns=["part"])
    adds = []
    for i, (value, directory) in enumerate([("a", "part=a"), ("x y", "part=x%20y")]):
        data = pa.table({"id": list(range(i * ROWS, (i + 1) * ROWS))})
        on_disk = root / directory.replace("%20", " ") / f"part-{i}.parquet"
        on_disk.parent.mkdir(parents=True)
        pq.write_table(data, on_disk, row_group_size=1500)
        stats = json.dumps({"numRecords": ROWS, "minValues": {"id": i * ROWS}, "maxValues": {"id": (i + 1) * ROWS - 1}})
        adds.append(A.Add(f"{directory}/part-{i}.parquet", {"part": value}, on_disk.stat().st_size, 0, True, stats))
    txn = log.start_transaction()
    txn.stage(adds)
    txn.commit()
    return log


def _delete(log: DeltaLog, path: str, rows: Sequence[int], inline: bool = False) -> A.DeletionVector:
    """Delete ``rows`` of the live file ``path`` with a DV merged into its current one (Spark's removeRows)."""
    (old,) = [a for a in log.snapshot().add_actions() if a.path == path]
    if inline:
        assert old.deletion_vector is None
        dv = inline_deletion_vector(rows, num_records=ROWS)
    else:
        dv = merge_deletion_vector(log.store, old.deletion_vector, rows, num_records=ROWS)
    stats = json.dumps({**json.loads(old.stats or "{}"), "tightBounds": False})
    remove = A.Remove(
        old.path,
        int(time.time() * 1000),
        True,
        True,
        old.partition_values,
        old.size,
        tags=old.tags,
        deletion_vector=old.deletion_vector,
    )
    add = dataclasses.replace(old, stats=stats, deletion_vector=dv)
    hand_commit(log, [remove, add], "DELETE")
    return dv


def _deltalog_rows(log: DeltaLog) -> list[dict[str, Any]]:
    snap = log.snapshot()
    spec = read_schema(snap.schema_json, snap.partition_columns, snap.column_mapping_mode)
    out = [r for a in snap.add_actions() for r in read_file(log.store, spec, DataFile.of(a)).to_pylist()]
    return sorted(out, key=lambda r: json.dumps(r, sort_keys=True))


def _assert_everyone_reads(root: Path, log: DeltaLog, deleted: set[int]) -> None:
    expected = sorted(
        ({"id": i, "part": "a" if i < ROWS else "x y"} for i in range(2 * ROWS) if i not in deleted),
        key=lambda r: json.dumps(r, sort_keys=True),
    )
    assert duckdb_view(root).rows == len(expected)
    assert deltalake_view(root).rows == len(expected)
    assert duck_rows(root) == expected
    assert lake_rows(root) == expected
    assert _deltalog_rows(log) == expected


def test_dvs_written_here_are_applied_by_both_peers_and_merged_dvs_too(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _table(root)
    enable_deletion_vectors(log)
    first_rows = [0, 3, *range(100, 1200), 1499, 1500, ROWS - 1]  # a run, row-group edges, the last row
    first = _delete(log, "part=a/part-0.parquet", first_rows)
    assert first.cardinality == len(first_rows)
    _assert_everyone_reads(root, log, set(first_rows))

    second = _delete(log, "part=a/part-0.parquet", [3, 7, *range(4000, 4100)])
    merged = set(first_rows) | {7, *range(4000, 4100)}
    assert second.cardinality == len(merged) > first.cardinality
    assert set(read_deletion_vector(log.store, second, num_records=ROWS).tolist()) == merged
    _assert_everyone_reads(root, log, merged)

    inline = _delete(log, "part=x%20y/part-1.parquet", [2, 4], inline=True)
    assert inline.storage_type == "i"
    _assert_everyone_reads(root, log, merged | {ROWS + 2, ROWS + 4})


def test_a_dv_on_a_file_deltalog_made_is_found_again_by_its_descriptor(tmp_path: Path) -> None:
    """The descriptor alone leads back to the bytes: the file name is derived from the Z85 UUID."""
    log = _table(tmp_path / "t")
    dv = write_deletion_vector(log.store, [1, 2, 3], num_records=ROWS)
    assert [p.name for p in (tmp_path / "t").glob("deletion_vector_*.bin")] == [f"deletion_vector_{_uuid(dv)}.bin"]
    assert read_deletion_vector(DeltaLog.for_table(tmp_path / "t").store, dv).tolist() == [1, 2, 3]


def _uuid(dv: A.DeletionVector) -> str:
    import uuid

    from deltalog.core.pathkeys import z85_decode

    return str(uuid.UUID(bytes=z85_decode(dv.path_or_inline_dv)))
