"""log.delete: rows out as deletion vectors where the table enables them, else as rewritten files; afterwards
deltalog, deltalake's SQL path and duckdb's delta_scan return exactly the surviving rows.

Deletion vectors merge across deletes (never smaller), pack into one DV file per delete, survive a checkpoint,
and work on tables Delta Spark wrote (corpus copies, one with a checkpoint and partitions, one with a CHECK
constraint). Without them, touched files are rewritten, with change files on a change-data-feed table that
deltalake's change reader reads back. A delete is one transaction that read what it touched: a concurrent
delete of the same rows makes it fail typed, and its DV file goes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable, write_deltalake

import deltalog
from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.data.dv import read_deletion_vector
from deltalog.errors import ConcurrentModificationError
from deltalog.storage.faults import FaultyStore, slow
from deltalog.storage.local import LocalLogStore
from tests.corpus import table_path
from tests.integration.dml_kit import (
    assert_everyone_reads,
    commit_info,
    enable_deletion_vectors,
    files_on_disk,
    ordered,
)

ROWS = 3000


def numbers(n: int = ROWS) -> pa.Table:
    ids = np.arange(n, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "part": pa.array(["a", "b c"]).take(pa.array(ids % 2)),
            "value": pa.array([None if i % 7 == 0 else float(i) for i in range(n)], pa.float64()),
        }
    )


def dv_table(root: Path) -> DeltaLog:
    """Two partitions, several files each (rolled at a small size), deletion vectors enabled."""
    deltalog.write(numbers().to_batches(max_chunksize=300), root, partition_by=["part"], target_file_size=8 * 1024)
    log = DeltaLog.for_table(root)
    enable_deletion_vectors(log)
    return log


def live_dvs(root: Path) -> dict[str, A.DeletionVector]:
    return {a.path: a.deletion_vector for a in DeltaLog.for_table(root).snapshot().add_actions() if a.deletion_vector}


def test_deletion_vectors_merge_across_deletes_and_survive_a_checkpoint(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = dv_table(root)
    files_before = {a.path for a in log.snapshot().add_actions()}
    every_tenth = pc.field("id").isin(pa.array(range(3, ROWS, 10), pa.int64()))
    first = log.delete(every_tenth | (pc.field("id") < 100))
    survivors = numbers().filter(~(every_tenth | (pc.field("id") < 100)))
    assert_everyone_reads(root, survivors)
    info = commit_info(root)
    assert info["operation"] == "DELETE" and info["operationParameters"]["predicate"].startswith('["')
    metrics = info["operationMetrics"]
    assert metrics["numDeletedRows"] == str(numbers().num_rows - survivors.num_rows)
    assert metrics["numCopiedRows"] == "0" and metrics["numAddedFiles"] == "0"
    dvs = live_dvs(root)
    # the touched files keep their data and get a vector each; nothing is rewritten
    assert len(dvs) > 1 and set(dvs) <= files_before and metrics["numRemovedFiles"] == "0"
    assert int(metrics["numDeletionVectorsAdded"]) == len(dvs) and first.version == 2
    assert len(list(root.glob("deletion_vector_*.bin"))) == 1  # one DV file for the whole delete
    assert len({(d.path_or_inline_dv, d.offset) for d in dvs.values()}) == len(dvs)
    adds = [a for a in first.actions if isinstance(a, A.Add)]
    assert all('"tightBounds":false' in (a.stats or "") for a in adds)

    # a second delete on the same files: the vectors grow to the union, never smaller
    log.delete("value IS NULL OR id BETWEEN 1000 AND 1099")
    survivors = survivors.filter(pc.is_valid(pc.field("value")) & ~pc.field("id").isin(pa.array(range(1000, 1100))))
    assert_everyone_reads(root, survivors)
    merged = live_dvs(root)
    assert int(commit_info(root)["operationMetrics"]["numDeletionVectorsUpdated"]) > 0
    for path, old in dvs.items():
        new = merged[path]
        assert new.cardinality >= old.cardinality
        kept = set(read_deletion_vector(log.store, new).tolist())
        assert set(read_deletion_vector(log.store, old).tolist()) <= kept

    # a checkpoint keeps the vectors: a fresh reader starts from it and reads the same rows
    log.checkpoint()
    fresh = DeltaLog.for_table(root).snapshot()
    assert fresh.segment.checkpoint is not None and fresh.segment.checkpoint.version == fresh.version
    assert live_dvs(root) == merged
    assert_everyone_reads(root, survivors)

    # deleting every row left in a file removes it outright
    log.delete(pc.field("part") == "a")
    assert all(not p.startswith("part=a/") for p in live_dvs(root))
    assert_everyone_reads(root, survivors.filter(pc.field("part") != "a"))


def test_a_delete_without_deletion_vectors_rewrites_touched_files_only(tmp_path: Path) -> None:
    root = tmp_path / "t"
    deltalog.write(numbers().to_batches(max_chunksize=300), root, partition_by=["part"], target_file_size=8 * 1024)
    untouched = {a.path for a in DeltaLog.for_table(root).snapshot().add_actions()}
    result = DeltaLog.for_table(root).delete({"id": {">=": 2990}})
    removed = {a.path for a in result.actions if isinstance(a, A.Remove)}
    assert removed and len(removed) < len(untouched)  # stats skipping: only the files that can hold id >= 2990
    survivors = numbers().filter(pc.field("id") < 2990)
    assert_everyone_reads(root, survivors)
    metrics = commit_info(root)["operationMetrics"]
    assert metrics["numDeletedRows"] == "10" and int(metrics["numCopiedRows"]) > 0
    # a predicate that is null on a row does not delete it (SQL's WHERE): value is null on every 7th row
    DeltaLog.for_table(root).delete(pc.field("value") > 100.0)
    assert_everyone_reads(root, survivors.filter((pc.field("value") <= 100.0) | pc.is_null(pc.field("value"))))


def test_nothing_matched_commits_nothing_and_no_predicate_deletes_everything(tmp_path: Path) -> None:
    root = tmp_path / "t"
    deltalog.write(numbers(100), root)
    log = DeltaLog.for_table(root)
    result = log.delete("id > 1000")
    assert result.skipped and result.version is None and log.latest_version() == 0
    assert log.delete().version == 1
    assert_everyone_reads(root, numbers(0))


def test_change_data_feed_tables_get_change_files_for_a_rewrite(tmp_path: Path) -> None:
    root = tmp_path / "cdf"
    write_deltalake(
        str(root), numbers(200), partition_by=["part"], configuration={"delta.enableChangeDataFeed": "true"}
    )
    result = DeltaLog.for_table(root).delete("id < 10 OR id = 199")
    cdc = [a for a in result.actions if isinstance(a, A.Cdc)]
    assert cdc and all(c.path.startswith("_change_data/") for c in cdc)
    assert_everyone_reads(root, numbers(200).filter((pc.field("id") >= 10) & (pc.field("id") != 199)))
    changes = pa.table(DeltaTable(str(root)).load_cdf(starting_version=1).read_all())
    assert set(changes.column("_change_type").to_pylist()) == {"delete"}
    assert sorted(changes.column("id").to_pylist()) == [*range(10), 199]
    assert commit_info(root)["operationMetrics"]["numAddedChangeFiles"] == str(len(cdc))


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("name", "predicate"),
    [
        ("dat/deletion_vectors", "int > 0"),
        ("delta/dv-partitioned-with-checkpoint", pc.field("col1").isin([31, 35, 40]) | (pc.field("part") == 2)),
        ("delta-rs/table-with-dv-small", "value IN (2, 5)"),
        ("dat/check_constraints", pc.field("letter") == "b"),
        ("delta/basic-dv-no-checkpoint", pc.field("id") >= 8),
    ],
)
def test_deletes_on_tables_other_engines_wrote(tmp_path: Path, name: str, predicate: object) -> None:
    root = tmp_path / "t"
    shutil.copytree(table_path(name), root)
    before = DeltaLog.for_table(root).snapshot().to_arrow()
    matched = DeltaLog.for_table(root).snapshot().to_arrow(filter=_expression(predicate))
    DeltaLog.for_table(root).delete(predicate)
    expected = [r for r in ordered(before.to_pylist()) if r not in ordered(matched.to_pylist())]
    assert len(expected) == before.num_rows - matched.num_rows and matched.num_rows > 0
    assert_everyone_reads(root, expected)


def _expression(predicate: object) -> pc.Expression:
    if isinstance(predicate, pc.Expression):
        return predicate
    return {
        "int > 0": pc.field("int") > 0,
        "value IN (2, 5)": pc.field("value").isin([2, 5]),
    }[str(predicate)]


def test_a_concurrent_delete_of_the_same_rows_makes_the_later_one_fail_and_clean_up(tmp_path: Path) -> None:
    root = tmp_path / "t"
    dv_table(root)
    before = files_on_disk(root)

    def another_delete(op: str, path: str) -> None:
        DeltaLog.for_table(root).delete(pc.field("id") < 50)

    store = FaultyStore(
        LocalLogStore(str(root)), slow("put_if_absent", "_delta_log/*2.json", delay_s=0, nth=1, on_fire=another_delete)
    )
    with pytest.raises(ConcurrentModificationError):
        DeltaLog(store, str(root)).delete(pc.field("id") < 60)
    new_files = files_on_disk(root) - before
    assert len(new_files) == 1 and next(iter(new_files)).startswith("deletion_vector_")  # the winner's only
    assert_everyone_reads(root, numbers().filter(pc.field("id") >= 50))


def test_a_deletion_vector_delete_on_a_row_tracking_table_keeps_each_files_row_ids(tmp_path: Path) -> None:
    """A DV delete copies no row: the re-added file keeps its baseRowId and defaultRowCommitVersion, so row
    tracking does not block it (only a rewrite that copies rows into new files would need materialized ids)."""
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    configuration = {"delta.enableDeletionVectors": "true", "delta.enableRowTracking": "true"}
    log.create(numbers().schema, partition_columns=["part"], configuration=configuration)
    deltalog.write(numbers().to_batches(max_chunksize=300), root, target_file_size=8 * 1024)
    before = {a.path: (a.base_row_id, a.default_row_commit_version) for a in log.snapshot().add_actions()}
    assert all(ids[0] is not None and ids[1] is not None for ids in before.values())
    gone = pc.field("id").isin(pa.array(range(0, ROWS, 9), pa.int64()))
    result = log.delete(gone)
    readded = [a for a in result.actions if isinstance(a, A.Add)]
    assert readded and all(a.deletion_vector is not None for a in readded)
    assert {a.path: (a.base_row_id, a.default_row_commit_version) for a in readded}.items() <= before.items()
    assert_everyone_reads(root, numbers().filter(~gone))
