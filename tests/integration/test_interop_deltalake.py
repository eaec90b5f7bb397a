"""Live interop: tables written by the ``deltalake`` package (delta-rs) must read the same through deltalog.

delta-rs is an independent implementation of the protocol. Agreeing with it at *every* version of tables it
wrote catches replay mistakes that tests built on our own fixtures cannot, because those fixtures would share
our misreadings. Each scenario writes a table into ``tmp_path`` and compares the whole observable state
(version, protocol, metadata, schema, live files with sizes, partition values and record counts, app
transactions) version by version.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import CommitProperties, DeltaTable, TableFeatures, Transaction, write_deltalake
from deltalake.exceptions import TableNotFoundError as LakeTableNotFoundError

from deltalog import DeltaLog, Snapshot, VersionNotFoundError

pytestmark = pytest.mark.interop


# ---------------------------------------------------------------------------------------------- state model
@dataclass(frozen=True)
class LiveFile:
    size: int
    partition_values: tuple[tuple[str, str | None], ...]
    num_records: int | None


@dataclass(frozen=True)
class TableState:
    """Everything both engines can report about one version, in one comparable shape."""

    version: int
    protocol: tuple[int, int, tuple[str, ...] | None, tuple[str, ...] | None]
    metadata: tuple[str, str | None, str | None, tuple[str, ...], tuple[tuple[str, str | None], ...], int | None]
    schema: dict[str, Any]
    files: dict[str, LiveFile]
    txns: dict[str, int | None]


def _features(names: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if names is None else tuple(sorted(names))


def _partition_string(value: Any) -> str | None:
    """deltalake hands partition values back typed; the log (and deltalog) keep the protocol's strings."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):  # a date too: test it first
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")  # delta-rs's spelling of UTC timestamps
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def _null_if_empty(value: str | None) -> str | None:
    """The protocol reads an empty partition value as null; deltalog hands out the log's raw string."""
    return None if value == "" else value


def deltalake_state(path: Path, version: int, apps: Sequence[str] = ()) -> TableState:
    table = DeltaTable(str(path), version=version)
    proto = table.protocol()
    meta = table.metadata()
    adds = pa.table(table.get_add_actions(flatten=True))
    part_cols = [c for c in adds.column_names if c.startswith("partition.")]
    files = {}
    for row in adds.to_pylist():
        parts = tuple(sorted((c.removeprefix("partition."), _partition_string(row[c])) for c in part_cols))
        files[row["path"]] = LiveFile(row["size_bytes"], parts, row["num_records"])
    return TableState(
        version=table.version(),
        protocol=(
            proto.min_reader_version,
            proto.min_writer_version,
            _features(proto.reader_features),
            _features(proto.writer_features),
        ),
        metadata=(
            meta.id,
            meta.name,
            meta.description,
            tuple(meta.partition_columns),
            tuple(sorted(meta.configuration.items())),
            meta.created_time,
        ),
        schema=json.loads(table.schema().to_json()),
        files=files,
        txns={app: table.transaction_version(app) for app in apps},
    )


def deltalog_state(snap: Snapshot, apps: Sequence[str] = ()) -> TableState:
    proto = snap.protocol
    meta = snap.metadata
    files = {}
    for row in snap.files(stats=True).to_pylist():
        stats = json.loads(row["stats"]) if row["stats"] else {}
        parts = tuple(sorted((k, _null_if_empty(v)) for k, v in row["partition_values"] or []))
        files[row["path"]] = LiveFile(row["size"], parts, stats.get("numRecords"))
    assert len(files) == snap.num_files, "files() and num_files disagree (or a path is live twice)"
    assert meta.schema_string is not None
    return TableState(
        version=snap.version,
        protocol=(
            proto.min_reader_version,
            proto.min_writer_version,
            _features(proto.reader_features),
            _features(proto.writer_features),
        ),
        metadata=(
            meta.id,
            meta.name,
            meta.description,
            tuple(meta.partition_columns),
            tuple(sorted(meta.configuration.items())),
            meta.created_time,
        ),
        schema=json.loads(meta.schema_string),
        files=files,
        txns={app: snap.app_version(app) for app in apps},
    )


