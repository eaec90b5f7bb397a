"""OPTIMIZE and REORG PURGE on every kind of table deltalog writes (issue 27): the rows every reader sees are the
same before and after, the log is what Delta Spark writes, and bad requests are refused before anything is
written.

Each table is checked by the independent protocol checker and read by deltalog, deltalake's SQL path and duckdb
(:func:`tests.integration.optimize_kit.assert_same_rows`) before and after every run.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder

import deltalog
from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.dml import auto_compact
from deltalog.errors import CorruptDataError, InvalidArgumentError, UnsupportedFeatureError
from tests.integration.dml_kit import commit_info, files_on_disk, hand_commit
from tests.integration.modern_kit import files_for
from tests.integration.optimize_kit import (
    KINDS,
    SCHEMA,
    assert_same_rows,
    batch,
    build,
    ordered,
    stable_row_ids,
    table_rows,
)
from tests.peers import duckdb_connection
from tests.protocol_checker import assert_valid

pytestmark = pytest.mark.interop


def commit_lines(root: Path, version: int) -> list[dict[str, object]]:
    text = (root / "_delta_log" / f"{version:020d}.json").read_bytes()
    return [orjson.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("kind", KINDS)
def test_every_reader_sees_the_same_rows_before_and_after(tmp_path: Path, kind: str) -> None:
    root = tmp_path / kind
    log = build(root, kind)
    before = table_rows(root)
    assert_same_rows(root, before)
    files_before = log.snapshot().num_files

    result = log.optimize()

    assert result.version is not None and result.num_batches == 1 and not result.dry_run
    assert result.num_files_removed == files_before and result.num_files_added < files_before
    assert log.snapshot().num_files == result.num_files_added
    assert_same_rows(root, before)
    lines = commit_lines(root, result.version)
    assert all(not line.get(k, {}).get("dataChange", False) for line in lines for k in ("add", "remove"))
    assert not [line for line in lines if "cdc" in line]  # dataChange=false: no change files
    again = log.optimize()
    assert again.version is None and again.num_files_removed == 0  # nothing small left to merge


def test_the_commit_records_what_delta_spark_records(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = build(root, "partitioned")
    result = log.optimize(where="part = 'p0'")
    info = commit_info(root, result.version)
    assert info["operation"] == "OPTIMIZE"
    assert info["operationParameters"] == {"predicate": json.dumps(["part = 'p0'"]), "zOrderBy": "[]", "auto": "false"}
    assert info["isolationLevel"] == "SnapshotIsolation" and info["isBlindAppend"] is False
    metrics = info["operationMetrics"]
    assert set(metrics) == {
        "numAddedFiles",
        "numRemovedFiles",
        "numAddedBytes",
        "numRemovedBytes",
        "minFileSize",
        "p25FileSize",
        "p50FileSize",
        "p75FileSize",
        "maxFileSize",
        "numDeletionVectorsRemoved",
    }
    assert metrics["numRemovedFiles"] == "8" and metrics["numAddedFiles"] == "1"
    assert result.partitions_optimized == 1 and result.files_considered == 8 and result.files_skipped == 0
    assert {a.partition_values["part"] for a in log.snapshot().add_actions() if not a.data_change} == {"p0"}


def test_a_dry_run_writes_nothing_and_a_clean_table_commits_nothing(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = build(root, "partitioned", appends=3)
    before, version = files_on_disk(root), log.latest_version()
    planned = log.optimize(dry_run=True)
    assert planned.dry_run and planned.version is None and planned.num_files_removed == 6
    assert planned.num_files_added == 0 and planned.partitions_optimized == 2
    assert files_on_disk(root) == before and log.latest_version() == version
    single = tmp_path / "single"
    deltalog.write(batch(0, 10, parts=1), single, partition_by=["part"])
    left = DeltaLog.for_table(single).optimize()
    assert left.version is None and left.files_skipped == 1  # one small clean file per partition stays


@pytest.mark.parametrize(
    "where",
    [
        "part = 'p1'",
        {"part": "p1"},
        [("part", "=", "p1")],
        [[("part", "=", "p1")], [("part", "in", ["nope"])]],
        pc.field("part") == "p1",
    ],
    ids=["sql", "mapping", "dnf", "dnf-or", "expression"],
)
def test_where_selects_partitions_in_every_form(tmp_path: Path, where: object) -> None:
    root = tmp_path / "t"
    log = build(root, "partitioned", appends=3)
    old = {a.path for a in log.snapshot().add_actions()}
    result = log.optimize(where=where)
    assert result.num_files_removed == 3
    assert {a.partition_values["part"] for a in log.snapshot().add_actions() if a.path not in old} == {"p1"}


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"where": "a > 3"}, "'a' is a data column"),
        ({"where": {"b": 1.5}}, "'b' is a data column"),
        ({"where": "nope = 1"}, "nope"),
        ({"z_order_by": ["part"]}, "partition column"),
        ({"z_order_by": ["missing"]}, "not a column"),
        ({"z_order_by": ["a", "a"]}, "twice"),
        ({"target_size": 0}, "target_size"),
        ({"max_concurrent_tasks": 0}, "max_concurrent_tasks"),
    ],
)
def test_bad_requests_are_refused_before_anything_is_written(
    tmp_path: Path, request_: dict[str, object], message: str
) -> None:
    root = tmp_path / "t"
    log = build(root, "partitioned", appends=2)
    before, version = files_on_disk(root), log.latest_version()
    with pytest.raises(InvalidArgumentError, match=message):
        log.optimize(**request_)  # type: ignore[arg-type]
    assert files_on_disk(root) == before and log.latest_version() == version


def test_z_order_needs_statistics_and_is_refused_on_clustered_tables(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(SCHEMA, configuration={"delta.dataSkippingNumIndexedCols": "1"})
    deltalog.write(batch(0, 10), root)
    with pytest.raises(InvalidArgumentError, match="no statistics"):
        log.optimize(z_order_by="b")  # one column may be given bare
    clustered = build(tmp_path / "c", "clustered", appends=2)
    with pytest.raises(InvalidArgumentError, match="clustered table"):
        clustered.optimize(z_order_by=["a"])
    with pytest.raises(InvalidArgumentError, match="clustered table"):
        clustered.optimize(where="a = 1")


def test_row_ids_and_commit_versions_are_kept(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = build(root, "row_tracking")
    before_ids = stable_row_ids(root)
    before = table_rows(root)

    result = log.optimize(z_order_by=["a", "b"])

    assert result.version is not None
    assert stable_row_ids(root) == before_ids
    info = commit_info(root, result.version)
    assert info["tags"]["delta.rowTracking.preserved"] == "true"
    adds = [line["add"] for line in commit_lines(root, result.version) if "add" in line]
    assert all(a["baseRowId"] is not None and a["defaultRowCommitVersion"] == result.version for a in adds)
    assert_same_rows(root, before)
    # a second rewrite copies materialized ids again
    log.optimize(z_order_by="b")  # one column may be given bare
    assert stable_row_ids(root) == before_ids
    assert_same_rows(root, before)


def test_a_row_tracking_file_without_row_ids_is_refused(tmp_path: Path) -> None:
    """A rewrite must keep the ids: a live file whose add has no baseRowId (written before the feature, which a
    table that enabled it must not hold) cannot be rewritten, and nothing is written."""
    root = tmp_path / "t"
    log = build(root, "row_tracking", appends=2)
    snap = log.snapshot()
    orphan = next(iter(snap.add_actions()))
    bare = {"path": orphan.path, "partitionValues": dict(orphan.partition_values), "size": orphan.size}
    lines = [
        {"commitInfo": {"operation": "COMPUTE STATS", "timestamp": 1}},
        {"remove": {"path": orphan.path, "dataChange": False, "deletionTimestamp": 1}},
        {"add": {**bare, "modificationTime": 1, "dataChange": False, "stats": orphan.stats}},
    ]
    (root / "_delta_log" / f"{snap.version + 1:020d}.json").write_text("".join(json.dumps(x) + "\n" for x in lines))
    before, version = files_on_disk(root), log.latest_version()
    with pytest.raises(UnsupportedFeatureError, match="baseRowId"):
        log.optimize()
    assert files_on_disk(root) == before and log.latest_version() == version


def test_change_data_feed_sees_no_change_in_an_optimize_version(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = build(root, "cdf", appends=3)
    result = log.optimize()
    assert result.version is not None
    changes = DeltaTable(str(root)).load_cdf(starting_version=result.version, ending_version=result.version)
    assert pa.table(changes.read_all()).num_rows == 0
    everything = pa.table(DeltaTable(str(root)).load_cdf(starting_version=0).read_all())
    assert everything.num_rows == 3 * 25  # the appends' inserts, nothing from the rewrite


def test_purge_rewrites_every_file_with_a_deletion_vector(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = build(root, "dv", appends=4)
    before = table_rows(root)
    with_dvs = [a for a in log.snapshot().add_actions() if a.deletion_vector is not None]
    assert with_dvs

    result = log.purge_deletion_vectors(where="part = 'p0'")

    assert result.operation == "REORG" and result.version is not None
    assert result.deletion_vectors_purged == sum(1 for a in with_dvs if a.partition_values["part"] == "p0")
    info = commit_info(root, result.version)
    assert info["operation"] == "REORG"
    assert info["operationParameters"] == {"predicate": json.dumps(["part = 'p0'"]), "applyPurge": "true"}
    live = list(log.snapshot().add_actions())
    assert not [a for a in live if a.deletion_vector is not None and a.partition_values["part"] == "p0"]
    assert_same_rows(root, before)
    assert log.purge_deletion_vectors().deletion_vectors_purged > 0
    assert not [a for a in log.snapshot().add_actions() if a.deletion_vector is not None]
    assert_same_rows(root, before)


def test_compaction_drops_rows_deleted_by_large_files_vectors(tmp_path: Path) -> None:
    """A file at the target size is rewritten when its deletion vector marks more than 5% of its rows."""
    root = tmp_path / "t"
    log = build(root, "dv", appends=2, rows_per_append=200)
    before = table_rows(root)
    big = max(a.size for a in log.snapshot().add_actions())
    result = log.optimize(target_size=big, min_file_size=1)  # nothing is small: only the deleted rows count
    assert result.num_files_removed == 4 and result.deletion_vectors_purged == 4
    assert_same_rows(root, before)


def test_batches_commit_apart_and_each_is_whole(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = build(root, "partitioned", appends=3)
    before = table_rows(root)
    result = log.optimize(min_commit_interval=0, max_concurrent_tasks=1)
    assert result.num_batches == 2 and len(result.versions) == 2 and result.version == result.versions[-1]
    assert_same_rows(root, before)


def test_clustered_tables_are_clustered_by_their_columns_on_a_hilbert_curve(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = build(root, "clustered", appends=6, rows_per_append=50)
    before = table_rows(root)
    result = log.optimize(target_size=2048)
    assert result.version is not None and result.num_files_added > 1
    info = commit_info(root, result.version)
    assert info["operationParameters"]["clusterBy"] == '["a","id"]' and info["operationParameters"]["isFull"] == "false"
    adds = [line["add"] for line in commit_lines(root, result.version) if "add" in line]
    assert {a["clusteringProvider"] for a in adds} == {"liquid"}
    assert {a["tags"]["ZCUBE_ZORDER_BY"] for a in adds} == {'["a","id"]'}
    assert {a["tags"]["ZCUBE_ZORDER_CURVE"] for a in adds} == {"hilbert"}
    assert len({a["tags"]["ZCUBE_ID"] for a in adds}) == 1
    assert_same_rows(root, before)
    again = log.optimize(target_size=2048)
    assert again.version is None  # one cube, nothing unclustered beside it


def test_a_failing_bin_deletes_what_every_bin_wrote(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = build(root, "partitioned", appends=6)
    victim = next(a for a in log.snapshot().add_actions() if a.partition_values["part"] == "p1")
    (root / victim.path).write_bytes(b"not parquet")
    before, version = files_on_disk(root), log.latest_version()
    with pytest.raises(CorruptDataError, match=victim.path):
        log.optimize(max_concurrent_tasks=2)
    assert files_on_disk(root) == before and log.latest_version() == version


CRASH = """
import os, sys
from deltalog import DeltaLog
from deltalog.storage.faults import FaultyStore, slow
from deltalog.storage.local import LocalLogStore
root = sys.argv[1]
die = slow("put_if_absent", "_delta_log/*.json", delay_s=0, nth=1, on_fire=lambda op, path: os._exit(9))
DeltaLog(FaultyStore(LocalLogStore(root), die), root).optimize()
"""


def test_a_crash_before_the_commit_leaves_only_files_vacuum_removes(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = build(root, "partitioned", appends=4)
    before, rows, version = files_on_disk(root), table_rows(root), log.latest_version()
    done = subprocess.run([sys.executable, "-c", CRASH, str(root)], cwd=Path(__file__).parents[2], check=False)
    assert done.returncode == 9
    left = files_on_disk(root) - before
    assert left and DeltaLog.for_table(root).latest_version() == version  # written, never committed
    assert_same_rows(root, rows)
    DeltaLog.for_table(root).vacuum(retention=0, dry_run=False, force=True)
    assert files_on_disk(root) == before
    assert_same_rows(root, rows)


def test_auto_compaction_runs_after_a_commit_leaves_enough_small_files(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(SCHEMA, partition_columns=["part"], configuration={"delta.autoOptimize.autoCompact": "true"})
    for i in range(auto_compact.MIN_NUM_FILES - 1):
        log.start_transaction().commit(files_for(log, batch(i * 2, 2, parts=1)))
    assert log.snapshot().num_files == auto_compact.MIN_NUM_FILES - 1  # not yet
    before = table_rows(root)
    appended = log.start_transaction().commit(files_for(log, batch(1000, 2, parts=1)))
    assert appended.version == auto_compact.MIN_NUM_FILES
    latest = log.latest_version()
    assert latest == appended.version + 1
    info = commit_info(root, latest)
    assert info["operation"] == "OPTIMIZE" and info["operationParameters"]["auto"] == "true"
    assert log.snapshot().num_files == 1
    assert_same_rows(root, ordered([*before, *batch(1000, 2, parts=1).to_pylist()]))


def test_a_failing_auto_compaction_never_fails_the_commit(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(SCHEMA, configuration={"delta.autoOptimize.autoCompact": "auto"})
    adds = [files_for(log, batch(i * 2, 2, parts=1))[0] for i in range(auto_compact.MIN_NUM_FILES)]
    (root / adds[0].path).write_bytes(b"broken")
    result = log.start_transaction().commit(adds)
    assert result.version == 1 and log.latest_version() == 1
    assert "auto compaction failed" in caplog.text


def test_a_table_feature_deltalog_cannot_write_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = build(root, "plain", appends=3)
    snap = log.snapshot()
    uniform = A.Protocol(2, 7, None, ("icebergCompatV2", "columnMapping"))
    conf = {**snap.configuration, "delta.enableIcebergCompatV2": "true", "delta.columnMapping.mode": "name"}
    hand_commit(log, [uniform, dataclasses.replace(snap.metadata, configuration=conf)], "SET TBLPROPERTIES")
    before, version = files_on_disk(root), log.latest_version()
    with pytest.raises(UnsupportedFeatureError, match="icebergCompatV2"):
        log.optimize()
    assert files_on_disk(root) == before and log.latest_version() == version


def test_a_compaction_bin_streams_its_partition_in_bounded_row_groups(tmp_path: Path) -> None:
    """A partition larger than what a compaction bin holds becomes one file of several row groups, none larger
    than the bin holds: the bin streams instead of holding its partition as one row group. (Rows compared as
    aggregates: a million rows as Python objects would take the test a minute.)"""
    from deltalog.data.rearrange import STREAM_BUFFER_BYTES

    root = tmp_path / "t"
    rows = 250_000  # 4 MB of two 8-byte columns per file: 16 MB in all, more than a bin holds
    for i in range(4):
        ids = pa.array(range(i * rows, (i + 1) * rows), pa.int64())
        deltalog.write(pa.table({"id": ids, "x": pc.multiply(ids.cast(pa.float64()), 0.5)}), root, mode="append")
    log = DeltaLog.for_table(root)
    query = "SELECT count(*) AS n, count(DISTINCT id) AS d, sum(id) AS s, sum(x) AS sx FROM t"
    expected = {"n": 4 * rows, "d": 4 * rows, "s": sum(range(4 * rows)), "sx": sum(range(4 * rows)) / 2}

    result = log.optimize()

    assert result.num_files_removed == 4 and result.num_files_added == 1
    (path,) = [a.path for a in log.snapshot().add_actions()]
    meta = pq.ParquetFile(root / path).metadata
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert sum(groups) == 4 * rows and len(groups) >= 2
    assert max(groups) * 16 <= STREAM_BUFFER_BYTES  # a row group is half the buffer and a batch at most
    assert_valid(root)
    (by_deltalake,) = pa.table(
        QueryBuilder().register("t", DeltaTable(str(root))).execute(query).read_all()
    ).to_pylist()
    con = duckdb_connection()
    try:
        by_duckdb = con.execute(query.replace("FROM t", f"FROM delta_scan('{root}')")).fetchone()
    finally:
        con.close()
    assert by_deltalake == expected
    assert by_duckdb == tuple(expected.values())
