"""The table layer below the facade: contexts, snapshots as values, one commit path, maintenance on snapshots.

Everything here is driven through :mod:`deltalog.table` and :mod:`deltalog.maintenance` with a
:class:`~deltalog.table.context.TableContext` (no ``DeltaLog``) where the point is that the layer stands on
its own; the facade's behaviour around it is what the rest of the suite checks.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from deltalog import DeltaLog, TableAlreadyExistsError
from deltalog.checkpoint.writer import write_checkpoint
from deltalog.core.paths import LOG_DIR, commit_name
from deltalog.errors import InvalidCommitError
from deltalog.maintenance.cleanup import cleanup
from deltalog.maintenance.vacuum import vacuum
from deltalog.storage.fault_rules import FaultRule, Mode
from deltalog.storage.faults import FaultyStore
from deltalog.storage.local import LocalLogStore
from deltalog.table import ddl, load, refresh
from deltalog.table.context import TableContext
from deltalog.table.file_list import FileList, Pending
from deltalog.table.transaction import Committed, Transaction
from tests.integration.datafiles import SCHEMA, assert_peers_agree, data_file, live_paths


def context(root: Path, clock: float | None = None) -> TableContext:
    store = LocalLogStore(str(root))
    return TableContext(store, store.root) if clock is None else TableContext(store, store.root, lambda: clock)


def append(root: Path, name: str) -> int:
    result = DeltaLog.for_table(root).start_transaction().commit([data_file(root, name)])
    assert result.version is not None
    return result.version


# ---------------------------------------------------------------------------------------------- creating
def test_create_is_a_transaction_on_read_version_minus_one(tmp_path: Path) -> None:
    seen: list[Committed] = []
    ctx = context(tmp_path)
    table = ddl.plan_table(ctx, SCHEMA, configuration={"delta.appendOnly": "true"})
    result = ddl.create_table(ctx, table, on_committed=seen.append)
    assert (result.version, result.read_version, result.operation, result.attempts) == (0, -1, "CREATE TABLE", 1)
    assert [c.result for c in seen] == [result] and seen[0].read is None
    assert [c.version for c in seen[0].commits] == [0]  # what a cache would advance by, our commit itself
    info = DeltaLog.for_table(tmp_path).snapshot().commit_info
    assert info is not None and info["txnId"] == result.txn_id and "readVersion" not in info
    assert "operationMetrics" not in info  # a create moves no files, as Delta Spark writes it
    append(tmp_path, "a")
    assert live_paths(tmp_path) == ["a.parquet"]
    assert_peers_agree(tmp_path)


def test_create_refuses_an_existing_table_even_one_whose_first_versions_were_cleaned_up(tmp_path: Path) -> None:
    log = DeltaLog.for_table(tmp_path)
    log.create(SCHEMA)
    append(tmp_path, "a")
    with pytest.raises(TableAlreadyExistsError, match="already exists"):
        log.create(SCHEMA)
    log.checkpoint()
    (tmp_path / LOG_DIR / commit_name(0)).unlink()  # as log cleanup leaves a table: a checkpoint, no 0.json
    with pytest.raises(TableAlreadyExistsError):
        DeltaLog.for_table(tmp_path).create(SCHEMA)
    assert not (tmp_path / LOG_DIR / commit_name(0)).exists()
    assert live_paths(tmp_path) == ["a.parquet"]
    assert_peers_agree(tmp_path)


def test_create_loses_version_zero_to_another_writer_as_table_already_exists(tmp_path: Path) -> None:
    other = DeltaLog.for_table(tmp_path)

    def the_other_writer_creates(op: str, path: str) -> None:
        other.create(SCHEMA, name="theirs")

    rule = FaultRule(
        "put_if_absent", f"{LOG_DIR}/{commit_name(0)}", Mode.DELAY, nth=1, on_fire=the_other_writer_creates
    )
    store = FaultyStore(LocalLogStore(str(tmp_path)), rule)
    ours = DeltaLog(store, str(tmp_path))
    hooks: list[object] = []
    ours.on_commit(hooks.append)
    with pytest.raises(TableAlreadyExistsError, match="another writer created version 0 first"):
        ours.create(SCHEMA, name="ours")  # passed the check for an existing log, then lost the race
    assert hooks == []
    assert DeltaLog.for_table(tmp_path).snapshot().metadata.name == "theirs"
    append(tmp_path, "a")
    assert_peers_agree(tmp_path)


def test_a_create_runs_every_commit_rule(tmp_path: Path) -> None:
    txn = Transaction(context(tmp_path), None)
    with pytest.raises(InvalidCommitError, match="protocol and metaData"):
        txn.commit([], operation="CREATE TABLE")
    assert not (tmp_path / LOG_DIR).exists()


# ---------------------------------------------------------------------------------------------- snapshots as values
def test_advancing_makes_a_new_snapshot_and_leaves_the_old_one_as_it_was(tmp_path: Path) -> None:
    log = DeltaLog.for_table(tmp_path, auto_checkpoint=False)
    log.create(SCHEMA)
    append(tmp_path, "a")
    before = log.snapshot()
    segment, state, tip = before.segment, before.state, before.tip
    files_before = before.files()
    ctx = log.context
    append(tmp_path, "b")
    append(tmp_path, "c")
    outcome = refresh.refresh(ctx, before)
    assert isinstance(outcome, refresh.Combined)
    after = outcome.snapshot
    assert after is not before and after.version == 3 and after.pending == Pending(2, after.pending.bytes)
    assert (before.segment, before.state, before.tip, before.version) == (segment, state, tip, 1)
    assert before.files().equals(files_before)
    assert sorted(after.files().column("path").to_pylist()) == ["a.parquet", "b.parquet", "c.parquet"]
    assert isinstance(refresh.refresh(ctx, after), refresh.Unchanged)
    assert_peers_agree(tmp_path)


def test_a_refresh_names_a_rebuild_when_the_table_was_replaced(tmp_path: Path) -> None:
    DeltaLog.for_table(tmp_path).create(SCHEMA)
    append(tmp_path, "a")
    ctx = context(tmp_path)
    cached = load.snapshot_at(ctx)
    for f in (tmp_path / LOG_DIR).iterdir():
        f.unlink()
    DeltaLog.for_table(tmp_path).create(SCHEMA, name="again")
    outcome = refresh.refresh(ctx, cached)
    assert isinstance(outcome, refresh.Rebuild) and not outcome.from_checkpoint
    assert outcome.snapshot.version == 0 and outcome.snapshot.metadata.name == "again"
    append(tmp_path, "b")
    assert_peers_agree(tmp_path)


def test_a_long_chain_is_rebuilt_from_a_newer_checkpoint(tmp_path: Path) -> None:
    log = DeltaLog.for_table(tmp_path, auto_checkpoint=False)
    log.create(SCHEMA)
    ctx = log.context
    cached = load.snapshot_at(ctx)
    n = refresh.MAX_PENDING.commits + 5
    for i in range(n):
        append(tmp_path, f"f{i}")
    DeltaLog.for_table(tmp_path).checkpoint(version=n - 3)  # another process checkpoints
    lazy = refresh.refresh(ctx, cached, lazy=True)
    assert isinstance(lazy, refresh.Rebuild) and lazy.from_checkpoint
    snap = lazy.snapshot
    assert snap.version == n and snap.segment.checkpoint is not None and snap.segment.checkpoint.version == n - 3
    assert not snap.files_loaded and snap.pending.commits == 3  # a transaction's: files still deferred
    assert snap.files().num_rows == n
    assert_peers_agree(tmp_path)


def test_a_file_list_is_loaded_once_whoever_asks(tmp_path: Path) -> None:
    DeltaLog.for_table(tmp_path).create(SCHEMA)
    append(tmp_path, "a")
    files = load.snapshot_at(context(tmp_path)).file_state()
    calls: list[int] = []
    gate = threading.Event()

    def loader():  # type: ignore[no-untyped-def]
        gate.wait()
        calls.append(1)
        return files

    shared = FileList.deferred(loader, Pending(1, 10))
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(shared.get())) for _ in range(8)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join()
    assert calls == [1] and all(g is files for g in got)
    assert shared.is_loaded and shared.pending == Pending()


# ---------------------------------------------------------------------------------------------- below the facade
def test_maintenance_and_checkpoints_run_on_a_context_and_a_snapshot(tmp_path: Path) -> None:
    DeltaLog.for_table(tmp_path, auto_checkpoint=False).create(SCHEMA)
    for name in ("a", "b"):
        append(tmp_path, name)
    (tmp_path / "stray.parquet").write_bytes(b"x")
    day = 86_400.0
    ctx = context(tmp_path, clock=2_000_000_000.0 + 40 * day)
    snap = load.snapshot_at(ctx)
    result = write_checkpoint(ctx.store, snap.state, snap.file_state(), ctx.now_ms())
    assert result.version == 2 and result.num_add_files == 2
    planned = vacuum(ctx, snap, retention=0, force=True)
    assert planned.dry_run and planned.paths == ("stray.parquet",)
    swept = cleanup(ctx, load.snapshot_at(ctx), retention=0, dry_run=True)
    assert swept.dry_run and swept.horizon is not None
    assert DeltaLog.for_table(tmp_path).snapshot().segment.checkpoint is not None
    assert live_paths(tmp_path) == ["a.parquet", "b.parquet"]
    assert_peers_agree(tmp_path)
