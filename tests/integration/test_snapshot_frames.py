"""A snapshot's rows as the frames users work in: ``to_pandas``, ``to_polars`` and the Arrow C stream that
polars, duckdb, pyarrow and ``deltalog.write`` itself take directly."""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import deltalog
from deltalog import DeltaLog
from deltalog.errors import SetupError
from tests.integration.dml_kit import assert_everyone_reads


def table(root: Path) -> DeltaLog:
    data = pa.table(
        {"id": pa.array(range(10), pa.int64()), "day": ["a", "b"] * 5, "amount": [i * 0.5 for i in range(10)]}
    )
    deltalog.write(data, root, partition_by=["day"])
    deltalog.write(data.slice(0, 2), root)
    return DeltaLog.for_table(root)


def test_to_pandas_and_to_polars_take_columns_and_a_filter(tmp_path: Path) -> None:
    snap = table(tmp_path / "t").snapshot()
    frame = snap.to_pandas(columns=["id", "day"], filter=pc.field("day") == "a")
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == ["id", "day"]
    assert sorted(frame["id"]) == [0, 0, 2, 4, 6, 8] and set(frame["day"]) == {"a"}
    polars = snap.to_polars(filter=pc.field("id") >= 8)
    assert isinstance(polars, pl.DataFrame) and polars.columns == ["id", "day", "amount"]
    assert sorted(polars["id"].to_list()) == [8, 9]
    assert snap.to_pandas().shape == (12, 3) and snap.to_polars().height == 12


def test_a_snapshot_is_an_arrow_stream_for_polars_duckdb_pyarrow_and_deltalog_write(tmp_path: Path) -> None:
    snap = table(tmp_path / "t").snapshot()
    assert pl.DataFrame(snap).height == 12
    assert pa.table(snap).num_rows == 12
    assert duckdb.sql("SELECT count(*), sum(id) FROM snap").fetchall() == [(12, 46)]
    copy = tmp_path / "copy"
    assert deltalog.write(snap, copy).version == 0  # a table copied from another's latest version
    assert_everyone_reads(copy, snap.to_arrow())


def test_a_missing_frame_library_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snap = table(tmp_path / "t").snapshot()
    monkeypatch.setitem(sys.modules, "polars", None)  # as if polars were not installed
    with pytest.raises(SetupError, match="to_polars\\(\\) needs polars, which is not installed: pip install polars"):
        snap.to_polars()
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(SetupError, match="pip install pandas"):
        snap.to_pandas()
