"""Clustered tables written by deltalog (issue 14 item 5): the ``delta.clustering`` domain is created with the
table (physical names), changed by ``cluster_by`` and kept by every other commit; new files need statistics for
every clustering column; two writers changing the clustering conflict."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import orjson
import pyarrow as pa
import pytest

from deltalog import DeltaLog, InvalidCommitError
from deltalog.errors import ConcurrentModificationError, InvalidArgumentError
from deltalog.table import ddl
from tests.integration.modern_kit import IDS, append, checked, files_for, log_files, rows

DOMAIN = "delta.clustering"


def clustering(log: DeltaLog) -> list[list[str]]:
    return orjson.loads(log.snapshot().domain_metadata[DOMAIN].configuration)["clusteringColumns"]


def test_a_clustered_table_keeps_its_domain_and_its_files_carry_the_columns_stats(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(IDS, clustering_columns=["id"])
    assert {"clustering", "domainMetadata"} <= log.snapshot().features and clustering(log) == [["id"]]
    checked(root)
    append(log, rows(1, 2))
    append(log, rows(3))
    log.add_columns([pa.field("x", pa.int64())])
    assert clustering(log) == [["id"]]  # every other commit keeps the domain
    checked(root, [1, 2, 3])
    log.cluster_by(["s", "id"])
    assert clustering(log) == [["s"], ["id"]]
    checked(root, [1, 2, 3])
    (good,) = files_for(log, rows(4))
    before = log_files(root)
    stats = orjson.loads(good.stats or "{}")
    del stats["minValues"]["s"], stats["maxValues"]["s"]
    for bad, why in [
        (dataclasses.replace(good, stats=None), "statistics with numRecords"),
        (dataclasses.replace(good, stats=orjson.dumps(stats).decode()), "minValues/maxValues statistic for clustering"),
    ]:
        with pytest.raises(InvalidCommitError, match=why) as info:
            log.start_transaction().commit([bad])
        assert info.value.rule == "clustering-stats"
    assert log_files(root) == before
    log.start_transaction().commit([good])
    log.cluster_by([])  # CLUSTER BY NONE: the domain stays, empty
    assert clustering(log) == []
    checked(root, [1, 2, 3, 4])


def test_column_mapped_clustered_tables_name_physical_columns(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(IDS, configuration={"delta.columnMapping.mode": "name"}, clustering_columns=["s"])
    physical = {
        f["name"]: f["metadata"]["delta.columnMapping.physicalName"] for f in log.snapshot().schema_json["fields"]
    }
    assert clustering(log) == [[physical["s"]]]
    append(log, rows(5, 6))
    checked(root, [5, 6])


def test_clustering_refusals_name_the_rule(tmp_path: Path) -> None:
    parted = DeltaLog.for_table(tmp_path / "p")
    parted.create(IDS, ["s"])
    with pytest.raises(InvalidCommitError, match="cannot be partitioned"):
        parted.cluster_by(["id"])
    with pytest.raises(InvalidCommitError, match="not in the schema"):
        DeltaLog.for_table(tmp_path / "q").create(IDS, clustering_columns=["nope"])
    assert not (tmp_path / "q" / "_delta_log").exists() or log_files(tmp_path / "q") == []
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(IDS, clustering_columns=["id"])
    with pytest.raises(InvalidArgumentError, match="already clustered"):
        log.cluster_by(["id"])
    checked(root)


def test_an_unclustered_table_becomes_clustered_and_racing_changes_conflict(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(IDS)
    append(log, rows(1))
    log.cluster_by(["id"])
    assert {"clustering", "domainMetadata"} <= log.snapshot().features
    checked(root, [1])
    first, second = DeltaLog.for_table(root).start_transaction(), DeltaLog.for_table(root).start_transaction()
    ddl.cluster_by(first, ["s"])
    with pytest.raises(ConcurrentModificationError):
        ddl.cluster_by(second, ["id", "s"])
    assert clustering(log) == [["s"]]
    racing = DeltaLog.for_table(root).start_transaction()
    staged = files_for(log, rows(2))
    append(DeltaLog.for_table(root), rows(3))
    racing.commit(staged)  # appends to a clustered table retry like any other
    checked(root, [1, 2, 3])