def assert_every_version_matches(path: Path, apps: Sequence[str] = (), first: int = 0) -> list[TableState]:
    """Compare the two engines at each version from ``first`` to the latest; return deltalog's states."""
    log = DeltaLog.for_table(path)
    latest = DeltaTable(str(path)).version()
    assert log.snapshot().version == latest
    states = []
    for version in range(first, latest + 1):
        ours = deltalog_state(log.snapshot(version=version), apps)
        assert ours == deltalake_state(path, version, apps), f"state differs at version {version}"
        states.append(ours)
    return states


# ---------------------------------------------------------------------------------------------- writing helpers
def ints(start: int, count: int) -> pa.Table:
    return pa.table({"x": pa.array(range(start, start + count), pa.int64())})


def commit_path(table: Path, version: int) -> Path:
    return table / "_delta_log" / f"{version:020d}.json"


def checkpoint_versions(table: Path) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in (table / "_delta_log").glob("*.checkpoint.parquet"))


AWKWARD = ["a b", "50%", "k=v", "a/b", "12:30:00", "naïve ünï 日本", "plain"]


def awkward_rows(seed: int) -> pa.Table:
    """Rows whose partition values need escaping in paths, plus a null partition value."""
    n = len(AWKWARD) + 1
    return pa.table(
        {
            "x": pa.array(range(seed * 100, seed * 100 + n), pa.int64()),
            "s": pa.array([*AWKWARD, None], pa.string()),
            "n": pa.array([(seed + i) % 3 for i in range(n)], pa.int32()),
            "d": pa.array([dt.date(2026, 11, 1 + (seed + i) % 2) for i in range(n)], pa.date32()),
        }
    )


# ---------------------------------------------------------------------------------------------- scenarios
def test_appends_over_many_versions(tmp_path: Path) -> None:
    table = tmp_path / "appends"
    write_deltalake(str(table), ints(0, 3), name="appends", description="fifteen versions")
    for v in range(1, 15):
        write_deltalake(str(table), ints(v * 10, v % 4 + 1), mode="append")

    states = assert_every_version_matches(table)

    assert [s.version for s in states] == list(range(15))
    assert [len(s.files) for s in states] == list(range(1, 16))  # one file per append, none removed
    assert states[-1].metadata[1:3] == ("appends", "fifteen versions")
    assert sum(f.num_records or 0 for f in states[-1].files.values()) == DeltaTable(str(table)).count()


def test_partitioned_awkward_values(tmp_path: Path) -> None:
    table = tmp_path / "partitioned"
    for seed in range(4):
        write_deltalake(str(table), awkward_rows(seed), partition_by=["s", "n", "d"], mode="append")

    states = assert_every_version_matches(table)

    snap = DeltaLog.for_table(table).snapshot()
    assert snap.partition_columns == ["s", "n", "d"]
    seen = {dict(f.partition_values)["s"] for f in states[-1].files.values()}
    assert seen == {*AWKWARD, None}
    # Partition pruning agrees with deltalake's own partition values, for each awkward value and typed columns.
    lake = pa.table(DeltaTable(str(table)).get_add_actions(flatten=True))
    for value in AWKWARD:
        expected = set(lake.filter(pc.equal(lake["partition.s"], value))["path"].to_pylist())
        assert set(snap.files(where={"s": value})["path"].to_pylist()) == expected, value
    expected = set(lake.filter(pc.equal(lake["partition.n"], 1))["path"].to_pylist())
    assert set(snap.files(where={"n": 1})["path"].to_pylist()) == expected
    day = dt.date(2026, 11, 2)
    expected = set(lake.filter(pc.equal(lake["partition.d"], pa.scalar(day, pa.date32())))["path"].to_pylist())
    assert set(snap.files(where={"d": "2026-11-02"})["path"].to_pylist()) == expected
    assert expected  # the filter above must not pass vacuously


