"""A table created by its first write: one version 0 with protocol, metadata and the files, as Delta Spark and
deltalake create one; a first write that fails leaves no table, so a retry with ``mode="error"`` goes through.

Two writers creating one table at once: the first to commit version 0 wins, the other is refused as Delta Spark
refuses it (``ProtocolChangedError``, its files deleted), unless it was another run of the same exactly-once
batch, which is then done.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.errors import ProtocolChangedError, TableAlreadyExistsError
from deltalog.storage.faults import FaultyStore, slow
from deltalog.storage.local import LocalLogStore
from tests.integration.dml_kit import assert_everyone_reads, files_on_disk
from tests.peers import deltalake_view


def sales(first: int, count: int, region: str = "eu") -> pa.Table:
    ids = range(first, first + count)
    return pa.table({"id": pa.array(ids, pa.int64()), "region": [region] * count, "amount": [i * 1.5 for i in ids]})


def log_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "_delta_log").iterdir())


def kinds(root: Path, version: int) -> list[str]:
    lines = (root / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    return [next(iter(json.loads(line))) for line in lines]


def test_the_first_write_is_one_version_holding_the_table_and_its_files(tmp_path: Path) -> None:
    root = tmp_path / "t"
    configuration = {"delta.enableRowTracking": "true", "delta.enableInCommitTimestamps": "true"}
    result = deltalog.write(
        pa.concat_tables([sales(0, 5), sales(5, 5, "us")]), root, partition_by=["region"], configuration=configuration
    )
    assert result.version == 0 and result.read_version == -1
    assert log_files(root) == ["00000000000000000000.json"]
    assert kinds(root, 0) == ["commitInfo", "protocol", "metaData", "add", "add", "domainMetadata"]
    snap = DeltaLog.for_table(root).snapshot()
    assert snap.version == 0 and snap.partition_columns == ["region"] and snap.num_files == 2
    assert {"rowTracking", "inCommitTimestamp"} <= snap.features
    assert sorted(a.base_row_id for a in snap.add_actions()) == [0, 5]  # row ids from version 0 on
    assert snap.commit_info is not None and snap.commit_info["operation"] == "WRITE"
    assert_everyone_reads(root, pa.concat_tables([sales(0, 5), sales(5, 5, "us")]))
    assert deltalake_view(root).version == 0


def test_a_first_write_that_fails_on_its_data_leaves_no_table(tmp_path: Path) -> None:
    root = tmp_path / "t"

    def batches() -> Iterator[pa.RecordBatch]:
        yield from sales(0, 1000).to_batches(max_chunksize=100)
        raise ValueError("the source broke after 1000 rows")

    with pytest.raises(ValueError, match="the source broke"):
        deltalog.write(batches(), root, target_file_size=4096)
    assert not (root / "_delta_log").exists() and files_on_disk(root) == set()  # its files were deleted
    # a batch the table cannot hold: refused after the first files were written
    bad = [sales(0, 100).to_batches()[0], pa.record_batch({"id": ["x"], "region": ["eu"], "amount": [1.0]})]
    with pytest.raises(deltalog.DeltaLogError, match="id"):
        deltalog.write(bad, root)
    assert not (root / "_delta_log").exists() and files_on_disk(root) == set()
    # nothing is in the way of the retry, not even with mode="error"
    assert deltalog.write(sales(0, 10), root, mode="error").version == 0
    assert_everyone_reads(root, sales(0, 10))


def test_an_exactly_once_first_write_records_its_batch_in_version_0(tmp_path: Path) -> None:
    root = tmp_path / "t"
    first = deltalog.write(sales(0, 3), root, app_id="etl", app_version=1)
    again = deltalog.write(sales(0, 3), root, app_id="etl", app_version=1)
    assert first.version == 0 and again.skipped and again.version is None
    assert "txn" in kinds(root, 0) and DeltaLog.for_table(root).snapshot().app_version("etl") == 1
    assert_everyone_reads(root, sales(0, 3))


def creating_race(root: Path, rival: pa.Table, **rival_args: object) -> FaultyStore:
    """A store on which our commit of version 0 first lets a rival write (and create) the table."""

    def rival_creates(op: str, path: str) -> None:
        deltalog.write(rival, root, **rival_args)

    return FaultyStore(
        LocalLogStore(str(root)), slow("put_if_absent", "_delta_log/*0.json", delay_s=0, nth=1, on_fire=rival_creates)
    )


def test_two_creators_race_one_wins_version_0_and_the_other_is_refused_as_delta_spark_refuses_it(
    tmp_path: Path,
) -> None:
    root = tmp_path / "t"
    root.mkdir()
    store = creating_race(root, sales(100, 2, "us"))
    with pytest.raises(ProtocolChangedError, match="another writer created the table") as info:
        deltalog.write(sales(0, 5), DeltaLog(store, str(root)), partition_by=["region"])
    assert info.value.winning_version == 0
    winner = DeltaLog.for_table(root).snapshot()
    assert winner.version == 0 and winner.partition_columns == []  # the rival's table, as it made it
    assert files_on_disk(root) == {a.path for a in winner.add_actions()}  # the loser's files were deleted
    assert_everyone_reads(root, sales(100, 2, "us"))
    # the rerun sees the table and appends to it
    assert deltalog.write(sales(0, 5), root).version == 1
    assert_everyone_reads(root, pa.concat_tables([sales(100, 2, "us"), sales(0, 5)]))


def test_a_race_lost_to_another_run_of_the_same_batch_is_a_skip(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    store = creating_race(root, sales(0, 5), app_id="etl", app_version=7)
    result = deltalog.write(sales(0, 5), DeltaLog(store, str(root)), app_id="etl", app_version=7)
    assert result.skipped and result.version is None
    assert DeltaLog.for_table(root).latest_version() == 0
    assert_everyone_reads(root, sales(0, 5))  # once: the loser's files were deleted


def test_an_engine_creates_a_table_with_its_files_in_one_commit(tmp_path: Path) -> None:
    """The action-level API: ``start_create`` stages protocol and metadata; the engine writes its own parquet
    files against ``txn.new_table`` and commits them as version 0."""
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    txn = log.start_create(pa.schema([("id", pa.int64()), ("day", pa.string())]), partition_columns=["day"])
    assert txn.read_version == -1 and txn.new_table is not None and txn.new_table.partition_columns == ["day"]
    assert not root.exists()  # nothing written yet
    (root / "day=d1").mkdir(parents=True)
    pq.write_table(pa.table({"id": [1, 2]}), root / "day=d1" / "part-0.parquet")
    size = os.path.getsize(root / "day=d1" / "part-0.parquet")
    add = A.Add("day=d1/part-0.parquet", {"day": "d1"}, size=size, modification_time=1, data_change=True)
    assert txn.commit([add]).version == 0
    assert kinds(root, 0) == ["commitInfo", "protocol", "metaData", "add"]
    assert_everyone_reads(root, [{"id": 1, "day": "d1"}, {"id": 2, "day": "d1"}])
    with pytest.raises(TableAlreadyExistsError):
        log.start_create(pa.schema([("id", pa.int64())]))
