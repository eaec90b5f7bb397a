"""Snapshots of hand-built tables: pruning, column mapping, time travel, history, stats, txn retention."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from deltalog import DeltaLog, InvalidArgumentError, TableNotFoundError, VersionNotFoundError
from deltalog.core import actions as A
from deltalog.core.log.last_checkpoint import checksum
from deltalog.table import snapshot as snapshots
from tests.unit import logkit as K
from tests.unit import logwriter as W
from tests.unit.logkit import add, commit_info, metadata, protocol, remove, txn

UTC = dt.timezone.utc


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def pv(table: pa.Table) -> dict[str, dict[str, str | None]]:
    return {r["path"]: dict(r["partition_values"]) for r in table.to_pylist()}


# ---------------------------------------------------------------------------------------------- basics


def test_basic_snapshot(tmp_path: Path) -> None:
    W.basic_table(tmp_path, extra_commits=2)
    log = DeltaLog.for_table(tmp_path)
    s = log.snapshot()
    assert s.version == 2
    assert s.num_files == 3
    assert log.latest_version() == 2 and log.earliest_version() == 0
    assert s.metadata.id == K.TABLE_ID
    assert s.partition_columns == []
    assert s.schema.names == ["id", "p"]
    assert s.schema.field("id").type == pa.int64()
    files = s.files()
    assert files.column_names == [
        "path",
        "partition_values",
        "size",
        "modification_time",
        "data_change",
        "deletion_vector",
        "tags",
        "base_row_id",
        "default_row_commit_version",
        "clustering_provider",
    ]
    assert sorted(files.column("path").to_pylist()) == ["part-0.parquet", "part-1.parquet", "part-2.parquet"]


def test_no_table(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError):
        DeltaLog.for_table(tmp_path).snapshot()
    (tmp_path / "_delta_log").mkdir()
    with pytest.raises(TableNotFoundError):
        DeltaLog.for_table(tmp_path).snapshot()


def test_version_out_of_range(tmp_path: Path) -> None:
    W.basic_table(tmp_path, extra_commits=1)
    with pytest.raises(VersionNotFoundError) as exc:
        DeltaLog.for_table(tmp_path).snapshot(version=5)
    assert (exc.value.earliest, exc.value.latest) == (0, 1)


def test_version_and_timestamp_together_refused(tmp_path: Path) -> None:
    W.basic_table(tmp_path)
    with pytest.raises(InvalidArgumentError):
        DeltaLog.for_table(tmp_path).snapshot(version=0, timestamp=K.T0)


def test_add_actions(tmp_path: Path) -> None:
    st = K.stats(3, id=(1, 3))
    a_add = add("a.parquet", {"p": None}, size=9, stats=st, tags={"t": "1"})
    W.write_table(tmp_path, [[protocol(), metadata(partition_columns=("p",)), a_add]])
    (a,) = list(DeltaLog.for_table(tmp_path).snapshot().add_actions())
    assert a == A.Add("a.parquet", {"p": None}, 9, K.T0, True, stats=st, tags={"t": "1"})
    rm = a.remove(deletion_timestamp=1)
    assert rm.partition_values == {"p": None} and rm.stats == st


# ---------------------------------------------------------------------------------------------- where

COLUMNS = {
    "id": "long",
    "n": "integer",
    "d": "date",
    "ts": "timestamp",
    "s": "string",
    "b": "boolean",
    "dec": "decimal(10,2)",
}
PARTS = ["n", "d", "ts", "s", "b", "dec"]


def _partitioned(root: Path, checkpoint: bool = False) -> None:
    files = {
        "f1": {"n": "1", "d": "2024-01-01", "ts": "2024-01-01 00:00:00", "s": "a", "b": "true", "dec": "1.50"},
        "f2": {"n": "01", "d": "2024-01-02", "ts": "2024-01-01T00:00:00.000000Z", "s": "b", "b": "false", "dec": "1.5"},
        "f3": {"n": "2", "d": "2024-02-01", "ts": "2024-01-01T00:00:00Z", "s": None, "b": None, "dec": "2"},
        "f4": {"n": "10", "d": None, "ts": "2024-06-01T12:00:00.000000Z", "s": "", "b": "true", "dec": None},
        "f5": {"n": None, "d": "2023-12-31", "ts": None, "s": "a b", "b": "false", "dec": "-3.25"},
    }
    actions = [protocol(), metadata(COLUMNS, PARTS)] + [add(f"{k}.parquet", v) for k, v in files.items()]
    W.write_table(root, [[commit_info(), *actions[:2], *actions[2:5]], actions[5:]])
    if checkpoint:
        W.write_checkpoint(
            root,
            1,
            [
                protocol(),
                metadata(COLUMNS, PARTS),
                *[add(f"{k}.parquet", v, data_change=False) for k, v in files.items()],
            ],
        )


def _where(root: Path, where: dict[str, Any]) -> list[str]:
    return sorted(
        p.removesuffix(".parquet")
        for p in DeltaLog.for_table(root).snapshot().files(where=where).column("path").to_pylist()
    )


@pytest.mark.parametrize("checkpoint", [False, True], ids=["json", "checkpoint"])
@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({"n": 1}, ["f1", "f2"]),
        ({"n": "1"}, ["f1", "f2"]),
        ({"n": [1, 2]}, ["f1", "f2", "f3"]),
        ({"n": {">=": 2}}, ["f3", "f4"]),
        ({"n": {">": 1, "<": 10}}, ["f3"]),
        ({"n": {"!=": 1}}, ["f3", "f4"]),
        ({"n": {"not in": [1, 10]}}, ["f3"]),
        ({"n": None}, ["f5"]),
        ({"d": "2024-01-01"}, ["f1"]),
        ({"d": dt.date(2024, 1, 2)}, ["f2"]),
        ({"d": {">=": "2024-01-01", "<": "2024-02-01"}}, ["f1", "f2"]),
        ({"ts": "2024-01-01T00:00:00Z"}, ["f1", "f2", "f3"]),
        ({"ts": "2024-01-01 00:00:00"}, ["f1", "f2", "f3"]),
        ({"ts": dt.datetime(2024, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))}, ["f1", "f2", "f3"]),
        ({"ts": {">": "2024-01-01T00:00:00Z"}}, ["f4"]),
        ({"s": "a"}, ["f1"]),
        ({"s": None}, ["f3", "f4"]),  # null and the empty string are both null
        ({"s": "a b"}, ["f5"]),
        ({"b": True}, ["f1", "f4"]),
        ({"b": "false"}, ["f2", "f5"]),
        ({"dec": "1.5"}, ["f1", "f2"]),
        ({"dec": {"<": 0}}, ["f5"]),
        ({"n": 1, "s": "b"}, ["f2"]),
        ({"id": 5}, ["f1", "f2", "f3", "f4", "f5"]),  # a data column cannot prune
        ({"id": 5, "n": 2}, ["f3"]),
        ({}, ["f1", "f2", "f3", "f4", "f5"]),
    ],
)
def test_where_prunes_on_typed_partition_values(
    tmp_path: Path, where: dict[str, Any], expected: list[str], checkpoint: bool
) -> None:
    _partitioned(tmp_path, checkpoint)
    assert _where(tmp_path, where) == expected


@pytest.mark.parametrize(
    "where",
    [
        {"nope": 1},
        {"N": 1},
        {"n": "one"},
        {"d": "not a date"},
        {"n": {"like": "1%"}},
        {"b": "maybe"},
        # literals of the wrong shape are the caller's mistake too, never a bare TypeError
        {"n": {"in": 5}},
        {"n": {"<": [1, 2]}},
        {"n": [[1]]},
        {"n": {"=": {"a": 1}}},
        {"d": object()},
    ],
    # no memory address in an id: xdist's workers must collect the same names
    ids=lambda w: re.sub(r" at 0x[0-9a-f]+", "", repr(w))[:40],
)
def test_where_invalid(tmp_path: Path, where: dict[str, Any]) -> None:
    _partitioned(tmp_path)
    with pytest.raises(InvalidArgumentError) as exc:
        DeltaLog.for_table(tmp_path).snapshot().files(where=where)
    assert isinstance(exc.value, ValueError)


def test_where_on_a_table_without_files(tmp_path: Path) -> None:
    W.write_table(
        tmp_path, [[protocol(), metadata({"id": "long", "n": "integer"}, ["n"]), add("a", {"n": "1"})], [remove("a")]]
    )
    s = DeltaLog.for_table(tmp_path).snapshot()
    assert s.files(where={"n": 1}).num_rows == 0
    with pytest.raises(InvalidArgumentError):
        s.files(where={"nope": 1})


def test_unknown_column_message_lists_columns(tmp_path: Path) -> None:
    _partitioned(tmp_path)
    with pytest.raises(InvalidArgumentError, match="nope"):
        DeltaLog.for_table(tmp_path).snapshot().files(where={"nope": 1})


def test_where_after_removes(tmp_path: Path) -> None:
    _partitioned(tmp_path, checkpoint=True)
    W.write_commit(
        tmp_path,
        2,
        [remove("f1.parquet"), add("f6.parquet", {"n": "1", "d": None, "ts": None, "s": "z", "b": None, "dec": None})],
    )
    assert _where(tmp_path, {"n": 1}) == ["f2", "f6"]


def test_unparsable_partition_values_are_never_pruned(tmp_path: Path) -> None:
    W.write_table(
        tmp_path,
        [
            [
                protocol(),
                metadata({"id": "long", "n": "integer"}, ["n"]),
                add("good.parquet", {"n": "1"}),
                add("odd.parquet", {"n": "one"}),
            ]
        ],
    )
    s = DeltaLog.for_table(tmp_path).snapshot()
    assert W.paths_of(s.files(where={"n": 1})) == ["good.parquet", "odd.parquet"]
    assert W.paths_of(s.files(where={"n": 2})) == ["odd.parquet"]


def test_empty_in_list_matches_nothing(tmp_path: Path) -> None:
    _partitioned(tmp_path)
    assert _where(tmp_path, {"n": []}) == []


# ---------------------------------------------------------------------------------------------- _last_checkpoint


def _hinted(root: Path) -> None:
    W.basic_table(root, extra_commits=5)
    W.write_checkpoint(root, 3, [protocol(), metadata(), *[add(f"part-{i}.parquet") for i in range(4)]])
    hint: dict[str, Any] = {"version": 3, "size": 6}
    hint["checksum"] = checksum(hint)
    W.write_last_checkpoint(root, hint)


def test_hint_only_says_where_to_start(tmp_path: Path) -> None:
    _hinted(tmp_path)
    log = DeltaLog.for_table(tmp_path)
    s = log.snapshot()
    assert s.version == 5 and s.num_files == 6
    assert s.segment.checkpoint is not None and s.segment.checkpoint.version == 3
    assert [c.version for c in s.segment.commits] == [4, 5]
    # versions below the hint come from the full listing
    s1 = log.snapshot(version=1)
    assert s1.segment.checkpoint is None and s1.num_files == 2
    assert log.earliest_version() == 0 and log.latest_version() == 5


def test_version_beyond_latest_with_hint_reports_the_whole_range(tmp_path: Path) -> None:
    _hinted(tmp_path)
    with pytest.raises(VersionNotFoundError) as exc:
        DeltaLog.for_table(tmp_path).snapshot(version=9)
    assert (exc.value.earliest, exc.value.latest) == (0, 5)


def test_newer_checkpoint_than_the_hint_is_used(tmp_path: Path) -> None:
    _hinted(tmp_path)
    W.write_checkpoint(tmp_path, 5, [protocol(), metadata(), *[add(f"part-{i}.parquet") for i in range(6)]])
    s = DeltaLog.for_table(tmp_path).snapshot()
    assert s.segment.checkpoint is not None and s.segment.checkpoint.version == 5
    assert s.segment.commits == ()


# ---------------------------------------------------------------------------------------------- column mapping


def _mapped(root: Path, checkpoint: bool) -> None:
    phys = {"id": "col-1a2b", "Part Col": "col-9f8e"}
    meta = metadata(
        {"id": "long", "Part Col": "string"},
        ["Part Col"],
        {"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "2"},
        physical=phys,
    )
    W.write_table(
        root,
        [
            [commit_info(), protocol(2, 5), meta, add("x/a.parquet", {"col-9f8e": "x"})],
            [add("y/b.parquet", {"col-9f8e": "y"}), add("n/c.parquet", {"col-9f8e": None})],
        ],
    )
    if checkpoint:
        W.write_checkpoint(
            root,
            1,
            [
                protocol(2, 5),
                meta,
                add("x/a.parquet", {"col-9f8e": "x"}),
                add("y/b.parquet", {"col-9f8e": "y"}),
                add("n/c.parquet", {"col-9f8e": None}),
            ],
        )


@pytest.mark.parametrize("checkpoint", [False, True], ids=["json", "checkpoint"])
def test_column_mapping_partition_keys_are_logical(tmp_path: Path, checkpoint: bool) -> None:
    _mapped(tmp_path, checkpoint)
    s = DeltaLog.for_table(tmp_path).snapshot()
    assert s.column_mapping_mode == "name"
    assert s.physical_names == {"id": "col-1a2b", "Part Col": "col-9f8e"}
    assert pv(s.files()) == {
        "x/a.parquet": {"Part Col": "x"},
        "y/b.parquet": {"Part Col": "y"},
        "n/c.parquet": {"Part Col": None},
    }
    # the log keeps physical names
    assert {r["path"]: dict(r["partitionValues"]) for r in snapshots.raw_files(s).to_pylist()}["x/a.parquet"] == {
        "col-9f8e": "x"
    }
    assert sorted(s.files(where={"Part Col": "y"}).column("path").to_pylist()) == ["y/b.parquet"]
    assert sorted(s.files(where={"Part Col": None}).column("path").to_pylist()) == ["n/c.parquet"]
    with pytest.raises(InvalidArgumentError):
        s.files(where={"col-9f8e": "y"})  # physical names are not column names


def test_column_mapping_ignored_without_the_feature(tmp_path: Path) -> None:
    meta = metadata({"id": "long", "p": "string"}, ["p"], {"delta.columnMapping.mode": "name"}, physical={"p": "col-p"})
    W.write_table(tmp_path, [[protocol(1, 2), meta, add("a.parquet", {"p": "v"})]])
    s = DeltaLog.for_table(tmp_path).snapshot()
    assert s.column_mapping_mode == "none"
    assert pv(s.files()) == {"a.parquet": {"p": "v"}}


# ---------------------------------------------------------------------------------------------- stats


@pytest.mark.parametrize("checkpoint", [False, True], ids=["json", "checkpoint"])
def test_stats_only_on_request(tmp_path: Path, checkpoint: bool) -> None:
    sa, sb = K.stats(3, id=(1, 3)), K.stats(5, id=(4, 8))
    W.write_table(
        tmp_path,
        [[protocol(), metadata(), add("a.parquet", stats=sa)], [add("b.parquet", stats=sb)], [add("c.parquet")]],
    )
    if checkpoint:
        W.write_checkpoint(
            tmp_path, 1, [protocol(), metadata(), add("a.parquet", stats=sa), add("b.parquet", stats=sb)]
        )
    s = DeltaLog.for_table(tmp_path).snapshot()
    assert "stats" not in s.files().column_names
    with_stats = {r["path"]: r["stats"] for r in s.files(stats=True).to_pylist()}
    assert with_stats == {"a.parquet": sa, "b.parquet": sb, "c.parquet": None}
    # pruned and masked rows keep their own stats
    W.write_commit(tmp_path, 3, [remove("a.parquet")])
    s = DeltaLog.for_table(tmp_path).snapshot()
    assert {r["path"]: r["stats"] for r in s.files(stats=True).to_pylist()} == {"b.parquet": sb, "c.parquet": None}


def test_stats_object_instead_of_string(tmp_path: Path) -> None:
    odd = {"add": {**add("a.parquet")["add"], "stats": {"numRecords": 2}}}
    W.write_table(tmp_path, [[protocol(), metadata(), odd]])
    (row,) = DeltaLog.for_table(tmp_path).snapshot().files(stats=True).to_pylist()
    assert row["stats"] is not None and '"numRecords":2' in row["stats"].replace(" ", "")


# ---------------------------------------------------------------------------------------------- time travel


def _timed(root: Path, times: list[int]) -> None:
    W.write_commit(root, 0, [commit_info("CREATE TABLE"), protocol(), metadata(), add("f0.parquet")], mtime_ms=times[0])
    for v, t in enumerate(times[1:], start=1):
        W.write_commit(root, v, [commit_info(), add(f"f{v}.parquet")], mtime_ms=t)


def test_snapshot_by_version(tmp_path: Path) -> None:
    _timed(tmp_path, [K.T0, K.T0 + 1000, K.T0 + 2000])
    log = DeltaLog.for_table(tmp_path)
    assert [log.snapshot(version=v).num_files for v in range(3)] == [1, 2, 3]


@pytest.mark.parametrize(
    ("ts", "version"),
    [
        (K.T0, 0),
        (K.T0 + 999, 0),
        (K.T0 + 1000, 1),
        (K.T0 + 1500, 1),
        (K.T0 + 2000, 2),
    ],
)
def test_snapshot_by_timestamp(tmp_path: Path, ts: int, version: int) -> None:
    _timed(tmp_path, [K.T0, K.T0 + 1000, K.T0 + 2000])
    log = DeltaLog.for_table(tmp_path)
    assert log.snapshot(timestamp=ts).version == version
    assert log.snapshot(timestamp=iso(ts)).version == version
    assert log.snapshot(timestamp=dt.datetime.fromtimestamp(ts / 1000, tz=UTC)).version == version
    assert log.version_at(ts) == version


def test_timestamp_outside_the_log(tmp_path: Path) -> None:
    _timed(tmp_path, [K.T0, K.T0 + 1000, K.T0 + 2000])
    log = DeltaLog.for_table(tmp_path)
    with pytest.raises(VersionNotFoundError) as exc:
        log.snapshot(timestamp=K.T0 - 1)
    assert (exc.value.earliest, exc.value.latest) == (0, 2)
    with pytest.raises(VersionNotFoundError):
        log.snapshot(timestamp=K.T0 + 2001)
    assert log.version_at(K.T0 + 10**9, allow_after_latest=True) == 2
    with pytest.raises(InvalidArgumentError):
        log.snapshot(timestamp="not a time")


def test_timestamp_timezones(tmp_path: Path) -> None:
    _timed(tmp_path, [K.T0, K.T0 + 3_600_000, K.T0 + 7_200_000])  # 2025-01-01 00:00, 01:00, 02:00 UTC
    log = DeltaLog.for_table(tmp_path)
    assert log.snapshot(timestamp="2025-01-01T01:30:00Z").version == 1
    assert log.snapshot(timestamp="2025-01-01T02:30:00+01:00").version == 1
    assert log.snapshot(timestamp="2025-01-01 01:30:00").version == 1  # naive = UTC
    assert log.snapshot(timestamp="2024-12-31T20:00:00-05:00").version == 1
    assert log.snapshot(timestamp="2025-01-01T02:00:00Z").version == 2


def test_commit_times_are_monotonized(tmp_path: Path) -> None:
    # version 2's file is older than version 1's (a copied table): it becomes version 1's time + 1 ms
    _timed(tmp_path, [K.T0, K.T0 + 5000, K.T0 + 3000, K.T0 + 9000])
    log = DeltaLog.for_table(tmp_path)
    assert log.commit_timeline() == [(0, K.T0), (1, K.T0 + 5000), (2, K.T0 + 5001), (3, K.T0 + 9000)]
    assert log.snapshot(timestamp=K.T0 + 4000).version == 0
    assert log.snapshot(timestamp=K.T0 + 5000).version == 1
    assert log.snapshot(timestamp=K.T0 + 5001).version == 2
    assert log.snapshot(timestamp=K.T0 + 8999).version == 2


def test_timestamp_at_an_exact_commit_millisecond(tmp_path: Path) -> None:
    """As of the very millisecond a commit was made, that commit is visible (whatever the float maths)."""
    t1 = 1_082_228_670_370  # 2004-04-17T19:04:30.370Z
    _timed(tmp_path, [t1 - 60_000, t1, t1 + 60_000])
    log = DeltaLog.for_table(tmp_path)
    assert [h.timestamp for h in log.history()][::-1] == [t1 - 60_000, t1, t1 + 60_000]
    assert log.snapshot(timestamp=t1).version == 1
    assert log.snapshot(timestamp="2004-04-17T19:04:30.370Z").version == 1
    assert log.snapshot(timestamp=dt.datetime(2004, 4, 17, 19, 4, 30, 370000, tzinfo=UTC)).version == 1


def test_time_travel_after_log_cleanup(tmp_path: Path) -> None:
    _timed(tmp_path, [K.T0 + i * 1000 for i in range(5)])
    W.write_checkpoint(tmp_path, 2, [protocol(), metadata(), *[add(f"f{i}.parquet") for i in range(3)]])
    for v in (0, 1):
        (tmp_path / "_delta_log" / W.commit_name(v)).unlink()
    log = DeltaLog.for_table(tmp_path)
    assert log.earliest_version() == 2
    assert log.snapshot(version=2).num_files == 3
    assert log.snapshot(timestamp=K.T0 + 3500).version == 3
    with pytest.raises(VersionNotFoundError):
        log.snapshot(version=1)
    with pytest.raises(VersionNotFoundError):
        log.snapshot(timestamp=K.T0 + 1500)


def test_in_commit_timestamps(tmp_path: Path) -> None:
    conf = {
        "delta.enableInCommitTimestamps": "true",
        "delta.inCommitTimestampEnablementVersion": "2",
        "delta.inCommitTimestampEnablementTimestamp": str(K.T0 + 2000),
    }
    W.write_commit(tmp_path, 0, [commit_info(), protocol(), metadata(), add("a")], mtime_ms=K.T0)
    W.write_commit(tmp_path, 1, [commit_info(), add("b")], mtime_ms=K.T0 + 1000)
    W.write_commit(
        tmp_path,
        2,
        [
            commit_info(inCommitTimestamp=K.T0 + 2000),
            protocol(3, 7, [], ["inCommitTimestamp"]),
            metadata(configuration=conf),
        ],
        mtime_ms=K.T0 + 999_999,
    )
    W.write_commit(tmp_path, 3, [commit_info(inCommitTimestamp=K.T0 + 3000), add("c")], mtime_ms=K.T0 + 5)
    log = DeltaLog.for_table(tmp_path)
    assert log.commit_timeline() == [(0, K.T0), (1, K.T0 + 1000), (2, K.T0 + 2000), (3, K.T0 + 3000)]
    assert log.snapshot(timestamp=K.T0 + 2500).version == 2
    assert log.snapshot(timestamp=K.T0 + 3000).version == 3


def test_in_commit_timestamps_survive_a_table_copy(tmp_path: Path) -> None:
    """A copy rewrites every file's mtime (here: a day later). Versions from the ICT enablement on must keep
    their in-commit timestamps; "as of" a time at or after the enablement timestamp searches only them."""
    copied = K.T0 + 86_400_000
    conf = {
        "delta.enableInCommitTimestamps": "true",
        "delta.inCommitTimestampEnablementVersion": "2",
        "delta.inCommitTimestampEnablementTimestamp": str(K.T0 + 2000),
    }
    W.write_commit(tmp_path, 0, [commit_info(), protocol(), metadata(), add("a")], mtime_ms=copied)
    W.write_commit(tmp_path, 1, [commit_info(), add("b")], mtime_ms=copied + 1)
    W.write_commit(
        tmp_path,
        2,
        [
            commit_info(inCommitTimestamp=K.T0 + 2000),
            protocol(3, 7, [], ["inCommitTimestamp"]),
            metadata(configuration=conf),
        ],
        mtime_ms=copied + 2,
    )
    W.write_commit(tmp_path, 3, [commit_info(inCommitTimestamp=K.T0 + 3000), add("c")], mtime_ms=copied + 3)
    log = DeltaLog.for_table(tmp_path)
    assert log.snapshot(timestamp=K.T0 + 2500).version == 2
    assert log.snapshot(timestamp=K.T0 + 3000).version == 3
    assert dict(log.commit_timeline())[3] == K.T0 + 3000
    assert [h.timestamp for h in log.history(limit=2)] == [K.T0 + 3000, K.T0 + 2000]


# ---------------------------------------------------------------------------------------------- history


def test_history_newest_first_with_limit(tmp_path: Path) -> None:
    W.write_commit(tmp_path, 0, [commit_info("CREATE TABLE"), protocol(), metadata()], mtime_ms=K.T0)
    W.write_commit(tmp_path, 1, [commit_info("WRITE"), add("a")], mtime_ms=K.T0 + 10)
    W.write_commit(tmp_path, 2, [add("b")], mtime_ms=K.T0 + 5)  # no commitInfo, older mtime
    W.write_commit(tmp_path, 3, [commit_info("DELETE"), remove("a")], mtime_ms=K.T0 + 30)
    log = DeltaLog.for_table(tmp_path)
    entries = list(log.history())
    assert [e.version for e in entries] == [3, 2, 1, 0]
    assert [e.operation for e in entries] == ["DELETE", None, "WRITE", "CREATE TABLE"]
    assert [e.timestamp for e in entries] == [K.T0 + 30, K.T0 + 11, K.T0 + 10, K.T0]
    assert entries[1].commit_info == {}
    assert [e.version for e in log.history(limit=2)] == [3, 2]
    assert list(log.history(limit=0)) == []
    assert [e.version for e in log.history(limit=10)] == [3, 2, 1, 0]


# ---------------------------------------------------------------------------------------------- txns


def test_txn_retention_with_fixed_clock(tmp_path: Path) -> None:
    now = K.T0 + 10 * 3_600_000
    W.write_table(
        tmp_path,
        [
            [
                protocol(),
                metadata(configuration={"delta.setTransactionRetentionDuration": "interval 2 hours"}),
                txn("fresh", 1, now - 3_600_000),
                txn("stale", 2, now - 3 * 3_600_000),
                txn("undated", 3),
            ],
        ],
    )
    s = DeltaLog.for_table(tmp_path, clock=lambda: now / 1000).snapshot()
    assert set(s.txns) == {"fresh"}
    assert s.app_version("fresh") == 1
    assert s.app_version("stale") is None and s.app_version("undated") is None
    # the same table read at an earlier moment still sees "stale"
    earlier = DeltaLog(DeltaLog.for_table(tmp_path).store, str(tmp_path), clock=lambda: (now - 2 * 3_600_000) / 1000)
    assert set(earlier.snapshot().txns) == {"fresh", "stale"}


def test_txns_without_retention_all_kept(tmp_path: Path) -> None:
    W.write_table(tmp_path, [[protocol(), metadata(), txn("a", 1, 0), txn("b", 2)]])
    s = DeltaLog.for_table(tmp_path, clock=lambda: 10**10).snapshot()
    assert {k: t.version for k, t in s.txns.items()} == {"a": 1, "b": 2}


# ---------------------------------------------------------------------------------------------- the cached latest


def test_cached_latest_snapshot_advances(tmp_path: Path) -> None:
    st = K.stats(1, id=(1, 1))
    W.write_table(tmp_path, [[protocol(), metadata(), add("a.parquet", stats=st), add("b%20c.parquet")]])
    W.write_checkpoint(tmp_path, 0, [protocol(), metadata(), add("a.parquet", stats=st), add("b%20c.parquet")])
    log = DeltaLog.for_table(tmp_path)
    assert log.snapshot().num_files == 2
    W.write_commit(tmp_path, 1, [remove("b c.parquet"), add("d.parquet", deletion_vector=K.dv("d" * 20))])
    W.write_commit(tmp_path, 2, [txn("app", 4, K.T0), metadata(configuration={"x": "y"})])
    advanced = log.snapshot()
    fresh = DeltaLog.for_table(tmp_path).snapshot()
    assert advanced.version == fresh.version == 2
    assert W.paths_of(advanced.files()) == W.paths_of(fresh.files()) == ["a.parquet", "d.parquet"]
    assert advanced.files(stats=True).to_pylist() == fresh.files(stats=True).to_pylist()
    assert W.paths_of(advanced.tombstones()) == W.paths_of(fresh.tombstones()) == ["b c.parquet"]
    assert advanced.app_version("app") == 4 and advanced.configuration == {"x": "y"}
    # and an older version from the same instance is still exact
    assert W.paths_of(log.snapshot(version=0).files()) == ["a.parquet", "b%20c.parquet"]