def test_typed_and_empty_partition_values(tmp_path: Path) -> None:
    table = tmp_path / "typed"
    rows = pa.table(
        {
            "x": pa.array([1, 2, 3, 4], pa.int64()),
            "e": pa.array(["", "v", None, "w"]),  # delta-rs writes "" as is; the protocol reads it as null
            "b": pa.array([True, False, None, True]),
            "ts": pa.array(
                [dt.datetime(2026, 1, 1, 10), dt.datetime(2026, 1, 1, 10, 0, 0, 500), None, dt.datetime(2026, 1, 2)],
                pa.timestamp("us", "UTC"),
            ),
            "my col": pa.array(["a", "a", "b", "b"]),
            "dec": pa.array([Decimal("1.10"), None, Decimal("2.5"), Decimal("3")], pa.decimal128(10, 2)),
        }
    )
    columns = ["e", "b", "ts", "my col", "dec"]
    write_deltalake(str(table), rows, partition_by=columns)
    write_deltalake(str(table), rows, partition_by=columns, mode="append")

    assert_every_version_matches(table)

    snap = DeltaLog.for_table(table).snapshot()
    lake = pa.table(DeltaTable(str(table)).get_add_actions(flatten=True))

    def lake_paths(mask: pa.ChunkedArray) -> set[str]:
        return set(lake.filter(mask)["path"].to_pylist())

    cases = [
        ({"e": None}, pc.is_null(lake["partition.e"])),
        ({"b": True}, pc.equal(lake["partition.b"], True)),
        (
            {"ts": "2026-01-01 10:00:00"},
            pc.equal(lake["partition.ts"], pa.scalar(dt.datetime(2026, 1, 1, 10, tzinfo=dt.timezone.utc))),
        ),
        ({"my col": "a"}, pc.equal(lake["partition.my col"], "a")),
        ({"dec": "2.5"}, pc.equal(lake["partition.dec"], pa.scalar(Decimal("2.50"), pa.decimal128(10, 2)))),
    ]
    for where, mask in cases:
        expected = lake_paths(pc.fill_null(mask, False))
        assert expected, where  # every case selects something, so none passes vacuously
        assert set(snap.files(where=where)["path"].to_pylist()) == expected, where


def test_overwrite_replaces_live_files(tmp_path: Path) -> None:
    table = tmp_path / "overwrite"
    write_deltalake(str(table), ints(0, 5))
    write_deltalake(str(table), ints(5, 5), mode="append")
    write_deltalake(str(table), ints(100, 2), mode="overwrite")
    write_deltalake(str(table), ints(200, 1), mode="append")

    states = assert_every_version_matches(table)

    assert [len(s.files) for s in states] == [1, 2, 1, 2]
    assert not set(states[1].files) & set(states[2].files)
    assert sorted(f.num_records for f in states[3].files.values()) == [1, 2]


def test_overwrite_with_predicate_replaces_one_partition(tmp_path: Path) -> None:
    table = tmp_path / "replace-where"
    write_deltalake(str(table), awkward_rows(0), partition_by=["n"])
    write_deltalake(str(table), awkward_rows(1), partition_by=["n"], mode="append")
    replacement = awkward_rows(7).filter(pc.equal(pc.field("n"), 1))
    write_deltalake(str(table), replacement, partition_by=["n"], mode="overwrite", predicate="n = 1")

    states = assert_every_version_matches(table)

    def n_is_1(state: TableState) -> set[str]:
        return {p for p, f in state.files.items() if dict(f.partition_values)["n"] == "1"}

    assert sum(states[-1].files[p].num_records or 0 for p in n_is_1(states[-1])) == replacement.num_rows
    assert set(states[1].files) - set(states[-1].files) == n_is_1(states[1])  # only n=1 was replaced


def test_delete_with_predicate(tmp_path: Path) -> None:
    table = tmp_path / "delete"
    write_deltalake(str(table), ints(0, 6))
    write_deltalake(str(table), ints(6, 6), mode="append")
    write_deltalake(str(table), ints(20, 3), mode="append")
    DeltaTable(str(table)).delete("x > 5")

    states = assert_every_version_matches(table)

    assert states[-1].version == 3
    assert sum(f.num_records or 0 for f in states[-1].files.values()) == 6
    assert DeltaLog.for_table(table).snapshot().commit_info["operation"] == "DELETE"


def test_optimize_compact(tmp_path: Path) -> None:
    table = tmp_path / "compact"
    for v in range(6):
        write_deltalake(str(table), ints(v * 10, 2), mode="append")
    DeltaTable(str(table)).optimize.compact()

    states = assert_every_version_matches(table)

    before, after = states[-2], states[-1]
    assert len(before.files) == 6 and len(after.files) == 1
    snap = DeltaLog.for_table(table).snapshot()
    assert snap.files()["data_change"].to_pylist() == [False]
    tombstones = snap.tombstones()
    assert set(tombstones["path"].to_pylist()) == set(before.files)
    assert set(tombstones["dataChange"].to_pylist()) == {False}


