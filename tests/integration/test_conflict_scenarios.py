"""Conflict detection, one scenario per conflict type and isolation level, with explicit interleavings.

Each scenario names its interleaving with :class:`~tests.integration.interleave.Schedule` (who read, who
committed, in which order) and then states what Delta's ``ConflictChecker`` would do: which writer commits,
at which version, and which typed error the loser gets with which winning version, file or partition. Each
writer opens its own :class:`DeltaLog` on the table, as separate processes would.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentModificationError,
    ConcurrentTransactionError,
    DeltaLog,
    InvalidArgumentError,
    InvalidCommitError,
    MaxCommitAttemptsError,
    MetadataChangedError,
    ProtocolChangedError,
    RetryPolicy,
    UnsupportedFeatureError,
)
from deltalog import actions as A
from deltalog.core.log.codec import encode_actions
from tests.integration.interleave import Ctx, HarnessError, Run, Schedule, Writer, run
from tests.peers import deltalake_view, duckdb_view

SCHEMA = pa.schema([("id", pa.int64()), ("date", pa.string())])
ISOLATION_LEVELS = ["Serializable", "WriteSerializable"]


# ---------------------------------------------------------------------------------------------- helpers
def make_table(
    root: Path,
    schema: pa.Schema = SCHEMA,
    partition_columns: Sequence[str] = ("date",),
    configuration: Mapping[str, str] | None = None,
) -> Path:
    DeltaLog.for_table(root).create(schema, partition_columns=list(partition_columns), configuration=configuration)
    return root


def add(path: str, date: str | None = "x", *, data_change: bool = True, column: str = "date") -> A.Add:
    return A.Add(path=path, partition_values={column: date}, size=10, modification_time=1, data_change=data_change)


def unpartitioned_add(path: str) -> A.Add:
    return A.Add(path=path, partition_values={}, size=10, modification_time=1, data_change=True)


def seed(root: Path, *adds: A.Add) -> int:
    """Blind-append ``adds`` as one commit; its version."""
    version = DeltaLog.for_table(root).start_transaction().commit(list(adds)).version
    assert version is not None
    return version


def writer(name: str, root: Path, **steps: Callable[[Ctx], Any]) -> Writer:
    return Writer(name, DeltaLog.for_table(root), **steps)


def delete(*paths: str) -> Callable[[Ctx], Any]:
    """A step that deletes whole files (recording them as read, as a DELETE does) and commits."""

    def step(w: Ctx) -> Any:
        assert w.txn is not None
        w.txn.remove_files(paths)
        return w.commit(operation="DELETE")

    return step


def stage(*actions: A.Action) -> Callable[[Ctx], None]:
    """A step that stages ``actions`` on the writer's transaction without reading anything."""

    def step(w: Ctx) -> None:
        assert w.txn is not None
        w.txn.stage(actions)

    return step


def log_dir_entries(root: Path) -> set[str]:
    return set(os.listdir(root / "_delta_log"))


def commit_versions(root: Path) -> list[int]:
    return sorted(int(n[:20]) for n in log_dir_entries(root) if n.endswith(".json") and n[:20].isdigit())


def commit_lines(root: Path, version: int) -> list[dict[str, Any]]:
    data = (root / "_delta_log" / f"{version:020d}.json").read_bytes()
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


def commit_info(root: Path, version: int) -> dict[str, Any]:
    infos = [line["commitInfo"] for line in commit_lines(root, version) if "commitInfo" in line]
    assert len(infos) == 1
    return infos[0]


def file_paths(root: Path, version: int, kind: str) -> set[str]:
    return {line[kind]["path"] for line in commit_lines(root, version) if kind in line}


def live_paths(root: Path) -> set[str]:
    return set(DeltaLog.for_table(root).snapshot().files().column("path").to_pylist())


def expect_conflict(r: Run, error: type[ConcurrentModificationError], winning_version: int) -> Any:
    assert r.failed_step == "write", f"expected the commit to fail, got {r.failed_step}: {r.error!r}"
    assert type(r.error) is error, f"expected {error.__name__}, got {r.error!r}"
    assert isinstance(r.error, ConcurrentModificationError)
    assert r.error.winning_version == winning_version
    assert r.error.winning_commit_info is not None
    root = Path(r.ctx.log.location)
    assert r.error.winning_commit_info.get("txnId") == commit_info(root, winning_version)["txnId"]
    assert r.ctx.txn is not None
    loser = r.ctx.txn.txn_id
    assert all(commit_info(root, v).get("txnId") != loser for v in commit_versions(root)), "the loser wrote a commit"
    return r.error


@pytest.fixture
def table(tmp_path: Path) -> Path:
    return make_table(tmp_path / "t")


# ---------------------------------------------------------------------------------------------- harness
def test_schedule_must_name_every_step_in_each_writers_order(table: Path) -> None:
    a = writer("A", table, read=lambda w: w.begin(), write=lambda w: w.commit([add("x/a.parquet")]))
    with pytest.raises(HarnessError, match="exactly"):
        run(Schedule("A.read"), a)
    with pytest.raises(HarnessError, match="defines"):
        run(Schedule("A.write A.read"), a)
    assert commit_versions(table) == [0]


def test_a_failed_step_skips_the_writers_later_steps_and_the_others_go_on(table: Path) -> None:
    def boom(w: Ctx) -> None:
        raise RuntimeError("boom")

    order: list[str] = []
    runs = run(
        Schedule("A.read B.read A.prepare B.write A.write"),
        writer("A", table, read=lambda w: order.append("A.read"), prepare=boom, write=lambda w: order.append("A.w")),
        writer("B", table, read=lambda w: order.append("B.read"), write=lambda w: w.commit([add("x/b.parquet")])),
    )
    assert order == ["A.read", "B.read"]
    assert runs["A"].failed_step == "prepare" and isinstance(runs["A"].error, RuntimeError)
    assert runs["B"].result.version == 1


# ---------------------------------------------------------------------------------------------- concurrent appends
def test_serializable_append_into_a_partition_we_read_conflicts(table: Path) -> None:
    seed(table, add("date=x/f0.parquet"))
    runs = run(
        Schedule("A.read B.read B.write A.write"),
        writer(
            "A",
            table,
            read=lambda w: w.begin(where={"date": "x"}, isolation="Serializable"),
            write=lambda w: w.commit([add("date=x/a.parquet")]),
        ),
        writer("B", table, read=lambda w: w.begin(), write=lambda w: w.commit([add("date=x/b.parquet")])),
    )
    assert runs["B"].result.version == 2
    err = expect_conflict(runs["A"], ConcurrentAppendError, winning_version=2)
    assert err.conflicting_partition == {"date": "x"}
    assert err.conflicting_file == "date=x/b.parquet"
    assert err.winning_commit_info["isBlindAppend"] is True
    assert commit_versions(table) == [0, 1, 2]  # the loser wrote nothing


