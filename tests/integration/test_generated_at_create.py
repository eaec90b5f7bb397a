"""Generated columns and defaults given at create (issue 29 item 4, without identity columns): the field metadata
PROTOCOL.md defines, the protocol Delta Spark chooses (generated columns: writer 4), values computed by deltalog's
writer and by deltalake's alike; bad expressions refused by name before anything is written."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder, write_deltalake

import deltalog
from deltalog import DeltaLog
from deltalog.errors import SchemaError, UnsupportedExpressionError
from tests.integration.modern_kit import duckdb_ids
from tests.peers import try_duckdb_insert
from tests.protocol_checker import assert_valid

SCHEMA = pa.schema(
    [("id", pa.int64()), ("ts", pa.timestamp("us", "UTC")), ("day", pa.date32()), ("status", pa.string())]
)


def rows(*ids: int) -> pa.Table:
    ts = [dt.datetime(2026, 11, i, 23, 30, tzinfo=dt.timezone.utc) for i in ids]
    return pa.table({"id": pa.array(ids, pa.int64()), "ts": pa.array(ts, pa.timestamp("us", "UTC"))})


def test_a_generated_column_is_computed_alike_by_deltalog_and_deltalake(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(SCHEMA, generated={"day": "CAST(ts AS DATE)"}, defaults={"status": "'new'"})
    snap = log.snapshot()
    meta = {f["name"]: f.get("metadata") or {} for f in snap.schema_json["fields"]}
    assert meta["day"] == {"delta.generationExpression": "CAST(ts AS DATE)"} and meta["status"] == {
        "CURRENT_DEFAULT": "'new'"
    }
    assert {"generatedColumns", "allowColumnDefaults"} <= snap.features and snap.protocol.min_writer_version == 7
    deltalog.write(rows(1, 2), root)
    assert_valid(root)
    ours = log.snapshot().to_arrow().sort_by("id").to_pylist()
    assert [(r["day"], r["status"]) for r in ours] == [(dt.date(2026, 11, 1), "new"), (dt.date(2026, 11, 2), "new")]
    assert duckdb_ids(root, "day") == [dt.date(2026, 11, 1), dt.date(2026, 11, 2)]
    assert "allowColumnDefaults" in (try_duckdb_insert(root, "(9, NULL, NULL, NULL)") or "")
    # deltalake 1.6.6 refuses allowColumnDefaults; a table with generated columns only it appends to
    plain = tmp_path / "g"
    DeltaLog.for_table(plain).create(SCHEMA, generated={"day": "CAST(ts AS DATE)"})
    assert DeltaLog.for_table(plain).snapshot().protocol.min_writer_version == 4  # Spark's (1,4)
    deltalog.write(rows(1).append_column("status", pa.array(["x"])), plain)
    write_deltalake(str(plain), rows(2).append_column("status", pa.array(["y"])), mode="append")
    assert_valid(plain)
    lake = QueryBuilder().register("t", DeltaTable(str(plain))).execute("select id, day from t order by id").read_all()
    assert pa.table(lake).to_pylist() == [
        {"id": 1, "day": dt.date(2026, 11, 1)},
        {"id": 2, "day": dt.date(2026, 11, 2)},
    ]
    assert duckdb_ids(plain, "day") == [dt.date(2026, 11, 1), dt.date(2026, 11, 2)]
    assert "checkConstraints" in (try_duckdb_insert(plain, "(3, NULL, NULL, 'z')") or "")  # writer 4


@pytest.mark.parametrize(
    ("generated", "error", "match"),
    [
        ({"day": "rand()"}, SchemaError, "rand"),
        ({"day": "current_timestamp()"}, SchemaError, "current_timestamp"),
        ({"day": "CAST(ts AS DATE)", "status": "CAST(day AS STRING)"}, SchemaError, "reads generated column 'day'"),
        ({"nope": "1"}, SchemaError, "no column 'nope'"),
        ({"day": "CAST(missing AS DATE)"}, UnsupportedExpressionError, "missing"),
    ],
)
def test_bad_generated_columns_are_refused_before_anything_is_written(
    tmp_path: Path, generated: dict[str, str], error: type[Exception], match: str
) -> None:
    root = tmp_path / "t"
    with pytest.raises(error, match=match):
        DeltaLog.for_table(root).create(SCHEMA, generated=generated)
    assert not root.exists() or not any(root.rglob("*.json"))


def test_spark_writer_path_computes_a_generated_column_as_deltalog_and_deltalake_do(tmp_path: Path, spark: Any) -> None:
    import deltalog.spark

    root = tmp_path / "g"
    DeltaLog.for_table(root).create(SCHEMA, generated={"day": "CAST(ts AS DATE)"})
    deltalog.write(rows(1).append_column("status", pa.array(["x"])), root)
    write_deltalake(str(root), rows(2).append_column("status", pa.array(["y"])), mode="append")
    ts = dt.datetime(2026, 11, 3, 23, 30, tzinfo=dt.timezone.utc)
    df = spark.createDataFrame([(3, ts, "z")], "id long, ts timestamp, status string")  # no day: Spark computes it
    deltalog.spark.write(df.coalesce(1), str(root))
    df.coalesce(1).write.format("deltalog").mode("append").save(str(root))  # the data source's path alike
    assert_valid(root)
    expected = [dt.date(2026, 11, 1), dt.date(2026, 11, 2), dt.date(2026, 11, 3), dt.date(2026, 11, 3)]
    ours = DeltaLog.for_table(root).snapshot().to_arrow().sort_by([("id", "ascending")]).column("day").to_pylist()
    assert ours == expected
    assert duckdb_ids(root, "day") == expected
    lake = QueryBuilder().register("t", DeltaTable(str(root))).execute("select day from t order by id").read_all()
    assert pa.table(lake).column("day").to_pylist() == expected
    back = deltalog.spark.read(spark, str(root)).orderBy("id").collect()
    assert [r.day for r in back] == expected


def test_partition_columns_none_means_unpartitioned_and_a_wrong_type_is_refused(tmp_path: Path) -> None:
    """deltalake's ``DeltaTable.create`` takes ``partition_by=None``; a deltalake user passes it on."""
    schema = pa.schema([("id", pa.int64())])
    DeltaLog.for_table(tmp_path / "t").create(schema, partition_columns=None)
    assert DeltaLog.for_table(tmp_path / "t").snapshot().partition_columns == []
    assert DeltaTable(str(tmp_path / "t")).metadata().partition_columns == []
    with pytest.raises(deltalog.errors.InvalidArgumentError, match="partition_columns"):
        DeltaLog.for_table(tmp_path / "u").create(schema, partition_columns=7)  # type: ignore[arg-type]
    assert not (tmp_path / "u" / "_delta_log").exists()