def test_checkpoint_then_more_commits(tmp_path: Path) -> None:
    table = tmp_path / "checkpointed"
    write_deltalake(str(table), ints(0, 3))
    for v in range(1, 5):
        write_deltalake(str(table), ints(v * 10, 2), mode="append")
    DeltaTable(str(table)).delete("x < 2")  # v5: a remove that the checkpoint must carry as a tombstone
    DeltaTable(str(table)).create_checkpoint()
    for v in range(6, 9):
        write_deltalake(str(table), ints(v * 10, 2), mode="append")
    assert checkpoint_versions(table) == [5]

    states = assert_every_version_matches(table)

    log = DeltaLog.for_table(table)
    deleted = set(states[4].files) - set(states[5].files)
    assert deleted and deleted <= set(log.snapshot().tombstones()["path"].to_pylist())
    for version in range(6, 9):
        segment = log.snapshot(version=version).segment
        assert segment.checkpoint is not None and segment.checkpoint.version == 5
        assert [c.version for c in segment.commits] == list(range(6, version + 1))
    assert log.snapshot(version=5).segment.checkpoint is not None
    assert log.snapshot(version=4).segment.checkpoint is None


def test_restore_re_adds_removed_paths(tmp_path: Path) -> None:
    table = tmp_path / "restore"
    write_deltalake(str(table), ints(0, 3))
    write_deltalake(str(table), ints(3, 3), mode="append")
    write_deltalake(str(table), ints(10, 3), mode="overwrite")
    DeltaTable(str(table)).restore(0)  # v3 adds v0's file again: its path was a tombstone
    DeltaTable(str(table)).create_checkpoint()  # the checkpoint carries v2's file as a tombstone ...
    DeltaTable(str(table)).restore(2)  # ... which v4 adds back on top of the checkpoint

    states = assert_every_version_matches(table)

    assert set(states[3].files) == set(states[0].files)
    assert set(states[4].files) == set(states[2].files)
    snap = DeltaLog.for_table(table).snapshot()
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 3
    assert not set(snap.tombstones()["path"].to_pylist()) & set(states[4].files)


def test_checkpoint_interval_from_configuration(tmp_path: Path) -> None:
    table = tmp_path / "interval"
    write_deltalake(str(table), ints(0, 2), configuration={"delta.checkpointInterval": "5"})
    for v in range(1, 13):
        write_deltalake(str(table), ints(v * 10, 1), mode="append")

    # deltalake checkpoints after committing v when (v + 1) % interval == 0.
    assert checkpoint_versions(table) == [4, 9]
    states = assert_every_version_matches(table)

    assert states[-1].metadata[4] == (("delta.checkpointInterval", "5"),)
    log = DeltaLog.for_table(table)
    for version in range(13):
        checkpoint = log.snapshot(version=version).segment.checkpoint
        expected = max((c for c in (4, 9) if c <= version), default=None)
        assert (checkpoint.version if checkpoint else None) == expected, version


def test_cleanup_metadata_makes_old_versions_unreachable(tmp_path: Path) -> None:
    table = tmp_path / "cleanup"
    # Every commit expires at once, but only the explicit cleanup_metadata() may delete (not the checkpoint).
    config = {"delta.logRetentionDuration": "interval 0 seconds", "delta.enableExpiredLogCleanup": "false"}
    write_deltalake(str(table), ints(0, 2), configuration=config)
    for v in range(1, 6):
        write_deltalake(str(table), ints(v * 10, 2), mode="append")
    DeltaTable(str(table)).create_checkpoint()  # at v5
    for v in range(6, 9):
        write_deltalake(str(table), ints(v * 10, 2), mode="append")
    before = assert_every_version_matches(table)
    for v in range(5):  # expired beyond doubt, whatever the file system's mtime granularity
        os.utime(commit_path(table, v), (1_600_000_000 + v, 1_600_000_000 + v))
    DeltaTable(str(table)).cleanup_metadata()
    assert not commit_path(table, 4).exists() and commit_path(table, 6).exists()

    log = DeltaLog.for_table(table)
    assert log.earliest_version() == 5
    for version in range(5):
        with pytest.raises(VersionNotFoundError) as err:
            log.snapshot(version=version)
        assert (err.value.earliest, err.value.latest) == (5, 8)
        with pytest.raises(LakeTableNotFoundError):  # deltalake agrees these are gone
            DeltaTable(str(table), version=version)
    states = assert_every_version_matches(table, first=5)
    assert states == before[5:]
    assert [len(s.files) for s in states] == [6, 7, 8, 9]
    assert [entry.version for entry in log.history()][-1] == 5
    with pytest.raises(VersionNotFoundError) as err:
        log.snapshot(timestamp="2020-09-13T12:26:41Z")  # commit 1's backdated time: gone with the commit
    assert err.value.earliest == 5