def test_write_serializable_lets_a_blind_append_into_a_read_partition_pass(table: Path) -> None:
    seed(table, add("date=x/f0.parquet"))
    runs = run(
        Schedule("A.read B.read B.write A.write"),
        writer(
            "A",
            table,
            read=lambda w: w.begin(where={"date": "x"}, isolation="WriteSerializable"),
            write=lambda w: w.commit([add("date=x/a.parquet")]),
        ),
        writer("B", table, read=lambda w: w.begin(), write=lambda w: w.commit([add("date=x/b.parquet")])),
    )
    a = runs["A"].result
    assert (runs["B"].result.version, a.version, a.winners, a.attempts) == (2, 3, (2,), 2)
    assert a.isolation_level == "WriteSerializable"
    assert commit_info(table, 3)["isolationLevel"] == "WriteSerializable"
    assert commit_info(table, 3)["isBlindAppend"] is False
    assert live_paths(table) == {"date=x/f0.parquet", "date=x/a.parquet", "date=x/b.parquet"}


def _rewrite_winner(w: Ctx) -> None:
    """Not a blind append: deletes a file elsewhere and adds into partition x."""
    assert w.txn is not None
    w.txn.remove_files(["date=y/f1.parquet"])
    w.actions.append(add("date=x/b.parquet"))


def _compact_x(w: Ctx) -> None:
    """OPTIMIZE of partition x: removes and adds, all dataChange=false."""
    assert w.txn is not None
    w.txn.remove_files(["date=x/f0.parquet", "date=x/f2.parquet"], data_change=False)
    w.actions.append(add("date=x/compacted.parquet", data_change=False))


@pytest.mark.parametrize("isolation", ISOLATION_LEVELS)
@pytest.mark.parametrize(
    ("prepare", "added"),
    [(_rewrite_winner, "date=x/b.parquet"), (_compact_x, "date=x/compacted.parquet")],
    ids=["rewrite", "compaction"],
)
def test_a_winner_that_is_not_a_blind_append_conflicts_at_both_levels(
    table: Path, isolation: str, prepare: Callable[[Ctx], None], added: str
) -> None:
    seed(table, add("date=x/f0.parquet"), add("date=y/f1.parquet", "y"), add("date=x/f2.parquet"))
    runs = run(
        Schedule("A.read B.read B.prepare B.write A.write"),
        writer(
            "A",
            table,
            read=lambda w: w.begin(where={"date": "x"}, isolation=isolation),
            write=lambda w: w.commit([add("date=x/a.parquet")]),
        ),
        writer("B", table, read=lambda w: w.begin(), prepare=prepare, write=lambda w: w.commit()),
    )
    assert runs["B"].result.version == 2
    assert commit_info(table, 2)["isBlindAppend"] is False
    # Delta checks appends before deletes, so even the compaction (which removed files A read) is an append conflict.
    err = expect_conflict(runs["A"], ConcurrentAppendError, winning_version=2)
    assert err.conflicting_file == added
    assert err.conflicting_partition == {"date": "x"}


@pytest.mark.parametrize("isolation", ISOLATION_LEVELS)
def test_disjoint_partitions_both_commit_with_dense_versions(table: Path, isolation: str) -> None:
    seed(table, add("date=x/f0.parquet"), add("date=y/f1.parquet", "y"))

    def reader_of(part: str) -> Writer:
        return writer(
            part.upper(),
            table,
            read=lambda w: w.begin(where={"date": part}, isolation=isolation),
            write=lambda w: w.commit([add(f"date={part}/{part}-new.parquet", part)]),
        )

    runs = run(Schedule("X.read Y.read Y.write X.write"), reader_of("x"), reader_of("y"))
    y, x = runs["Y"].result, runs["X"].result
    assert (y.version, y.attempts, y.winners) == (2, 1, ())
    assert (x.version, x.attempts, x.winners) == (3, 2, (2,))
    assert commit_versions(table) == [0, 1, 2, 3]
    assert [commit_info(table, v)["readVersion"] for v in (2, 3)] == [1, 1]
    assert len(live_paths(table)) == 4


# ------------------------------------------------------------------------------------- blind appends, compaction
def test_blind_appends_never_conflict(table: Path) -> None:
    def blind(name: str) -> Writer:
        return writer(name, table, read=lambda w: w.begin(), write=lambda w: w.commit([add(f"date=x/{name}.parquet")]))

    runs = run(Schedule("A.read B.read C.read C.write A.write B.write"), blind("A"), blind("B"), blind("C"))
    assert [runs[n].result.version for n in "CAB"] == [1, 2, 3]
    assert runs["B"].result.winners == (1, 2)
    assert commit_versions(table) == [0, 1, 2, 3]
    assert all(commit_info(table, v)["isBlindAppend"] is True for v in (1, 2, 3))


@pytest.mark.parametrize("isolation", ISOLATION_LEVELS)
def test_blind_append_is_not_failed_by_a_concurrent_compaction(table: Path, isolation: str) -> None:
    seed(table, add("date=x/f0.parquet"), add("date=y/f1.parquet", "y"), add("date=x/f2.parquet"))
    runs = run(
        Schedule("A.read B.read B.prepare B.write A.write"),
        writer(
            "A", table, read=lambda w: w.begin(isolation=isolation), write=lambda w: w.commit([add("date=x/a.parquet")])
        ),
        writer("B", table, read=lambda w: w.begin(), prepare=_compact_x, write=lambda w: w.commit()),
    )
    assert runs["B"].result.isolation_level == "SnapshotIsolation"
    assert runs["A"].result.version == 3
    assert live_paths(table) == {"date=x/compacted.parquet", "date=y/f1.parquet", "date=x/a.parquet"}


@pytest.mark.parametrize("winner_reads", [False, True], ids=["blind-append-winner", "read-then-append-winner"])
def test_our_compaction_is_not_failed_by_a_concurrent_append(table: Path, winner_reads: bool) -> None:
    seed(table, add("date=x/f0.parquet"), add("date=x/f2.parquet"))
    runs = run(
        Schedule("A.read A.prepare B.read B.write A.write"),
        writer(
            "A", table, read=lambda w: w.begin(), prepare=_compact_x, write=lambda w: w.commit(operation="OPTIMIZE")
        ),
        writer(
            "B",
            table,
            read=lambda w: w.begin(where={"date": "x"} if winner_reads else None),
            write=lambda w: w.commit([add("date=x/b.parquet")]),
        ),
    )
    a = runs["A"].result
    assert (a.version, a.isolation_level) == (3, "SnapshotIsolation")
    assert commit_info(table, 3)["isolationLevel"] == "SnapshotIsolation"
    assert live_paths(table) == {"date=x/compacted.parquet", "date=x/b.parquet"}


def test_our_compaction_fails_when_the_winner_deleted_a_file_it_compacts(table: Path) -> None:
    seed(table, add("date=x/f0.parquet"), add("date=x/f2.parquet"))
    runs = run(
        Schedule("A.read A.prepare B.read B.write A.write"),
        writer(
            "A", table, read=lambda w: w.begin(), prepare=_compact_x, write=lambda w: w.commit(operation="OPTIMIZE")
        ),
        writer(
            "B",
            table,
            read=lambda w: w.begin(),
            write=delete("date=x/f2.parquet"),
        ),
    )
    err = expect_conflict(runs["A"], ConcurrentDeleteReadError, winning_version=2)
    assert err.conflicting_file == "date=x/f2.parquet"
    assert err.conflicting_partition == {"date": "x"}
    assert live_paths(table) == {"date=x/f0.parquet"}


