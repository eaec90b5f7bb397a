"""Change-data-feed tables written by deltalog (issue 14 item 6): commits whose changes readers derive from
adds and removes need no change files (appends, whole-file deletes, partition overwrites, ``dataChange=false``
rearrangements, DV-only deletes); a writer's ``cdc`` actions are checked, must be declared to cover the whole
commit and make it non-blind; anything else is refused by name before anything is written."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from deltalog import DeltaLog, InvalidCommitError, UnsupportedFeatureError
from deltalog import actions as A
from deltalog.data.dv import merge_deletion_vector
from tests.integration.modern_kit import append, checked, files_for, log_files
from tests.peers import duckdb_connection

CDF_ON = {"delta.enableChangeDataFeed": "true"}
PARTED = pa.schema([("id", pa.int64()), ("p", pa.string())])


def part_rows(p: str, *ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "p": [p] * len(ids)})


def cdf_table(root: Path, **conf: str) -> DeltaLog:
    log = DeltaLog.for_table(root)
    log.create(PARTED, ["p"], configuration={**CDF_ON, **conf})
    assert "changeDataFeed" in log.snapshot().features
    checked(root)
    return log


def changes(root: Path, start: int) -> list[tuple[int, str, int]]:
    """deltalake's change feed from ``start``: (id, change type, version), sorted."""
    reader = DeltaTable(str(root)).load_cdf(starting_version=start)
    table = pa.table(reader.read_all())
    return sorted(zip(*(table.column(c).to_pylist() for c in ("id", "_change_type", "_commit_version")), strict=True))


