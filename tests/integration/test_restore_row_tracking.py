"""RESTORE on tables with row tracking keeps what Delta Spark keeps (``../shared/docs/delta-write-rules.md``
sections 2 and 6, PROTOCOL.md "Row Tracking").

A re-added file is the target's file, rows and all: it keeps the ``baseRowId`` and ``defaultRowCommitVersion``
the target recorded, so its rows keep their ids. A file written before row tracking existed has neither and is
given fresh ids above the mark, as any add without them is. The ``delta.rowTracking`` high-water mark is never
lowered: going back to the target's mark would hand out ids that live rows already had. Each table is checked by
the independent protocol checker and read by ``deltalake`` and duckdb.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from deltalog import DeltaLog
from tests.integration.datafiles import SCHEMA, assert_peers_agree, data_file
from tests.protocol_checker import assert_valid

pytestmark = pytest.mark.interop

ROWS = {"delta.enableRowTracking": "true"}


def commit_lines(root: Path, version: int) -> list[dict[str, Any]]:
    text = (root / "_delta_log" / f"{version:020d}.json").read_bytes()
    return [orjson.loads(line) for line in text.splitlines() if line.strip()]


def row_fields(line: dict[str, Any]) -> tuple[Any, Any]:
    return line.get("baseRowId"), line.get("defaultRowCommitVersion")


def mark(log: DeltaLog) -> int:
    value = orjson.loads(log.snapshot().domain_metadata["delta.rowTracking"].configuration)["rowIdHighWaterMark"]
    assert isinstance(value, int)
    return value


@pytest.mark.parametrize("conf", [ROWS, {"delta.feature.rowTracking": "supported"}], ids=["enabled", "supported"])
def test_restored_files_keep_their_row_ids_and_the_mark_stays(tmp_path: Path, conf: dict[str, str]) -> None:
    log = DeltaLog.for_table(tmp_path)
    log.create(SCHEMA, configuration=conf)
    log.start_transaction().commit([data_file(tmp_path, "a", rows=2)])  # v1: ids 0..1
    log.start_transaction().commit([data_file(tmp_path, "b", rows=3)])  # v2: ids 2..4
    txn = log.start_transaction()
    txn.remove_files(["a.parquet"])
    txn.commit(operation="DELETE")  # v3
    log.start_transaction().commit([data_file(tmp_path, "c", rows=1)])  # v4: id 5
    assert mark(log) == 5

    result = log.restore(version=1)

    lines = commit_lines(tmp_path, result.version)
    (added,) = [line["add"] for line in lines if "add" in line]
    assert added["path"] == "a.parquet" and row_fields(added) == (0, 1)  # as version 1 wrote them
    removed = {line["remove"]["path"]: row_fields(line["remove"]) for line in lines if "remove" in line}
    assert removed == {"b.parquet": (2, 2), "c.parquet": (5, 4)}
    assert not [line for line in lines if "domainMetadata" in line]  # nothing new assigned: the mark is kept
    assert mark(log) == 5  # version 1's mark was 1; restoring it would reissue ids 2..5
    snap = log.snapshot()
    (live,) = snap.add_actions()
    assert (live.base_row_id, live.default_row_commit_version) == (0, 1)
    assert_valid(tmp_path)
    assert_peers_agree(tmp_path)

    log.start_transaction().commit([data_file(tmp_path, "d", rows=2)])  # the next append starts above 5
    (after,) = [line["add"] for line in commit_lines(tmp_path, result.version + 1) if "add" in line]
    assert row_fields(after) == (6, result.version + 1)
    assert_valid(tmp_path)
    assert_peers_agree(tmp_path)


def test_a_file_from_before_row_tracking_gets_fresh_ids_above_the_mark(tmp_path: Path) -> None:
    log = DeltaLog.for_table(tmp_path)
    log.create(SCHEMA)
    log.start_transaction().commit([data_file(tmp_path, "a", rows=2)])  # v1: no row tracking yet
    txn = log.start_transaction()
    txn.remove_files(["a.parquet"])
    txn.commit(operation="DELETE")  # v2
    log.enable_feature("rowTracking")  # v3
    log.start_transaction().commit([data_file(tmp_path, "b", rows=3)])  # v4: ids 0..2
    assert mark(log) == 2

    result = log.restore(version=1)

    protocol = log.snapshot().protocol
    assert "rowTracking" in (protocol.writer_features or ())  # never a downgrade to the target's protocol
    lines = commit_lines(tmp_path, result.version)
    (added,) = [line["add"] for line in lines if "add" in line]
    assert row_fields(added) == (3, result.version)
    (domain,) = [line["domainMetadata"] for line in lines if "domainMetadata" in line]
    assert domain["domain"] == "delta.rowTracking"
    assert orjson.loads(domain["configuration"]) == {"rowIdHighWaterMark": 4}
    assert mark(log) == 4
    assert_valid(tmp_path)
    assert_peers_agree(tmp_path)


def test_restoring_across_a_deletion_vector_keeps_the_file_s_row_ids(tmp_path: Path) -> None:
    log = DeltaLog.for_table(tmp_path)
    log.create(SCHEMA, configuration={"delta.feature.rowTracking": "supported", "delta.enableDeletionVectors": "true"})
    log.start_transaction().commit([data_file(tmp_path, "a", rows=4)])  # v1: ids 0..3
    deleted = log.delete({"id": 1})  # v2: a deletion vector on a.parquet, same file, same row ids
    assert deleted.version == 2
    (with_dv,) = log.snapshot().add_actions()
    assert with_dv.deletion_vector is not None

    result = log.restore(version=1)

    lines = commit_lines(tmp_path, result.version)
    (added,) = [line["add"] for line in lines if "add" in line]
    (removed,) = [line["remove"] for line in lines if "remove" in line]
    assert "deletionVector" not in added and removed["deletionVector"] is not None
    assert row_fields(added) == (0, 1) == row_fields(removed)
    assert mark(log) == 3
    assert_valid(tmp_path)
    assert_peers_agree(tmp_path)
