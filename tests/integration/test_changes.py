"""``log.changes()`` on tables deltalog writes: appends, deletes (rewrites with change files, deletion vectors),
partition overwrites and RESTORE read back as the change types they are, equal to ``deltalake``'s ``load_cdf``
and to the rows PROTOCOL.md defines (:mod:`tests.integration.change_oracle`), per version; every table is
read back by both peers."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

import deltalog
from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.data.parallel import default_workers
from deltalog.errors import CorruptDataError, InvalidArgumentError
from tests.integration.change_oracle import PerVersion, per_version, protocol_rows
from tests.integration.dml_kit import assert_everyone_reads, hand_commit

CDF_ON = {"delta.enableChangeDataFeed": "true"}
DV_CDF_PROTOCOL = A.Protocol(
    3, 7, ("deletionVectors",), ("appendOnly", "changeDataFeed", "deletionVectors", "invariants")
)


def numbers(*ids: int, part: str | None = None) -> pa.Table:
    parts = [part or ("a" if i % 2 else "b") for i in ids]
    return pa.table({"id": pa.array(ids, pa.int64()), "p": parts, "v": [f"v{i}" for i in ids]})


def cdf_table(root: Path, *ids: int) -> DeltaLog:
    deltalog.write(numbers(*ids), root, partition_by=["p"], configuration=CDF_ON)
    return DeltaLog.for_table(root)


def dv_cdf_table(root: Path, *ids: int) -> DeltaLog:
    """Deletion vectors and change data feed on, one file (as Delta Spark's ALTER TABLE would switch DVs on)."""
    deltalog.write(numbers(*ids, part="a"), root, partition_by=["p"], configuration=CDF_ON)
    log = DeltaLog.for_table(root)
    snap = log.snapshot()
    metadata = dataclasses.replace(
        snap.metadata, configuration={**snap.configuration, "delta.enableDeletionVectors": "true"}
    )
    hand_commit(log, [DV_CDF_PROTOCOL, metadata], "SET TBLPROPERTIES")
    return DeltaLog.for_table(root)


def ours(root: Path, start: int = 0, end: int | None = None) -> PerVersion:
    return per_version(DeltaLog.for_table(root).changes(start, end).read_all())


def lake(root: Path, start: int = 0, end: int | None = None) -> PerVersion:
    reader = DeltaTable(str(root)).load_cdf(starting_version=start, ending_version=end)
    return per_version(pa.table(reader.read_all()))


def types_by_version(root: Path, start: int = 0) -> dict[int, list[tuple[str, int]]]:
    """(change type, id) of each version's rows, sorted."""
    table = DeltaLog.for_table(root).changes(start).read_all()
    out: dict[int, list[tuple[str, int]]] = {}
    for row in table.to_pylist():
        out.setdefault(row["_commit_version"], []).append((row["_change_type"], row["id"]))
    return {v: sorted(r) for v, r in out.items()}


def agreed(root: Path, start: int = 0) -> None:
    """deltalog equals deltalake and the PROTOCOL oracle, version by version; both peers read the table."""
    latest = DeltaLog.for_table(root).latest_version()
    assert ours(root, start) == lake(root, start) == protocol_rows(root, start, latest)
    assert_everyone_reads(root, DeltaLog.for_table(root).snapshot().to_arrow())


def test_appends_rewrites_whole_file_deletes_and_overwrites_read_back_as_their_change_types(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = cdf_table(root, 1, 2, 3, 4)  # v0 creates the table with its first rows: inserts
    deltalog.write(numbers(5, 6), root)  # v1: inserts
    rewrite = log.delete("id = 3")  # v2: a rewrite, with change files holding the deleted row
    assert rewrite.version == 2 and any(isinstance(a, A.Cdc) for a in rewrite.actions)
    whole = log.delete("p = 'b'")  # v3: whole files removed, no change files
    assert whole.version == 3 and not any(isinstance(a, A.Cdc) for a in whole.actions)
    deltalog.write(numbers(7, 8, part="a"), root, mode="overwrite", replace_where={"p": "a"})  # v4
    assert types_by_version(root) == {
        0: [("insert", 1), ("insert", 2), ("insert", 3), ("insert", 4)],
        1: [("insert", 5), ("insert", 6)],
        2: [("delete", 3)],
        3: [("delete", 2), ("delete", 4), ("delete", 6)],
        4: [("delete", 1), ("delete", 5), ("insert", 7), ("insert", 8)],
    }
    agreed(root)
    assert ours(root, 2, 3) == lake(root, 2, 3)
    (change_file,) = [a.path for a in rewrite.actions if isinstance(a, A.Cdc)]
    (root / change_file).unlink()  # vacuumed
    with pytest.raises(CorruptDataError, match=change_file.rsplit("/", 1)[-1]) as missing:
        log.changes(2, 2).read_all()
    assert missing.value.path == change_file


def test_deletion_vector_deletes_read_back_as_the_rows_each_delete_newly_marked(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = dv_cdf_table(root, *range(10))  # v0 creates the table with its rows, v1 properties
    first = log.delete("id IN (2, 3)")
    second = log.delete("id >= 7 OR id = 2")  # the file's vector grows; id 2 was deleted already
    assert (first.version, second.version) == (2, 3)
    assert not any(isinstance(a, A.Cdc) for a in [*first.actions, *second.actions])
    dvs = [a.deletion_vector for a in second.actions if isinstance(a, A.Add)]
    assert dvs and all(dv is not None and dv.cardinality == 5 for dv in dvs)
    assert types_by_version(root, 2) == {
        2: [("delete", 2), ("delete", 3)],
        3: [("delete", 7), ("delete", 8), ("delete", 9)],
    }
    agreed(root)


def test_restore_of_a_deletion_vector_table_reads_the_rows_it_unmasks_as_inserts(tmp_path: Path) -> None:
    """RESTORE re-adds the target's (path, DV) with dataChange=true and no change files, as Delta Spark does: the
    smaller vector unmarks rows, which come back as inserts (``CDCReader``'s case of a remove with DV1 and an add
    with a smaller DV2)."""
    root = tmp_path / "t"
    log = dv_cdf_table(root, *range(10))
    log.delete("id IN (2, 3)")  # v2
    log.delete("id >= 7")  # v3
    restored = log.restore(version=2)  # v4: the file again with the vector of {2, 3}
    assert restored.version == 4
    assert types_by_version(root, 4) == {4: [("insert", 7), ("insert", 8), ("insert", 9)]}
    log.restore(version=1)  # v5: the file without a vector
    assert types_by_version(root, 5) == {5: [("insert", 2), ("insert", 3)]}
    agreed(root)


def test_a_shrunk_deletion_vector_as_delta_spark_restore_writes_it_reads_back_as_inserts(tmp_path: Path) -> None:
    """The commit Delta Spark's RESTORE writes, by hand: the file removed with its vector of now and added again
    with the target's smaller one (or none), dataChange=true, no change files."""
    root = tmp_path / "t"
    log = dv_cdf_table(root, *range(10))
    target = log.delete("id IN (2, 3)").version  # v2
    log.delete("id >= 7")  # v3
    assert target == 2
    now = {a.path: a for a in log.snapshot().add_actions()}
    then = {a.path: a for a in log.snapshot(version=target).add_actions()}
    hand_commit(log, [*(now[p].remove(1, data_change=True) for p in now), *then.values()], "RESTORE")  # v4
    before = {a.path: a for a in log.snapshot(version=0).add_actions()}
    hand_commit(log, [*(then[p].remove(1, data_change=True) for p in then), *before.values()], "RESTORE")  # v5
    assert types_by_version(root, 4) == {
        4: [("insert", 7), ("insert", 8), ("insert", 9)],
        5: [("insert", 2), ("insert", 3)],
    }
    agreed(root)


def test_columns_and_filter_prune_files_by_partition_and_statistics(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = cdf_table(root, 1, 2, 3, 4)  # v0: one file per partition
    deltalog.write(numbers(11, 12), root)  # v1
    deltalog.write(numbers(21, 23), root)  # v2
    log.delete("id = 3")  # v3: change files
    table = log.changes(columns=["id"], filter=pc.field("p") == "a").read_all()
    assert table.schema.names == ["id", "_change_type", "_commit_version", "_commit_timestamp"]
    assert sorted(zip(table.column("id").to_pylist(), table.column("_change_type").to_pylist(), strict=True)) == [
        (1, "insert"),
        (3, "delete"),
        (3, "insert"),
        (11, "insert"),
        (21, "insert"),
        (23, "insert"),
    ]
    deletes = log.changes(filter=pc.field("_change_type") == "delete").read_all()
    assert deletes.column("id").to_pylist() == [3]
    # files the filter rules out are never opened: gone from storage, they fail only an unfiltered read
    b_files = [a.path for a in log.snapshot(version=2).add_actions() if a.path.startswith("p=b")]
    for path in b_files:
        (root / path).unlink()
    assert log.changes(0, 2, filter=pc.field("p") == "a").read_all().num_rows == 5
    with pytest.raises(CorruptDataError):
        log.changes(0, 2).read_all()
    # statistics: ids 21..23 are in one file, the other a-files' ranges exclude 22
    a_files = sorted(a.path for a in log.snapshot(version=2).add_actions() if a.path.startswith("p=a"))
    for path in a_files:
        if set(pq.read_table(root / path).column("id").to_pylist()) != {21, 23}:
            (root / path).unlink()
    assert log.changes(0, 2, filter=pc.field("id") == 23).read_all().column("id").to_pylist() == [23]
    with pytest.raises(InvalidArgumentError, match="'nope'"):
        log.changes(filter=pc.field("nope") == 1)
    with pytest.raises(InvalidArgumentError, match="'nope'"):
        log.changes(columns=["nope"])


def test_columns_of_one_value_share_their_buffers_across_files(tmp_path: Path) -> None:
    """A partition value, a change type: built once per reading thread, not once per file (memory, and the
    zeroed pages behind it); the rows are still everyone's."""
    root = tmp_path / "t"
    cdf_table(root, 1, 2)
    for i in range(1, 30):
        deltalog.write(numbers(10 * i, 10 * i + 1), root)  # one file in each partition
    table = DeltaLog.for_table(root).changes(0).read_all()
    assert per_version(table) == lake(root)
    for name, values in (("p", 2), ("_change_type", 1)):
        chunks = table.column(name).chunks
        assert len(chunks) >= 60
        assert len({chunk.buffers()[-1].address for chunk in chunks}) <= values * default_workers()