# ---------------------------------------------------------------------------------------------- deletes
@pytest.mark.parametrize("isolation", ISOLATION_LEVELS)
def test_winner_deleting_a_file_we_read_is_a_delete_read_conflict(table: Path, isolation: str) -> None:
    seed(table, add("date=x/f0.parquet"), add("date=x/f2.parquet"))
    runs = run(
        Schedule("A.read B.read B.write A.write"),
        writer(
            "A",
            table,
            read=lambda w: w.begin(where={"date": "x"}, isolation=isolation),
            write=lambda w: w.commit([add("date=y/a.parquet", "y")]),
        ),
        writer(
            "B",
            table,
            read=lambda w: w.begin(),
            write=delete("date=x/f0.parquet"),
        ),
    )
    err = expect_conflict(runs["A"], ConcurrentDeleteReadError, winning_version=2)
    assert err.conflicting_file == "date=x/f0.parquet"
    assert err.conflicting_partition == {"date": "x"}


def test_both_removing_a_file_we_did_not_read_is_a_delete_delete_conflict(table: Path) -> None:
    seed(table, add("date=x/f0.parquet"))
    f0 = add("date=x/f0.parquet").remove(deletion_timestamp=5)
    runs = run(
        Schedule("A.read A.prepare B.read B.write A.write"),
        # A stages the remove without reading the file: its read set is empty, so only delete-delete applies.
        writer("A", table, read=lambda w: w.begin(), prepare=stage(f0), write=lambda w: w.commit()),
        writer(
            "B",
            table,
            read=lambda w: w.begin(),
            write=delete("date=x/f0.parquet"),
        ),
    )
    err = expect_conflict(runs["A"], ConcurrentDeleteDeleteError, winning_version=2)
    assert err.conflicting_file == "date=x/f0.parquet"
    assert err.conflicting_partition == {"date": "x"}


def test_both_removing_a_file_they_read_reports_delete_read_first(table: Path) -> None:
    seed(table, add("date=x/f0.parquet"))

    def delete_f0(w: Ctx) -> None:
        assert w.txn is not None
        w.txn.remove_files(["date=x/f0.parquet"])  # records the file as read

    runs = run(
        Schedule("A.read B.read A.prepare B.prepare B.write A.write"),
        writer("A", table, read=lambda w: w.begin(), prepare=delete_f0, write=lambda w: w.commit(operation="DELETE")),
        writer("B", table, read=lambda w: w.begin(), prepare=delete_f0, write=lambda w: w.commit(operation="DELETE")),
    )
    err = expect_conflict(runs["A"], ConcurrentDeleteReadError, winning_version=2)
    assert err.conflicting_file == "date=x/f0.parquet"


# ---------------------------------------------------------------------------------------------- metadata, protocol
def _set_property(w: Ctx) -> None:
    w.log.set_properties({"app.owner": "team-b"})


def _add_column(w: Ctx) -> None:
    w.log.add_columns([pa.field("extra", pa.string())])


@pytest.mark.parametrize("change", [_set_property, _add_column], ids=["set_properties", "add_columns"])
@pytest.mark.parametrize("where", [None, {"date": "x"}], ids=["blind-append", "partition-read"])
def test_a_metadata_change_fails_a_concurrent_writer(
    table: Path, change: Callable[[Ctx], None], where: dict[str, str] | None
) -> None:
    runs = run(
        Schedule("A.read B.write A.write"),
        writer("A", table, read=lambda w: w.begin(where=where), write=lambda w: w.commit([add("date=x/a.parquet")])),
        writer("B", table, write=change),
    )
    assert runs["B"].error is None
    assert commit_info(table, 1)["operation"] in ("SET TBLPROPERTIES", "ADD COLUMNS")
    expect_conflict(runs["A"], MetadataChangedError, winning_version=1)
    assert commit_versions(table) == [0, 1]


def test_a_protocol_change_fails_a_writer_that_also_changes_the_protocol(table: Path) -> None:
    runs = run(
        Schedule("A.read B.read B.write A.write"),
        writer("A", table, read=lambda w: w.begin(), write=lambda w: w.commit([A.Protocol(1, 3)], operation="UPGRADE")),
        writer("B", table, read=lambda w: w.begin(), write=lambda w: w.commit([A.Protocol(1, 3)], operation="UPGRADE")),
    )
    expect_conflict(runs["A"], ProtocolChangedError, winning_version=1)


def test_a_protocol_upgrade_does_not_fail_a_writer_that_leaves_the_protocol_alone(table: Path) -> None:
    runs = run(
        Schedule("A.read B.read B.write A.write"),
        writer(
            "A", table, read=lambda w: w.begin(where={"date": "x"}), write=lambda w: w.commit([add("date=x/a.parquet")])
        ),
        writer("B", table, read=lambda w: w.begin(), write=lambda w: w.commit([A.Protocol(1, 3)], operation="UPGRADE")),
    )
    assert runs["A"].result.version == 2
    snap = DeltaLog.for_table(table).snapshot()
    assert (snap.protocol.min_reader_version, snap.protocol.min_writer_version) == (1, 3)


# -------------------------------------------------------------------------------------- application transactions
@pytest.mark.parametrize("b_version", [1, 2])
def test_two_writers_with_the_same_app_id_the_loser_gets_concurrent_transaction(table: Path, b_version: int) -> None:
    runs = run(
        Schedule("A.read B.read B.write A.write"),
        writer(
            "A",
            table,
            read=lambda w: w.begin(app_id="job", app_version=1),
            write=lambda w: w.commit([add("date=x/a.parquet")]),
        ),
        writer(
            "B",
            table,
            read=lambda w: w.begin(app_id="job", app_version=b_version),
            write=lambda w: w.commit([add("date=x/b.parquet")]),
        ),
    )
    assert runs["B"].result.version == 1
    err = expect_conflict(runs["A"], ConcurrentTransactionError, winning_version=1)
    assert "job" in str(err)
    assert DeltaLog.for_table(table).snapshot().app_version("job") == b_version


def test_other_app_ids_do_not_conflict(table: Path) -> None:
    runs = run(
        Schedule("A.read B.read B.write A.write"),
        writer(
            "A",
            table,
            read=lambda w: w.begin(app_id="job-a", app_version=1),
            write=lambda w: w.commit([add("date=x/a.parquet")]),
        ),
        writer(
            "B",
            table,
            read=lambda w: w.begin(app_id="job-b", app_version=1),
            write=lambda w: w.commit([add("date=x/b.parquet")]),
        ),
    )
    assert (runs["B"].result.version, runs["A"].result.version) == (1, 2)
    snap = DeltaLog.for_table(table).snapshot()
    assert (snap.app_version("job-a"), snap.app_version("job-b")) == (1, 1)


def test_exactly_once_rerunning_a_committed_batch_writes_nothing(table: Path) -> None:
    log = DeltaLog.for_table(table)
    first = log.start_transaction(app_id="job", app_version=7).commit([add("date=x/batch7.parquet")])
    assert (first.version, first.skipped) == (1, False)
    before = log_dir_entries(table)
    for replay in (7, 6):
        again = log.start_transaction(app_id="job", app_version=replay).commit([add(f"date=x/again{replay}.parquet")])
        assert again.skipped is True
        assert again.version is None
        assert again.actions == ()
    assert log_dir_entries(table) == before
    assert live_paths(table) == {"date=x/batch7.parquet"}
    nxt = log.start_transaction(app_id="job", app_version=8).commit([add("date=x/batch8.parquet")])
    assert (nxt.version, nxt.skipped) == (2, False)


