"""Change data feed of MERGE and UPDATE: ``deltalake``'s ``load_cdf`` over the version returns exactly the rows
that changed, with Delta Spark's change types: an ``update_preimage``/``update_postimage`` pair for every row an
update clause applied to (even when its values stayed the same), ``delete`` for deleted rows, ``insert`` for
inserted ones; with deletion vectors and without (then the touched files are rewritten and the copied rows
appear nowhere in the feed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

import deltalog
from deltalog import DeltaLog
from deltalog import actions as A
from tests.integration.dml_kit import assert_everyone_reads, commit_info

CDF = {"delta.enableChangeDataFeed": "true"}
DV = {"delta.enableDeletionVectors": "true"}


def rows(ids: range) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "amount": pa.array([float(i) for i in ids], pa.float64()),
            "part": pa.array(["a" if i % 2 else "b" for i in ids], pa.string()),
        }
    )


def changes(root: Path, version: int) -> list[tuple[Any, ...]]:
    feed = pa.table(DeltaTable(str(root)).load_cdf(starting_version=version, ending_version=version).read_all())
    assert set(feed.column("_commit_version").to_pylist()) <= {version}
    return sorted((r["_change_type"], r["id"], r["amount"], r["part"]) for r in feed.to_pylist())


@pytest.mark.parametrize("configuration", [CDF, {**CDF, **DV}], ids=["rewrite", "deletion-vectors"])
@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_load_cdf_returns_exactly_the_changed_rows(
    tmp_path: Path, configuration: dict[str, str], partitioned: bool
) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(rows(range(0)).schema, partition_columns=["part"] if partitioned else [], configuration=configuration)
    for start in (0, 10, 20):
        deltalog.write(rows(range(start, start + 10)), root)
    source = pa.table(
        {
            "id": pa.array([1, 2, 3, 40], pa.int64()),
            "amount": pa.array([100.0, 2.0, 300.0, 400.0]),
            "part": pa.array(["a", "b", "a", "b"]),
        }
    )
    result = (
        log.merge(source, "t.id = s.id")
        .when_matched_delete("s.amount > 200")  # id 3
        .when_matched_update({"amount": "s.amount"})  # id 1 changes, id 2 keeps its value
        .when_not_matched_insert_all()  # id 40
        .when_not_matched_by_source_update({"amount": "t.amount + 0.5"}, "t.id >= 28")  # 28, 29
        .execute()
    )
    version = result.version
    assert version is not None
    cdc = [a for a in result.actions if isinstance(a, A.Cdc)]
    assert cdc and commit_info(root)["operationMetrics"]["numTargetChangeFilesAdded"] == str(len(cdc))
    part = {i: ("a" if i % 2 else "b") for i in range(50)}
    assert changes(root, version) == sorted(
        [
            ("delete", 3, 3.0, "a"),
            ("insert", 40, 400.0, "b"),
            ("update_postimage", 1, 100.0, "a"),
            ("update_postimage", 2, 2.0, "b"),
            ("update_postimage", 28, 28.5, part[28]),
            ("update_postimage", 29, 29.5, part[29]),
            ("update_preimage", 1, 1.0, "a"),
            ("update_preimage", 2, 2.0, "b"),
            ("update_preimage", 28, 28.0, part[28]),
            ("update_preimage", 29, 29.0, part[29]),
        ]
    )
    updated = log.update({"amount": "-amount"}, "id IN (5, 6)")
    assert updated.version is not None
    assert changes(root, updated.version) == sorted(
        [
            ("update_postimage", 5, -5.0, "a"),
            ("update_postimage", 6, -6.0, "b"),
            ("update_preimage", 5, 5.0, "a"),
            ("update_preimage", 6, 6.0, "b"),
        ]
    )
    expected = {r["id"]: r for r in rows(range(30)).to_pylist()}
    expected.pop(3)
    expected[1]["amount"] = 100.0
    expected[28]["amount"], expected[29]["amount"] = 28.5, 29.5
    expected[5]["amount"], expected[6]["amount"] = -5.0, -6.0
    expected[40] = {"id": 40, "amount": 400.0, "part": "b"}
    assert_everyone_reads(root, list(expected.values()))


def test_an_insert_only_merge_on_a_cdf_table_is_read_as_inserts(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(rows(range(0)).schema, configuration=CDF)
    deltalog.write(rows(range(5)), root)
    result = log.merge(rows(range(3, 8)), "t.id = s.id").when_not_matched_insert_all().execute()
    assert result.version is not None
    assert [c[:2] for c in changes(root, result.version)] == [("insert", 5), ("insert", 6), ("insert", 7)]
    assert_everyone_reads(root, rows(range(8)))
