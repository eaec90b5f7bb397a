"""DataFrames as users hold them, written by ``deltalog.write`` and read back by every reader without an index.

pandas' Arrow export keeps any index that is not a plain RangeIndex as a ``__index_level_0__`` column, and every
mask, groupby, sort or concat makes one (deltalake 1.6.6 writes it, or refuses the frame for a column the table
lacks). An unnamed index is dropped; a named one holds data and is written only when asked, else refused.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from deltalake import DeltaTable

import deltalog
from deltalog import DeltaLog
from deltalog.errors import InvalidArgumentError, SchemaMismatchError
from tests.integration.dml_kit import assert_everyone_reads
from tests.peers import duckdb_connection


def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "day": ["2026-11-01", "2026-11-02", "2026-11-01", "2026-11-03", "2026-11-02", "2026-11-01"],
            "amount": [10, 20, 30, 40, 50, 60],
        }
    )


def rows(data: pd.DataFrame | pl.DataFrame) -> list[dict[str, object]]:
    if isinstance(data, pl.DataFrame):
        return data.to_dicts()
    return data.reset_index(drop=True).to_dict("records")


def duckdb_columns(root: Path) -> list[str]:
    con = duckdb_connection()
    try:
        return [d[0] for d in con.execute(f"SELECT * FROM delta_scan('{root}') LIMIT 0").description]
    finally:
        con.close()


def written_columns(root: Path) -> tuple[list[str], list[str], list[str]]:
    """The columns deltalog's schema, deltalake and duckdb see."""
    lake = [f.name for f in DeltaTable(str(root)).schema().fields]
    return DeltaLog.for_table(root).snapshot().schema.names, lake, duckdb_columns(root)


def test_filtered_grouped_sorted_and_concatenated_pandas_frames_write_without_their_index(tmp_path: Path) -> None:
    df = frame()
    pieces = [
        df[df["day"] == "2026-11-01"],  # a boolean mask: index [0, 2, 5]
        df.groupby("day").head(1),  # grouped, rows kept: index [0, 1, 3]
        df.groupby("day", as_index=False)["amount"].sum(),  # grouped and summed, the key a column
        df.sort_values("amount", ascending=False),  # sorted: index [5, 4, ...]
        pd.concat([df.iloc[:2], df.iloc[4:]]),  # concatenated: index [0, 1, 4, 5]
        df.iloc[3:],  # sliced: a RangeIndex starting at 3
    ]
    for i, piece in enumerate(pieces):
        root = tmp_path / f"t{i}"
        result = deltalog.write(piece, root, partition_by=["day"] if i % 2 else None)
        assert result.version == 0
        assert written_columns(root) == (["day", "amount"], ["day", "amount"], ["day", "amount"])
        assert_everyone_reads(root, rows(piece))
    root = tmp_path / "all"
    for piece in pieces:  # the first creates the table, the others append to it
        deltalog.write(piece, root)
    assert_everyone_reads(root, [r for piece in pieces for r in rows(piece)])


def test_polars_frames_write_as_they_are(tmp_path: Path) -> None:
    pf = pl.from_pandas(frame())
    pieces = [
        pf.filter(pl.col("day") == "2026-11-01"),
        pf.group_by("day", maintain_order=True).agg(pl.col("amount").sum()),
        pl.concat([pf.head(2), pf.tail(2)]),
        pf.sort("amount", descending=True),
    ]
    root = tmp_path / "t"
    for piece in pieces:
        deltalog.write(piece, root)
    assert written_columns(root) == (["day", "amount"], ["day", "amount"], ["day", "amount"])
    assert_everyone_reads(root, [r for piece in pieces for r in rows(piece)])


def test_a_named_index_holds_data_and_is_written_only_when_asked(tmp_path: Path) -> None:
    by_day = frame().groupby("day").sum()  # the key is the index, named "day"
    root = tmp_path / "t"
    with pytest.raises(InvalidArgumentError, match=r"index 'day' holds data: .*preserve_index=True.*reset_index"):
        deltalog.write(by_day, root)
    assert not root.exists()  # refused before anything was written
    deltalog.write(by_day, root, preserve_index=True)
    assert written_columns(root) == (["amount", "day"], ["amount", "day"], ["amount", "day"])
    assert_everyone_reads(root, by_day.reset_index()[["amount", "day"]].to_dict("records"))
    dropped = tmp_path / "dropped"
    deltalog.write(frame().set_index("day"), dropped, preserve_index=False)
    assert_everyone_reads(dropped, [{"amount": r["amount"]} for r in rows(frame())])


def test_a_multi_index_and_an_unnamed_index_kept_on_request_are_named_as_reset_index_names_them(
    tmp_path: Path,
) -> None:
    df = frame().assign(shop=["a", "b", "a", "b", "a", "b"])
    grouped = df.groupby(["day", "shop"]).sum()
    deltalog.write(grouped, tmp_path / "multi", preserve_index=True)
    assert_everyone_reads(tmp_path / "multi", grouped.reset_index()[["amount", "day", "shop"]].to_dict("records"))
    filtered = df[df["amount"] > 20]
    deltalog.write(filtered, tmp_path / "unnamed", preserve_index=True)
    assert DeltaLog.for_table(tmp_path / "unnamed").snapshot().schema.names == ["day", "amount", "shop", "index"]
    clash = df.set_index("day").assign(day=1)
    with pytest.raises(InvalidArgumentError, match=r"index and a column are both named \['day'\]"):
        deltalog.write(clash, tmp_path / "clash", preserve_index=True)


def test_an_index_column_pyarrow_kept_is_never_advised_into_the_table(tmp_path: Path) -> None:
    """A frame the caller converted with pyarrow's defaults: the hint says to drop the index, not to merge it."""
    root = tmp_path / "t"
    deltalog.write(frame(), root)
    converted = pa.Table.from_pandas(frame()[frame()["amount"] > 20])
    assert "__index_level_0__" in converted.column_names
    with pytest.raises(SchemaMismatchError, match="a pandas index pyarrow kept") as caught:
        deltalog.write(converted, root)
    assert "schema_mode" not in str(caught.value) and "preserve_index=False" in str(caught.value)
    assert DeltaLog.for_table(root).latest_version() == 0
