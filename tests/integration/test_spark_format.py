"""``format("deltalog")`` as a PySpark user writes it: Delta Spark's options, refused options, typed errors.

Every table written is opened by ``deltalake`` and duckdb. Errors Spark raises on the source's behalf carry the
deltalog error, rebuilt typed (one line, its fields kept) by :func:`deltalog.spark.carried_error`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import deltalog.spark
from deltalog import DeltaLog
from deltalog.errors import (
    DeltaLogError,
    InvalidArgumentError,
    SchemaMismatchError,
    SetupError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from deltalog.spark import registration as register_module
from tests.peers import deltalake_view, duckdb_view

SCHEMA = "id long, city string, amount double, day string"


@pytest.fixture(autouse=True)
def registered(spark: Any) -> None:
    deltalog.spark.register(spark)


def frame(spark: Any, day: str, first: int, count: int, city: str = "Oslo") -> Any:
    return spark.createDataFrame([(i, city, i * 1.5, day) for i in range(first, first + count)], SCHEMA)


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def expected(day: str, first: int, count: int, city: str = "Oslo") -> list[tuple[Any, ...]]:
    return [(i, city, i * 1.5, day) for i in range(first, first + count)]


def carried(call: Callable[[], Any]) -> DeltaLogError:
    """The deltalog error a Spark call failed with, rebuilt from Spark's exception."""
    with pytest.raises(Exception) as info:
        call()
    typed = deltalog.spark.carried_error(info.value)
    assert typed is not None, str(info.value)[:2000]
    assert "\n" not in str(typed)  # one line on the driver
    return typed


def peers_agree(root: Path, count: int) -> None:
    assert deltalake_view(root).rows == duckdb_view(root).rows == count


def last_commit_info(root: Path) -> dict[str, Any]:
    return DeltaLog.for_table(root).history(limit=1)[0].commit_info


# ---------------------------------------------------------------------------------------------- registering
def test_register_turns_on_filter_pushdown_and_refuses_it_turned_off(spark: Any) -> None:
    assert spark.conf.get(register_module.FILTER_PUSHDOWN) == "true"
    deltalog.spark.register(spark)  # again: harmless
    spark.conf.set(register_module.FILTER_PUSHDOWN, "false")
    try:
        with pytest.raises(SetupError, match=r"filterPushdown\.enabled is set to false"):
            deltalog.spark.register(spark)
    finally:
        spark.conf.set(register_module.FILTER_PUSHDOWN, "true")


