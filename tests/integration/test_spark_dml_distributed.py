"""``DeltaTable``'s MERGE, UPDATE and DELETE executed by Spark, on pyspark local mode.

A MERGE's source stays a DataFrame: Spark joins it with the candidate files' rows and the executors write; a
source larger than ``spark.driver.maxResultSize`` (1m in the shared session) merges, where collecting it fails.
A DELETE's files are matched and rewritten (or given deletion vectors) by Spark tasks. Conditions and values may
be pyspark Columns, as in Delta Spark, with the same results as the SQL text. Every result equals the Python
core's on a copy of the table (rows, counts, change data feed, row ids) and is read by deltalake and duckdb.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from deltalog import DeltaLog, DuplicateMatchError
from deltalog.spark import DeltaTable
from tests.integration.dml_kit import assert_everyone_reads, commit_info, files_on_disk
from tests.integration.spark_dml_kit import CDF, DV, make_table, same_result, twin
from tests.integration.test_merge_row_tracking import ids_of

pytestmark = pytest.mark.interop


def _jobs_of(spark: Any, group: str) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def test_a_merge_source_larger_than_the_driver_may_collect_is_joined_by_spark(tmp_path: Path, spark: Any) -> None:
    from pyspark.sql import functions as F

    ours = tmp_path / "spark"
    make_table(ours, DV)
    core = twin(ours, tmp_path / "core")
    n = 25_000
    source = spark.range(0, n, 1, 4).select(
        F.col("id"), (F.col("id") * 3).alias("v"), F.concat(F.lit("s"), F.lpad(F.col("id").cast("string"), 60, "0"))
    )
    source = source.toDF("id", "v", "day")
    with pytest.raises(Exception, match="maxResultSize"):
        source.toArrow()  # what the driver could not hold
    t = DeltaTable.forPath(spark, str(ours)).alias("t")
    result = (
        t.merge(source.alias("s"), "t.id = s.id")
        .whenMatchedUpdate(set={"v": "s.v"})
        .whenNotMatchedInsertAll()
        .execute()
        .collect()[0]
    )
    assert (result.num_updated_rows, result.num_inserted_rows) == (200, n - 200)
    ids = np.arange(n, dtype=np.int64)
    days = [f"s{i:060d}" for i in range(n)]
    arrow = pa.table({"id": ids, "v": ids * 3, "day": days})
    core.merge(arrow, "t.id = s.id").when_matched_update({"v": "s.v"}).when_not_matched_insert_all().execute()
    assert commit_info(ours)["operationMetrics"]["numSourceRows"] == str(n)
    same_result(ours, tmp_path / "core")


@pytest.mark.parametrize("configuration", [DV, {}], ids=["deletion_vectors", "rewrite"])
def test_delete_runs_on_the_executors_and_commits_what_the_core_commits(
    tmp_path: Path, spark: Any, configuration: dict[str, str]
) -> None:
    ours = tmp_path / "spark"
    make_table(ours, configuration, files=6, rows=30)
    t = DeltaTable.forPath(spark, str(ours))
    sc = spark.sparkContext
    for i, condition in enumerate(["id % 4 = 1 OR id > 170", "day = 'd0' AND v < 300", None]):
        core = twin(ours, tmp_path / f"core{i}")
        group = f"deltalog-delete-{len(configuration)}-{i}"
        sc.setJobGroup(group, "a distributed delete")
        try:
            t.delete(condition)
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
        core.delete(condition)
        assert _jobs_of(spark, group) >= 1  # the files were matched and rewritten by a Spark job
        same_result(ours, tmp_path / f"core{i}")
    assert DeltaLog.for_table(ours).snapshot().to_arrow().num_rows == 0


def test_a_delete_on_the_executors_keeps_row_ids_as_the_core_does(tmp_path: Path, spark: Any) -> None:
    """Without deletion vectors, the tasks' rewrites copy rows with their row ids and commit versions too."""
    ours = tmp_path / "spark"
    make_table(ours, {"delta.enableRowTracking": "true"}, files=3, rows=20)
    before = ids_of(ours)
    core = twin(ours, tmp_path / "core")
    DeltaTable.forPath(spark, str(ours)).delete("id % 7 = 3")
    core.delete("id % 7 = 3")
    same_result(ours, tmp_path / "core")
    after = ids_of(ours)
    assert after == {k: v for k, v in before.items() if k % 7 != 3} == ids_of(tmp_path / "core")
    assert commit_info(ours)["operationMetrics"]["numCopiedRows"] != "0"
    assert_everyone_reads(ours, DeltaLog.for_table(tmp_path / "core").snapshot().to_arrow())


