"""Conflict detection with explicit interleavings: what Delta's ``ConflictChecker`` does when writers race.

The races are one table (:data:`RACES`): each row names its interleaving as a
:class:`~tests.integration.interleave.Schedule` (who read, who committed, in which order), the Delta Spark rule
that decides it, and Spark's outcome: which writer commits at which version, or which typed error the loser gets
with which winning version, file and partition. Each writer opens its own :class:`DeltaLog` on the table, as
separate processes would. The tests after the table cover what is not a race between two commits: exactly-once
application transactions, typed partition predicates, per-commit rules, retries giving up.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog import (
    CommitResult,
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
from tests.integration.interleave import Ctx, HarnessError, Run, Schedule, Step, Writer, run
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


def _foreign_commit(*actions: A.Action) -> Callable[[Ctx], None]:
    """A winner written by another engine: the commit file is put in place directly."""

    def write(w: Ctx) -> None:
        version = w.log.latest_version() + 1
        info = A.CommitInfo(timestamp=1, operation="FOREIGN", txn_id=f"foreign-{version}")
        w.log.store.put_if_absent(f"_delta_log/{version:020d}.json", encode_actions([info, *actions]))

    return write


def assert_peers_agree(root: Path) -> None:
    """deltalake and duckdb open the latest version and see deltalog's live files, one row each."""
    live = live_paths(root)
    lake, duck = deltalake_view(root), duckdb_view(root)
    assert lake.version == DeltaLog.for_table(root).latest_version()
    assert lake.files == live
    assert duck.files == live
    assert lake.rows == duck.rows == len(live)


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


# ---------------------------------------------------------------------------------------------- the races
# Two writers (a third in two rows) race on one table: A begins and reads, B commits in between, then A commits.
# Each row states what Delta Spark does in that race and the rule that decides it, so a row is checked against
# Spark, not against what deltalog happens to do. Rules name Delta Spark's code at delta-io/delta @ bb1057f (the
# commit pinned in ../shared/docs/delta-write-rules.md, whose section 4 gives their line numbers), under
# spark/src/main/scala/org/apache/spark/sql/delta/: CC = ConflictChecker.scala, OT = OptimisticTransaction.scala,
# TH = util/TransactionHelper.scala; table-features.md section 3 has the feature-removal rule. Every file is a
# real one-row parquet file, and every table a race leaves behind is opened by deltalake and duckdb.
PROTOCOL = "CC checkProtocolCompatibility: a winner's protocol change fails a txn that changes the protocol too"
DROPS_FEATURE = "CC checkProtocolCompatibility: TableFeature.isProtocolRemovingFeatures(winner, read) fails us"
METADATA = "CC checkNoMetadataUpdates: any winner's metadata action fails every concurrent txn"
DOMAINS = "CC checkIfDomainMetadataConflict: both txns writing one (non-system) metadata domain conflict"
APP_IDS = "CC checkForUpdatedApplicationTransactionIdsThatCurrentTxnDependsOn: a winner's txn for an app id we read"
ADDED = (
    "CC checkForAddedFilesThatShouldHaveBeenReadByCurrentTxn: a winner's add matching our read predicates conflicts;"
    " WriteSerializable without our metadata change leaves out a blind winner's adds (changedDataAddedFiles)"
)
ADDED_UNPARTITIONED = "CC:1004-1016: on a table unpartitioned as read, any read conflicts with the winner's first add"
READ_PREDICATES = "OT trackReadPredicates: partition filters are the read predicate, data filters read every partition"
DELETED_READ = "CC checkForDeletedFilesAgainstCurrentTxnReadFiles: a winner's remove of a file we read (or all read)"
DELETED_DELETED = "CC checkForDeletedFilesAgainstCurrentTxnDeletedFiles: a winner's remove of a file we remove"
DOWNGRADE = (
    "TH:111-145 canDowngradeToSnapshotIsolation: only dataChange=false file actions (none at all included), and"
    " under WriteSerializable an operation that does not change data, run at SnapshotIsolation: no append check"
)
BLIND = "OT:1882-1887 isBlindAppend: no reads and only add file actions; a cdc action is a file action"
CDC_NOT_ADDS = "CC WinningCommitSummary.addedFiles: AddFile actions only, a winner's cdc files are never checked"

Then = Callable[[Path, dict[str, Run]], None]


def file_at(root: Path, rel: str, *, data_change: bool = True) -> A.Add:
    """A real one-row parquet file at ``rel`` and its add; partition ``date`` when ``rel`` starts ``date=<v>/``
    (the file then holds ``id`` only), unpartitioned otherwise (``id`` and ``date``)."""
    target = root / rel
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partitioned = rel.startswith("date=")
        pq.write_table(pa.table({"id": [1]} if partitioned else {"id": [1], "date": ["x"]}), target)
    partition = {"date": rel.split("/", 1)[0][len("date=") :]} if rel.startswith("date=") else {}
    return A.Add(rel, partition, target.stat().st_size, 1, data_change)