def test_as_delta_answers_format_delta_without_delta_jars(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "as_delta"
    assert not register_module.delta_jars_present(spark)  # this session has no Delta jars
    deltalog.spark.register(spark, as_delta=True)
    frame(spark, "2026-11-01", 0, 3).write.format("delta").mode("append").save(str(root))
    assert rows(spark.read.format("delta").load(str(root))) == expected("2026-11-01", 0, 3)
    peers_agree(root, 3)
    monkeypatch.setattr(register_module, "delta_jars_present", lambda _spark: True)
    with pytest.raises(SetupError, match="has Delta Lake's jars"):
        deltalog.spark.register(spark, as_delta=True)


# ---------------------------------------------------------------------------------------------- reading
def test_time_travel_options_and_a_schema_that_reads_fewer_columns(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "travel"
    frame(spark, "2026-11-01", 0, 4).write.format("deltalog").mode("append").save(str(root))
    frame(spark, "2026-11-02", 4, 2).write.format("deltalog").mode("append").save(str(root))
    log = DeltaLog.for_table(root)
    at_v0 = spark.read.format("deltalog").option("versionAsOf", 0).load(str(root))  # the first write created it
    assert rows(at_v0) == expected("2026-11-01", 0, 4)
    v0_time = dt.datetime.fromtimestamp(log.history()[-1].timestamp / 1000, dt.timezone.utc)
    at = spark.read.format("deltalog").option("timestampAsOf", v0_time.isoformat()).load(str(root))
    assert rows(at) == expected("2026-11-01", 0, 4)
    narrow = spark.read.format("deltalog").schema("day string, id long").load(str(root))
    assert narrow.columns == ["day", "id"]
    assert rows(narrow) == [("2026-11-01", i) for i in range(4)] + [("2026-11-02", i) for i in range(4, 6)]
    bad = carried(lambda: spark.read.format("deltalog").schema("nope long").load(str(root)).collect())
    assert isinstance(bad, SchemaMismatchError) and bad.column == "nope"
    peers_agree(root, 6)


def test_reading_a_path_that_is_not_a_table_is_a_typed_error(spark: Any, tmp_path: Path) -> None:
    error = carried(lambda: spark.read.format("deltalog").load(str(tmp_path / "nothing")))
    assert isinstance(error, TableNotFoundError)
    root = tmp_path / "t"
    frame(spark, "2026-11-01", 0, 1).write.format("deltalog").mode("append").save(str(root))
    ranged = spark.read.format("deltalog").option("startingVersion", 0).load(str(root))
    misplaced = carried(ranged.collect)
    assert isinstance(misplaced, InvalidArgumentError) and "readChangeFeed" in str(misplaced)
    peers_agree(root, 1)


# ---------------------------------------------------------------------------------------------- writing
def test_write_options_as_delta_spark_names_them(spark: Any, tmp_path: Path) -> None:
    root = str(tmp_path / "opts")
    (
        frame(spark, "2026-11-01", 0, 6)
        .coalesce(1)
        .write.format("deltalog")
        .mode("append")
        .option("partitionBy", "day")
        .option("userMetadata", "first load")
        .option("maxRecordsPerFile", 2)
        .option("compression", "zstd")
        .option("delta.appendOnly", "false")
        .option("txnAppId", "job")
        .option("txnVersion", 7)
        .save(root)
    )
    log = DeltaLog.for_table(root)
    snap = log.snapshot()
    assert snap.partition_columns == ["day"] and snap.configuration["delta.appendOnly"] == "false"
    assert snap.app_version("job") == 7 and snap.num_files == 3  # six rows, two per file
    info = last_commit_info(Path(root))
    assert info["userMetadata"] == "first load" and info["operationParameters"]["mode"] == "Append"
    path = snap.files().column("path")[0].as_py()
    assert pq.ParquetFile(Path(root) / path).metadata.row_group(0).column(0).compression == "ZSTD"
    # the same batch again: nothing written, nothing committed
    frame(spark, "2026-11-01", 0, 6).write.format("deltalog").mode("append").option("txnAppId", "job").option(
        "txnVersion", 7
    ).save(root)
    assert log.latest_version() == 0  # the first write created the table with its files
    peers_agree(Path(root), 6)


def test_replace_where_as_sql_text(spark: Any, tmp_path: Path) -> None:
    root = str(tmp_path / "rw_sql")
    writer = frame(spark, "2026-11-01", 0, 3).union(frame(spark, "2026-11-02", 3, 3)).write.format("deltalog")
    writer.mode("append").option("partitionBy", "day").save(root)
    (
        frame(spark, "2026-11-01", 10, 2, city="Lima")
        .write.format("deltalog")
        .mode("overwrite")
        .option("replaceWhere", "day = '2026-11-01'")
        .save(root)
    )
    got = rows(spark.read.format("deltalog").load(root))
    assert got == sorted(expected("2026-11-01", 10, 2, "Lima") + expected("2026-11-02", 3, 3))
    assert last_commit_info(Path(root))["operationParameters"]["predicate"] == "day = '2026-11-01'"
    # a row outside the predicate refuses the whole write
    outside = frame(spark, "2026-11-09", 20, 1).write.format("deltalog").mode("overwrite")
    error = carried(lambda: outside.option("replaceWhere", "day = '2026-11-01'").save(root))
    assert isinstance(error, InvalidArgumentError) and "does not satisfy replace_where" in str(error)
    peers_agree(Path(root), 5)


def test_merge_and_overwrite_schema_and_dynamic_partition_overwrite(spark: Any, tmp_path: Path) -> None:
    root = str(tmp_path / "schemas")
    base = frame(spark, "2026-11-01", 0, 2).union(frame(spark, "2026-11-02", 2, 2))
    base.write.format("deltalog").mode("append").option("partitionBy", "day").save(root)
    wider = frame(spark, "2026-11-03", 4, 1).selectExpr("*", "'x' AS note")
    mismatch = carried(lambda: wider.write.format("deltalog").mode("append").save(root))
    assert isinstance(mismatch, SchemaMismatchError) and "mergeSchema" in str(mismatch)
    wider.write.format("deltalog").mode("append").option("mergeSchema", "true").save(root)
    assert DeltaLog.for_table(root).snapshot().schema.names == ["id", "city", "amount", "day", "note"]
    notes = {r.id: r.note for r in spark.read.format("deltalog").load(root).collect()}
    assert notes == {0: None, 1: None, 2: None, 3: None, 4: "x"}

    # dynamic: only the partitions the data holds are replaced
    day2 = frame(spark, "2026-11-02", 50, 1).selectExpr("*", "'new' AS note")
    day2.write.format("deltalog").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(root)
    ids = sorted(r.id for r in spark.read.format("deltalog").load(root).collect())
    assert ids == [0, 1, 4, 50]

    # overwriteSchema: another schema and another partitioning, every old file removed
    other = spark.createDataFrame([(1, "a"), (2, "b")], "k int, v string")
    other.write.format("deltalog").mode("overwrite").option("overwriteSchema", "true").option("partitionBy", "v").save(
        root
    )
    snap = DeltaLog.for_table(root).snapshot()
    assert snap.schema.names == ["k", "v"] and snap.partition_columns == ["v"]
    assert rows(spark.read.format("deltalog").load(root)) == [(1, "a"), (2, "b")]
    peers_agree(Path(root), 2)


# ---------------------------------------------------------------------------------------------- refusals
@pytest.mark.parametrize(
    ("options", "error", "text"),
    [
        ({"replaceWhre": "day = 'x'"}, InvalidArgumentError, "did you mean replaceWhere"),
        ({"optimizeWrite": "true"}, UnsupportedFeatureError, "supported by Delta Spark, not yet by deltalog"),
        ({"replaceOn": "t.id = s.id"}, UnsupportedFeatureError, "not yet by deltalog"),
        ({"maxFilesPerTrigger": "1"}, InvalidArgumentError, "it is for a streaming read"),
        ({"mergeSchema": "yes"}, InvalidArgumentError, "must be 'true' or 'false'"),
        ({"txnAppId": "job"}, InvalidArgumentError, "txnAppId and txnVersion go together"),
        ({"replaceWhere": "day = 'x'"}, InvalidArgumentError, "replaceWhere needs mode('overwrite')"),
        ({"partitionOverwriteMode": "sometimes"}, InvalidArgumentError, "must be 'STATIC' or 'DYNAMIC'"),
        ({"aws_acess_key_id": "k"}, InvalidArgumentError, "unknown option 'aws_acess_key_id'"),
    ],
)
def test_options_are_refused_by_name(
    spark: Any, tmp_path: Path, options: dict[str, str], error: type[DeltaLogError], text: str
) -> None:
    root = tmp_path / "refused"
    writer = frame(spark, "2026-11-01", 0, 1).write.format("deltalog").mode("append")
    for key, value in options.items():
        writer = writer.option(key, value)
    typed = carried(lambda: writer.save(str(root)))
    assert isinstance(typed, error) and text in str(typed)
    assert not root.exists()  # refused before anything was written


def test_a_typed_error_from_a_task_keeps_its_fields(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "strict"
    DeltaLog.for_table(root).create(
        '{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}}]}'
    )
    nulls = spark.createDataFrame([(1,), (None,)], "id long").coalesce(1)
    typed = carried(lambda: nulls.write.format("deltalog").mode("append").save(str(root)))
    assert type(typed).__name__ == "NotNullViolationError" and getattr(typed, "column", None) == "id"
    assert DeltaLog.for_table(root).latest_version() == 0
    assert not list(root.rglob("*.parquet"))  # the task's files are gone
