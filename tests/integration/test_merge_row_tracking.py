"""Row tracking through MERGE and UPDATE (PROTOCOL "Row Tracking"), read from the files themselves: the
materialized row-id and row-commit-version columns, else the file's ``baseRowId`` plus the row's position and its
``defaultRowCommitVersion``.

Where row tracking is enabled, every surviving row keeps its row id; rows an update changed take the commit's
version; rows a rewrite copied keep their commit version too; inserted rows get fresh ids above the previous
high-water mark; commitInfo says the ids were preserved. Where it is only supported, rewritten rows get fresh
ids and no materialized column is written. The protocol checker replays every commit.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.core.features import row_tracking
from deltalog.data.dv import read_deletion_vector
from tests.integration.dml_kit import assert_everyone_reads, commit_info
from tests.protocol_checker import assert_valid

ENABLED = {"delta.enableRowTracking": "true"}
DV = {"delta.enableDeletionVectors": "true"}


def rows(ids: range) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "v": pa.array([i * 10 for i in ids], pa.int64())})


def ids_of(root: Path) -> dict[int, tuple[int, int]]:
    """Each live row's (row id, row commit version), by its ``id`` column, from the files and the log."""
    snap = DeltaLog.for_table(root).snapshot()
    conf = snap.configuration
    names = (conf.get(row_tracking.MATERIALIZED_ROW_ID), conf.get(row_tracking.MATERIALIZED_COMMIT_VERSION))
    out: dict[int, tuple[int, int]] = {}
    for add in snap.add_actions():
        data = pq.read_table(root / urllib.parse.unquote(add.path))
        gone = set()
        if add.deletion_vector is not None:
            gone = set(read_deletion_vector(snap.context.store, add.deletion_vector).tolist())
        materialized = [data.column(n).to_pylist() if n in data.column_names else [None] * data.num_rows for n in names]
        assert add.base_row_id is not None and add.default_row_commit_version is not None
        for pos, key in enumerate(data.column("id").to_pylist()):
            if pos in gone:
                continue
            row_id = materialized[0][pos] if materialized[0][pos] is not None else add.base_row_id + pos
            version = materialized[1][pos] if materialized[1][pos] is not None else add.default_row_commit_version
            assert key not in out
            out[key] = (row_id, version)
    return out


def three_files(root: Path, configuration: dict[str, str]) -> DeltaLog:
    """Ids 0..29 in three files of ten rows (three commits)."""
    log = DeltaLog.for_table(root)
    log.create(rows(range(0)).schema, configuration=configuration)
    for start in (0, 10, 20):
        deltalog.write(rows(range(start, start + 10)), root)
    return log


@pytest.mark.parametrize("configuration", [ENABLED, {**ENABLED, **DV}], ids=["rewrite", "deletion-vectors"])
def test_merged_and_updated_rows_keep_their_row_ids(tmp_path: Path, configuration: dict[str, str]) -> None:
    root = tmp_path / "t"
    log = three_files(root, configuration)
    before = ids_of(root)
    mark = max(i for i, _ in before.values())
    source = pa.table({"id": pa.array([1, 12, 100, 101], pa.int64()), "v": pa.array([-1, -12, -100, -101], pa.int64())})
    result = log.merge(source, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
    merged = result.version
    after = ids_of(root)
    for key, (row_id, version) in before.items():
        if key in (1, 12):
            assert after[key] == (row_id, merged), key  # same id, the merge's version
        else:
            assert after[key] == (row_id, version), key  # untouched or copied: both kept
    fresh = [after[100][0], after[101][0]]
    assert min(fresh) > mark and len(set(fresh)) == 2 and after[100][1] == after[101][1] == merged
    assert len({i for i, _ in after.values()}) == len(after)
    assert commit_info(root)["tags"] == {row_tracking.PRESERVED_TAG: "true"}
    conf = log.snapshot().configuration
    materialized = {conf[row_tracking.MATERIALIZED_ROW_ID], conf[row_tracking.MATERIALIZED_COMMIT_VERSION]}
    new = [a for a in result.actions if isinstance(a, A.Add) and a.deletion_vector is None]
    assert new and all(materialized <= set(pq.read_schema(root / a.path).names) for a in new)

    updated = log.update({"v": "v + 1"}, "id IN (2, 25, 100)").version
    final = ids_of(root)
    for key in (2, 25, 100):
        assert final[key] == (after[key][0], updated)
    assert all(final[k] == after[k] for k in after if k not in (2, 25, 100))
    assert_valid(root)
    expected = {r["id"]: r for r in rows(range(30)).to_pylist()}
    expected.update({r["id"]: r for r in source.to_pylist()})
    for key in (2, 25, 100):
        expected[key] = {**expected[key], "v": expected[key]["v"] + 1}
    assert_everyone_reads(root, list(expected.values()))


def test_where_row_tracking_is_only_supported_rewritten_rows_get_fresh_ids(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = three_files(root, {"delta.feature.rowTracking": "supported"})
    before = ids_of(root)
    mark = max(i for i, _ in before.values())
    result = log.update({"v": "0"}, "id = 3")
    after = ids_of(root)
    rewritten = [k for k in range(10)]  # the file of ids 0..9 was rewritten: all its rows are new rows now
    assert all(after[k][0] > mark and after[k][1] == result.version for k in rewritten)
    assert all(after[k] == before[k] for k in range(10, 30))
    assert "tags" not in commit_info(root) or row_tracking.PRESERVED_TAG not in commit_info(root)["tags"]
    conf = log.snapshot().configuration
    assert row_tracking.MATERIALIZED_ROW_ID not in conf
    assert_valid(root)