def root_of(w: Ctx) -> Path:
    return Path(w.log.location)


def begin(where: Mapping[str, Any] | None = None, *, read: bool = False, **kwargs: Any) -> Step:
    """A's or B's read step: start the transaction (``kwargs`` as ``start_transaction`` takes them), read ``where``."""
    return lambda w: w.begin(where, read=read, **kwargs)


def reads(isolation: str | None = None, where: Mapping[str, Any] | None = None) -> Step:
    """Reads partition x (or ``where``) at ``isolation``."""
    return begin(where or {"date": "x"}, isolation=isolation)


def appends(*paths: str, operation: str = "WRITE", **declared: Any) -> Step:
    """Commits a new real file at each of ``paths`` (plus what the writer staged)."""
    return lambda w: w.commit([file_at(root_of(w), p) for p in paths], operation=operation, **declared)


def compacts_x(w: Ctx) -> None:
    """OPTIMIZE of partition x: removes f0 and f2 and adds compacted, all dataChange=false."""
    assert w.txn is not None
    w.txn.remove_files(["date=x/f0.parquet", "date=x/f2.parquet"], data_change=False)
    w.actions.append(file_at(root_of(w), "date=x/compacted.parquet", data_change=False))


def rewrites(w: Ctx) -> None:
    """Not a blind append: deletes y/f1 and adds into partition x."""
    assert w.txn is not None
    w.txn.remove_files(["date=y/f1.parquet"])
    w.actions.append(file_at(root_of(w), "date=x/b.parquet"))


def removes_unread(path: str) -> Step:
    """Stages a remove of ``path`` without reading it: the read set stays empty, only delete-delete applies."""

    def step(w: Ctx) -> None:
        assert w.txn is not None
        w.txn.stage([file_at(root_of(w), path).remove(deletion_timestamp=5)])

    return step


def removes_read(path: str) -> Step:
    """Removes ``path`` the way a DELETE does, recording it as read."""

    def step(w: Ctx) -> None:
        assert w.txn is not None
        w.txn.remove_files([path])

    return step


def sets_property(w: Ctx) -> None:
    w.log.set_properties({"app.owner": "team-b"})


def adds_column(w: Ctx) -> None:
    w.log.add_columns([pa.field("extra", pa.string())])


def upgrades(w: Ctx) -> CommitResult:
    return w.commit([A.Protocol(1, 3)], operation="UPGRADE")


def records(kind: str, isolation: str) -> Step:
    """Begins at ``isolation`` and records f0 as read (``read_files``) or removed (``remove_files``), no predicate."""

    def step(w: Ctx) -> None:
        txn = w.begin(isolation=isolation)
        getattr(txn, kind)(["f0.parquet"])

    return step


def refused_read(w: Ctx) -> None:
    txn = w.begin()
    with pytest.raises(InvalidArgumentError, match="nope"):
        txn.read(where={"nope": 1})


def appends_then_deletes_y(w: Ctx) -> None:
    assert w.txn is not None
    w.txn.stage([file_at(root_of(w), "date=z/new.parquet")])
    w.txn.remove_where({"date": "y"})


def changes_metadata_and_appends(w: Ctx) -> CommitResult:
    meta = w.log.snapshot().metadata
    return w.commit(
        [replace(meta, configuration={"app.owner": "a"}), file_at(root_of(w), "date=x/a.parquet")], operation="REPLACE"
    )


def stages_domain(domain: str, config: str) -> Step:
    def step(w: Ctx) -> None:
        assert w.txn is not None
        w.txn.stage([A.DomainMetadata(domain, config)])

    return step


def downgrade_prepare(compacts: bool) -> Step:
    def step(w: Ctx) -> None:
        assert w.txn is not None
        if compacts:
            w.txn.remove_files(["date=x/f0.parquet", "date=x/f2.parquet"], data_change=False)
            w.actions.append(file_at(root_of(w), "date=x/compacted.parquet", data_change=False))

    return step


def commits_cdc(*paths: str) -> Step:
    """Commits new files at ``paths`` and one change file for partition x (on a change-data-feed table)."""

    def step(w: Ctx) -> CommitResult:
        root = root_of(w)
        change = root / "_change_data/date=x/c.parquet"
        change.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": [1], "_change_type": ["insert"]}), change)
        cdc = A.Cdc("_change_data/date=x/c.parquet", {"date": "x"}, change.stat().st_size)
        return w.commit([*(file_at(root, p) for p in paths), cdc], cdc_covers_all=True)

    return step