@pytest.mark.parametrize("configuration", [{**DV, **CDF}, CDF], ids=["deletion_vectors", "rewrite"])
def test_a_change_feed_delete_logs_removed_rows_only_where_the_core_does(
    tmp_path: Path, spark: Any, configuration: dict[str, str]
) -> None:
    """Spark's tasks log every row they remove; when no file of the statement was partly rewritten, the driver
    drops those change files again, as a local run writes none (removes alone say what was deleted)."""
    ours = tmp_path / "spark"
    make_table(ours, configuration, files=4, rows=25)
    t = DeltaTable.forPath(spark, str(ours))
    core = twin(ours, tmp_path / "core0")
    t.delete("id < 50")  # two whole files
    core.delete("id < 50")
    same_result(ours, tmp_path / "core0")
    assert not [p for p in files_on_disk(ours) if p.startswith("_change_data")]
    core = twin(ours, tmp_path / "core1")
    t.delete("id % 10 = 0 OR id >= 90")  # two files partly
    core.delete("id % 10 = 0 OR id >= 90")
    same_result(ours, tmp_path / "core1")


def test_columns_mean_what_their_sql_text_means(tmp_path: Path, spark: Any) -> None:
    from pyspark.sql import functions as F

    ours = tmp_path / "spark"
    make_table(ours, {**DV, **CDF})
    t = DeltaTable.forPath(spark, str(ours))

    core = twin(ours, tmp_path / "core0")
    t.delete((F.col("id") > 180) | F.col("day").isin("none"))
    core.delete("id > 180 OR day IN ('none')")
    same_result(ours, tmp_path / "core0")

    core = twin(ours, tmp_path / "core1")
    t.update(condition=(F.col("id") % 7 == 0) & (F.col("day") == "d0"), set={"v": F.col("v") + 1, "day": F.lit("d9")})
    core.update({"v": "v + 1", "day": "'d9'"}, "id % 7 = 0 AND day = 'd0'")
    same_result(ours, tmp_path / "core1")

    rows = [(i, i * 100, f"s{i}") for i in range(-5, 200, 3)]
    source = spark.createDataFrame(rows, "id BIGINT, v BIGINT, day STRING")
    arrow = pa.table({"id": [r[0] for r in rows], "v": [r[1] for r in rows], "day": [r[2] for r in rows]})
    core = twin(ours, tmp_path / "core2")
    (
        t.alias("t")
        .merge(source.alias("s"), (F.col("t.id") == F.col("s.id")) & F.col("s.v").isNotNull())
        .whenMatchedUpdate(F.col("s.id") % 2 == 0, {"v": F.col("s.v") + F.col("t.v")})
        .whenMatchedDelete(F.col("s.id") % 5 == 0)
        .whenNotMatchedInsert(
            F.col("s.id") < 0, {"id": F.col("s.id"), "v": F.lit(0).cast("bigint"), "day": F.upper(F.col("s.day"))}
        )
        .whenNotMatchedBySourceUpdate(F.col("t.id") < 20, {"day": F.lit("stale")})
        .execute()
    )
    (
        core.merge(arrow, "t.id = s.id AND s.v IS NOT NULL")
        .when_matched_update({"v": "s.v + t.v"}, "s.id % 2 = 0")
        .when_matched_delete("s.id % 5 = 0")
        .when_not_matched_insert({"id": "s.id", "v": "CAST(0 AS BIGINT)", "day": "upper(s.day)"}, "s.id < 0")
        .when_not_matched_by_source_update({"day": "'stale'"}, "t.id < 20")
        .execute()
    )
    same_result(ours, tmp_path / "core2")
    assert (
        commit_info(ours)["operationParameters"]["predicate"] == '["((`t`.`id` = `s`.`id`) AND (`s`.`v` IS NOT NULL))"]'
    )

    # an insert-only merge: the target is read for the condition's columns alone, no duplicate rule applies
    core = twin(ours, tmp_path / "core3")
    more = spark.createDataFrame([(500, 1, "n"), (500, 2, "n"), (3, 9, "n")], "id BIGINT, v BIGINT, day STRING")
    t.alias("t").merge(more.alias("s"), F.expr("t.id = s.id")).whenNotMatchedInsertAll().execute()
    arrow = pa.table({"id": [500, 500, 3], "v": [1, 2, 9], "day": ["n", "n", "n"]})
    core.merge(arrow, "t.id = s.id").when_not_matched_insert_all().execute()
    same_result(ours, tmp_path / "core3")


