"""``deltalog.write(..., mode="overwrite", schema_mode="overwrite")`` (issue 29 item 1): the table's schema, and
with ``partition_by`` its partitioning, replaced by the data's in the overwrite's own commit, on plain,
partitioned, column-mapped, deletion-vector, change-data-feed and row-tracking tables; both peers read the new
rows and the protocol checker passes. Refusals name the column and commit nothing."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog import DeltaLog
from deltalog.errors import IncompatibleSchemaChangeError, InvalidArgumentError, SchemaMismatchError
from tests.integration.modern_kit import KINDS, checked

OLD = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "region": ["a", "b", "a"], "n": pa.array([1, 2, 3], pa.int32())})
NEW = pa.table({"id": pa.array([10, 20], pa.int64()), "region": ["x", "y"], "label": ["p", "q"]})


def field_names(root: Path) -> list[str]:
    return [f["name"] for f in DeltaLog.for_table(root).snapshot().schema_json["fields"]]


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_the_schema_is_replaced_in_the_overwrite_commit(tmp_path: Path, kind: str, partitioned: bool) -> None:
    root = tmp_path / "t"
    parts = ["region"] if partitioned else None
    deltalog.write(OLD, root, partition_by=parts, configuration=KINDS[kind])
    if kind == "deletion vectors":
        DeltaLog.for_table(root).delete("id = 2")
    before = DeltaLog.for_table(root).snapshot()
    result = deltalog.write(NEW, root, mode="overwrite", schema_mode="overwrite")
    kinds = {type(a).__name__ for a in result.actions}
    assert {"Metadata", "Add", "Remove"} <= kinds  # one commit: the new schema, the new rows, the old files gone
    snap = DeltaLog.for_table(root).snapshot()
    assert field_names(root) == ["id", "region", "label"] and snap.partition_columns == (parts or [])
    assert snap.metadata.id == before.metadata.id and snap.configuration.keys() >= set(KINDS[kind])
    checked(root, [10, 20])
    checked(root, ["p", "q"], column="label")
    if kind == "column mapping":  # same path and type: the same id and physical name (Spark's reuse)
        old = {f["name"]: f["metadata"] for f in before.schema_json["fields"]}
        new = {f["name"]: f["metadata"] for f in snap.schema_json["fields"]}
        assert new["id"] == old["id"] and new["region"] == old["region"]
        assert new["label"]["delta.columnMapping.id"] == 4 == int(snap.configuration["delta.columnMapping.maxColumnId"])
    if kind == "change data feed":  # rows written before the change cannot be read in the new schema
        with pytest.raises(IncompatibleSchemaChangeError, match="version 0"):
            DeltaLog.for_table(root).changes(0).read_all()


def test_partition_by_repartitions_and_a_lost_partition_column_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "t"
    deltalog.write(OLD, root, partition_by=["region"])
    no_region = pa.table({"id": pa.array([7], pa.int64()), "kind": ["k"]})
    with pytest.raises(SchemaMismatchError, match="partition column 'region'") as refused:
        deltalog.write(no_region, root, mode="overwrite", schema_mode="overwrite")
    assert refused.value.column == "region"
    assert DeltaLog.for_table(root).latest_version() == 0 and sorted(p.name for p in root.iterdir()) == [
        "_delta_log",
        "region=a",
        "region=b",
    ]
    result = deltalog.write(no_region, root, mode="overwrite", schema_mode="overwrite", partition_by=["kind"])
    assert result.version == 1
    snap = DeltaLog.for_table(root).snapshot()
    assert snap.partition_columns == ["kind"] and field_names(root) == ["id", "kind"]
    checked(root, [7])
    checked(root, ["k"], column="kind")
    deltalog.write(
        pa.table({"id": pa.array([8], pa.int64())}), root, mode="overwrite", schema_mode="overwrite", partition_by=[]
    )
    assert DeltaLog.for_table(root).snapshot().partition_columns == []
    checked(root, [8])


def test_bad_requests_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    root = tmp_path / "t"
    deltalog.write(OLD, root)
    with pytest.raises(InvalidArgumentError, match="needs mode='overwrite'"):
        deltalog.write(NEW, root, schema_mode="overwrite")
    with pytest.raises(InvalidArgumentError, match="replace_where"):
        deltalog.write(NEW, root, mode="overwrite", schema_mode="overwrite", replace_where="id > 1")
    with pytest.raises(InvalidArgumentError, match="schema_mode must be"):
        deltalog.write(NEW, root, mode="overwrite", schema_mode="replace")
    assert DeltaLog.for_table(root).latest_version() == 0
    checked(root, [1, 2, 3])


def test_a_clustering_column_cannot_be_overwritten_away(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(OLD.schema, clustering_columns=["n"])
    deltalog.write(OLD, root)
    with pytest.raises(deltalog.InvalidCommitError, match="clustering column 'n'"):
        deltalog.write(NEW, root, mode="overwrite", schema_mode="overwrite")
    assert log.latest_version() == 1
    changed = OLD.set_column(2, "n", pa.array(["1", "2", "3"]))  # same name: still clustered by n
    deltalog.write(changed, root, mode="overwrite", schema_mode="overwrite")
    checked(root, ["1", "2", "3"], column="n")