@dataclass(frozen=True)
class Commits:
    """A commits at ``version`` (B at ``winner``); ``winners``, ``attempts`` and ``isolation`` of A's result when
    given (``isolation`` also in its commitInfo), and whether A's commit is a blind append."""

    version: int
    winner: int | None = None
    winners: tuple[int, ...] | None = None
    attempts: int | None = None
    isolation: str | None = None
    blind: bool | None = None

    def check(self, root: Path, runs: dict[str, Run]) -> None:
        a = runs["A"].result
        assert a.version == self.version
        if self.winner is not None:
            assert runs["B"].result.version == self.winner
        if self.winners is not None:
            assert a.winners == self.winners
        if self.attempts is not None:
            assert a.attempts == self.attempts
        if self.isolation is not None:
            assert a.isolation_level == self.isolation
            assert commit_info(root, self.version)["isolationLevel"] == self.isolation
        if self.blind is not None:
            assert commit_info(root, self.version)["isBlindAppend"] is self.blind


@dataclass(frozen=True)
class Fails:
    """A's commit fails with ``error`` naming B's commit at ``winner``, the conflicting file and its partition
    (both None for a conflict that is not about a file), with ``says`` in its message; A wrote nothing."""

    error: type[ConcurrentModificationError]
    winner: int
    file: str | None = None
    partition: Mapping[str, str | None] | None = None
    says: str | None = None

    def check(self, root: Path, runs: dict[str, Run]) -> None:
        err = expect_conflict(runs["A"], self.error, self.winner)
        assert (err.conflicting_file, err.conflicting_partition) == (self.file, self.partition)
        assert self.says is None or self.says in str(err)
        assert DeltaLog.for_table(root).latest_version() == self.winner


@dataclass(frozen=True)
class Race:
    """One race and Spark's outcome. ``seed`` is committed first (one commit: version 1), then the writers run
    ``schedule``; ``live`` is the table's files afterwards, ``winner_blind`` the winner's isBlindAppend and
    ``then`` any check particular to the row."""

    rule: str
    a: Mapping[str, Step]
    b: Mapping[str, Step]
    outcome: Commits | Fails
    seed: tuple[str, ...] = ()
    schedule: str = "A.read B.read B.write A.write"
    c: Mapping[str, Step] | None = None
    partitioned: bool = True
    configuration: Mapping[str, str] | None = None
    features: tuple[str, ...] = ()
    live: frozenset[str] | None = None
    winner_blind: bool | None = None
    then: Then | None = None


X0, X2, Y1 = "date=x/f0.parquet", "date=x/f2.parquet", "date=y/f1.parquet"
BLIND_B = {"read": begin(), "write": appends("date=x/b.parquet")}


def winner_is_snapshot_isolation(root: Path, runs: dict[str, Run]) -> None:
    assert runs["B"].result.isolation_level == "SnapshotIsolation"


def dense_versions_read_at_1(root: Path, runs: dict[str, Run]) -> None:
    b = runs["B"].result
    assert (b.version, b.attempts, b.winners) == (2, 1, ())
    assert commit_versions(root) == [0, 1, 2, 3]
    assert [commit_info(root, v)["readVersion"] for v in (2, 3)] == [1, 1]


def three_blind_appends(root: Path, runs: dict[str, Run]) -> None:
    assert runs["C"].result.version == 1
    assert runs["B"].result.winners == (1, 2)
    assert commit_versions(root) == [0, 1, 2, 3]
    assert all(commit_info(root, v)["isBlindAppend"] is True for v in (1, 2, 3))


def upgraded_to_1_3(root: Path, runs: dict[str, Run]) -> None:
    snap = DeltaLog.for_table(root).snapshot()
    assert (snap.protocol.min_reader_version, snap.protocol.min_writer_version) == (1, 3)


def app_version_is(app: str, version: int) -> Then:
    def then(root: Path, runs: dict[str, Run]) -> None:
        assert DeltaLog.for_table(root).snapshot().app_version(app) == version

    return then


def both_app_ids_at_1(root: Path, runs: dict[str, Run]) -> None:
    snap = DeltaLog.for_table(root).snapshot()
    assert (snap.app_version("job-a"), snap.app_version("job-b")) == (1, 1)


def operation_was(operation: str) -> Then:
    def then(root: Path, runs: dict[str, Run]) -> None:
        assert runs["B"].error is None
        assert commit_info(root, 1)["operation"] == operation

    return then


def retried_merge_kept_its_actions(root: Path, runs: dict[str, Run]) -> None:
    a = runs["A"].result
    assert a.read_version == 1
    lines = [line for line in commit_lines(root, 3) if "commitInfo" not in line]
    assert [next(iter(line)) for line in lines] == ["add", "remove", "remove"]
    assert file_paths(root, 3, "add") == {"date=z/new.parquet"}
    assert file_paths(root, 3, "remove") == {"date=y/f1.parquet", "date=y/f2.parquet"}
    assert [type(x).__name__ for x in a.actions] == ["Add", "Remove", "Remove"]
    assert commit_info(root, 3)["txnId"] == a.txn_id
    assert commit_info(root, 3)["readVersion"] == 1


