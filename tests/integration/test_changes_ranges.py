"""The range rules of ``log.changes()``: bounds by version or by time (time travel's clock, in-commit timestamps
included), an end clipped to the latest version, ``allow_out_of_range``, and typed refusals naming the version
or file: change data feed off, versions log cleanup removed, vacuumed files, schema changes Delta Spark refuses
to read across. Every table written here is read back by both peers."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

import deltalog
from deltalog import DeltaLog
from deltalog.errors import (
    ChangeDataNotRecordedError,
    CorruptDataError,
    IncompatibleSchemaChangeError,
    InvalidArgumentError,
    VersionNotFoundError,
)
from tests.integration.change_oracle import per_version
from tests.integration.dml_kit import assert_everyone_reads, hand_commit

CDF_ON = {"delta.enableChangeDataFeed": "true"}
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "p": ["a" if i % 2 else "b" for i in ids]})


def five_versions(root: Path, **conf: str) -> DeltaLog:
    """v0 creates the table with id 0, v1..v4 append ids 1..4 (one each): version ``v`` inserts id ``v``."""
    deltalog.write(rows(0), root, partition_by=["p"], configuration={**CDF_ON, **conf})
    for i in (1, 2, 3, 4):
        deltalog.write(rows(i), root)
    return DeltaLog.for_table(root)


def set_times(root: Path, times: dict[int, int]) -> None:
    for v, ms in times.items():
        os.utime(root / "_delta_log" / f"{v:020d}.json", ns=(ms * 1_000_000, ms * 1_000_000))


def ids(reader: pa.RecordBatchReader) -> list[tuple[int, int]]:
    table = reader.read_all()
    return sorted(zip(table.column("_commit_version").to_pylist(), table.column("id").to_pylist(), strict=True))


def test_bounds_by_version_end_clipped_and_out_of_range(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = five_versions(root)
    assert ids(log.changes()) == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)]
    assert ids(log.changes(2, 3)) == [(2, 2), (3, 3)]
    assert ids(log.changes(3, 99)) == ids(log.changes(3)) == [(3, 3), (4, 4)]  # the end is clipped
    with pytest.raises(VersionNotFoundError, match="starting version 5 is after the latest version 4") as found:
        log.changes(5)
    assert found.value.latest == 4
    with pytest.raises(InvalidArgumentError, match="ending version 2 is before starting version 3"):
        log.changes(3, 2)
    for empty in (log.changes(5, allow_out_of_range=True), log.changes(3, 2, allow_out_of_range=True)):
        assert empty.read_all().num_rows == 0 and empty.schema.names == ["id", "p", *CHANGE_NAMES]
    with pytest.raises(InvalidArgumentError, match="not both"):
        log.changes(1, starting_timestamp=T0)
    with pytest.raises(InvalidArgumentError, match="not both"):
        log.changes(1, 2, ending_timestamp=T0)
    with pytest.raises(InvalidArgumentError, match="starting_version must be a version"):
        log.changes(-1)
    lake = pa.table(DeltaTable(str(root)).load_cdf(starting_version=5, allow_out_of_range=True).read_all())
    assert lake.num_rows == 0  # deltalake's allow_out_of_range reads the same nothing
    assert_everyone_reads(root, log.snapshot().to_arrow())


CHANGE_NAMES = ["_change_type", "_commit_version", "_commit_timestamp"]


def test_bounds_by_time_resolve_as_time_travel_does_and_rows_carry_its_times(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = five_versions(root)
    # v2's file time is before v1's: time travel makes it v1's + 1 ms, and so do the rows
    set_times(root, {0: T0, 1: T0 + 10_000, 2: T0 + 5_000, 3: T0 + 30_000, 4: T0 + 40_000})
    log = DeltaLog.for_table(root)
    times = {h.version: h.timestamp for h in log.history()}
    assert times[2] == T0 + 10_001
    table = log.changes().read_all()
    for row in table.to_pylist():
        assert int(row["_commit_timestamp"].timestamp() * 1000) == times[row["_commit_version"]]
    assert table.schema.field("_commit_timestamp").type == pa.timestamp("us", tz="UTC")
    # a start is the first version committed at or after it, an end the last at or before it
    assert ids(log.changes(starting_timestamp=T0 + 10_001)) == [(2, 2), (3, 3), (4, 4)]
    assert ids(log.changes(starting_timestamp=T0 + 10_002, ending_timestamp=T0 + 30_000)) == [(3, 3)]
    assert log.snapshot(timestamp=T0 + 30_000).version == 3  # time travel agrees on the end
    assert ids(log.changes(starting_timestamp=T0 - 1, ending_timestamp=T0 + 10_000)) == [(0, 0), (1, 1)]
    assert ids(log.changes(starting_timestamp=T0 + 1, ending_timestamp=T0 + 10_000)) == [(1, 1)]
    assert ids(log.changes(starting_timestamp="2026-01-01T00:00:30Z")) == [(3, 3), (4, 4)]
    assert ids(log.changes(2, ending_timestamp=T0 + 10**9)) == [(2, 2), (3, 3), (4, 4)]  # clipped too
    # both between the same two commits: nothing changed there
    assert log.changes(starting_timestamp=T0 + 31_000, ending_timestamp=T0 + 32_000).read_all().num_rows == 0
    with pytest.raises(VersionNotFoundError, match="after the latest version 4"):
        log.changes(starting_timestamp=T0 + 50_000)
    with pytest.raises(VersionNotFoundError, match="before the earliest"):
        log.changes(ending_timestamp=T0 - 1)
    with pytest.raises(InvalidArgumentError, match=r"ending timestamp .* is before starting timestamp"):
        log.changes(starting_timestamp=T0 + 40_000, ending_timestamp=T0 + 30_000)
    for empty in (
        log.changes(starting_timestamp=T0 + 50_000, allow_out_of_range=True),
        log.changes(ending_timestamp=T0 - 1, allow_out_of_range=True),
        log.changes(starting_timestamp=T0 + 40_000, ending_timestamp=T0 + 30_000, allow_out_of_range=True),
    ):
        assert empty.read_all().num_rows == 0
    assert_everyone_reads(root, log.snapshot().to_arrow())


def test_in_commit_timestamps_are_the_rows_times(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = five_versions(root, **{"delta.enableInCommitTimestamps": "true"})
    set_times(root, dict.fromkeys(range(5), T0))  # file times say nothing once ICT is on
    log = DeltaLog.for_table(root)
    infos = [
        json.loads(line) for v in range(5) for line in (root / "_delta_log" / f"{v:020d}.json").read_text().splitlines()
    ]
    ict = {v: i["commitInfo"]["inCommitTimestamp"] for v, i in enumerate(x for x in infos if "commitInfo" in x)}
    table = log.changes().read_all()
    for row in table.to_pylist():
        assert int(row["_commit_timestamp"].timestamp() * 1000) == ict[row["_commit_version"]]
    assert ids(log.changes(starting_timestamp=ict[3])) == [(3, 3), (4, 4)]
    assert log.snapshot(timestamp=ict[3]).version == 3
    assert_everyone_reads(root, log.snapshot().to_arrow())


def test_change_data_feed_must_be_on_over_the_whole_range(tmp_path: Path) -> None:
    root = tmp_path / "t"
    deltalog.write(rows(1), root, partition_by=["p"])  # v0: the table and its rows, no change data feed
    log = DeltaLog.for_table(root)
    log.set_properties(CDF_ON)  # v1
    deltalog.write(rows(2), root)  # v2
    log.set_properties({"delta.enableChangeDataFeed": "false"})  # v3
    deltalog.write(rows(3), root)  # v4
    log.set_properties(CDF_ON)  # v5
    deltalog.write(rows(4), root)  # v6
    with pytest.raises(ChangeDataNotRecordedError, match="not enabled at version 0") as off:
        log.changes()
    assert off.value.version == 0
    with pytest.raises(ChangeDataNotRecordedError, match="not enabled at version 3") as later:
        log.changes(1)
    assert later.value.version == 3
    assert ids(log.changes(1, 2)) == [(2, 2)]
    assert ids(log.changes(5)) == [(6, 4)]
    assert_everyone_reads(root, log.snapshot().to_arrow())


def test_versions_log_cleanup_removed_and_vacuumed_files_are_refused_by_name(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = five_versions(root)
    assert_everyone_reads(root, log.snapshot().to_arrow())
    created = {a.path for a in log.snapshot(version=0).add_actions()}
    log.checkpoint(2)
    for v in (0, 1):
        (root / "_delta_log" / f"{v:020d}.json").unlink()  # what log cleanup leaves: the checkpoint at 2 on
    log = DeltaLog.for_table(root)
    with pytest.raises(VersionNotFoundError, match=r"version 1's commit file .* is gone") as gone:
        log.changes(1)
    assert gone.value.earliest == 2
    assert ids(log.changes(2)) == [(2, 2), (3, 3), (4, 4)]  # from the checkpoint's version on
    added = [a.path for a in log.snapshot().add_actions() if "part" in a.path and a.path not in created]
    victim = next(p for p in added if p.startswith("p=b"))  # a file of the range read (v0's is before it)
    (root / victim).unlink()  # vacuumed
    with pytest.raises(CorruptDataError, match=victim.split("/")[-1]) as missing:
        log.changes(2).read_all()
    assert missing.value.path == victim


def _rename(log: DeltaLog, old: str, new: str) -> None:
    snap = log.snapshot()
    schema = snap.schema_json
    fields = [{**f, "name": new} if f["name"] == old else f for f in schema["fields"]]
    text = json.dumps({**schema, "fields": fields})
    hand_commit(log, [dataclasses.replace(snap.metadata, schema_string=text)], "RENAME COLUMN")


def test_schema_changes_delta_spark_refuses_are_refused_by_name(tmp_path: Path) -> None:
    root = tmp_path / "mapped"
    deltalog.write(rows(1), root, configuration={**CDF_ON, "delta.columnMapping.mode": "name"})  # v0
    log = DeltaLog.for_table(root)
    _rename(log, "id", "key")  # v1
    deltalog.write(pa.table({"key": pa.array([2], pa.int64()), "p": ["b"]}), root)  # v2
    log = DeltaLog.for_table(root)
    with pytest.raises(IncompatibleSchemaChangeError, match="column 'id' was renamed to 'key'") as renamed:
        log.changes()
    assert renamed.value.version == 0
    assert log.changes(1).read_all().column("key").to_pylist() == [2]  # after the rename: readable

    plain = tmp_path / "plain"
    deltalog.write(rows(1), plain)  # v0
    log = DeltaLog.for_table(plain)
    log.set_properties(CDF_ON)  # v1
    log.add_columns([pa.field("extra", pa.string())])  # v2: an added column is readable across
    deltalog.write(pa.table({"id": pa.array([2], pa.int64()), "p": ["b"], "extra": ["x"]}), plain)  # v3
    assert log.changes(1).read_all().select(["id", "extra"]).to_pylist() == [{"id": 2, "extra": "x"}]
    snap = log.snapshot()
    narrowed = json.dumps(
        {
            **snap.schema_json,
            "fields": [{**f, "type": "integer"} if f["name"] == "id" else f for f in snap.schema_json["fields"]],
        }
    )
    hand_commit(log, [dataclasses.replace(snap.metadata, schema_string=narrowed)], "CHANGE COLUMN")  # v4
    with pytest.raises(IncompatibleSchemaChangeError, match="column 'id' changed type from long to integer") as typed:
        DeltaLog.for_table(plain).changes(1)
    assert typed.value.version == 2  # the first schema of the range the latest cannot read
    assert_everyone_reads(root, DeltaLog.for_table(root).snapshot().to_arrow())


def test_rows_stream_version_by_version(tmp_path: Path) -> None:
    root = tmp_path / "t"
    five_versions(root)
    seen = []
    for batch in DeltaLog.for_table(root).changes():
        versions = set(batch.column("_commit_version").to_pylist())
        assert len(versions) == 1  # a batch never mixes versions
        seen.append(versions.pop())
    assert seen == sorted(seen) and set(seen) == {0, 1, 2, 3, 4}
    assert per_version(DeltaLog.for_table(root).changes().read_all()).keys() == {0, 1, 2, 3, 4}
    assert_everyone_reads(root, DeltaLog.for_table(root).snapshot().to_arrow())
