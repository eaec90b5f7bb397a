"""deltalog.write: Arrow data in, one commit out, read identically by deltalog, deltalake and duckdb.

Every supported type in the encodings callers hold, nulls, awkward partition values, column mapping, each mode,
``replace_where`` by partitions and by rows (rewrites and deletion vectors), schema merging, exactly-once
batches, the inputs pandas and duckdb hand over, and the files of refused commits.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
from deltalake import DeltaTable, QueryBuilder

import deltalog
from deltalog import DeltaLog
from deltalog.errors import CommitStateUnknownError, ConcurrentModificationError
from deltalog.storage.faults import FaultyStore, fail_after, fail_before, server_error, slow
from deltalog.storage.local import LocalLogStore
from tests.integration.dml_kit import (
    assert_everyone_reads,
    commit_info,
    deltalog_rows,
    enable_deletion_vectors,
    files_on_disk,
    ordered,
)
from tests.integration.typed_rows import AWKWARD, TABLE, as_given, deltalake_rows, duckdb_rows, expected, rows
from tests.peers import duckdb_connection
from tests.protocol_checker import assert_valid


def sales(ids: range, regions: list[str | None] | None = None) -> pa.Table:
    regions = regions or ["eu", "us"]
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "region": pa.array([regions[i % len(regions)] for i in ids], pa.string()),
            "amount": pa.array([i * 1.5 for i in ids], pa.float64()),
        }
    )


def test_every_type_nulls_and_awkward_partition_values_round_trip(tmp_path: Path) -> None:
    """The first write creates the table from the data (timestamp_ntz's feature in the same commit); the
    second gives the same rows as callers hold them (ns timestamps, unsigned, dictionary, view, large types)."""
    root = tmp_path / "t"
    data = rows(60)
    first = deltalog.write(pa.table(data, schema=TABLE), root, partition_by=["p", "pd"])
    assert first.version == 0  # the table and its first files, in one version
    snap = DeltaLog.for_table(root).snapshot()
    assert "timestampNtz" in snap.features and snap.partition_columns == ["p", "pd"]
    second = deltalog.write(as_given(data), root)
    assert second.version == 1
    paths = [a.path for a in second.actions if isinstance(a, deltalog.actions.Add)]
    assert any("p=a%252Fb" in p for p in paths) and any("__HIVE_DEFAULT_PARTITION__" in p for p in paths)
    assert_valid(root)
    want = sorted(expected(data) * 2, key=lambda r: (r["id"], str(r)))
    assert sorted(deltalake_rows(root), key=lambda r: (r["id"], str(r))) == want
    assert sorted(duckdb_rows(root), key=lambda r: (r["id"], str(r))) == want
    ours = pa.table(DeltaLog.for_table(root).snapshot().to_arrow())
    assert ours.num_rows == len(want) and set(ours.column("p").to_pylist()) == {v or None for v in AWKWARD}


def test_a_column_mapped_table_gets_physical_names_and_merged_columns(tmp_path: Path) -> None:
    root = tmp_path / "cm"
    schema = pa.schema([("id", pa.int64()), ("Part Col", pa.string()), ("st", pa.struct([("x y", pa.int64())]))])
    DeltaTable.create(str(root), schema, partition_by=["Part Col"], configuration={"delta.columnMapping.mode": "name"})
    data = pa.table({"ID": [1, 2, 3], "part col": ["a/b", None, " "], "st": [{"X Y": 1}, None, {"X Y": 3}]})
    result = deltalog.write(data, root)
    snap = DeltaLog.for_table(root).snapshot()
    physical = snap.physical_names["Part Col"]
    adds = [a for a in result.actions if isinstance(a, deltalog.actions.Add)]
    assert all(set(a.partition_values) == {physical} for a in adds)
    assert not any("Part" in a.path or "a%2Fb" in a.path for a in adds)  # no logical names in paths
    merged = deltalog.write(pa.table({"id": [4], "Part Col": ["z"], "New": [1.5]}), root, schema_mode="merge")
    snap = DeltaLog.for_table(root).snapshot()
    new = next(f for f in snap.schema_json["fields"] if f["name"] == "New")
    assert new["nullable"] and "delta.columnMapping.physicalName" in new["metadata"]
    assert {type(a).__name__ for a in merged.actions} == {"Metadata", "Add"}  # one commit: schema and data
    assert_valid(root)
    want = [
        {"id": 1, "Part Col": "a/b", "st": {"x y": 1}, "New": None},
        {"id": 2, "Part Col": None, "st": None, "New": None},
        {"id": 3, "Part Col": " ", "st": {"x y": 3}, "New": None},
        {"id": 4, "Part Col": "z", "st": None, "New": 1.5},
    ]
    lake = pa.table(QueryBuilder().register("t", DeltaTable(str(root))).execute("select * from t").read_all())
    assert ordered(lake.to_pylist()) == ordered(want) == deltalog_rows(root)
    con = duckdb_connection()
    try:  # duckdb 1.5.5 reads name-mapped partition columns as null (a peer limitation): data columns only
        got = con.execute(f"SELECT id, st, New FROM delta_scan('{root}') ORDER BY id").fetchall()
    finally:
        con.close()
    assert got == [(r["id"], r["st"], r["New"]) for r in want]


def test_modes_error_ignore_append_overwrite(tmp_path: Path) -> None:
    root = tmp_path / "t"
    assert deltalog.write(sales(range(10)), root, mode="error", partition_by="region").version == 0
    with pytest.raises(deltalog.TableAlreadyExistsError, match="mode='error'"):
        deltalog.write(sales(range(10)), root, mode="error")
    ignored = deltalog.write(sales(range(100)), root, mode="ignore")
    assert ignored.skipped and ignored.version is None
    deltalog.write(sales(range(10, 20)), root)
    assert_everyone_reads(root, sales(range(20)))
    replaced = deltalog.write(sales(range(100, 105)), root, mode="overwrite")
    info = commit_info(root)
    assert info["operation"] == "WRITE" and info["operationParameters"]["mode"] == "Overwrite"
    assert info["operationMetrics"]["numOutputRows"] == "5" and info["operationMetrics"]["numRemovedFiles"] == "4"
    assert replaced.version == 2
    assert_everyone_reads(root, sales(range(100, 105)))


def test_replace_where_on_partitions_replaces_whole_files(tmp_path: Path) -> None:
    root = tmp_path / "t"
    deltalog.write(sales(range(20)), root, partition_by=["region"])
    new_eu = sales(range(200, 204), ["eu"])
    deltalog.write(new_eu, root, mode="overwrite", replace_where={"region": "eu"})
    actions = DeltaLog.for_table(root).snapshot().commit_info
    assert actions is not None and actions["operationParameters"]["predicate"] == "region = 'eu'"
    us = sales(range(20)).filter(pc.field("region") == "us")
    assert_everyone_reads(root, pa.concat_tables([us, new_eu]))
    before = files_on_disk(root)
    with pytest.raises(deltalog.InvalidArgumentError, match=r"row 1 of the data does not satisfy replace_where"):
        deltalog.write(sales(range(300, 302)), root, mode="overwrite", replace_where={"region": "eu"})
    assert files_on_disk(root) == before and DeltaLog.for_table(root).latest_version() == 1


@pytest.mark.parametrize("dvs", [False, True], ids=["rewrite", "deletion-vectors"])
def test_replace_where_on_a_data_column_replaces_only_the_matching_rows(tmp_path: Path, dvs: bool) -> None:
    root = tmp_path / "t"
    deltalog.write(sales(range(100)), root, partition_by=["region"])
    if dvs:
        enable_deletion_vectors(DeltaLog.for_table(root))
    new = sales(range(10, 20), ["eu"])
    result = deltalog.write(new, root, mode="overwrite", replace_where=(pc.field("id") >= 10) & (pc.field("id") < 20))
    kinds = sorted({type(a).__name__ for a in result.actions})
    assert kinds == ["Add", "Remove"]
    readded = [a for a in result.actions if isinstance(a, deltalog.actions.Add) and a.deletion_vector is not None]
    assert bool(readded) is dvs
    keep = sales(range(100)).filter((pc.field("id") < 10) | (pc.field("id") >= 20))
    assert_everyone_reads(root, pa.concat_tables([keep, new]))
    metrics = commit_info(root)["operationMetrics"]
    assert metrics["numDeletedRows"] == "10" and metrics["numOutputRows"] == "10"


def test_sql_replace_where_and_every_input_kind(tmp_path: Path) -> None:
    """Inputs: a RecordBatchReader, a Dataset, an iterable of batches, a pandas DataFrame, a duckdb result."""
    root = tmp_path / "t"
    base = sales(range(40))
    deltalog.write(pa.RecordBatchReader.from_batches(base.schema, base.to_batches(max_chunksize=7)), root)
    deltalog.write(ds.dataset(sales(range(40, 50))), root)
    deltalog.write(list(sales(range(50, 60)).to_batches(max_chunksize=3)), root)
    deltalog.write(sales(range(60, 70)).to_pandas(), root)
    con = duckdb.connect()
    try:
        relation = con.sql(
            "SELECT range::BIGINT AS id, 'eu' AS region, (range * 1.5)::DOUBLE AS amount FROM range(70, 80)"
        )
        deltalog.write(relation, root)
    finally:
        con.close()
    assert_everyone_reads(root, pa.concat_tables([sales(range(70)), sales(range(70, 80), ["eu"])]))
    deltalog.write(sales(range(0, 5)), root, mode="overwrite", replace_where="id < 5 AND region IN ('eu', 'us')")
    assert commit_info(root)["operationParameters"]["predicate"] == "id < 5 AND region IN ('eu', 'us')"
    assert len(deltalog_rows(root)) == 80


def test_exactly_once_batches_commit_once(tmp_path: Path) -> None:
    root = tmp_path / "t"
    first = deltalog.write(sales(range(10)), root, app_id="etl", app_version=7)
    again = deltalog.write(sales(range(10)), root, app_id="etl", app_version=7)
    older = deltalog.write(sales(range(10)), root, app_id="etl", app_version=3)
    assert first.version == 0 and again.skipped and older.skipped and again.version is None
    assert DeltaLog.for_table(root).snapshot().app_version("etl") == 7
    assert_everyone_reads(root, sales(range(10)))


def test_a_refused_commit_deletes_its_files_and_an_unknown_outcome_keeps_them(tmp_path: Path) -> None:
    root = tmp_path / "t"
    deltalog.write(sales(range(20)), root, partition_by=["region"])

    def another_writer_replaces_eu(op: str, path: str) -> None:
        deltalog.write(sales(range(500, 502), ["eu"]), root, mode="overwrite", replace_where={"region": "eu"})

    before = files_on_disk(root)
    rule = slow("put_if_absent", "_delta_log/*1.json", delay_s=0, nth=1, on_fire=another_writer_replaces_eu)
    store = FaultyStore(LocalLogStore(str(root)), rule)
    with pytest.raises(ConcurrentModificationError):
        deltalog.write(
            sales(range(600, 602), ["eu"]), DeltaLog(store, str(root)), mode="overwrite", replace_where={"region": "eu"}
        )
    winner_files = files_on_disk(root) - before
    assert all(p.startswith("region=eu/") for p in winner_files) and len(winner_files) == 1  # ours are gone
    assert_everyone_reads(
        root, pa.concat_tables([sales(range(20)).filter(pc.field("region") == "us"), sales(range(500, 502), ["eu"])])
    )

    # the commit landed but the answer was lost and the log cannot be read back: its files must stay
    store = FaultyStore(
        LocalLogStore(str(root)),
        fail_after("put_if_absent", "_delta_log/*2.json", nth=1),
        fail_before("read", "_delta_log/*2.json", error=server_error()),
    )
    before = files_on_disk(root)
    with pytest.raises(CommitStateUnknownError):
        deltalog.write(sales(range(700, 703)), DeltaLog(store, str(root)))
    assert len(files_on_disk(root) - before) == 2  # one file per region, referenced by the landed version 2
    store.disarm()
    assert_everyone_reads(
        root,
        pa.concat_tables(
            [
                sales(range(20)).filter(pc.field("region") == "us"),
                sales(range(500, 502), ["eu"]),
                sales(range(700, 703)),
            ]
        ),
    )


def test_a_timestamp_column_accepts_nanoseconds_only_when_nothing_is_lost(tmp_path: Path) -> None:
    root = tmp_path / "t"
    zone = dt.timezone(dt.timedelta(hours=5, minutes=30))
    when = pa.array([dt.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=zone)], pa.timestamp("us", tz="+05:30"))
    deltalog.write(pa.table({"ts": when.cast(pa.timestamp("ns", tz="+05:30"))}), root)
    snap = DeltaLog.for_table(root).snapshot()
    assert snap.schema_json["fields"][0]["type"] == "timestamp"
    assert deltalog_rows(root) == [{"ts": dt.datetime(2024, 5, 1, 6, 30, 0, 123456, tzinfo=dt.timezone.utc)}]
    assert_valid(root)