# ---------------------------------------------------------------------------------------------- whole table
def test_reading_the_whole_table_conflicts_with_any_append(table: Path) -> None:
    seed(table, add("date=x/f0.parquet"))
    runs = run(
        Schedule("A.read B.read B.write A.write"),
        writer("A", table, read=lambda w: w.begin(read=True), write=lambda w: w.commit([add("date=x/a.parquet")])),
        writer("B", table, read=lambda w: w.begin(), write=lambda w: w.commit([add("date=zzz/b.parquet", "zzz")])),
    )
    err = expect_conflict(runs["A"], ConcurrentAppendError, winning_version=2)
    assert err.conflicting_partition == {"date": "zzz"}


@pytest.mark.parametrize("where", [None, {"id": 1}, {"date": "x"}], ids=["read-all", "id", "date-is-data-here"])
def test_unpartitioned_table_any_read_conflicts_with_any_append(tmp_path: Path, where: dict[str, Any] | None) -> None:
    root = make_table(tmp_path / "u", partition_columns=())
    seed(root, unpartitioned_add("f0.parquet"))
    runs = run(
        Schedule("A.read B.read B.write A.write"),
        writer(
            "A",
            root,
            read=lambda w: w.begin(where=where, read=True),
            write=lambda w: w.commit([unpartitioned_add("a.parquet")]),
        ),
        writer("B", root, read=lambda w: w.begin(), write=lambda w: w.commit([unpartitioned_add("b.parquet")])),
    )
    err = expect_conflict(runs["A"], ConcurrentAppendError, winning_version=2)
    assert err.conflicting_file == "b.parquet"
    assert err.conflicting_partition is None


# ---------------------------------------------------------------------------------------------- typed predicates
def foreign_commit(root: Path, *actions: A.Action) -> Callable[[Ctx], int]:
    """A step committing ``actions`` as another engine would, without deltalog's commit rules: how a test
    puts partition values in spellings deltalog reads but no longer writes (offsets, the Hive null name)."""

    def step(w: Ctx) -> int:
        version = w.log.latest_version() + 1
        info = A.CommitInfo(timestamp=1, operation="WRITE", is_blind_append=True, txn_id=f"foreign-{version}")
        (root / "_delta_log" / f"{version:020d}.json").write_bytes(encode_actions([info, *actions]))
        return version

    return step


def _read_then_race(
    root: Path,
    where: Mapping[str, Any],
    ours: A.Add,
    theirs: A.Add,
    isolation: str = "Serializable",
    *,
    foreign: bool = False,
) -> dict[str, Run]:
    theirs_step = foreign_commit(root, theirs) if foreign else (lambda w: w.commit([theirs]))
    return run(
        Schedule("A.read B.read B.write A.write"),
        writer("A", root, read=lambda w: w.begin(where=where, isolation=isolation), write=lambda w: w.commit([ours])),
        writer("B", root, read=lambda w: w.begin(), write=theirs_step),
    )


def _assert_outcome(runs: dict[str, Run], conflicts: bool, partition: Mapping[str, str | None]) -> None:
    won = runs["B"].values["write"]
    assert (won if isinstance(won, int) else runs["B"].result.version) == 1
    if conflicts:
        err = expect_conflict(runs["A"], ConcurrentAppendError, winning_version=1)
        assert err.conflicting_partition == dict(partition)
    else:
        assert runs["A"].result.version == 2


@pytest.mark.parametrize(
    ("winner_value", "conflicts"),
    [
        ("2024-01-01T00:00:00.000000Z", True),
        ("2024-01-01 00:00:00", True),
        ("2024-01-01T00:00:00Z", True),
        ("2024-01-01T01:00:00+01:00", True),
        ("2024-01-01T00:00:00.000001Z", False),
        ("2024-01-02 00:00:00", False),
    ],
)
def test_timestamp_partition_values_compare_as_instants(tmp_path: Path, winner_value: str, conflicts: bool) -> None:
    root = make_table(
        tmp_path / "ts", pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC"))]), partition_columns=["ts"]
    )
    runs = _read_then_race(
        root,
        {"ts": "2024-01-01 00:00:00"},
        add("ts=a/a.parquet", "2023-06-01 00:00:00", column="ts"),
        add("ts=b/b.parquet", winner_value, column="ts"),
        foreign=True,  # other engines' spellings, offsets included
    )
    _assert_outcome(runs, conflicts, {"ts": winner_value})


@pytest.mark.parametrize(
    ("n", "conflicts"), [("7", True), ("5", True), ("9", True), ("12", False), ("10", False), ("4", False)]
)
def test_int_partition_range_predicate(tmp_path: Path, n: str, conflicts: bool) -> None:
    root = make_table(tmp_path / "n", pa.schema([("id", pa.int64()), ("n", pa.int32())]), partition_columns=["n"])
    runs = _read_then_race(
        root,
        {"n": {">=": 5, "<": 10}},
        add("n=100/a.parquet", "100", column="n"),
        add(f"n={n}/b.parquet", n, column="n"),
    )
    _assert_outcome(runs, conflicts, {"n": n})


NULL_SPELLINGS = [None, "", "__HIVE_DEFAULT_PARTITION__"]


@pytest.mark.parametrize("read_as", NULL_SPELLINGS, ids=["None", "empty", "hive"])
@pytest.mark.parametrize(
    ("winner_value", "conflicts"),
    [*((v, True) for v in NULL_SPELLINGS), ("a", False)],
    ids=["None", "empty", "hive", "a"],
)
def test_null_partition_spellings_are_one_value(
    tmp_path: Path, read_as: str | None, winner_value: str | None, conflicts: bool
) -> None:
    root = make_table(tmp_path / "p", pa.schema([("id", pa.int64()), ("p", pa.string())]), partition_columns=["p"])
    runs = _read_then_race(
        root,
        {"p": read_as},
        add("p=b/a.parquet", "b", column="p"),
        add("p=x/b.parquet", winner_value, column="p"),
        foreign=True,  # the Hive null name is another engine's spelling; deltalog writes null
    )
    _assert_outcome(runs, conflicts, {"p": winner_value})


# ---------------------------------------------------------------------------------------------- write skew
@pytest.mark.parametrize("isolation", ISOLATION_LEVELS)
def test_write_skew_fails_the_second_committer(table: Path, isolation: str) -> None:
    # Neither commit is a blind append (both read), so WriteSerializable catches the skew as well.
    seed(table, add("date=x/f0.parquet"), add("date=y/f1.parquet", "y"))
    runs = run(
        Schedule("A.read B.read A.write B.write"),
        writer(
            "A",
            table,
            read=lambda w: w.begin(where={"date": "x"}, isolation=isolation),
            write=lambda w: w.commit([add("date=y/a.parquet", "y")]),
        ),
        writer(
            "B",
            table,
            read=lambda w: w.begin(where={"date": "y"}, isolation=isolation),
            write=lambda w: w.commit([add("date=x/b.parquet", "x")]),
        ),
    )
    assert runs["A"].result.version == 2
    err = expect_conflict(runs["B"], ConcurrentAppendError, winning_version=2)
    assert err.conflicting_partition == {"date": "y"}
    assert err.conflicting_file == "date=y/a.parquet"


