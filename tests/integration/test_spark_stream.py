"""Streaming through ``format("deltalog")``: Delta Spark's source offsets and its exactly-once sink.

Each query runs with ``Trigger.AvailableNow`` (it reads what the source holds when it starts, in batches its
read limits allow, then stops), so a test knows when a query is done without waiting on time. A restarted query
resumes from its checkpoint; the sink commits batch ``N`` once, under the query's id, whatever is replayed.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog
import deltalog.spark
from deltalog import DeltaLog
from deltalog.errors import DataChangedError, InvalidArgumentError, SourceTableChangedError
from deltalog.spark.options import STREAM_READ, parse
from deltalog.spark.read_plan import open_read
from deltalog.spark.stream_read import StreamOptions, StreamPlanner
from tests.peers import deltalake_view, duckdb_view


@pytest.fixture(autouse=True)
def registered(spark: Any) -> None:
    deltalog.spark.register(spark)


def version_rows(v: int, count: int = 3) -> pa.Table:
    return pa.table({"id": pa.array([v * 100 + i for i in range(count)], pa.int64()), "v": pa.array([v] * count)})


def source(root: Path, versions: int) -> Path:
    """A table whose version ``v`` appends one file of rows ``v*100 ..`` (column ``v`` says which version)."""
    for v in range(versions):
        deltalog.write(version_rows(v), root)
    return root


def run(spark: Any, src: Path, sink: Path, ck: Path, **options: Any) -> Any:
    reader = spark.readStream.format("deltalog")
    for key, value in options.items():
        reader = reader.option(key, str(value))
    query = (
        reader.load(str(src))
        .writeStream.format("deltalog")
        .option("checkpointLocation", str(ck))
        .trigger(availableNow=True)
        .start(str(sink))
    )
    finish(query)
    return query


def finish(query: Any) -> None:
    """Wait for a query to stop; a failure stays readable as ``query.exception()``."""
    with contextlib.suppress(Exception):
        query.awaitTermination(600)
    assert not query.isActive


def ids(spark: Any, root: Path) -> list[int]:
    return sorted(r.id for r in spark.read.format("deltalog").load(str(root)).select("id").collect())


def sink_batches(root: Path) -> list[tuple[int, frozenset[int]]]:
    """Per sink commit after the table's creation: (the query's txn version, the source versions it holds)."""
    log = DeltaLog.for_table(root)
    out = []
    for version in range(log.latest_version() + 1):
        added = log.snapshot(version=version).to_arrow()
        before = log.snapshot(version=version - 1).to_arrow() if version else added.slice(0, 0)
        new = set(added.column("id").to_pylist()) - set(before.column("id").to_pylist())
        held = {r["v"] for r in added.to_pylist() if r["id"] in new}
        txns = log.snapshot(version=version).txns
        out.append((max(t.version for t in txns.values()) if txns else -1, frozenset(held)))
    return out


def test_snapshot_then_appends_each_once_honouring_max_files(spark: Any, tmp_path: Path) -> None:
    src, sink, ck = source(tmp_path / "src", 3), tmp_path / "sink", tmp_path / "ck"
    first = run(spark, src, sink, ck, maxFilesPerTrigger=1)
    assert first.exception() is None
    assert ids(spark, sink) == [v * 100 + i for v in range(3) for i in range(3)]
    for v in range(3, 5):  # later versions: read by the restarted query, each once
        deltalog.write(version_rows(v), src)
    second = run(spark, src, sink, ck, maxFilesPerTrigger=1)
    assert second.exception() is None
    assert ids(spark, sink) == [v * 100 + i for v in range(5) for i in range(3)]
    batches = sink_batches(sink)
    assert [held for _, held in batches] == [frozenset({v}) for v in range(5)]  # one source file per batch
    assert [txn for txn, _ in batches] == list(range(5))  # the txn version is the batch id
    assert deltalake_view(sink).rows == duckdb_view(sink).rows == 15


def test_starting_version_reads_only_later_versions(spark: Any, tmp_path: Path) -> None:
    src, sink, ck = source(tmp_path / "src", 4), tmp_path / "sink", tmp_path / "ck"
    assert run(spark, src, sink, ck, startingVersion=2).exception() is None
    assert ids(spark, sink) == [v * 100 + i for v in (2, 3) for i in range(3)]
    assert deltalake_view(sink).rows == duckdb_view(sink).rows == 6


def test_a_version_that_deletes_rows_fails_the_stream_typed_unless_skipped(spark: Any, tmp_path: Path) -> None:
    src, sink = source(tmp_path / "src", 2), tmp_path / "sink"
    DeltaLog.for_table(src).delete("id = 100")
    deltalog.write(version_rows(5), src)
    failed = run(spark, src, sink, tmp_path / "ck1", startingVersion=1)
    error = deltalog.spark.carried_error(failed.exception())
    assert isinstance(error, DataChangedError) and error.version == 2 and "skipChangeCommits" in str(error)
    done = run(spark, src, tmp_path / "sink2", tmp_path / "ck2", startingVersion=1, skipChangeCommits="true")
    assert done.exception() is None
    assert ids(spark, tmp_path / "sink2") == [100, 101, 102, 500, 501, 502]
    assert deltalake_view(tmp_path / "sink2").rows == duckdb_view(tmp_path / "sink2").rows == 6


def test_a_recreated_source_table_fails_the_restarted_query_typed(spark: Any, tmp_path: Path) -> None:
    src, sink, ck = source(tmp_path / "src", 2), tmp_path / "sink", tmp_path / "ck"
    assert run(spark, src, sink, ck).exception() is None
    shutil.rmtree(src)
    source(src, 1)  # the same location, another table
    error = deltalog.spark.carried_error(run(spark, src, sink, ck).exception())
    assert isinstance(error, SourceTableChangedError)
    assert error.table_id == DeltaLog.for_table(src).snapshot().metadata.id != error.checkpoint_table_id
    # the checkpoint taken by a query of another table: the same refusal
    other = source(tmp_path / "other", 1)
    reused = deltalog.spark.carried_error(run(spark, other, tmp_path / "sink2", ck).exception())
    assert isinstance(reused, SourceTableChangedError) and reused.checkpoint_table_id == error.checkpoint_table_id
    assert deltalake_view(sink).rows == duckdb_view(sink).rows == 6


def test_the_sink_needs_a_checkpoint_location_or_an_app_id_and_complete_mode_replaces(
    spark: Any, tmp_path: Path
) -> None:
    src, sink = source(tmp_path / "src", 2), tmp_path / "sink"
    spark.conf.set("spark.sql.streaming.checkpointLocation", str(tmp_path / "session-ck"))
    try:
        stream = spark.readStream.format("deltalog").load(str(src))
        query = stream.writeStream.format("deltalog").queryName("noid").trigger(availableNow=True).start(str(sink))
        finish(query)
    finally:
        spark.conf.unset("spark.sql.streaming.checkpointLocation")
    error = deltalog.spark.carried_error(query.exception())
    assert isinstance(error, InvalidArgumentError) and "checkpointLocation" in str(error) and "txnAppId" in str(error)
    assert not sink.exists()

    counts = spark.readStream.format("deltalog").load(str(src)).groupBy("v").count()
    complete = (
        counts.writeStream.format("deltalog")
        .outputMode("complete")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start(str(sink))
    )
    finish(complete)
    assert complete.exception() is None
    got = sorted((r.v, r["count"]) for r in spark.read.format("deltalog").load(str(sink)).collect())
    assert got == [(0, 3), (1, 3)]
    assert deltalake_view(sink).rows == duckdb_view(sink).rows == 2


def test_the_change_data_feed_as_a_stream(spark: Any, tmp_path: Path) -> None:
    src, sink, ck = tmp_path / "src", tmp_path / "sink", tmp_path / "ck"
    deltalog.write(version_rows(0), src, configuration={"delta.enableChangeDataFeed": "true"})
    deltalog.write(version_rows(1), src)
    DeltaLog.for_table(src).delete("id = 101")
    assert run(spark, src, sink, ck, readChangeFeed="true", startingVersion=1).exception() is None
    rows = sorted(
        (r.id, r._change_type, r._commit_version) for r in spark.read.format("deltalog").load(str(sink)).collect()
    )
    assert rows == [(100, "insert", 1), (101, "delete", 2), (101, "insert", 1), (102, "insert", 1)]
    assert deltalake_view(sink).rows == duckdb_view(sink).rows == 4


def test_the_planner_reads_each_version_once(tmp_path: Path) -> None:
    """Offsets asked again and again, batch by batch: each commit file is read once, and no batch holds more
    files than maxFilesPerTrigger allows."""
    src = source(tmp_path / "src", 6)
    parsed = parse({"path": str(src), "maxFilesPerTrigger": "2", "startingVersion": "0"}, STREAM_READ)
    table = open_read(parsed)
    planner = StreamPlanner(table, table.table_id, StreamOptions.of(parsed))
    start = planner.initial_offset()
    batches = []
    while True:
        end = planner.latest_offset(start, (2, None))
        if end == start:
            break
        assert planner.latest_offset(start, (2, None)) == end  # asked twice, as Spark may
        batches.append(len(planner.rows(start, end)))
        planner.committed(end)
        start = end
    assert batches == [2, 2, 2]
    assert sorted(planner.commits_read) == list(range(6))