def several_winners(root: Path, runs: dict[str, Run]) -> None:
    assert (runs["B"].result.version, runs["C"].result.version) == (2, 3)


def both_domains_written(root: Path, runs: dict[str, Run]) -> None:
    assert set(DeltaLog.for_table(root).snapshot().domain_metadata) >= {"app.x", "app.y"}


def commit_lines_of_3(count: int) -> Then:
    def then(root: Path, runs: dict[str, Run]) -> None:
        assert len(commit_lines(root, 3)) == count  # commitInfo alone when the commit is empty

    return then


def legacy_4(root: Path) -> None:
    """The table was made at writer version 4, which implies changeDataFeed without listing it."""
    before = DeltaLog.for_table(root).snapshot(version=1).protocol
    assert (before.min_reader_version, before.min_writer_version) == (1, 4)


def legacy_4_then_drops(root: Path, runs: dict[str, Run]) -> None:
    legacy_4(root)


def legacy_4_then_writer_version_7(root: Path, runs: dict[str, Run]) -> None:
    legacy_4(root)
    assert DeltaLog.for_table(root).snapshot().protocol.min_writer_version == 7


LEGACY_WRITER_4 = ("appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns")


def legacy_protocol_listing(drops_cdf: bool) -> A.Protocol:
    """(3, 7) listing every feature writer version 4 implies, or all but changeDataFeed."""
    return A.Protocol(3, 7, (), tuple(f for f in LEGACY_WRITER_4 if not (drops_cdf and f == "changeDataFeed")))


#: change data feed on: cdc actions are legal only there (issue 14 item 6)
CDF = {"delta.enableChangeDataFeed": "true"}


def _downgrade_races() -> dict[str, Race]:
    """TH canDowngradeToSnapshotIsolation, by the actions and operation of A's commit and the isolation level."""
    cases = [
        (False, "Serializable", "WRITE", True),  # an empty action list changes no data
        (False, "WriteSerializable", "WRITE", False),  # ... but the WRITE operation does
        (False, "WriteSerializable", "Empty Commit", True),
        (False, "WriteSerializable", "MY JOB", False),  # a name Spark does not define changes data
        (True, "WriteSerializable", "OPTIMIZE", True),
        (True, "WriteSerializable", "WRITE", False),
        (True, "WriteSerializable", "MY COMPACTOR", False),
        (True, "Serializable", "WRITE", True),  # Serializable does not look at the operation
    ]
    before = {X0, X2}
    races = {}
    for compacts, isolation, operation, downgrades in cases:
        name = f"no-data-change/{'compaction' if compacts else 'empty'}/{isolation}/{operation}"
        compacted = {"date=x/compacted.parquet"} if compacts else before
        races[name] = Race(
            DOWNGRADE,
            seed=(X0, X2),
            schedule="A.read A.prepare B.read B.write A.write",
            a={
                "read": reads(isolation),
                "prepare": downgrade_prepare(compacts),
                "write": lambda w, operation=operation: w.commit(operation=operation),
            },
            b={"read": reads(), "write": appends("date=x/b.parquet")},
            outcome=(
                Commits(3, 2, isolation="SnapshotIsolation")
                if downgrades
                else Fails(ConcurrentAppendError, 2, "date=x/b.parquet", {"date": "x"})
            ),
            live=frozenset((compacted if downgrades else before) | {"date=x/b.parquet"}),
            then=commit_lines_of_3(4 if compacts else 1) if downgrades else None,
        )
    return races


def _unpartitioned_non_blind_races() -> dict[str, Race]:
    """CC:1004-1016 with the level's choice of adds: on a table unpartitioned as read, a non-blind txn conflicts
    with the winner's first added file, predicate or not; WriteSerializable without our metadata change leaves
    out a blind winner's adds."""
    races = {}
    for kind in ("read_files", "remove_files"):
        for winner_reads in (True, False):
            for isolation in ISOLATION_LEVELS:
                conflicts = winner_reads or isolation == "Serializable"
                kept = {"f1.parquet"} if kind == "remove_files" else {"f0.parquet", "f1.parquet"}
                races[f"unpartitioned/{kind}/{'non-blind' if winner_reads else 'blind'}-winner/{isolation}"] = Race(
                    ADDED_UNPARTITIONED,
                    partitioned=False,
                    seed=("f0.parquet", "f1.parquet"),
                    a={"read": records(kind, isolation), "write": appends("a.parquet", operation="UPDATE")},
                    b={"read": begin(read=winner_reads), "write": appends("b.parquet")},
                    outcome=Fails(ConcurrentAppendError, 2, "b.parquet") if conflicts else Commits(3, 2),
                    live=frozenset(
                        {"f0.parquet", "f1.parquet", "b.parquet"} if conflicts else kept | {"a.parquet", "b.parquet"}
                    ),
                    winner_blind=not winner_reads,
                )
    return races


