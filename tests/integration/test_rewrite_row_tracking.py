"""Row tracking through the rewrites that copy rows other than MERGE and UPDATE (PROTOCOL "Row Tracking"): a
DELETE on a table without deletion vectors, and an overwrite with ``replace_where`` on data columns, which copy
the unmatched rows of the files they touch into new files.

As Delta Spark's DELETE and replaceWhere do, every copied row keeps its row id and row commit version (the
materialized columns of the new files hold them), rows a replace writes get fresh ids above the high-water mark
and the commit's version, and the commit declares the ids preserved (the commit path refuses a copy that does
not). Each row's ids are read twice: by deltalog's row-tracking read and from the files and the log by hand.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.core.features import row_tracking
from deltalog.data.read import DataFile, read_batches, with_row_tracking
from deltalog.data.row_ids import materialized
from deltalog.dml.delete import describe
from tests.integration.dml_kit import assert_everyone_reads, commit_info
from tests.integration.test_commit_obligations import BeforeFirstCommit
from tests.integration.test_merge_row_tracking import ENABLED, ids_of, rows, three_files
from tests.protocol_checker import assert_valid

CDF = {"delta.enableChangeDataFeed": "true"}


def read_ids(root: Path) -> dict[int, tuple[int, int]]:
    """Each live row's (row id, row commit version), by its ``id`` column, as deltalog's row-tracking read gives
    them; the same as :func:`ids_of` works out from the files and the log."""
    snap = DeltaLog.for_table(root).snapshot()
    columns = materialized(snap.protocol, snap.configuration)
    assert columns is not None
    names = columns.names
    spec = with_row_tracking(describe(snap).read_schema(), *names)
    out: dict[int, tuple[int, int]] = {}
    for add in snap.add_actions():
        for batch in read_batches(snap.context.store, spec, DataFile.of(add)):
            keys, found, versions = (batch.column(n).to_pylist() for n in ("id", *names))
            out.update({k: (i, v) for k, i, v in zip(keys, found, versions, strict=True)})
    assert out == ids_of(root)
    return out


def _materialized(log: DeltaLog, result: deltalog.CommitResult) -> None:
    """Every data file ``result`` added holds both materialized columns; its change files hold neither."""
    conf = log.snapshot().configuration
    names = {conf[row_tracking.MATERIALIZED_ROW_ID], conf[row_tracking.MATERIALIZED_COMMIT_VERSION]}
    root = Path(log.context.location.removeprefix("file://"))
    added = [a for a in result.actions if isinstance(a, A.Add)]
    assert added and all(names <= set(pq.read_schema(root / a.path).names) for a in added)
    changes = [c for c in result.actions if isinstance(c, A.Cdc)]
    assert all(not names & set(pq.read_schema(root / c.path).names) for c in changes)


@pytest.mark.parametrize("configuration", [ENABLED, {**ENABLED, **CDF}], ids=["plain", "change-data-feed"])
def test_a_delete_that_rewrites_files_keeps_each_copied_rows_row_id_and_version(
    tmp_path: Path, configuration: dict[str, str]
) -> None:
    root = tmp_path / "t"
    log = three_files(root, configuration)
    before = read_ids(root)
    result = log.delete("id IN (3, 15)")
    assert result.version == 4
    assert commit_info(root)["operationMetrics"]["numCopiedRows"] == "18"
    after = read_ids(root)
    assert after == {k: v for k, v in before.items() if k not in (3, 15)}
    assert commit_info(root)["tags"] == {row_tracking.PRESERVED_TAG: "true"}
    _materialized(log, result)
    assert_valid(root)
    assert_everyone_reads(root, [r for r in rows(range(30)).to_pylist() if r["id"] not in (3, 15)])
    if configuration is not ENABLED:  # the change files hold the deleted rows and the table's columns only
        changes = log.changes(4).read_all()
        assert sorted(changes.column("id").to_pylist()) == [3, 15]
        assert set(changes.column("_change_type").to_pylist()) == {"delete"}
    # a second rewrite of a copied row's file keeps the ids the first one kept
    log.delete("id = 4")
    assert read_ids(root) == {k: v for k, v in before.items() if k not in (3, 4, 15)}
    assert_valid(root)


@pytest.mark.parametrize("configuration", [ENABLED, {**ENABLED, **CDF}], ids=["plain", "change-data-feed"])
def test_replace_where_keeps_the_row_ids_of_the_rows_it_copies_and_numbers_its_new_rows(
    tmp_path: Path, configuration: dict[str, str]
) -> None:
    root = tmp_path / "t"
    log = three_files(root, configuration)
    before = read_ids(root)
    mark = max(i for i, _ in before.values())
    new = pa.table({"id": pa.array(range(5, 15), pa.int64()), "v": pa.array([-i for i in range(5, 15)], pa.int64())})
    result = deltalog.write(new, root, mode="overwrite", replace_where="id >= 5 AND id < 15")
    after = read_ids(root)
    kept = [k for k in range(30) if not 5 <= k < 15]
    assert {k: after[k] for k in kept} == {k: before[k] for k in kept}  # 0..4 and 15..19 copied, 20..29 untouched
    fresh = {after[k][0] for k in range(5, 15)}
    assert min(fresh) > mark and len(fresh) == 10  # above the mark, as an append's
    assert len({i for i, _ in after.values()}) == len(after) == 30
    assert {after[k][1] for k in range(5, 15)} == {result.version}
    assert commit_info(root)["tags"] == {row_tracking.PRESERVED_TAG: "true"}
    _materialized(log, result)
    assert_valid(root)
    expected = [r for r in rows(range(30)).to_pylist() if r["id"] in kept] + new.to_pylist()
    assert_everyone_reads(root, expected)
    if configuration is not ENABLED:
        changes = log.changes(result.version).read_all()
        kinds = changes.column("_change_type")
        by_kind = {k: sorted(changes.filter(pc.equal(kinds, k))["id"].to_pylist()) for k in ("delete", "insert")}
        assert by_kind == {"delete": list(range(5, 15)), "insert": list(range(5, 15))}


def test_a_delete_that_loses_its_version_to_an_append_keeps_the_copied_ids(tmp_path: Path) -> None:
    """The appender wins the version the delete attempts (a blind append, which a WriteSerializable delete lets
    come first): the delete's new files are numbered again above the winner's mark, while its copies keep the ids
    they carry; every row id stays distinct."""
    root = tmp_path / "t"
    three_files(root, {**ENABLED, "delta.isolationLevel": "WriteSerializable"})
    before = read_ids(root)

    def append() -> None:
        deltalog.write(rows(range(100, 105)), root)

    log = DeltaLog(BeforeFirstCommit(str(root), append), str(root))
    result = log.delete("id = 7")
    assert result.winners == (4,)
    after = read_ids(root)
    assert {k: after[k] for k in before if k != 7} == {k: v for k, v in before.items() if k != 7}
    assert {after[k][1] for k in range(100, 105)} == {4}
    assert len({i for i, _ in after.values()}) == len(after) == 34
    assert_valid(root)
    assert_everyone_reads(root, [r for r in rows([*range(30), *range(100, 105)]).to_pylist() if r["id"] != 7])