# ---------------------------------------------------------------------------------------------- read predicates
@pytest.mark.parametrize("where", [{"id": 5}, {"id": {">": 3}}], ids=["eq", "range"])
def test_a_data_column_only_read_is_a_read_of_every_partition(table: Path, where: dict[str, Any]) -> None:
    # Spark records a read with no partition filter as the partition predicate `true` (OT trackReadPredicates,
    # DeltaTableReadPredicate.partitionPredicate), which every added file matches.
    seed(table, add("date=x/f0.parquet"), add("date=y/f1.parquet", "y"))
    runs = _read_then_race(table, where, add("date=x/a.parquet"), add("date=zzz/b.parquet", "zzz"))
    assert runs["B"].result.version == 2
    err = expect_conflict(runs["A"], ConcurrentAppendError, winning_version=2)
    assert err.conflicting_partition == {"date": "zzz"}


def test_a_data_column_read_also_conflicts_with_any_delete(table: Path) -> None:
    seed(table, add("date=x/f0.parquet"), add("date=y/f1.parquet", "y"))
    runs = run(
        Schedule("A.read B.read B.write A.write"),
        writer(
            "A", table, read=lambda w: w.begin(where={"id": 5}), write=lambda w: w.commit([add("date=x/a.parquet")])
        ),
        writer(
            "B",
            table,
            read=lambda w: w.begin(),
            write=delete("date=y/f1.parquet"),
        ),
    )
    err = expect_conflict(runs["A"], ConcurrentDeleteReadError, winning_version=2)
    assert err.conflicting_file == "date=y/f1.parquet"


def test_an_unknown_column_is_refused_and_leaves_the_read_set_alone(table: Path) -> None:
    seed(table, add("date=x/f0.parquet"))

    def bad_read(w: Ctx) -> None:
        txn = w.begin()
        with pytest.raises(InvalidArgumentError, match="nope"):
            txn.read(where={"nope": 1})

    runs = run(
        Schedule("A.read B.read B.write A.write"),
        writer("A", table, read=bad_read, write=lambda w: w.commit([add("date=x/a.parquet")])),
        writer("B", table, read=lambda w: w.begin(), write=lambda w: w.commit([add("date=x/b.parquet")])),
    )
    assert runs["A"].result.version == 3  # still a blind append: the refused read recorded nothing
    assert commit_info(table, 3)["isBlindAppend"] is True


# ---------------------------------------------------------------------------------------------- per-commit rules
def _metadata(root: Path) -> A.Metadata:
    return DeltaLog.for_table(root).snapshot().metadata


RULE_CASES: dict[str, tuple[Callable[[Path], list[A.Action]], str]] = {
    "two-metadata": (lambda r: [_metadata(r), replace(_metadata(r), description="other")], "one-metadata"),
    "duplicate-add": (lambda r: [add("date=x/dup.parquet"), add("date=x/dup.parquet")], "no-duplicate-paths"),
    "add-and-remove": (
        lambda r: [add("date=x/f0.parquet"), add("date=x/f0.parquet").remove(5)],
        "no-duplicate-paths",
    ),
    "missing-partition-key": (
        lambda r: [A.Add("date=x/a.parquet", {}, 10, 1, True)],
        "partition-values",
    ),
    "wrong-partition-key": (lambda r: [add("day=x/a.parquet", "x", column="day")], "partition-values"),
    "extra-partition-key": (
        lambda r: [A.Add("date=x/a.parquet", {"date": "x", "id": "1"}, 10, 1, True)],
        "partition-values",
    ),
}


@pytest.mark.parametrize("case", list(RULE_CASES))
def test_per_commit_rules_refuse_before_anything_is_written(table: Path, case: str) -> None:
    seed(table, add("date=x/f0.parquet"))
    build, rule = RULE_CASES[case]
    before = log_dir_entries(table)
    txn = DeltaLog.for_table(table).start_transaction()
    with pytest.raises(InvalidCommitError) as info:
        txn.commit(build(table))
    assert info.value.rule == rule
    assert log_dir_entries(table) == before  # no commit, no temporary file


def test_append_only_table_refuses_data_changing_removes_but_allows_compaction(tmp_path: Path) -> None:
    root = make_table(tmp_path / "ao", configuration={"delta.appendOnly": "true"})
    seed(root, add("date=x/f0.parquet"), add("date=x/f1.parquet"))
    log = DeltaLog.for_table(root)
    before = log_dir_entries(root)
    txn = log.start_transaction()
    txn.remove_files(["date=x/f0.parquet"])
    with pytest.raises(InvalidCommitError) as info:
        txn.commit(operation="DELETE")
    assert info.value.rule == "append-only"
    assert log_dir_entries(root) == before
    compaction = log.start_transaction()
    compaction.remove_files(["date=x/f0.parquet", "date=x/f1.parquet"], data_change=False)
    assert compaction.commit([add("date=x/c.parquet", data_change=False)], operation="OPTIMIZE").version == 2


# ---------------------------------------------------------------------------------------------- multi-operation
def _append_then_delete(w: Ctx) -> None:
    assert w.txn is not None
    w.txn.stage([add("date=z/new.parquet", "z")])
    w.txn.remove_where({"date": "y"})


def test_multi_operation_transaction_commits_one_version(table: Path) -> None:
    seed(table, add("date=x/f0.parquet"), add("date=y/f1.parquet", "y"), add("date=y/f2.parquet", "y"))
    log = DeltaLog.for_table(table)
    txn = log.start_transaction()
    _append_then_delete(Ctx("A", log, txn=txn))
    result = txn.commit(operation="MERGE")
    assert result.version == 2
    assert commit_versions(table) == [0, 1, 2]
    assert file_paths(table, 2, "add") == {"date=z/new.parquet"}
    assert file_paths(table, 2, "remove") == {"date=y/f1.parquet", "date=y/f2.parquet"}
    assert live_paths(table) == {"date=x/f0.parquet", "date=z/new.parquet"}


def test_multi_operation_transaction_retries_with_the_same_actions(table: Path) -> None:
    seed(table, add("date=x/f0.parquet"), add("date=y/f1.parquet", "y"), add("date=y/f2.parquet", "y"))
    runs = run(
        Schedule("A.read A.prepare B.read B.write A.write"),
        writer(
            "A",
            table,
            read=lambda w: w.begin(),
            prepare=_append_then_delete,
            write=lambda w: w.commit(operation="MERGE"),
        ),
        writer("B", table, read=lambda w: w.begin(), write=lambda w: w.commit([add("date=w/b.parquet", "w")])),
    )
    a = runs["A"].result
    assert (a.version, a.attempts, a.winners, a.read_version) == (3, 2, (2,), 1)
    lines = [line for line in commit_lines(table, 3) if "commitInfo" not in line]
    assert [next(iter(line)) for line in lines] == ["add", "remove", "remove"]
    assert file_paths(table, 3, "add") == {"date=z/new.parquet"}
    assert file_paths(table, 3, "remove") == {"date=y/f1.parquet", "date=y/f2.parquet"}
    assert [type(x).__name__ for x in a.actions] == ["Add", "Remove", "Remove"]
    assert commit_info(table, 3)["txnId"] == a.txn_id
    assert commit_info(table, 3)["readVersion"] == 1
    assert live_paths(table) == {"date=x/f0.parquet", "date=z/new.parquet", "date=w/b.parquet"}


