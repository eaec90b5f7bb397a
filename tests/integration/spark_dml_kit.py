"""Tables and comparisons shared by the tests of ``deltalog.spark.DeltaTable``'s row-level statements: a statement
run through Spark and the same statement run by the Python core on a copy of the table must leave the same
rows, commit the same operation and counts, and write the same change data feed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from deltalake import DeltaTable as LakeTable

import deltalog
from deltalog import DeltaLog
from tests.integration.dml_kit import assert_everyone_reads, commit_info, deltalog_rows

DV = {"delta.enableDeletionVectors": "true"}
CDF = {"delta.enableChangeDataFeed": "true"}
#: metrics of the files a statement writes, which depend on how many tasks wrote them
WRITTEN = {
    "numAddedFiles",
    "numAddedBytes",
    "numAddedChangeFiles",
    "numTargetFilesAdded",
    "numTargetBytesAdded",
    "numTargetChangeFilesAdded",
}


def make_table(
    root: Path, configuration: dict[str, str] | None = None, files: int = 4, rows: int = 50, by_day: bool = False
) -> DeltaLog:
    """``files`` appends of ``rows`` rows each: id, v (id * 10), day (two values; the partition ``by_day``)."""
    log = DeltaLog.for_table(root)
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("day", pa.string())])
    log.create(schema, ["day"] if by_day else [], configuration=configuration or {})
    for f in range(files):
        ids = np.arange(f * rows, (f + 1) * rows, dtype=np.int64)
        data = pa.table({"id": ids, "v": ids * 10, "day": [f"d{i % 2}" for i in ids]}, schema=schema)
        deltalog.write(data, log)
    return log


def twin(root: Path, copy: Path) -> DeltaLog:
    """A copy of the table at ``root``: the same files, so a statement touches the same files in both."""
    shutil.copytree(root, copy)
    return DeltaLog.for_table(copy)


def changes(root: Path, version: int) -> list[tuple[Any, ...]]:
    """The change data feed of ``version`` as deltalake reads it (change type and row), sorted."""
    feed = pa.table(LakeTable(str(root)).load_cdf(starting_version=version, ending_version=version).read_all())
    names = [n for n in feed.column_names if not n.startswith("_commit")]
    return sorted(tuple(r[n] for n in names) for r in feed.to_pylist())


def same_result(spark_root: Path, core_root: Path) -> None:
    """Both tables hold the same rows and their last commits the same operation and counts (every metric but the
    times and the files written: each Spark task writes its own, as Delta Spark's tasks do), and, where the
    table has a change data feed, the same changes; deltalake and duckdb read the Spark-written table."""
    assert deltalog_rows(spark_root) == deltalog_rows(core_root)
    a, b = commit_info(spark_root), commit_info(core_root)
    assert a["operation"] == b["operation"]
    assert set(a["operationMetrics"]) == set(b["operationMetrics"])
    same = {k for k in a["operationMetrics"] if not k.endswith("TimeMs") and k not in WRITTEN}
    assert {k: a["operationMetrics"][k] for k in same} == {k: b["operationMetrics"][k] for k in same}
    log = DeltaLog.for_table(spark_root)
    if log.snapshot().configuration.get("delta.enableChangeDataFeed") == "true":
        version = log.latest_version()
        assert changes(spark_root, version) == changes(core_root, DeltaLog.for_table(core_root).latest_version())
    assert_everyone_reads(spark_root, DeltaLog.for_table(core_root).snapshot().to_arrow())


def same_commit(spark_root: Path, core_root: Path) -> None:
    """:func:`same_result`, and the same ``operationParameters`` (the statement's text as the commit records it)."""
    same_result(spark_root, core_root)
    assert commit_info(spark_root)["operationParameters"] == commit_info(core_root)["operationParameters"]


__all__ = ["CDF", "DV", "WRITTEN", "changes", "make_table", "same_commit", "same_result", "twin"]
