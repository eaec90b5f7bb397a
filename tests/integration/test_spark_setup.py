"""Spark whose executors cannot import deltalog: one typed line (``SetupError``), not a worker's traceback.

The session's Python workers are pointed (``SparkContext.pythonExec``, read when a job's functions are
wrapped) at an interpreter where ``import deltalog`` fails, as on a cluster whose executors lack the
package: a wrapper putting a ``sitecustomize`` that refuses ``deltalog`` first on the worker's path. The
driver keeps deltalog. The shared session is used, so no second JVM is started.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog.spark
from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.errors import SetupError
from tests.peers import deltalake_view, duckdb_view

ROOT = Path(__file__).resolve().parents[2]

BLOCKER = """\
import sys


class _NoDeltalog:
    \"\"\"What a worker without the package sees: ``import deltalog`` fails.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name == "deltalog" or name.startswith("deltalog."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoDeltalog())
"""


MESSAGE = "Spark's executors cannot import deltalog"


@pytest.fixture
def workers_without_deltalog(spark: Any, tmp_path: Path) -> Iterator[None]:
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    worker = tmp_path / "worker-python"
    worker.write_text(f'#!/bin/sh\nPYTHONPATH="{blocker}${{PYTHONPATH:+:$PYTHONPATH}}" exec {sys.executable} "$@"\n')
    worker.chmod(0o755)
    context = spark.sparkContext
    saved = context.pythonExec
    context.pythonExec = str(worker)
    try:
        yield
    finally:
        context.pythonExec = saved


@pytest.fixture
def table(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(pa.schema([("id", pa.int64())]))
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), root / "a.parquet")
    size = (root / "a.parquet").stat().st_size
    log.start_transaction().commit(
        [A.Add(path="a.parquet", partition_values={}, size=size, modification_time=1, data_change=True)]
    )
    assert deltalake_view(root).files == duckdb_view(root).files == {"a.parquet"}
    return root


def test_checkpoint_says_what_to_install(spark: Any, table: Path, workers_without_deltalog: None) -> None:
    with pytest.raises(SetupError, match=MESSAGE) as raised:
        deltalog.spark.checkpoint(spark, str(table))
    assert "\n" not in str(raised.value) and "Traceback" not in str(raised.value)
    assert not list((table / "_delta_log").glob("*.checkpoint*.parquet"))  # nothing was written
    assert deltalake_view(table).files == duckdb_view(table).files == {"a.parquet"}


def test_write_says_what_to_install_and_commits_nothing(
    spark: Any, table: Path, workers_without_deltalog: None
) -> None:
    df = spark.createDataFrame([(3,), (4,)], "id long")
    with pytest.raises(SetupError, match=MESSAGE):
        deltalog.spark.write(df, str(table))
    assert DeltaLog.for_table(table).latest_version() == 1
    assert deltalake_view(table).files == duckdb_view(table).files == {"a.parquet"}