# ---------------------------------------------------------------------------------------------- more than one winner
def test_with_several_winners_the_first_conflicting_one_is_reported(table: Path) -> None:
    seed(table, add("date=x/f0.parquet"))
    runs = run(
        Schedule("A.read B.read C.read B.write C.write A.write"),
        writer(
            "A", table, read=lambda w: w.begin(where={"date": "x"}), write=lambda w: w.commit([add("date=x/a.parquet")])
        ),
        writer("B", table, read=lambda w: w.begin(), write=lambda w: w.commit([add("date=y/b.parquet", "y")])),
        writer("C", table, read=lambda w: w.begin(), write=lambda w: w.commit([add("date=x/c.parquet")])),
    )
    assert (runs["B"].result.version, runs["C"].result.version) == (2, 3)
    err = expect_conflict(runs["A"], ConcurrentAppendError, winning_version=3)
    assert err.conflicting_file == "date=x/c.parquet"


def test_write_serializable_with_our_metadata_change_counts_blind_appends(table: Path) -> None:
    def change_and_add(w: Ctx) -> None:
        meta = w.log.snapshot().metadata
        w.commit([replace(meta, configuration={"app.owner": "a"}), add("date=x/a.parquet")], operation="REPLACE")

    runs = run(
        Schedule("A.read B.read B.write A.write"),
        writer(
            "A", table, read=lambda w: w.begin(where={"date": "x"}, isolation="WriteSerializable"), write=change_and_add
        ),
        writer("B", table, read=lambda w: w.begin(), write=lambda w: w.commit([add("date=x/b.parquet")])),
    )
    err = expect_conflict(runs["A"], ConcurrentAppendError, winning_version=1)
    assert err.conflicting_file == "date=x/b.parquet"


def test_max_commit_attempts_gives_up_without_writing(table: Path) -> None:
    runs = run(
        Schedule("A.read B.read B.write A.write"),
        writer(
            "A",
            table,
            read=lambda w: w.begin(retry=RetryPolicy(max_attempts=1)),
            write=lambda w: w.commit([add("date=x/a.parquet")]),
        ),
        writer("B", table, read=lambda w: w.begin(), write=lambda w: w.commit([add("date=x/b.parquet")])),
    )
    assert runs["A"].failed_step == "write" and isinstance(runs["A"].error, MaxCommitAttemptsError)
    assert commit_versions(table) == [0, 1]


# --------------------------------------------------------------------------------------- domains, foreign winners
@pytest.mark.parametrize(("their_domain", "conflicts"), [("app.x", True), ("app.y", False)])
def test_writing_the_same_metadata_domain_is_a_concurrent_transaction(
    table: Path, their_domain: str, conflicts: bool
) -> None:
    DeltaLog.for_table(table).enable_feature("domainMetadata")
    runs = run(
        Schedule("A.read B.read A.prepare B.prepare B.write A.write"),
        writer(
            "A",
            table,
            read=lambda w: w.begin(),
            prepare=stage(A.DomainMetadata("app.x", "{}")),
            write=lambda w: w.commit(),
        ),
        writer(
            "B",
            table,
            read=lambda w: w.begin(),
            prepare=stage(A.DomainMetadata(their_domain, '{"b":1}')),
            write=lambda w: w.commit(),
        ),
    )
    assert runs["B"].result.version == 2
    if conflicts:
        err = expect_conflict(runs["A"], ConcurrentTransactionError, winning_version=2)
        assert "app.x" in str(err)
    else:
        assert runs["A"].result.version == 3
        assert set(DeltaLog.for_table(table).snapshot().domain_metadata) >= {"app.x", "app.y"}


def _foreign_commit(*actions: A.Action) -> Callable[[Ctx], None]:
    """A winner written by another engine: the commit file is put in place directly."""

    def write(w: Ctx) -> None:
        version = w.log.latest_version() + 1
        info = A.CommitInfo(timestamp=1, operation="FOREIGN", txn_id=f"foreign-{version}")
        w.log.store.put_if_absent(f"_delta_log/{version:020d}.json", encode_actions([info, *actions]))

    return write


def test_a_foreign_protocol_change_dropping_a_feature_is_protocol_changed(table: Path) -> None:
    DeltaLog.for_table(table).enable_feature("domainMetadata")
    runs = run(
        Schedule("A.read B.write A.write"),
        writer("A", table, read=lambda w: w.begin(), write=lambda w: w.commit([add("date=x/a.parquet")])),
        writer("B", table, write=_foreign_commit(A.Protocol(1, 7, None, ("appendOnly", "invariants")))),
    )
    expect_conflict(runs["A"], ProtocolChangedError, winning_version=2)
    assert commit_versions(table) == [0, 1, 2]


def test_paths_are_compared_decoded_and_relative_to_the_table(table: Path) -> None:
    seed(table, add("date=x/a%20b.parquet"))
    absolute = f"file://{table}/date=x/a%20b.parquet"
    runs = run(
        Schedule("A.read B.write A.write"),
        writer(
            "A",
            table,
            read=lambda w: w.begin(where={"date": "x"}),
            write=lambda w: w.commit([add("date=y/n.parquet", "y")]),
        ),
        writer("B", table, write=_foreign_commit(A.Remove(absolute, deletion_timestamp=1, data_change=True))),
    )
    err = expect_conflict(runs["A"], ConcurrentDeleteReadError, winning_version=2)
    assert err.conflicting_file == absolute
    assert live_paths(table) == set()


# ---------------------------------------------------------------------------------------------- engine bugs
def test_remove_where_on_a_data_column_is_refused_not_widened_to_every_file(table: Path) -> None:
    """ENGINE BUG: ``remove_where({"id": 5})`` stages a remove of every live file in every partition.

    A log-only engine cannot delete rows by a data column; widening is right for a *read* (conservative)
    but for a delete it silently drops the whole table. It should raise InvalidArgumentError.
    """
    seed(table, add("date=x/f0.parquet"), add("date=y/f1.parquet", "y"))
    txn = DeltaLog.for_table(table).start_transaction()
    with pytest.raises(InvalidArgumentError):
        removed = txn.remove_where({"id": 5})
        pytest.fail(f"remove_where on a data column staged removes of {sorted(r.path for r in removed)}")


# ---------------------------------------------------------------------------------------------- Spark's rules
# Each expected outcome below follows a rule of Delta Spark (delta-io/delta, spark/src/main/scala/org/apache/spark/
# sql/delta/: CC = ConflictChecker.scala, OT = OptimisticTransaction.scala, TH = util/TransactionHelper.scala; line
# numbers as cited in ../shared/docs/delta-write-rules.md section 4 and table-features.md section 3). These tables
# hold real parquet files, and every table a scenario leaves behind is opened by deltalake and duckdb.
def data_file(root: Path, rel: str, partition: Mapping[str, str | None], *, data_change: bool = True) -> A.Add:
    """A real one-row parquet file at ``rel``: the non-partition columns of SCHEMA (both when unpartitioned)."""
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": [1]} if partition else {"id": [1], "date": ["x"]}), target)
    size = target.stat().st_size
    return A.Add(path=rel, partition_values=dict(partition), size=size, modification_time=1, data_change=data_change)