RACES: dict[str, Race] = {
    # --------------------------------------------------------------------------------- appends into what we read
    "append-into-a-read-partition/Serializable": Race(
        ADDED,
        seed=(X0,),
        a={"read": reads("Serializable"), "write": appends("date=x/a.parquet")},
        b=BLIND_B,
        outcome=Fails(ConcurrentAppendError, 2, "date=x/b.parquet", {"date": "x"}),
        winner_blind=True,
    ),
    "blind-append-into-a-read-partition/WriteSerializable": Race(
        ADDED,
        seed=(X0,),
        a={"read": reads("WriteSerializable"), "write": appends("date=x/a.parquet")},
        b=BLIND_B,
        outcome=Commits(3, 2, winners=(2,), attempts=2, isolation="WriteSerializable", blind=False),
        live=frozenset({X0, "date=x/a.parquet", "date=x/b.parquet"}),
    ),
    **{
        # CC checks appends before deletes, so even the compaction (which removed files A read) is an append conflict
        f"non-blind-winner/{name}/{isolation}": Race(
            ADDED,
            seed=(X0, Y1, X2),
            schedule="A.read B.read B.prepare B.write A.write",
            a={"read": reads(isolation), "write": appends("date=x/a.parquet")},
            b={"read": begin(), "prepare": prepare, "write": lambda w: w.commit()},
            outcome=Fails(ConcurrentAppendError, 2, added, {"date": "x"}),
            winner_blind=False,
        )
        for name, prepare, added in [
            ("rewrite", rewrites, "date=x/b.parquet"),
            ("compaction", compacts_x, "date=x/compacted.parquet"),
        ]
        for isolation in ISOLATION_LEVELS
    },
    **{
        f"disjoint-partitions/{isolation}": Race(
            ADDED,
            seed=(X0, Y1),
            a={"read": reads(isolation), "write": appends("date=x/x-new.parquet")},
            b={"read": reads(isolation, {"date": "y"}), "write": appends("date=y/y-new.parquet")},
            outcome=Commits(3, 2, winners=(2,), attempts=2),
            live=frozenset({X0, Y1, "date=x/x-new.parquet", "date=y/y-new.parquet"}),
            then=dense_versions_read_at_1,
        )
        for isolation in ISOLATION_LEVELS
    },
    "blind-appends-never-conflict": Race(
        ADDED,
        schedule="A.read B.read C.read C.write A.write B.write",
        a={"read": begin(), "write": appends("date=x/A.parquet")},
        b={"read": begin(), "write": appends("date=x/B.parquet")},
        c={"read": begin(), "write": appends("date=x/C.parquet")},
        outcome=Commits(2, 3),
        then=three_blind_appends,
    ),
    "whole-table-read-vs-any-append": Race(
        ADDED,
        seed=(X0,),
        a={"read": begin(read=True), "write": appends("date=x/a.parquet")},
        b={"read": begin(), "write": appends("date=zzz/b.parquet")},
        outcome=Fails(ConcurrentAppendError, 2, "date=zzz/b.parquet", {"date": "zzz"}),
    ),
    **{
        f"unpartitioned-read-vs-any-append/{name}": Race(
            ADDED_UNPARTITIONED,
            partitioned=False,
            seed=("f0.parquet",),
            a={"read": begin(where, read=True), "write": appends("a.parquet")},
            b={"read": begin(), "write": appends("b.parquet")},
            outcome=Fails(ConcurrentAppendError, 2, "b.parquet"),
        )
        for name, where in [("read-all", None), ("id", {"id": 1}), ("date-is-data-here", {"date": "x"})]
    },
    **_unpartitioned_non_blind_races(),
    "recorded-files-alone-match-no-append": Race(
        "CC getFirstFileMatchingPartitionPredicates: on a partitioned table only recorded predicates match adds",
        seed=(X0,),
        a={"read": lambda w: w.begin().read_files([X0]), "write": appends("date=x/a.parquet")},
        b={"read": reads(), "write": appends("date=x/b.parquet")},
        outcome=Commits(3, 2),
    ),
    **{
        # neither commit is a blind append (both read), so WriteSerializable catches the skew as well
        f"write-skew/{isolation}": Race(
            ADDED,
            seed=(X0, Y1),
            schedule="B.read A.read B.write A.write",
            a={"read": reads(isolation, {"date": "y"}), "write": appends("date=x/a.parquet")},
            b={"read": reads(isolation), "write": appends("date=y/b.parquet")},
            outcome=Fails(ConcurrentAppendError, 2, "date=y/b.parquet", {"date": "y"}),
        )
        for isolation in ISOLATION_LEVELS
    },
    "several-winners-the-first-conflicting-is-reported": Race(
        ADDED,
        seed=(X0,),
        schedule="A.read B.read C.read B.write C.write A.write",
        a={"read": reads(), "write": appends("date=x/a.parquet")},
        b={"read": begin(), "write": appends("date=y/b.parquet")},
        c={"read": begin(), "write": appends("date=x/c.parquet")},
        outcome=Fails(ConcurrentAppendError, 3, "date=x/c.parquet", {"date": "x"}),
        then=several_winners,
    ),
    "our-metadata-change-counts-blind-appends/WriteSerializable": Race(
        ADDED,
        a={"read": reads("WriteSerializable"), "write": changes_metadata_and_appends},
        b=BLIND_B,
        outcome=Fails(ConcurrentAppendError, 1, "date=x/b.parquet", {"date": "x"}),
    ),
    # ------------------------------------------------------------------------------------------ read predicates
    **{
        f"data-column-only-read-reads-every-partition/{name}": Race(
            READ_PREDICATES,
            seed=(X0, Y1),
            a={"read": reads("Serializable", where), "write": appends("date=x/a.parquet")},
            b={"read": begin(), "write": appends("date=zzz/b.parquet")},
            outcome=Fails(ConcurrentAppendError, 2, "date=zzz/b.parquet", {"date": "zzz"}),
        )
        for name, where in [("eq", {"id": 5}), ("range", {"id": {">": 3}})]
    },
    "data-column-read-vs-any-delete": Race(
        DELETED_READ,
        seed=(X0, Y1),
        a={"read": reads(where={"id": 5}), "write": appends("date=x/a.parquet")},
        b={"read": begin(), "write": delete(Y1)},
        outcome=Fails(ConcurrentDeleteReadError, 2, Y1, {"date": "y"}),
    ),
    **{
        f"partition-and-data-read-keeps-its-partition-part/winner-in-{part}": Race(
            READ_PREDICATES,
            seed=(X0, Y1),
            a={"read": reads("Serializable", {"date": "x", "id": 5}), "write": appends("date=x/a.parquet")},
            b={"read": begin(), "write": appends(f"date={part}/b.parquet")},
            outcome=(
                Fails(ConcurrentAppendError, 2, "date=x/b.parquet", {"date": "x"}) if part == "x" else Commits(3, 2)
            ),
        )
        for part in ("x", "zzz")
    },
    "partition-and-data-read-ignores-deletes-elsewhere": Race(
        DELETED_READ,
        seed=(X0, Y1),
        a={"read": reads(where={"date": "x", "id": 5}), "write": appends("date=x/a.parquet")},
        b={"read": begin(), "write": delete(Y1)},
        outcome=Commits(3, 2),
        live=frozenset({X0, "date=x/a.parquet"}),
    ),
    "a-refused-read-records-nothing": Race(
        BLIND,
        seed=(X0,),
        a={"read": refused_read, "write": appends("date=x/a.parquet")},
        b=BLIND_B,
        outcome=Commits(3, 2, blind=True),  # still a blind append: the refused read recorded nothing
    ),
    # ----------------------------------------------------------------------------- blind appends and compaction
    **{
        f"blind-append-vs-concurrent-compaction/{isolation}": Race(
            DOWNGRADE,
            seed=(X0, Y1, X2),
            schedule="A.read B.read B.prepare B.write A.write",
            a={"read": begin(isolation=isolation), "write": appends("date=x/a.parquet")},
            b={"read": begin(), "prepare": compacts_x, "write": lambda w: w.commit()},
            outcome=Commits(3, 2),
            live=frozenset({"date=x/compacted.parquet", Y1, "date=x/a.parquet"}),
            then=winner_is_snapshot_isolation,
        )
        for isolation in ISOLATION_LEVELS
    },
    **{
        f"our-compaction-vs-concurrent-append/{name}": Race(
            DOWNGRADE,
            seed=(X0, X2),
            schedule="A.read A.prepare B.read B.write A.write",
            a={"read": begin(), "prepare": compacts_x, "write": lambda w: w.commit(operation="OPTIMIZE")},
            b={"read": begin(where), "write": appends("date=x/b.parquet")},
            outcome=Commits(3, 2, isolation="SnapshotIsolation"),
            live=frozenset({"date=x/compacted.parquet", "date=x/b.parquet"}),
        )
        for name, where in [("blind-append-winner", None), ("read-then-append-winner", {"date": "x"})]
    },
    **_downgrade_races(),
    "a-txn-carrying-cdc-files-is-not-a-blind-append": Race(
        BLIND,
        configuration=CDF,
        seed=(X0,),
        a={"read": reads("WriteSerializable"), "write": appends("date=x/a.parquet")},
        b={"read": begin(), "write": commits_cdc("date=x/b.parquet")},
        outcome=Fails(ConcurrentAppendError, 2, "date=x/b.parquet", {"date": "x"}),
        winner_blind=False,
    ),
    "a-winners-cdc-files-are-not-appends-we-should-have-read": Race(
        CDC_NOT_ADDS,
        configuration=CDF,
        seed=(X0,),
        # the winner writes into partition y, its change file into x (a cdc action comes with a data change)
        a={"read": reads(), "write": appends("date=x/a.parquet")},
        b={"read": begin(), "write": commits_cdc("date=y/b.parquet")},
        outcome=Commits(3, 2),
        live=frozenset({X0, "date=x/a.parquet", "date=y/b.parquet"}),
    ),
    # ---------------------------------------------------------------------------------------------------- deletes
    "our-compaction-vs-a-winner-deleting-a-file-it-compacts": Race(
        DELETED_READ,
        seed=(X0, X2),
        schedule="A.read A.prepare B.read B.write A.write",
        a={"read": begin(), "prepare": compacts_x, "write": lambda w: w.commit(operation="OPTIMIZE")},
        b={"read": begin(), "write": delete(X2)},
        outcome=Fails(ConcurrentDeleteReadError, 2, X2, {"date": "x"}),
        live=frozenset({X0}),
    ),
    **{
        f"winner-deletes-a-file-we-read/{isolation}": Race(
            DELETED_READ,
            seed=(X0, X2),
            a={"read": reads(isolation), "write": appends("date=y/a.parquet")},
            b={"read": begin(), "write": delete(X0)},
            outcome=Fails(ConcurrentDeleteReadError, 2, X0, {"date": "x"}),
        )
        for isolation in ISOLATION_LEVELS
    },
    "both-remove-a-file-we-did-not-read": Race(
        DELETED_DELETED,
        seed=(X0,),
        schedule="A.read A.prepare B.read B.write A.write",
        a={"read": begin(), "prepare": removes_unread(X0), "write": lambda w: w.commit()},
        b={"read": begin(), "write": delete(X0)},
        outcome=Fails(ConcurrentDeleteDeleteError, 2, X0, {"date": "x"}),
    ),
    "both-remove-a-file-they-read-delete-read-first": Race(
        DELETED_READ,
        seed=(X0,),
        schedule="A.read B.read A.prepare B.prepare B.write A.write",
        a={"read": begin(), "prepare": removes_read(X0), "write": lambda w: w.commit(operation="DELETE")},
        b={"read": begin(), "prepare": removes_read(X0), "write": lambda w: w.commit(operation="DELETE")},
        outcome=Fails(ConcurrentDeleteReadError, 2, X0, {"date": "x"}),
    ),
    "a-retried-multi-operation-txn-keeps-its-actions": Race(
        DELETED_READ,
        seed=(X0, Y1, "date=y/f2.parquet"),
        schedule="A.read A.prepare B.read B.write A.write",
        a={"read": begin(), "prepare": appends_then_deletes_y, "write": lambda w: w.commit(operation="MERGE")},
        b={"read": begin(), "write": appends("date=w/b.parquet")},
        outcome=Commits(3, 2, winners=(2,), attempts=2),
        live=frozenset({X0, "date=z/new.parquet", "date=w/b.parquet"}),
        then=retried_merge_kept_its_actions,
    ),
    # ------------------------------------------------------------------------------------ metadata and protocol
    **{
        f"metadata-change/{change.__name__}/{name}": Race(
            METADATA,
            schedule="A.read B.write A.write",
            a={"read": begin(where), "write": appends("date=x/a.parquet")},
            b={"write": change},
            outcome=Fails(MetadataChangedError, 1),
            then=operation_was(operation),
        )
        for change, operation in [(sets_property, "SET TBLPROPERTIES"), (adds_column, "ADD COLUMNS")]
        for name, where in [("blind-append", None), ("partition-read", {"date": "x"})]
    },
    "both-change-the-protocol": Race(
        PROTOCOL,
        a={"read": begin(), "write": upgrades},
        b={"read": begin(), "write": upgrades},
        outcome=Fails(ProtocolChangedError, 1),
    ),
    "a-protocol-upgrade-leaves-other-writers-alone": Race(
        PROTOCOL,
        a={"read": reads(), "write": appends("date=x/a.parquet")},
        b={"read": begin(), "write": upgrades},
        outcome=Commits(2, 1),
        then=upgraded_to_1_3,
    ),
    "a-foreign-protocol-dropping-a-feature": Race(
        DROPS_FEATURE,
        features=("domainMetadata",),
        schedule="A.read B.write A.write",
        a={"read": begin(), "write": appends("date=x/a.parquet")},
        b={"write": _foreign_commit(A.Protocol(1, 7, None, ("appendOnly", "invariants")))},
        outcome=Fails(ProtocolChangedError, 2),
    ),
    **{
        # writer version 4 implies changeDataFeed, so a (3,7) protocol whose lists omit it drops it
        f"a-legacy-protocols-implied-feature/{name}": Race(
            DROPS_FEATURE,
            configuration={"delta.minWriterVersion": "4"},
            seed=(X0,),
            schedule="A.read B.write A.write",
            a={"read": reads(), "write": appends("date=x/a.parquet")},
            b={"write": _foreign_commit(legacy_protocol_listing(drops))},
            outcome=Fails(ProtocolChangedError, 2, says="changeDataFeed") if drops else Commits(3),
            then=legacy_4_then_drops if drops else legacy_4_then_writer_version_7,
        )
        for name, drops in [("omits-changeDataFeed", True), ("lists-every-legacy-feature", False)]
    },
    # ------------------------------------------------------------------------- application transactions, domains
    **{
        f"same-app-id/b-at-{b_version}": Race(
            APP_IDS,
            a={"read": begin(app_id="job", app_version=1), "write": appends("date=x/a.parquet")},
            b={"read": begin(app_id="job", app_version=b_version), "write": appends("date=x/b.parquet")},
            outcome=Fails(ConcurrentTransactionError, 1, says="job"),
            then=app_version_is("job", b_version),
        )
        for b_version in (1, 2)
    },
    "other-app-ids": Race(
        APP_IDS,
        a={"read": begin(app_id="job-a", app_version=1), "write": appends("date=x/a.parquet")},
        b={"read": begin(app_id="job-b", app_version=1), "write": appends("date=x/b.parquet")},
        outcome=Commits(2, 1),
        then=both_app_ids_at_1,
    ),
    **{
        f"metadata-domain/{domain}": Race(
            DOMAINS,
            features=("domainMetadata",),
            schedule="A.read B.read A.prepare B.prepare B.write A.write",
            a={"read": begin(), "prepare": stages_domain("app.x", "{}"), "write": lambda w: w.commit()},
            b={"read": begin(), "prepare": stages_domain(domain, '{"b":1}'), "write": lambda w: w.commit()},
            outcome=Fails(ConcurrentTransactionError, 2, says="app.x") if domain == "app.x" else Commits(3, 2),
            then=None if domain == "app.x" else both_domains_written,
        )
        for domain in ("app.x", "app.y")
    },
}


