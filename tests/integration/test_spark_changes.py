"""``deltalog.spark.read_changes``: the change data feed as a DataFrame, the driver planning the range and the
executors reading the files; the same rows as ``DeltaLog.changes`` (change files, whole files and deletion-vector
diffs), the same typed refusals before any job, and a vacuumed file's error carried back typed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import deltalog
from deltalog import DeltaLog
from deltalog.errors import ChangeDataNotRecordedError, CorruptDataError
from deltalog.spark import carried_error, read_changes
from tests.integration.change_oracle import per_version
from tests.integration.test_changes import cdf_table, dv_cdf_table, numbers


def _spark_rows(df: Any) -> Any:
    import pyarrow as pa

    return per_version(pa.Table.from_pylist([r.asDict() for r in df.collect()]))


def test_spark_reads_the_same_changes_as_the_log(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = cdf_table(root, 1, 2, 3, 4)
    deltalog.write(numbers(5, 6), root)
    log.delete("id = 3")  # change files
    deltalog.write(numbers(7, part="a"), root, mode="overwrite", replace_where={"p": "a"})
    assert _spark_rows(read_changes(spark, str(root))) == per_version(log.changes().read_all())
    some = read_changes(spark, str(root), 1, 2, columns=["id"])  # v1 inserts, v2 deletes
    assert some.columns == ["id", "_change_type", "_commit_version", "_commit_timestamp"]
    assert _spark_rows(some) == per_version(log.changes(1, 2, columns=["id"]).read_all())
    assert read_changes(spark, str(root), 9, allow_out_of_range=True).count() == 0

    dv_root = tmp_path / "dv"
    dv_log = dv_cdf_table(dv_root, *range(10))
    dv_log.delete("id IN (2, 3)")
    dv_log.delete("id >= 7")
    assert _spark_rows(read_changes(spark, str(dv_root), 2)) == per_version(dv_log.changes(2).read_all())


def test_spark_refuses_a_bad_range_before_any_job_and_carries_file_errors(spark: Any, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    deltalog.write(numbers(1), plain)
    with pytest.raises(ChangeDataNotRecordedError, match="version 0"):
        read_changes(spark, str(plain))
    root = tmp_path / "t"
    log = cdf_table(root, 1, 2)
    victim = next(a.path for a in log.snapshot().add_actions())
    (root / victim).unlink()
    df = read_changes(spark, str(root), 0)  # version 0 created the table with its rows
    with pytest.raises(Exception) as failed:
        df.collect()
    error = carried_error(failed.value)
    assert isinstance(error, CorruptDataError) and error.path == victim
    assert DeltaLog.for_table(root).latest_version() == 0