#: change data feed on: cdc actions are legal only there (issue 14 item 6)
CDF = {"delta.enableChangeDataFeed": "true"}


def cdc_file(root: Path, rel: str, partition: Mapping[str, str | None]) -> A.Cdc:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": [1], "_change_type": ["insert"]}), target)
    return A.Cdc(path=rel, partition_values=dict(partition), size=target.stat().st_size)


def assert_peers_agree(root: Path) -> None:
    """deltalake and duckdb open the latest version and see deltalog's live files, one row each."""
    live = live_paths(root)
    lake, duck = deltalake_view(root), duckdb_view(root)
    assert lake.version == DeltaLog.for_table(root).latest_version()
    assert lake.files == live
    assert duck.files == live
    assert lake.rows == duck.rows == len(live)


def x_file(root: Path, name: str, *, data_change: bool = True) -> A.Add:
    return data_file(root, f"date=x/{name}", {"date": "x"}, data_change=data_change)


def x_reader(root: Path, where: Mapping[str, Any] | None = None, isolation: str | None = None) -> Writer:
    """Writer A: reads ``where`` (partition x by default), then commits one new file into x."""
    return writer(
        "A",
        root,
        read=lambda w: w.begin(where=where or {"date": "x"}, isolation=isolation),
        write=lambda w: w.commit([x_file(root, "a.parquet")]),
    )


RECORDS: dict[str, Callable[[Any], Any]] = {
    "read_files": lambda txn: txn.read_files(["f0.parquet"]),
    "remove_files": lambda txn: txn.remove_files(["f0.parquet"]),
}


@pytest.mark.parametrize("isolation", ISOLATION_LEVELS)
@pytest.mark.parametrize("winner_reads", [True, False], ids=["non-blind-winner", "blind-winner"])
@pytest.mark.parametrize("records", list(RECORDS))
def test_unpartitioned_non_blind_txn_without_predicate_conflicts_with_a_concurrent_add(
    tmp_path: Path, records: str, winner_reads: bool, isolation: str
) -> None:
    """CC:1004-1016: on a table unpartitioned as read, a non-blind transaction conflicts with the winner's first
    added file, predicate or not; which adds count follows the level (CC checkForAddedFilesThatShouldHaveBeenRead-
    ByCurrentTxn: WriteSerializable without our metadata change leaves out a blind winner's adds)."""
    root = make_table(tmp_path / "u", partition_columns=())
    seed(root, data_file(root, "f0.parquet", {}), data_file(root, "f1.parquet", {}))
    ours, theirs = data_file(root, "a.parquet", {}), data_file(root, "b.parquet", {})

    def a_read(w: Ctx) -> None:
        RECORDS[records](w.begin(isolation=isolation))

    runs = run(
        Schedule("A.read B.read B.write A.write"),
        writer("A", root, read=a_read, write=lambda w: w.commit([ours], operation="UPDATE")),
        writer("B", root, read=lambda w: w.begin(read=winner_reads), write=lambda w: w.commit([theirs])),
    )
    assert commit_info(root, 2)["isBlindAppend"] is (not winner_reads)
    if winner_reads or isolation == "Serializable":
        err = expect_conflict(runs["A"], ConcurrentAppendError, winning_version=2)
        assert (err.conflicting_file, err.conflicting_partition) == ("b.parquet", None)
        assert live_paths(root) == {"f0.parquet", "f1.parquet", "b.parquet"}
    else:
        assert runs["A"].result.version == 3
        kept = {"f1.parquet"} if records == "remove_files" else {"f0.parquet", "f1.parquet"}
        assert live_paths(root) == kept | {"a.parquet", "b.parquet"}
    assert_peers_agree(root)


def test_partitioned_table_recorded_files_alone_match_no_append(table: Path) -> None:
    """CC getFirstFileMatchingPartitionPredicates: on a partitioned table only recorded predicates match adds."""
    seed(table, x_file(table, "f0.parquet"))
    ours, theirs = x_file(table, "a.parquet"), x_file(table, "b.parquet")

    def a_read(w: Ctx) -> None:
        w.begin().read_files(["date=x/f0.parquet"])

    runs = run(
        Schedule("A.read B.read B.write A.write"),
        writer("A", table, read=a_read, write=lambda w: w.commit([ours])),
        writer("B", table, read=lambda w: w.begin(where={"date": "x"}), write=lambda w: w.commit([theirs])),
    )
    assert runs["A"].result.version == 3
    assert_peers_agree(table)


@pytest.mark.parametrize(("winner_partition", "conflicts"), [("x", True), ("zzz", False)])
def test_a_read_mixing_partition_and_data_columns_keeps_its_partition_part(
    table: Path, winner_partition: str, conflicts: bool
) -> None:
    """OT trackReadPredicates splits a read's filters: partition ones are used for conflict detection, data ones
    are dropped; so ``date = 'x' AND id = 5`` conflicts with an append into x and not with one into zzz."""
    seed(table, x_file(table, "f0.parquet"), data_file(table, "date=y/f1.parquet", {"date": "y"}))
    theirs = data_file(table, f"date={winner_partition}/b.parquet", {"date": winner_partition})
    runs = _read_then_race(table, {"date": "x", "id": 5}, x_file(table, "a.parquet"), theirs)
    assert runs["B"].result.version == 2
    if conflicts:
        err = expect_conflict(runs["A"], ConcurrentAppendError, winning_version=2)
        assert err.conflicting_partition == {"date": "x"}
    else:
        assert runs["A"].result.version == 3
    assert_peers_agree(table)


def test_a_read_mixing_partition_and_data_columns_ignores_deletes_elsewhere(table: Path) -> None:
    """CC checkForDeletedFilesAgainstCurrentTxnReadFiles: only removes of files read (or a whole-table read)
    conflict; the partition part of ``date = 'x' AND id = 5`` reads the files of x, not those of y."""
    seed(table, x_file(table, "f0.parquet"), data_file(table, "date=y/f1.parquet", {"date": "y"}))
    runs = run(
        Schedule("A.read B.read B.write A.write"),
        x_reader(table, {"date": "x", "id": 5}),
        writer("B", table, read=lambda w: w.begin(), write=delete("date=y/f1.parquet")),
    )
    assert runs["A"].result.version == 3
    assert live_paths(table) == {"date=x/f0.parquet", "date=x/a.parquet"}
    assert_peers_agree(table)