def test_appends_deletes_and_partition_overwrites_need_no_change_files(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = cdf_table(root)
    append(log, part_rows("a", 1, 2))
    append(log, part_rows("b", 3))
    checked(root, [1, 2, 3])
    txn = log.start_transaction()
    txn.remove_where({"p": "b"})  # a whole-file delete
    assert txn.commit(operation="DELETE").version == 3
    checked(root, [1, 2])
    before = log_files(root)
    txn = log.start_transaction()
    txn.remove_where({"p": "a"})
    new = files_for(log, part_rows("a", 7))
    with pytest.raises(UnsupportedFeatureError, match="copies_rows=False") as info:
        txn.commit(new)  # removes and adds: an update, as far as the log can tell
    assert info.value.feature == "changeDataFeed"
    assert log_files(root) == before
    txn = log.start_transaction()
    txn.remove_where({"p": "a"})
    txn.commit(new, operation="WRITE", copies_rows=False)  # the writer says: a partition overwrite
    checked(root, [7])
    assert changes(root, 1) == [
        (1, "delete", 4),
        (1, "insert", 1),
        (2, "delete", 4),
        (2, "insert", 1),
        (3, "delete", 3),
        (3, "insert", 2),
        (7, "insert", 4),
    ]


def test_rearranging_files_without_data_change_needs_no_change_files(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = cdf_table(root)
    append(log, part_rows("a", 1))
    append(log, part_rows("a", 2))
    txn = log.start_transaction()
    removed = txn.remove_where({"p": "a"}, data_change=False)
    compacted = [dataclasses.replace(a, data_change=False) for a in files_for(log, part_rows("a", 1, 2))]
    txn.commit(compacted, operation="OPTIMIZE")
    assert len(removed) == 2
    checked(root, [1, 2])
    assert changes(root, 3) == []


def test_a_writers_cdc_actions_are_checked_and_must_cover_the_commit(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = cdf_table(root)
    append(log, part_rows("a", 1, 2))
    # an UPDATE of id 2 -> 20: the file is rewritten, the change file holds the pre- and post-images
    cdc_path = "_change_data/p=a/cdc-00000.parquet"
    changed = pa.table({"id": pa.array([2, 20], pa.int64()), "_change_type": ["update_preimage", "update_postimage"]})
    (root / "_change_data" / "p=a").mkdir(parents=True)
    pq.write_table(changed, root / cdc_path)
    size = (root / cdc_path).stat().st_size
    cdc = A.Cdc(cdc_path, {"p": "a"}, size, False)
    before = log_files(root)

    def update(*extra: A.Action, **declared: bool) -> int | None:
        txn = log.start_transaction()
        txn.remove_where({"p": "a"})
        return txn.commit([*files_for(log, part_rows("a", 1, 20)), *extra], operation="UPDATE", **declared).version

    with pytest.raises(InvalidCommitError, match="covers_all"):
        update(cdc)  # the writer did not say its change files hold every change
    with pytest.raises(InvalidCommitError, match="dataChange must be false"):
        update(dataclasses.replace(cdc, data_change=True), cdc_covers_all=True)
    with pytest.raises(InvalidCommitError, match="_change_data"):
        update(dataclasses.replace(cdc, path="elsewhere/cdc.parquet"), cdc_covers_all=True)
    with pytest.raises(InvalidCommitError, match="partition"):
        update(dataclasses.replace(cdc, partition_values={}), cdc_covers_all=True)
    assert log_files(root) == before
    version = update(cdc, cdc_covers_all=True)
    assert log.snapshot().commit_info["isBlindAppend"] is False  # a cdc action is a file action
    checked(root, [1, 20])
    assert changes(root, version) == [(2, "update_preimage", version), (20, "update_postimage", version)]


def test_cdc_on_a_table_without_change_data_feed_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(PARTED, ["p"])
    append(log, part_rows("a", 1))
    with pytest.raises(InvalidCommitError, match="without change data feed"):
        log.start_transaction().commit(
            [*files_for(log, part_rows("a", 2)), A.Cdc("_change_data/x.parquet", {"p": "a"}, 1, False)],
            cdc_covers_all=True,
        )
    checked(root, [1])


def test_dv_only_deletes_need_no_change_files(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = cdf_table(root, **{"delta.enableDeletionVectors": "true"})
    append(log, part_rows("a", 1, 2, 3))
    (add,) = list(log.snapshot().add_actions())
    txn = log.start_transaction()
    txn.remove_files([add.path])
    dv = merge_deletion_vector(log.store, None, [1], 3)
    txn.commit([dataclasses.replace(add, deletion_vector=dv)], operation="DELETE")
    checked(root, [1, 3])
    con = duckdb_connection()
    try:
        assert con.execute(f"SELECT count(*) FROM delta_scan('{root}') WHERE id = 2").fetchone() == (0,)
    finally:
        con.close()


def test_restore_after_dv_deletes_re_adds_the_old_vectors_without_change_files(tmp_path: Path) -> None:
    """RESTORE as Delta Spark's ``RestoreTableCommand`` writes it on a DV + CDF table: remove(p, live DV) and
    add(p, target's DV or none), both ``dataChange=true``, and no ``cdc``: change readers (``CDCReader``) diff
    the vectors, so the rows a shrinking DV unmasks read as inserts. Issue 23 item 5: refused before."""
    root = tmp_path / "t"
    log = cdf_table(root, **{"delta.enableDeletionVectors": "true"})
    append(log, part_rows("a", 1, 2, 3, 4))  # v1
    append(log, part_rows("b", 5, 6))  # v2
    log.delete("id = 2")  # v3: a DV on a's file
    log.delete("id = 3 OR id = 6")  # v4: a's DV grows, b's file gets one
    append(log, part_rows("b", 7))  # v5
    checked(root, [1, 4, 5, 7])
    cardinality = {a.path: a.deletion_vector.cardinality for a in log.snapshot().add_actions() if a.deletion_vector}
    assert sorted(cardinality.values()) == [1, 2]

    result = log.restore(version=3)  # v6: a's DV shrinks (2 -> 1 row), b's goes away, v5's file is removed
    assert result.version == 6
    checked(root, [1, 3, 4, 5, 6])
    lines = [json.loads(line) for line in (root / "_delta_log" / f"{6:020d}.json").read_text().splitlines()]
    assert not [a for a in lines if "cdc" in a]
    adds = {a["add"]["path"]: a["add"] for a in lines if "add" in a}
    removes = {a["remove"]["path"]: a["remove"] for a in lines if "remove" in a}
    assert set(adds) == set(cardinality) and len(removes) == 3  # both DV'd files swapped back, v5's file removed
    assert all(a["dataChange"] for a in [*adds.values(), *removes.values()])
    then = {a.path: a.deletion_vector for a in log.snapshot(version=3).add_actions()}
    for path, add in adds.items():  # the target's vector (or none) comes back; the remove names today's
        assert add.get("deletionVector", {}).get("cardinality") == (then[path].cardinality if then[path] else None)
        assert removes[path]["deletionVector"]["cardinality"] == cardinality[path]

    result = log.restore(version=2)  # v7: back before any delete, no vectors at all
    checked(root, [1, 2, 3, 4, 5, 6])
    assert all(a.deletion_vector is None for a in log.snapshot().add_actions())
    assert (result.num_removed, result.num_restored) == (1, 1)  # a's file drops its vector