def test_app_transactions(tmp_path: Path) -> None:
    table = tmp_path / "txns"

    def write(start: int, *txns: Transaction) -> None:
        props = CommitProperties(app_transactions=list(txns)) if txns else None
        write_deltalake(str(table), ints(start, 1), mode="append", commit_properties=props)

    write(0)
    write(1, Transaction("ingest", 1))
    write(2, Transaction("ingest", 2), Transaction("backfill", 40))
    write(3)
    write(4, Transaction("ingest", 7))

    apps = ["ingest", "backfill", "never-seen"]
    states = assert_every_version_matches(table, apps)

    assert [s.txns["ingest"] for s in states] == [None, 1, 2, 2, 7]
    assert [s.txns["backfill"] for s in states] == [None, None, 40, 40, 40]
    assert {s.txns["never-seen"] for s in states} == {None}
    # A checkpoint must carry the txns forward too.
    DeltaTable(str(table)).create_checkpoint()
    write(5)
    snap = DeltaLog.for_table(table).snapshot()
    assert snap.segment.checkpoint is not None
    assert (snap.app_version("ingest"), snap.app_version("backfill")) == (7, 40)
    assert_every_version_matches(table, apps)


def test_schema_evolution_merge(tmp_path: Path) -> None:
    table = tmp_path / "evolve"
    write_deltalake(str(table), ints(0, 3))
    wider = pa.table({"x": pa.array([10], pa.int64()), "label": pa.array(["ten"])})
    write_deltalake(str(table), wider, mode="append", schema_mode="merge")
    widest = wider.append_column("score", pa.array([1.5], pa.float64()))
    write_deltalake(str(table), widest, mode="append", schema_mode="merge")

    states = assert_every_version_matches(table)

    assert [[f["name"] for f in s.schema["fields"]] for s in states] == [
        ["x"],
        ["x", "label"],
        ["x", "label", "score"],
    ]
    log = DeltaLog.for_table(table)
    assert log.snapshot(version=0).schema.names == ["x"]
    assert log.snapshot().schema.field("score").type == pa.float64()
    assert len({s.metadata[0] for s in states}) == 1  # evolution keeps the table id


def test_protocol_features_and_cdc(tmp_path: Path) -> None:
    table = tmp_path / "features"
    write_deltalake(str(table), ints(0, 10), configuration={"delta.enableChangeDataFeed": "true"})
    DeltaTable(str(table)).delete("x > 7")  # writes a cdc action next to the add/remove
    DeltaTable(str(table)).alter.add_feature(
        [TableFeatures.AppendOnly, TableFeatures.TimestampWithoutTimezone], allow_protocol_versions_increase=True
    )
    write_deltalake(str(table), ints(50, 2), mode="append")
    assert "_change_data/" in commit_path(table, 1).read_text()

    states = assert_every_version_matches(table)

    assert states[0].protocol[:2] == (1, 4)
    assert states[-1].protocol[:2] == (3, 7)
    assert "timestampNtz" in (states[-1].protocol[2] or ())
    assert not any(p.startswith("_change_data/") for s in states for p in s.files)
    assert "changeDataFeed" in DeltaLog.for_table(table).snapshot(version=0).features