@pytest.mark.parametrize(
    ("compacts", "isolation", "operation", "downgrades"),
    [
        (False, "Serializable", "WRITE", True),  # an empty action list changes no data
        (False, "WriteSerializable", "WRITE", False),  # ... but the WRITE operation does
        (False, "WriteSerializable", "Empty Commit", True),
        (False, "WriteSerializable", "MY JOB", False),  # a name Spark does not define changes data
        (True, "WriteSerializable", "OPTIMIZE", True),
        (True, "WriteSerializable", "WRITE", False),
        (True, "WriteSerializable", "MY COMPACTOR", False),
        (True, "Serializable", "WRITE", True),  # Serializable does not look at the operation
    ],
)
def test_no_data_change_downgrades_to_snapshot_isolation_as_spark_says(
    table: Path, compacts: bool, isolation: str, operation: str, downgrades: bool
) -> None:
    """TH:111-145 canDowngradeToSnapshotIsolation: a commit whose actions are all dataChange=false file actions
    (none at all included: Spark's "Note-2" on empty transactions) runs at SnapshotIsolation under Serializable,
    and under WriteSerializable only when its operation does not change data either (DeltaOperations
    changesData); SnapshotIsolation skips the concurrent-append check."""
    seed(table, x_file(table, "f0.parquet"), x_file(table, "f2.parquet"))
    ours = [x_file(table, "compacted.parquet", data_change=False)] if compacts else []
    theirs = x_file(table, "b.parquet")

    def prepare(w: Ctx) -> None:
        assert w.txn is not None
        if compacts:
            w.txn.remove_files(["date=x/f0.parquet", "date=x/f2.parquet"], data_change=False)

    runs = run(
        Schedule("A.read A.prepare B.read B.write A.write"),
        writer(
            "A",
            table,
            read=lambda w: w.begin(where={"date": "x"}, isolation=isolation),
            prepare=prepare,
            write=lambda w: w.commit(ours, operation=operation),
        ),
        writer("B", table, read=lambda w: w.begin(where={"date": "x"}), write=lambda w: w.commit([theirs])),
    )
    before = {"date=x/f0.parquet", "date=x/f2.parquet"}
    if downgrades:
        a = runs["A"].result
        assert (a.version, a.isolation_level) == (3, "SnapshotIsolation")
        assert commit_info(table, 3)["isolationLevel"] == "SnapshotIsolation"
        assert len(commit_lines(table, 3)) == (4 if compacts else 1)  # commitInfo alone when empty
        assert live_paths(table) == ({"date=x/compacted.parquet"} if compacts else before) | {"date=x/b.parquet"}
    else:
        err = expect_conflict(runs["A"], ConcurrentAppendError, winning_version=2)
        assert err.conflicting_file == "date=x/b.parquet"
        assert live_paths(table) == before | {"date=x/b.parquet"}
    assert_peers_agree(table)


def test_a_foreign_protocol_deltalog_cannot_write_is_unsupported_feature(table: Path) -> None:
    """CC checkProtocolCompatibility runs protocolRead/protocolWrite on a winner's protocol first
    (delta-write-rules.md section 4: "A winner's protocol we cannot write fails the retry"): no retry can pass
    it, so it is UnsupportedFeatureError naming the feature and the winner's version."""
    DeltaLog.for_table(table).enable_feature("domainMetadata")
    seed(table, x_file(table, "f0.parquet"))
    # (rowTracking served here until deltalog implemented it in issue 14: a retry now assigns row ids)
    protocol = A.Protocol(1, 7, None, ("appendOnly", "domainMetadata", "invariants", "materializePartitionColumns"))
    runs = run(
        Schedule("A.read B.write A.write"),
        writer("A", table, read=lambda w: w.begin(), write=lambda w: w.commit([x_file(table, "a.parquet")])),
        writer("B", table, write=_foreign_commit(protocol)),
    )
    err = runs["A"].error
    assert runs["A"].failed_step == "write" and type(err) is UnsupportedFeatureError
    assert (err.feature, err.version) == ("materializePartitionColumns", 3)
    assert "version 3" in str(err) and "materializePartitionColumns" in str(err)
    assert commit_versions(table) == [0, 1, 2, 3]
    assert_peers_agree(table)


LEGACY_WRITER_4 = ("appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns")


@pytest.mark.parametrize("drops_cdf", [True, False], ids=["omits-changeDataFeed", "lists-every-legacy-feature"])
def test_a_winner_dropping_a_feature_implied_by_a_legacy_protocol_is_protocol_changed(
    tmp_path: Path, drops_cdf: bool
) -> None:
    """Spark's TableFeature.isProtocolRemovingFeatures compares implicitly *and* explicitly supported features
    (table-features.md section 3: "feature removal ... fails"): writer version 4 implies changeDataFeed, so a
    (3,7) protocol whose lists omit it drops it."""
    root = make_table(tmp_path / "legacy", configuration={"delta.minWriterVersion": "4"})
    snap = DeltaLog.for_table(root).snapshot()
    assert (snap.protocol.min_reader_version, snap.protocol.min_writer_version) == (1, 4)
    seed(root, x_file(root, "f0.parquet"))
    features = tuple(f for f in LEGACY_WRITER_4 if not (drops_cdf and f == "changeDataFeed"))
    runs = run(
        Schedule("A.read B.write A.write"),
        x_reader(root),
        writer("B", root, write=_foreign_commit(A.Protocol(3, 7, (), features))),
    )
    if drops_cdf:
        err = expect_conflict(runs["A"], ProtocolChangedError, winning_version=2)
        assert "changeDataFeed" in str(err)
    else:
        assert runs["A"].result.version == 3
        assert DeltaLog.for_table(root).snapshot().protocol.min_writer_version == 7
    assert_peers_agree(root)


def test_a_transaction_carrying_cdc_files_is_not_a_blind_append(tmp_path: Path) -> None:
    """OT:1882-1887 isBlindAppend = only add file actions and no reads; cdc is a FileAction (actions.scala:704,
    1263), so the winner is not blind and WriteSerializable checks its adds against what we read."""
    table = make_table(tmp_path / "t", configuration=CDF)
    seed(table, x_file(table, "f0.parquet"))
    theirs = [x_file(table, "b.parquet"), cdc_file(table, "_change_data/date=x/c.parquet", {"date": "x"})]
    runs = run(
        Schedule("A.read B.read B.write A.write"),
        x_reader(table, isolation="WriteSerializable"),
        writer("B", table, read=lambda w: w.begin(), write=lambda w: w.commit(theirs, cdc_covers_all=True)),
    )
    assert runs["B"].result.version == 2
    assert commit_info(table, 2)["isBlindAppend"] is False
    err = expect_conflict(runs["A"], ConcurrentAppendError, winning_version=2)
    assert err.conflicting_file == "date=x/b.parquet"
    assert_peers_agree(table)


def test_a_winners_cdc_files_are_not_appends_we_should_have_read(tmp_path: Path) -> None:
    """CC WinningCommitSummary: addedFiles are AddFile actions only; a winner's cdc files are not checked.
    The winner writes into partition y, its change file into x (a cdc action must come with a data change)."""
    table = make_table(tmp_path / "t", configuration=CDF)
    seed(table, x_file(table, "f0.parquet"))
    change = cdc_file(table, "_change_data/date=x/c.parquet", {"date": "x"})
    theirs = [data_file(table, "date=y/b.parquet", {"date": "y"}), change]
    runs = run(
        Schedule("A.read B.read B.write A.write"),
        x_reader(table),
        writer("B", table, read=lambda w: w.begin(), write=lambda w: w.commit(theirs, cdc_covers_all=True)),
    )
    assert runs["A"].result.version == 3
    assert live_paths(table) == {"date=x/f0.parquet", "date=x/a.parquet", "date=y/b.parquet"}
    assert_peers_agree(table)
