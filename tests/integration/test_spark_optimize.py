"""``deltalog.spark.optimize``: executors rewrite the bins, the driver commits once; the result is what a local run
commits, and every reader sees the same rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import deltalog.spark
from deltalog import DeltaLog
from deltalog.errors import CorruptDataError
from tests.integration.dml_kit import commit_info, files_on_disk
from tests.integration.optimize_kit import assert_same_rows, build, table_rows

pytestmark = pytest.mark.interop


def test_spark_optimize_commits_once_what_the_executors_rewrote(tmp_path: Path, spark: Any) -> None:
    root = tmp_path / "t"
    log = build(root, "row_tracking", appends=6)
    before = table_rows(root)
    files = log.snapshot().num_files

    result = deltalog.spark.optimize(spark, str(root), z_order_by=["a"])

    assert result.version == log.latest_version() and result.num_batches == 1
    assert result.num_files_removed == files and result.num_files_added == 2  # one file per partition
    info = commit_info(root, result.version)
    assert info["operation"] == "OPTIMIZE" and info["operationParameters"]["zOrderBy"] == '["a"]'
    assert info["tags"]["delta.rowTracking.preserved"] == "true"
    assert_same_rows(root, before)
    assert deltalog.spark.optimize(spark, str(root), dry_run=True).num_files_removed == 0


def test_a_failing_executor_is_raised_typed_and_its_runs_files_are_deleted(tmp_path: Path, spark: Any) -> None:
    root = tmp_path / "t"
    log = build(root, "partitioned", appends=4)
    victim = next(iter(log.snapshot().add_actions()))
    (root / victim.path).write_bytes(b"not parquet")
    before, version = files_on_disk(root), log.latest_version()
    with pytest.raises(CorruptDataError, match=victim.path):
        deltalog.spark.optimize(spark, str(root))
    assert files_on_disk(root) == before and DeltaLog.for_table(root).latest_version() == version
