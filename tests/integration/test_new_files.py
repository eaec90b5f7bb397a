"""``log.new_files()``: the rows appended after a version, for append-only pipelines on tables with or without
change data feed (Delta Spark's streaming source): versions that remove or change rows are refused by name, or
skipped whole with ``skip_change_commits``; rearrangements (``dataChange=false``) add nothing."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog import DeltaLog
from deltalog.errors import DataChangedError, InvalidArgumentError, VersionNotFoundError
from tests.integration.dml_kit import assert_everyone_reads, hand_commit


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "p": ["a" if i % 2 else "b" for i in ids]})


def appended(reader: pa.RecordBatchReader) -> list[tuple[int, int]]:
    table = reader.read_all()
    return sorted(zip(table.column("_commit_version").to_pylist(), table.column("id").to_pylist(), strict=True))


def test_appends_after_a_version_without_change_data_feed(tmp_path: Path) -> None:
    root = tmp_path / "t"
    deltalog.write(rows(1, 2), root, partition_by=["p"])  # v0: the table and its first rows
    deltalog.write(rows(3), root)  # v1
    deltalog.write(rows(4, 5), root)  # v2
    log = DeltaLog.for_table(root)
    reader = log.new_files(0)
    assert reader.schema.names == ["id", "p", "_commit_version", "_commit_timestamp"]
    assert appended(reader) == [(1, 3), (2, 4), (2, 5)]
    assert appended(log.new_files(-1)) == [(0, 1), (0, 2), (1, 3), (2, 4), (2, 5)]
    assert appended(log.new_files(0, 1)) == [(1, 3)]
    assert appended(log.new_files(2)) == []  # nothing new yet
    assert appended(log.new_files(1, 99)) == [(2, 4), (2, 5)]
    with pytest.raises(VersionNotFoundError, match="since_version 3 is after the latest version 2"):
        log.new_files(3)
    with pytest.raises(InvalidArgumentError, match="until_version 0 is before since_version 1"):
        log.new_files(1, 0)
    assert_everyone_reads(root, log.snapshot().to_arrow())


def test_versions_that_remove_rows_are_refused_or_skipped(tmp_path: Path) -> None:
    root = tmp_path / "t"
    deltalog.write(rows(1, 2), root, partition_by=["p"])  # v0
    log = DeltaLog.for_table(root)
    log.delete("id = 2")  # v1: a whole file removed
    deltalog.write(rows(3), root)  # v2
    deltalog.write(rows(5), root, mode="overwrite", replace_where={"p": "a"})  # v3: removes and adds
    deltalog.write(rows(7), root)  # v4
    snap = log.snapshot()
    moved = [a.remove(1, data_change=False) for a in snap.add_actions()]
    again = []
    for i, a in enumerate(snap.add_actions()):  # the same rows in new files, as a compaction writes them
        copy = f"{a.path.rsplit('/', 1)[0]}/compacted-{i}.parquet"
        shutil.copyfile(root / a.path, root / copy)
        again.append(dataclasses.replace(a, path=copy, data_change=False))
    hand_commit(log, [*moved, *again], "OPTIMIZE")  # v5: a rearrangement
    with pytest.raises(DataChangedError, match="version 1 removes or changes rows") as refused:
        log.new_files(0)
    assert refused.value.version == 1
    assert appended(log.new_files(0, skip_change_commits=True)) == [(2, 3), (4, 7)]
    assert appended(log.new_files(3)) == [(4, 7)]
    assert_everyone_reads(root, log.snapshot().to_arrow())
