"""RESTORE brings back the target's table, not only its files: schema, partitioning, properties, protocol,
clustering, as Delta Spark's RestoreTableCommand does (``../shared/docs/delta-write-rules.md`` section 2).

a64d181 committed the target's files under *today's* metadata, so readers interpreted old files through a
schema, partitioning or column mapping they were not written with. Every restored table here is read back
by ``deltalake`` and duckdb from real parquet files and compared with the target version's rows.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from deltalog import DeltaLog, InvalidArgumentError, UnsupportedFeatureError
from deltalog import actions as A
from tests.integration.restore_kit import (
    add_json,
    assert_peers_read,
    commit_actions,
    data_file,
    field,
    lake_rows,
    metadata_json,
    struct_type,
    write_commit,
)

pytestmark = pytest.mark.interop


def only(actions: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [a[kind] for a in actions if kind in a]


def test_restore_across_add_columns_brings_back_the_old_schema(tmp_path: Path) -> None:
    root = tmp_path / "t"
    write_deltalake(str(root), pa.table({"id": [1, 2], "name": ["a", "b"]}))  # v0
    log = DeltaLog.for_table(root)
    log.add_columns([pa.field("score", pa.float64())])  # v1
    write_deltalake(str(root), pa.table({"id": [3], "name": ["c"], "score": [0.5]}), mode="append")  # v2
    then, later = lake_rows(root, 0), lake_rows(root, 2)
    assert set(later[0]) == {"id", "name", "score"}
    result = log.restore(version=0)
    snap = DeltaLog.for_table(root).snapshot()
    assert snap.schema_json == log.snapshot(version=0).schema_json
    assert [f.name for f in DeltaTable(str(root)).schema().fields] == ["id", "name"]
    assert_peers_read(root, then)  # the old columns only, with the old values
    assert set(then[0]) == {"id", "name"}
    assert result.metadata_restored and not result.protocol_upgraded
    committed = commit_actions(root, 3)
    (meta,) = only(committed, "metaData")
    assert meta["id"] == log.snapshot(version=2).metadata.id  # the same table
    assert only(committed, "protocol") == []  # nothing to upgrade: no protocol action
    # a restore is history too: restoring the version before it brings the new column back
    log.restore(version=2)
    assert [f.name for f in DeltaTable(str(root)).schema().fields] == ["id", "name", "score"]
    assert_peers_read(root, later)


def test_restore_across_a_partitioning_change_brings_back_the_old_partitioning(tmp_path: Path) -> None:
    root = tmp_path / "t"
    first = pa.table({"id": [1, 2, 3], "p": ["a", "b", "b"], "q": [10, 20, 30]})
    write_deltalake(str(root), first, partition_by=["p"])  # v0
    write_deltalake(str(root), pa.table({"id": [4], "p": ["c"], "q": [40]}), mode="append")  # v1
    other = pa.table({"id": [5, 6], "q": [50, 60], "note": ["x", "y"]})
    write_deltalake(str(root), other, mode="overwrite", schema_mode="overwrite", partition_by=["q"])  # v2
    assert DeltaTable(str(root)).metadata().partition_columns == ["q"]
    expected = lake_rows(root, 1)
    result = DeltaLog.for_table(root).restore(version=1)
    assert result.metadata_restored and (result.num_removed, result.num_restored) == (2, 3)
    snap = DeltaLog.for_table(root).snapshot()
    assert snap.partition_columns == ["p"]
    assert DeltaTable(str(root)).metadata().partition_columns == ["p"]
    assert [f.name for f in DeltaTable(str(root)).schema().fields] == ["id", "p", "q"]
    assert_peers_read(root, expected)
    # the removes describe the files they remove: written under q, they carry q's partition values
    removes = only(commit_actions(root, 3), "remove")
    assert sorted(r["partitionValues"]["q"] for r in removes) == ["50", "60"]


def test_restore_brings_back_the_target_properties_name_and_description(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(
        pa.schema([("id", pa.int64())]),
        configuration={"delta.checkpointInterval": "20"},
        name="sales",
        description="daily sales",
    )  # v0
    log.start_transaction().commit([data_file(root, "a.parquet", pa.table({"id": [1, 2]}))])  # v1
    log.set_properties({"delta.checkpointInterval": "5", "delta.dataSkippingNumIndexedCols": "3"})  # v2
    renamed = dataclasses.replace(log.snapshot().metadata, name="sales_v2", description="renamed")
    log.start_transaction().commit([renamed], operation="CHANGE COLUMN")  # v3: a metadata-only change
    log.start_transaction().commit([data_file(root, "b.parquet", pa.table({"id": [3]}))])  # v4
    expected = lake_rows(root, 1)
    table_id = log.snapshot().metadata.id
    result = log.restore(version=1)
    meta = DeltaLog.for_table(root).snapshot().metadata
    assert dict(meta.configuration) == {"delta.checkpointInterval": "20"}
    assert (meta.name, meta.description, meta.id) == ("sales", "daily sales", table_id)
    lake = DeltaTable(str(root)).metadata()
    assert (lake.name, lake.description, lake.configuration) == ("sales", "daily sales", dict(meta.configuration))
    assert_peers_read(root, expected)
    assert result.metadata_restored


def test_restore_never_downgrades_the_protocol(tmp_path: Path) -> None:
    """``Protocol.merge``: a version written under a richer protocol (here before a DROP FEATURE) comes back
    with the union of both, the legacy versions' implied features listed once the result lists features."""
    root = tmp_path / "t"
    root.mkdir()
    schema = struct_type(field("id", "long"))
    f0 = data_file(root, "f0.parquet", pa.table({"id": [1, 2]}))
    f1 = data_file(root, "f1.parquet", pa.table({"id": [3]}))
    dv = {"minReaderVersion": 3, "minWriterVersion": 7}
    write_commit(
        root,
        0,
        [
            {"protocol": {**dv, "readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]}},
            metadata_json(schema, [], {}),
            add_json(f0),
        ],
    )
    write_commit(root, 1, [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, add_json(f1)])
    expected = lake_rows(root, 0)
    result = DeltaLog.for_table(root).restore(version=0)
    (protocol,) = only(commit_actions(root, 2), "protocol")
    assert (protocol["minReaderVersion"], protocol["minWriterVersion"]) == (3, 7)
    assert sorted(protocol["readerFeatures"]) == ["deletionVectors"]
    assert sorted(protocol["writerFeatures"]) == ["appendOnly", "deletionVectors", "invariants"]
    assert DeltaTable(str(root)).protocol().min_writer_version == 7
    assert_peers_read(root, expected)
    assert result.protocol_upgraded and not result.metadata_restored


def test_a_protocol_that_already_covers_the_target_is_not_rewritten(tmp_path: Path) -> None:
    root = tmp_path / "t"
    write_deltalake(str(root), pa.table({"id": [1]}))  # v0: legacy (1, 2)
    log = DeltaLog.for_table(root)
    log.enable_feature("timestampNtz")  # v1: features listed, appendOnly and invariants among them
    write_deltalake(str(root), pa.table({"id": [2]}), mode="append")  # v2
    before = log.snapshot().protocol
    result = log.restore(version=0)
    assert only(commit_actions(root, 3), "protocol") == []
    assert DeltaLog.for_table(root).snapshot().protocol == before
    assert_peers_read(root, [{"id": 1}])
    assert not result.protocol_upgraded


def test_domains_other_than_clustering_stay_as_they_are_now(tmp_path: Path) -> None:
    """Spark's ``handleDomainMetadataForRestoreTable``: only ``delta.clustering`` is taken from the target;
    every other domain (an application's, the row-tracking high-water mark) keeps its current value."""
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(pa.schema([("id", pa.int64())]), configuration={"delta.feature.domainMetadata": "supported"})
    log.start_transaction().commit(
        [
            data_file(root, "a.parquet", pa.table({"id": [1]})),
            A.DomainMetadata("app.owner", '{"team":"a"}'),
            A.DomainMetadata("delta.rowTracking", '{"rowIdHighWaterMark":4}'),
        ]
    )  # v1
    log.start_transaction().commit(
        [
            data_file(root, "b.parquet", pa.table({"id": [2]})),
            A.DomainMetadata("app.owner", '{"team":"b"}'),
            A.DomainMetadata("delta.rowTracking", '{"rowIdHighWaterMark":9}'),
            A.DomainMetadata("app.added", "{}"),
        ]
    )  # v2
    now = {d: m.configuration for d, m in log.snapshot().domain_metadata.items()}
    result = log.restore(version=1)
    assert only(commit_actions(root, result.version), "domainMetadata") == []
    after = {d: m.configuration for d, m in DeltaLog.for_table(root).snapshot().domain_metadata.items()}
    assert after == now and json.loads(after["delta.rowTracking"]) == {"rowIdHighWaterMark": 9}
    assert_peers_read(root, [{"id": 1}])


@pytest.mark.parametrize("feature", ["clustering", "identityColumns", "collations"])
def test_restore_is_gated_as_a_restore_not_as_every_commit(tmp_path: Path, feature: str) -> None:
    """Clustering and identity columns ask nothing of a restore that it does not do (the clustering domain
    comes back from the target, identity marks never go back), though deltalog refuses to append to them;
    a proposal-only feature refuses the restore by name."""
    root = tmp_path / "t"
    root.mkdir()
    identity = {"delta.identity.start": 1, "delta.identity.step": 1, "delta.identity.allowExplicitInsert": True}
    schema = struct_type(field("id", "long", identity if feature == "identityColumns" else None))
    protocol = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["domainMetadata", feature]}
    domain = [{"domainMetadata": {"domain": "delta.clustering", "configuration": '{"clusteringColumns":[["id"]]}'}}]
    write_commit(
        root,
        0,
        [
            {"protocol": protocol},
            metadata_json(schema, [], {}),
            *(domain if feature == "clustering" else []),
            add_json(data_file(root, "f0.parquet", pa.table({"id": [1]}))),
        ],
    )
    write_commit(root, 1, [add_json(data_file(root, "f1.parquet", pa.table({"id": [2]})))])
    if feature != "collations":  # issue 14: deltalog meets these tables' restore duties
        assert DeltaLog.for_table(root).restore(version=0).version == 2
        if feature == "clustering":
            assert DeltaLog.for_table(root).snapshot().domain_metadata["delta.clustering"].configuration == (
                '{"clusteringColumns":[["id"]]}'
            )
        assert_peers_read(root, [{"id": 1}])
        return
    with pytest.raises(UnsupportedFeatureError) as exc:
        DeltaLog.for_table(root).restore(version=0)
    assert exc.value.feature == feature
    assert DeltaLog.for_table(root).latest_version() == 1
    assert_peers_read(root, [{"id": 1}, {"id": 2}])


def test_a_column_mapping_mode_change_across_the_restore_is_refused(tmp_path: Path) -> None:
    """Version 0 wrote its file with physical column names under mode ``name``; version 1 rewrote the data
    under mode ``none``. a64d181 re-added version 0's file under mode ``none``: readers look for ``id`` in a
    file whose column is ``col-1``, and read nulls without an error."""
    root = tmp_path / "t"
    root.mkdir()
    mapped = field("id", "long", {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "col-1"})
    f0 = data_file(root, "f0.parquet", pa.table({"col-1": [1, 2]}))
    f1 = data_file(root, "f1.parquet", pa.table({"id": [1, 2]}))
    name_mode = {"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "1"}
    write_commit(
        root,
        0,
        [
            {"protocol": {"minReaderVersion": 2, "minWriterVersion": 5}},
            metadata_json(struct_type(mapped), [], name_mode),
            add_json(f0),
        ],
    )
    plain = metadata_json(struct_type(field("id", "long")), [], {})
    write_commit(root, 1, [plain, {"remove": {"path": "f0.parquet", "dataChange": True}}, add_json(f1)])
    with pytest.raises(InvalidArgumentError, match=r"column mapping mode is 'name'.*now 'none'"):
        DeltaLog.for_table(root).restore(version=0)
    assert DeltaLog.for_table(root).latest_version() == 1
    assert_peers_read(root, [{"id": 1}, {"id": 2}])


def test_the_restore_commit_records_spark_s_operation_metrics(tmp_path: Path) -> None:
    root = tmp_path / "t"
    write_deltalake(str(root), pa.table({"id": [1, 2]}))  # v0
    write_deltalake(str(root), pa.table({"id": [3]}), mode="append")  # v1
    write_deltalake(str(root), pa.table({"id": [4, 5, 6]}), mode="overwrite")  # v2
    log = DeltaLog.for_table(root)
    then = list(log.snapshot(version=1).add_actions())
    now = list(log.snapshot().add_actions())
    expected = lake_rows(root, 1)
    result = log.restore(version=1)
    info = only(commit_actions(root, 3), "commitInfo")[0]
    assert info["operation"] == "RESTORE" and info["readVersion"] == 2 and info["isBlindAppend"] is False
    assert info["operationParameters"] == {"version": "1", "timestamp": "null"}
    assert info["operationMetrics"] == {
        "numRestoredFiles": str(len(then)),
        "restoredFilesSize": str(sum(a.size for a in then)),
        "numRemovedFiles": str(len(now)),
        "removedFilesSize": str(sum(a.size for a in now)),
        "numOfFilesAfterRestore": str(len(then)),
        "tableSizeAfterRestore": str(sum(a.size for a in then)),
    }
    assert result.metrics == info["operationMetrics"]
    history = DeltaTable(str(root)).history(1)[0]
    assert history["operation"] == "RESTORE" and history["operationMetrics"]["numRestoredFiles"] == str(len(then))
    assert_peers_read(root, expected)