def test_timestamp_time_travel(tmp_path: Path) -> None:
    table = tmp_path / "timetravel"
    write_deltalake(str(table), ints(0, 1))
    for v in range(1, 4):
        write_deltalake(str(table), ints(v, 1), mode="append")
    base_ms = 1_700_000_000_000  # 2023-11-14T22:13:20Z
    for v in range(4):
        ns = (base_ms + v * 60_000) * 1_000_000
        os.utime(commit_path(table, v), ns=(ns, ns))

    log = DeltaLog.for_table(table)
    assert log.commit_timeline() == [(v, base_ms + v * 60_000) for v in range(4)]
    cases = {
        "2023-11-14T22:13:20Z": 0,  # exactly the first commit
        "2023-11-14T22:14:19.999Z": 0,
        "2023-11-14T22:14:20Z": 1,
        "2023-11-14T22:15:50+00:00": 2,
        "2023-11-14T23:15:50+01:00": 2,  # the same instant in another zone
        "2023-11-14T22:16:20Z": 3,  # exactly the last commit
    }
    for stamp, version in cases.items():
        assert log.snapshot(timestamp=stamp).version == version, stamp
        lake = DeltaTable(str(table))
        lake.load_as_version(dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")))
        assert lake.version() == version, stamp
    assert log.snapshot(timestamp=base_ms + 90_000).version == 1  # epoch milliseconds work too
    for before in ("2023-11-14T22:13:19.999Z", "2020-01-01T00:00:00Z"):
        with pytest.raises(VersionNotFoundError) as err:
            log.snapshot(timestamp=before)
        assert err.value.earliest == 0


def test_history_matches_deltalake(tmp_path: Path) -> None:
    table = tmp_path / "history"
    write_deltalake(str(table), ints(0, 4))
    write_deltalake(str(table), ints(4, 4), mode="append")
    DeltaTable(str(table)).delete("x = 1")
    write_deltalake(str(table), ints(9, 2), mode="overwrite")
    write_deltalake(str(table), ints(20, 1), mode="append")
    DeltaTable(str(table)).optimize.compact()

    ours = list(DeltaLog.for_table(table).history())
    theirs = DeltaTable(str(table)).history()

    assert [e.version for e in ours] == [5, 4, 3, 2, 1, 0]
    assert [(e.version, e.operation) for e in ours] == [(h["version"], h["operation"]) for h in theirs]
    assert [e.operation for e in ours] == ["OPTIMIZE", "WRITE", "WRITE", "DELETE", "WRITE", "WRITE"]
    for entry, info in zip(ours, theirs, strict=True):
        assert entry.commit_info["operationParameters"] == info["operationParameters"]
        assert entry.commit_info["timestamp"] == info["timestamp"]
    assert [e.version for e in DeltaLog.for_table(table).history(limit=2)] == [5, 4]
    timestamps = [e.timestamp for e in ours]
    assert timestamps == sorted(timestamps, reverse=True) and len(set(timestamps)) == len(timestamps)


# ---------------------------------------------------------------------------------------------- memory://
@pytest.fixture
def memory_root() -> Iterator[str]:
    """A fresh directory in fsspec's process-global memory file system, removed afterwards."""
    fs = fsspec.filesystem("memory")
    root = f"/interop-{uuid.uuid4().hex}"
    yield root
    if fs.exists(root):
        fs.rm(root, recursive=True)


def copy_to_memory(local: Path, root: str) -> str:
    fs = fsspec.filesystem("memory")
    for file in sorted(local.rglob("*")):
        if file.is_file():
            fs.pipe_file(f"{root}/{file.relative_to(local).as_posix()}", file.read_bytes())
    return f"memory://{root}"


def test_memory_round_trip(tmp_path: Path, memory_root: str) -> None:
    table = tmp_path / "to-memory"
    write_deltalake(
        str(table), awkward_rows(0), partition_by=["s", "n"], configuration={"delta.checkpointInterval": "3"}
    )
    for seed in range(1, 4):
        write_deltalake(
            str(table),
            awkward_rows(seed),
            partition_by=["s", "n"],
            mode="append",
            commit_properties=CommitProperties(app_transactions=[Transaction("mem", seed)]),
        )
    DeltaTable(str(table)).delete("x > 300")
    assert checkpoint_versions(table) == [2]
    local_states = assert_every_version_matches(table, ["mem"])

    uri = copy_to_memory(table, memory_root)
    remote = DeltaLog.for_table(uri)
    local = DeltaLog.for_table(table)
    assert remote.snapshot().version == 4
    assert remote.snapshot().segment.checkpoint is not None
    for version, expected in enumerate(local_states):
        snap = remote.snapshot(version=version)
        assert deltalog_state(snap, ["mem"]) == expected, version
        ours = snap.files().sort_by("path")
        assert ours.equals(local.snapshot(version=version).files().sort_by("path")), version
        assert snap.schema.equals(local.snapshot(version=version).schema)
    where = {"s": "a b", "n": 1}
    pruned = remote.snapshot().files(where=where)["path"].to_pylist()
    assert pruned and pruned == local.snapshot().files(where=where)["path"].to_pylist()
    assert [e.operation for e in remote.history()] == [e.operation for e in local.history()]