def test_a_duplicate_match_across_tasks_is_refused_before_anything_commits(tmp_path: Path, spark: Any) -> None:
    """Source rows that match one target row meet in one task (the join's rows are shuffled by file), however
    the source was partitioned; the error is typed and every file any task wrote is deleted."""
    root = tmp_path / "t"
    log = make_table(root, {**DV, **CDF}, files=6, rows=20)
    before, version = files_on_disk(root), log.latest_version()
    source = (
        spark.range(0, 120, 1, 4)
        .selectExpr("id", "id AS v")
        .union(spark.range(77, 78, 1, 1).selectExpr("id", "0 AS v"))
    )
    t = DeltaTable.forPath(spark, str(root)).alias("t")
    with pytest.raises(DuplicateMatchError, match="matched the target row") as info:
        t.merge(source.alias("s"), "t.id = s.id").whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedInsert(
            values={"id": "s.id", "v": "s.v", "day": "'new'"}
        ).execute()
    assert list(info.value.key.values()) == [77]
    assert files_on_disk(root) == before and DeltaLog.for_table(root).latest_version() == version


@pytest.mark.parametrize("configuration", [{**DV, **CDF}, CDF], ids=["deletion_vectors", "rewrite"])
def test_row_ids_and_the_change_feed_of_a_spark_merge_are_the_cores(
    tmp_path: Path, spark: Any, configuration: dict[str, str]
) -> None:
    ours = tmp_path / "spark"
    make_table(ours, {**configuration, "delta.enableRowTracking": "true"}, files=3, rows=20)
    before = ids_of(ours)
    core = twin(ours, tmp_path / "core")
    rows = [(1, -1, "x"), (25, -25, "x"), (59, -59, "y"), (100, -100, "z")]
    source = spark.createDataFrame(rows, "id BIGINT, v BIGINT, day STRING")
    DeltaTable.forPath(spark, str(ours)).alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll(
        "s.id <> 25"
    ).whenMatchedDelete().whenNotMatchedInsertAll().execute()
    arrow = pa.table({"id": [r[0] for r in rows], "v": [r[1] for r in rows], "day": [r[2] for r in rows]})
    core.merge(arrow, "t.id = s.id").when_matched_update_all(
        "s.id <> 25"
    ).when_matched_delete().when_not_matched_insert_all().execute()
    same_result(ours, tmp_path / "core")
    ours_ids, core_ids = ids_of(ours), ids_of(tmp_path / "core")
    assert {k: v for k, v in ours_ids.items() if k in before} == {k: v for k, v in core_ids.items() if k in before}
    assert ours_ids[1][0] == before[1][0] and 25 not in ours_ids  # updated keeps its id; deleted is gone
    assert len({i for i, _ in ours_ids.values()}) == len(ours_ids)  # fresh ids for the inserted row
    assert_everyone_reads(ours, DeltaLog.for_table(tmp_path / "core").snapshot().to_arrow())
