"""``deltalog.spark.DeltaTable``: Delta Spark's ``delta.tables`` API, method for method, on pyspark local mode.

Every public name of Delta Spark's classes exists with Delta Spark's parameters and either works or raises a
typed error naming the method. MERGE (joined by Spark), UPDATE and DELETE run on the executors through the core
and commit what the Python core commits on the same data (rows, metrics, commitInfo, change data feed),
deletion vectors or rewrites; every table written is read by deltalake and duckdb.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog
from deltalog import DeltaLog, DuplicateMatchError
from deltalog.errors import (
    InvalidArgumentError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from deltalog.spark import (
    DeltaMergeBuilder,
    DeltaOptimizeBuilder,
    DeltaTable,
    DeltaTableBuilder,
    IdentityGenerator,
)
from tests.integration.dml_kit import assert_everyone_reads, commit_info, files_on_disk
from tests.integration.spark_dml_kit import CDF, DV, make_table, same_commit, twin

pytestmark = pytest.mark.interop

# Delta Spark's public names and parameters, from delta-io/delta python/delta/tables.py at
# 54461495a557e6941a8ef5f197760d6cbba51ff1 and, for what Delta 3.1-4.0 added there (clone*, addFeatureSupport,
# dropFeatureSupport, whenNotMatchedBySource*, withSchemaEvolution, clusterBy, generatedByDefaultAs,
# IdentityGenerator), the same signatures as python/delta/connect/tables.py mirrors them.
DELTA_TABLE = {
    "toDF": [],
    "alias": ["aliasName"],
    "generate": ["mode"],
    "delete": ["condition"],
    "update": ["condition", "set"],
    "merge": ["source", "condition"],
    "vacuum": ["retentionHours"],
    "history": ["limit"],
    "detail": [],
    "convertToDelta": ["sparkSession", "identifier", "partitionSchema"],
    "forPath": ["sparkSession", "path", "hadoopConf"],
    "forName": ["sparkSession", "tableOrViewName"],
    "create": ["sparkSession"],
    "createIfNotExists": ["sparkSession"],
    "replace": ["sparkSession"],
    "createOrReplace": ["sparkSession"],
    "isDeltaTable": ["sparkSession", "identifier"],
    "upgradeTableProtocol": ["readerVersion", "writerVersion"],
    "addFeatureSupport": ["featureName"],
    "dropFeatureSupport": ["featureName", "truncateHistory"],
    "restoreToVersion": ["version"],
    "restoreToTimestamp": ["timestamp"],
    "optimize": [],
    "clone": ["target", "isShallow", "replace", "properties"],
    "cloneAtVersion": ["version", "target", "isShallow", "replace", "properties"],
    "cloneAtTimestamp": ["timestamp", "target", "isShallow", "replace", "properties"],
}
DELTA_MERGE_BUILDER = {
    "whenMatchedUpdate": ["condition", "set"],
    "whenMatchedUpdateAll": ["condition"],
    "whenMatchedDelete": ["condition"],
    "whenNotMatchedInsert": ["condition", "values"],
    "whenNotMatchedInsertAll": ["condition"],
    "whenNotMatchedBySourceUpdate": ["condition", "set"],
    "whenNotMatchedBySourceDelete": ["condition"],
    "withSchemaEvolution": [],
    "execute": [],
}
DELTA_TABLE_BUILDER = {
    "tableName": ["identifier"],
    "location": ["location"],
    "comment": ["comment"],
    "addColumn": ["colName", "dataType", "nullable", "generatedAlwaysAs", "generatedByDefaultAs", "comment"],
    "addColumns": ["cols"],
    "partitionedBy": ["cols"],
    "clusterBy": ["cols"],
    "property": ["key", "value"],
    "execute": [],
}
DELTA_OPTIMIZE_BUILDER = {"where": ["partitionFilter"], "executeCompaction": [], "executeZOrderBy": ["cols"]}
IDENTITY_GENERATOR = ["start", "step"]
#: the methods deltalog refuses, typed, naming themselves
REFUSED = {"generate", "convertToDelta", "dropFeatureSupport", "clone", "cloneAtVersion", "cloneAtTimestamp"}


def _params(cls: type, name: str) -> list[str]:
    sig = inspect.signature(getattr(cls, name))
    return [p for p in sig.parameters if p not in ("self", "cls")]


@pytest.mark.parametrize(
    ("cls", "names"),
    [
        (DeltaTable, DELTA_TABLE),
        (DeltaMergeBuilder, DELTA_MERGE_BUILDER),
        (DeltaTableBuilder, DELTA_TABLE_BUILDER),
        (DeltaOptimizeBuilder, DELTA_OPTIMIZE_BUILDER),
    ],
)
def test_every_delta_spark_method_is_here_with_its_parameters(cls: type, names: dict[str, list[str]]) -> None:
    ours = {n for n in dir(cls) if not n.startswith("_")}
    assert set(names) <= ours
    assert {n: _params(cls, n) for n in names} == names
    assert IdentityGenerator() == IdentityGenerator(1, 1)
    assert [f for f in IdentityGenerator.__dataclass_fields__] == IDENTITY_GENERATOR


def test_refused_methods_raise_typed_errors_naming_themselves(tmp_path: Path, spark: Any) -> None:
    make_table(tmp_path / "t", files=1)
    t = DeltaTable.forPath(spark, str(tmp_path / "t"))
    calls = {
        "generate": lambda: t.generate("symlink_format_manifest"),
        "convertToDelta": lambda: DeltaTable.convertToDelta(spark, f"parquet.`{tmp_path}`"),
        "dropFeatureSupport": lambda: t.dropFeatureSupport("deletionVectors"),
        "clone": lambda: t.clone(str(tmp_path / "c")),
        "cloneAtVersion": lambda: t.cloneAtVersion(0, str(tmp_path / "c")),
        "cloneAtTimestamp": lambda: t.cloneAtTimestamp("2026-01-01", str(tmp_path / "c")),
    }
    assert set(calls) == REFUSED
    for name, call in calls.items():
        with pytest.raises(UnsupportedFeatureError, match=rf"DeltaTable\.{name}") as info:
            call()
        assert info.value.feature == f"DeltaTable.{name}"
    with pytest.raises(UnsupportedFeatureError, match=r"DeltaTable.forName: deltalog has no catalog"):
        DeltaTable.forName(spark, "default.events")
    assert DeltaTable.forName(spark, f"delta.`{tmp_path / 't'}`").toDF().count() == 50
    with pytest.raises(UnsupportedFeatureError, match=r"DeltaTableBuilder.tableName"):
        DeltaTable.create(spark).tableName("events")
    assert not (tmp_path / "c").exists()


def test_bad_input_is_refused_typed(tmp_path: Path, spark: Any) -> None:
    from pyspark.sql import functions as F

    make_table(tmp_path / "t", files=1)
    t = DeltaTable.forPath(spark, str(tmp_path / "t"))
    with pytest.raises(TableNotFoundError):
        DeltaTable.forPath(spark, str(tmp_path / "nothing"))
    with pytest.raises(InvalidArgumentError, match=r"fs.s3a.access.key are Hadoop settings"):
        DeltaTable.forPath(spark, str(tmp_path / "t"), {"fs.s3a.access.key": "k"})
    # a Column is taken as Delta Spark takes it; one with no SQL spelling is refused, typed, naming its place
    udf = F.udf(lambda x: x > 3, "boolean")
    with pytest.raises(InvalidArgumentError, match=r"DeltaTable.delete: condition: the Column .*user-defined"):
        t.delete(udf(F.col("id")))
    with pytest.raises(InvalidArgumentError, match=r"DeltaTable.update: set\['v'\]: the Column .*bound to the Data"):
        t.update("id < 3", {"v": t.toDF()["v"] + 1})
    with pytest.raises(InvalidArgumentError, match=r"set\['v'\] must be Spark SQL text or a pyspark Column, not int"):
        t.update("id < 3", {"v": 1})
    with pytest.raises(InvalidArgumentError, match=r"DeltaTable.merge: condition: the Column .*LambdaFunction"):
        t.merge(spark.range(1), F.exists(F.array(F.col("id")), lambda x: x > 1))
    with pytest.raises(InvalidArgumentError, match=r"DeltaTable.update: set cannot be None"):
        t.update("id < 3")
    source = spark.createDataFrame([(1, 5)], "id BIGINT, v BIGINT")
    with pytest.raises(InvalidArgumentError, match="source must be a DataFrame"):
        t.merge(source.toPandas(), "t.id = s.id")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="only the last one may omit its condition"):
        t.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedDelete().whenMatchedUpdateAll().execute()
    assert DeltaLog.for_table(tmp_path / "t").latest_version() == 1


def test_create_builders_forpath_is_delta_table_detail_and_history(tmp_path: Path, spark: Any) -> None:
    root = str(tmp_path / "events")
    assert not DeltaTable.isDeltaTable(spark, root)
    # a generated column: deltalog's create records its expression and its data writer computes the values
    gen_root = str(tmp_path / "generated")
    generated = (
        DeltaTable.create(spark)
        .location(gen_root)
        .addColumn("id", "BIGINT")
        .addColumn("n", "INT", generatedAlwaysAs="CAST(id * 2 AS INT)")
        .execute()
    )
    gen_log = DeltaLog.for_table(gen_root)
    n_field = next(f for f in gen_log.snapshot().schema_json["fields"] if f["name"] == "n")
    assert "id" in n_field["metadata"]["delta.generationExpression"]
    deltalog.write(pa.table({"id": pa.array([1, 2], pa.int64())}), gen_root)
    assert sorted(r.n for r in generated.toDF().collect()) == [2, 4]
    assert_everyone_reads(Path(gen_root), gen_log.snapshot().to_arrow())
    t = (
        DeltaTable.create(spark)
        .location(root)
        .addColumn("id", "BIGINT", nullable=False, comment="the key")
        .addColumn("day", "STRING")
        .addColumn("n", "INT")
        .partitionedBy("day")
        .property("delta.appendOnly", "false")
        .comment("events by day")
        .execute()
    )
    assert DeltaTable.isDeltaTable(spark, root)
    with pytest.raises(TableAlreadyExistsError):
        DeltaTable.create(spark).location(root).addColumn("id", "BIGINT").execute()
    assert DeltaTable.createIfNotExists(spark).location(root).addColumn("x", "INT").execute().toDF().columns == [
        "id",
        "day",
        "n",
    ]
    spark.createDataFrame([(1, "d1", 2), (2, "d2", 4)], "id BIGINT, day STRING, n INT").write.format("deltalog").mode(
        "append"
    ).save(root)
    assert sorted(r.n for r in t.toDF().collect()) == [2, 4]
    detail = t.detail().collect()[0]
    assert detail.format == "delta" and detail.partitionColumns == ["day"] and detail.numFiles == 2
    assert detail.description == "events by day" and detail.properties["delta.appendOnly"] == "false"
    log = DeltaLog.for_table(root)
    assert detail.id == log.snapshot().metadata.id
    assert detail.minWriterVersion == log.snapshot().protocol.min_writer_version
    field = next(f for f in log.snapshot().schema_json["fields"] if f["name"] == "id")
    assert field["nullable"] is False and field["metadata"]["comment"] == "the key"
    history = t.history().collect()
    assert [h.version for h in history] == [1, 0] and history[1].operation == "CREATE TABLE"
    assert [h.operation for h in t.history(1).collect()] == ["WRITE"]
    assert_everyone_reads(Path(root), log.snapshot().to_arrow())

    replaced = DeltaTable.replace(spark).location(root).addColumn("id", "BIGINT").addColumn("w", "STRING").execute()
    assert replaced.toDF().count() == 0 and replaced.toDF().columns == ["id", "w"]
    with pytest.raises(TableNotFoundError):
        DeltaTable.replace(spark).location(str(tmp_path / "none")).addColumn("id", "BIGINT").execute()
    fresh = str(tmp_path / "fresh")
    schema = spark.createDataFrame([(1, "a")], "k BIGINT, s STRING").schema
    DeltaTable.createOrReplace(spark).location(fresh).addColumns(schema).clusterBy("k").execute()
    assert DeltaLog.for_table(fresh).snapshot().schema.names == ["k", "s"]
    assert_everyone_reads(Path(root), [])
    assert_everyone_reads(Path(fresh), [])


@pytest.mark.parametrize(
    "configuration",
    [DV, {**DV, **CDF}, CDF],
    ids=["deletion_vectors", "deletion_vectors_change_feed", "rewrite_change_feed"],
)
def test_update_delete_and_merge_on_the_executors_commit_what_the_core_commits(
    tmp_path: Path, spark: Any, configuration: dict[str, str]
) -> None:
    ours = tmp_path / "spark"
    make_table(ours, configuration)
    t = DeltaTable.forPath(spark, str(ours))

    core = twin(ours, tmp_path / "core0")
    t.update("id % 7 = 0 AND day = 'd0'", {"v": "v + 1", "day": "'d9'"})
    core.update({"v": "v + 1", "day": "'d9'"}, "id % 7 = 0 AND day = 'd0'")
    same_commit(ours, tmp_path / "core0")

    core = twin(ours, tmp_path / "core1")
    t.delete("id > 180")
    core.delete("id > 180")
    same_commit(ours, tmp_path / "core1")

    log = twin(ours, tmp_path / "core")
    core_root = tmp_path / "core"
    rows = [(i, i * 100, f"s{i}") for i in range(-5, 200, 3)]
    source = spark.createDataFrame(rows, "id BIGINT, v BIGINT, day STRING")
    result = (
        t.alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedUpdate("s.id % 2 = 0", {"v": "s.v + t.v"})
        .whenMatchedDelete("s.id % 5 = 0")
        .whenNotMatchedInsertAll("s.id < 0 OR s.id > 190")
        .whenNotMatchedBySourceUpdate("t.id < 20", {"day": "'stale'"})
        .execute()
        .collect()[0]
    )
    arrow = pa.table({"id": [r[0] for r in rows], "v": [r[1] for r in rows], "day": [r[2] for r in rows]})
    core_result = (
        log.merge(arrow, "t.id = s.id")
        .when_matched_update({"v": "s.v + t.v"}, "s.id % 2 = 0")
        .when_matched_delete("s.id % 5 = 0")
        .when_not_matched_insert_all("s.id < 0 OR s.id > 190")
        .when_not_matched_by_source_update({"day": "'stale'"}, "t.id < 20")
        .execute()
    )
    same_commit(ours, core_root)
    m = core_result.metrics
    assert result.num_updated_rows == int(m["numTargetRowsUpdated"]) > 0
    assert result.num_deleted_rows == int(m["numTargetRowsDeleted"]) > 0
    assert result.num_inserted_rows == int(m["numTargetRowsInserted"]) > 0
    assert result.num_affected_rows == result.num_updated_rows + result.num_deleted_rows + result.num_inserted_rows

    evolved = spark.createDataFrame([(1, 11, "d1", "new")], "id BIGINT, v BIGINT, day STRING, extra STRING")
    t.alias("t").merge(evolved.alias("src"), "t.id = src.id").whenMatchedUpdateAll().withSchemaEvolution().execute()
    assert DeltaLog.for_table(ours).snapshot().schema.names == ["id", "v", "day", "extra"]
    assert_everyone_reads(ours, DeltaLog.for_table(ours).snapshot().to_arrow())


def test_a_duplicate_match_on_an_executor_fails_typed_and_leaves_nothing(tmp_path: Path, spark: Any) -> None:
    root = tmp_path / "t"
    log = make_table(root, DV)
    before, version = files_on_disk(root), log.latest_version()
    source = spark.createDataFrame([(3, 1), (3, 2)], "id BIGINT, v BIGINT")
    t = DeltaTable.forPath(spark, str(root)).alias("t")
    with pytest.raises(DuplicateMatchError, match="matched the target row"):
        t.merge(source.alias("s"), "t.id = s.id").whenMatchedUpdate(set={"v": "s.v"}).execute()
    assert files_on_disk(root) == before and DeltaLog.for_table(root).latest_version() == version


def test_maintenance_methods(tmp_path: Path, spark: Any) -> None:
    root = tmp_path / "t"
    log = make_table(root, files=6, rows=20, by_day=True)
    t = DeltaTable.forPath(spark, str(root))
    expected = log.snapshot().to_arrow()

    compacted = t.optimize().where("day = 'd0'").executeCompaction().collect()[0]
    assert compacted.path == log.location
    assert (compacted.metrics.numFilesRemoved, compacted.metrics.numFilesAdded) == (6, 1)
    with pytest.raises(InvalidArgumentError, match="'v' is a data column"):
        t.optimize().where("v = 1").executeCompaction()  # OPTIMIZE's where takes partition columns only
    z = t.optimize().where("day = 'd1'").executeZOrderBy(["v", "id"]).collect()[0]
    assert (z.metrics.numFilesRemoved, z.metrics.numFilesAdded) == (6, 1)
    assert commit_info(root)["operationParameters"]["zOrderBy"] == '["v","id"]'
    assert_everyone_reads(root, expected)

    restored = t.restoreToVersion(3).collect()[0]
    assert restored.num_of_files_after_restore == 6 and restored.num_restored_files == 6
    assert restored.num_removed_files == 2
    assert DeltaLog.for_table(root).snapshot().to_arrow().num_rows == 60
    assert_everyone_reads(root, log.snapshot(version=3).to_arrow())
    with pytest.raises(deltalog.errors.DeltaLogError):
        t.restoreToTimestamp("2000-01-01")  # before the table existed

    with pytest.raises(deltalog.errors.DeltaLogError, match="retention"):
        t.vacuum(0)
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        assert t.vacuum(0).collect()[0].path == log.location
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    assert len([p for p in files_on_disk(root) if p.endswith(".parquet")]) == 6
    assert_everyone_reads(root, log.snapshot(version=3).to_arrow())

    t.upgradeTableProtocol(1, 4)
    assert DeltaLog.for_table(root).snapshot().protocol.min_writer_version == 4
    t.addFeatureSupport("deletionVectors")
    assert "deletionVectors" in (DeltaLog.for_table(root).snapshot().protocol.writer_features or ())
    assert_everyone_reads(root, log.snapshot(version=3).to_arrow())
