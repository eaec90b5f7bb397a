"""Snapshots that hold protocol, metadata and txns at once and their file list on demand.

A blind append needs no file list, and advancing the cached snapshot after a commit should cost the
commit, not the table. Whatever asks for files later must see exactly what a fresh load sees.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deltalog import DeltaLog
from deltalog.actions import Add
from deltalog.errors import CorruptLogError
from deltalog.table import snapshot as snapshots
from tests.unit import logkit as K
from tests.unit import logwriter as W


def _table(tmp_path: Path, commits: int = 12) -> Path:
    history: list[list[dict[str, Any]]] = [
        [K.commit_info("CREATE"), K.protocol(), K.metadata(partition_columns=("p",))]
    ]
    for v in range(1, commits):
        history.append([K.commit_info(), K.add(f"p=a/{v}.parquet", {"p": "a"}), K.txn("app", v, K.T0)])
    path = W.write_table(tmp_path / "t", history)
    DeltaLog.for_table(str(path)).checkpoint(version=commits - 2)
    return path


def _add(name: str) -> Add:
    return Add(path=name, partition_values={"p": "a"}, size=1, modification_time=K.T0, data_change=True)


def _files(path: Path) -> list[str]:
    return sorted(DeltaLog.for_table(str(path)).snapshot().files().column("path").to_pylist())


def test_a_blind_append_from_a_fresh_log_leaves_the_file_list_unread(tmp_path: Path) -> None:
    path = _table(tmp_path)
    log = DeltaLog.for_table(str(path), auto_checkpoint=False)
    txn = log.start_transaction(app_id="app", app_version=20)
    assert not snapshots.files_loaded(txn.snapshot)
    assert txn.snapshot.app_version("app") == 11  # txns from the checkpoint and the commit after it
    assert txn.snapshot.partition_columns == ["p"]
    result = txn.commit([_add("p=a/new.parquet")])
    assert result.version == 12
    latest = log.snapshot()
    assert latest.version == 12
    assert not snapshots.files_loaded(latest)
    assert sorted(latest.files().column("path").to_pylist()) == _files(path)
    assert "p=a/new.parquet" in _files(path)


def test_a_deferred_snapshot_loads_its_files_when_the_transaction_reads(tmp_path: Path) -> None:
    path = _table(tmp_path)
    txn = DeltaLog.for_table(str(path), auto_checkpoint=False).start_transaction()
    removed = txn.remove_where({"p": "a"})
    assert snapshots.files_loaded(txn.snapshot)
    assert len(removed) == 11
    txn.commit()
    assert _files(path) == []


def test_a_chain_of_deferred_advances_replays_onto_the_last_loaded_files(tmp_path: Path) -> None:
    path = _table(tmp_path)
    log = DeltaLog.for_table(str(path), auto_checkpoint=False)
    loaded = log.snapshot()
    loaded.files()
    assert snapshots.files_loaded(loaded)
    for i in range(5):
        log.start_transaction().commit([_add(f"p=a/more-{i}.parquet")])
    appended = log.snapshot()
    assert not snapshots.files_loaded(appended)
    assert snapshots.pending(appended).commits == 5  # one replay of the five commits, onto the loaded files
    txn = log.start_transaction()
    txn.remove_files(["p=a/1.parquet"])  # reads the files: resolves the chain
    assert snapshots.files_loaded(appended)
    txn.commit()
    latest = log.snapshot()
    assert latest.version == loaded.version + 6
    assert not snapshots.files_loaded(latest)
    assert sorted(latest.files().column("path").to_pylist()) == _files(path)
    assert latest.num_files == loaded.num_files + 4
    assert [t["path"] for t in latest.tombstones().to_pylist()] == ["p=a/1.parquet"]


def test_a_deferred_advance_still_rejects_malformed_commits(tmp_path: Path) -> None:
    path = _table(tmp_path)
    log = DeltaLog.for_table(str(path), auto_checkpoint=False)
    snap = log.snapshot()
    (path / "_delta_log" / W.commit_name(12)).write_bytes(b'{"commitInfo":{}}\n{"add": nope}\n')
    with pytest.raises(CorruptLogError) as err:
        log.snapshot()
    assert err.value.path is not None and err.value.path.endswith(W.commit_name(12))
    assert snap.version == 11


def test_an_unreadable_checkpoint_falls_back_to_a_full_load(tmp_path: Path) -> None:
    path = _table(tmp_path)
    checkpoint = next((path / "_delta_log").glob("*.checkpoint.parquet"))
    checkpoint.write_bytes(b"PAR1 torn")
    txn = DeltaLog.for_table(str(path), auto_checkpoint=False).start_transaction()
    assert txn.snapshot.app_version("app") == 11
    assert txn.snapshot.num_files == 11