@pytest.mark.parametrize("name", list(RACES))
def test_race_ends_as_spark_says(tmp_path: Path, name: str) -> None:
    race = RACES[name]
    assert race.rule  # every row names the Delta Spark rule that decides it
    root = make_table(
        tmp_path / "t", partition_columns=("date",) if race.partitioned else (), configuration=race.configuration
    )
    for feature in race.features:
        DeltaLog.for_table(root).enable_feature(feature)
    if race.seed:
        seed(root, *(file_at(root, p) for p in race.seed))
    writers = [writer("A", root, **race.a), writer("B", root, **race.b)]
    if race.c is not None:
        writers.append(writer("C", root, **race.c))
    runs = run(Schedule(race.schedule), *writers)
    race.outcome.check(root, runs)
    if race.winner_blind is not None:
        assert race.outcome.winner is not None
        assert commit_info(root, race.outcome.winner)["isBlindAppend"] is race.winner_blind
    if race.live is not None:
        assert live_paths(root) == race.live
    if race.then is not None:
        race.then(root, runs)
    assert_peers_agree(root)


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


# ------------------------------------------------------------------------------------ one transaction, retries
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


# ---------------------------------------------------------------------------------------------- foreign winners
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


def test_a_foreign_protocol_deltalog_cannot_write_is_unsupported_feature(table: Path) -> None:
    """CC checkProtocolCompatibility runs protocolRead/protocolWrite on a winner's protocol first
    (delta-write-rules.md section 4: "A winner's protocol we cannot write fails the retry"): no retry can pass
    it, so it is UnsupportedFeatureError naming the feature and the winner's version."""
    DeltaLog.for_table(table).enable_feature("domainMetadata")
    seed(table, file_at(table, X0))
    # (rowTracking served here until deltalog implemented it in issue 14: a retry now assigns row ids)
    protocol = A.Protocol(1, 7, None, ("appendOnly", "domainMetadata", "invariants", "materializePartitionColumns"))
    runs = run(
        Schedule("A.read B.write A.write"),
        writer("A", table, read=lambda w: w.begin(), write=appends("date=x/a.parquet")),
        writer("B", table, write=_foreign_commit(protocol)),
    )
    err = runs["A"].error
    assert runs["A"].failed_step == "write" and type(err) is UnsupportedFeatureError
    assert (err.feature, err.version) == ("materializePartitionColumns", 3)
    assert "version 3" in str(err) and "materializePartitionColumns" in str(err)
    assert commit_versions(table) == [0, 1, 2, 3]
    assert_peers_agree(table)


def test_remove_where_on_a_data_column_is_refused_not_widened_to_every_file(table: Path) -> None:
    # Regression (deltalog/table/transaction.py, Transaction.remove_where): a data column is refused, not widened.
    seed(table, add("date=x/f0.parquet"), add("date=y/f1.parquet", "y"))
    txn = DeltaLog.for_table(table).start_transaction()
    with pytest.raises(InvalidArgumentError):
        removed = txn.remove_where({"id": 5})
        pytest.fail(f"remove_where on a data column staged removes of {sorted(r.path for r in removed)}")
