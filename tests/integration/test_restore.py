"""RESTORE: one new commit that makes an older version's files live again, checked by an independent reader.

Tables are written by ``deltalake`` (appends, an overwrite, a delete that rewrites files), restored by
deltalog, and read back by ``deltalake``: the restored table must hold exactly the rows of the target
version. Deletion-vector identity, missing files, conflicts and the CLI are covered on tables built here.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable, write_deltalake

from deltalog import (
    ConcurrentAppendError,
    DeltaLog,
    InvalidArgumentError,
    InvalidCommitError,
    VersionNotFoundError,
)
from deltalog import actions as A
from deltalog.cli.main import cli
from deltalog.snapshot import Snapshot

DAY = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def rows(root: Path, version: int | None = None) -> pa.Table:
    table = DeltaTable(str(root), version=version).to_pyarrow_table()
    return table.sort_by([(c, "ascending") for c in table.column_names])


def live(snap: Snapshot) -> set[tuple[str, str | None]]:
    out = set()
    for a in snap.add_actions():
        out.add((a.path, a.deletion_vector.unique_id if a.deletion_vector else None))
    return out


def lake_table(root: Path) -> Path:
    """Versions 0-4: create, append, overwrite, delete (rewrites a file), append; commit ``v`` at T0 + v days."""
    write_deltalake(str(root), pa.table({"id": [1, 2, 3], "p": ["a", "a", "b"]}), partition_by=["p"])
    write_deltalake(str(root), pa.table({"id": [4, 5], "p": ["b", "c"]}), mode="append")
    write_deltalake(str(root), pa.table({"id": [6, 7, 8], "p": ["a", "a", "d"]}), mode="overwrite")
    DeltaTable(str(root)).delete("id = 7")
    write_deltalake(str(root), pa.table({"id": [9], "p": ["c"]}), mode="append")
    for v in range(5):
        ms = T0 + v * DAY
        os.utime(root / "_delta_log" / f"{v:020d}.json", ns=(ms * 1_000_000, ms * 1_000_000))
    return root


@pytest.mark.interop
@pytest.mark.parametrize("target", [0, 1, 2, 3])
def test_restored_table_reads_like_the_target_version_in_deltalake(tmp_path: Path, target: int) -> None:
    root = lake_table(tmp_path / "t")
    expected = rows(root, target)
    log = DeltaLog.for_table(root)
    result = log.restore(version=target)
    assert result.version == 5 and result.read_version == 4 and result.restored_version == target
    assert rows(root) == expected
    assert live(DeltaLog.for_table(root).snapshot()) == live(log.snapshot(version=target))
    info = DeltaTable(str(root)).history(1)[0]
    assert info["operation"] == "RESTORE"
    assert json.loads(info["operationParameters"]["version"]) == target
    # every change is data: removes and re-adds carry dataChange=true
    committed = [json.loads(x) for x in (root / "_delta_log" / f"{5:020d}.json").read_text().splitlines()]
    file_actions = [next(iter(a.values())) for a in committed if "add" in a or "remove" in a]
    assert file_actions and all(a["dataChange"] is True for a in file_actions)
    assert len(file_actions) == result.num_removed + result.num_restored


@pytest.mark.interop
def test_restore_copies_the_target_add_actions_with_their_stats(tmp_path: Path) -> None:
    root = lake_table(tmp_path / "t")
    log = DeltaLog.for_table(root)
    log.restore(version=1)
    then = {a.path: a for a in log.snapshot(version=1).add_actions()}
    now = {a.path: a for a in DeltaLog.for_table(root).snapshot().add_actions()}
    assert set(now) == set(then)
    for path, a in now.items():
        assert (a.size, a.partition_values, a.stats, a.modification_time) == (
            then[path].size,
            then[path].partition_values,
            then[path].stats,
            then[path].modification_time,
        )
        assert a.stats is not None


@pytest.mark.interop
def test_restore_by_timestamp_picks_the_version_as_of_that_time(tmp_path: Path) -> None:
    root = lake_table(tmp_path / "t")
    expected = rows(root, 1)
    result = DeltaLog.for_table(root).restore(timestamp="2026-01-02T12:00:00Z")
    assert result.restored_version == 1
    assert rows(root) == expected
    params = DeltaTable(str(root)).history(1)[0]["operationParameters"]
    assert params["timestamp"] == "2026-01-02T12:00:00.000Z" and json.loads(params["version"]) == 1
    again = DeltaLog.for_table(root).restore(timestamp=dt.datetime(2026, 1, 3, 1, tzinfo=dt.timezone.utc))
    assert again.restored_version == 2


@pytest.mark.interop
def test_restore_refuses_when_a_file_to_re_add_was_vacuumed(tmp_path: Path) -> None:
    root = lake_table(tmp_path / "t")
    log = DeltaLog.for_table(root)
    gone = sorted(log.snapshot(version=1).add_actions(), key=lambda a: a.path)[0].path
    (root / gone).unlink()
    with pytest.raises(InvalidArgumentError, match="gone from storage") as exc:
        log.restore(version=1)
    assert gone in str(exc.value)
    assert DeltaLog.for_table(root).latest_version() == 4  # nothing was committed
    forced = DeltaLog.for_table(root).restore(version=1, check_files=False)
    assert forced.version == 5
    assert any(a.path == gone for a in DeltaLog.for_table(root).snapshot().add_actions())


def test_restore_rejects_meaningless_targets(tmp_path: Path) -> None:
    root = lake_table(tmp_path / "t")
    log = DeltaLog.for_table(root)
    for kwargs in ({}, {"version": 1, "timestamp": "2026-01-02"}, {"version": -1}, {"version": 9}):
        with pytest.raises(InvalidArgumentError):
            log.restore(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(VersionNotFoundError):
        log.restore(timestamp="2025-01-01")  # before the first commit
    assert DeltaLog.for_table(root).latest_version() == 4


def test_restoring_the_current_version_commits_no_file_changes(tmp_path: Path) -> None:
    root = lake_table(tmp_path / "t")
    result = DeltaLog.for_table(root).restore(version=4)
    assert (result.version, result.num_removed, result.num_restored) == (5, 0, 0)
    assert rows(root) == rows(root, 4)


# ---------------------------------------------------------------------------------------------- deletion vectors
def test_a_file_whose_deletion_vector_changed_is_swapped_back_to_its_old_vector(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(
        pa.schema([("id", pa.int64())]),
        configuration={"delta.feature.deletionVectors": "supported", "delta.checkpointInterval": "1000"},
    )
    (root / "f.parquet").write_bytes(b"data")
    (root / "g.parquet").write_bytes(b"data")
    dv1, dv2 = (A.DeletionVector("p", f"file://{root}/dv-{i}.bin", 36, i, offset=1) for i in (1, 2))
    f = A.Add("f.parquet", {}, 4, T0, True)
    log.start_transaction().commit([f, A.Add("g.parquet", {}, 4, T0, True)])  # v1
    f1 = A.Add("f.parquet", {}, 4, T0, True, deletion_vector=dv1)
    log.start_transaction().commit([f.remove(T0), f1])  # v2: a DELETE marks rows in f
    f2 = A.Add("f.parquet", {}, 4, T0, True, deletion_vector=dv2)
    log.start_transaction().commit([f1.remove(T0), f2])  # v3: more rows deleted
    (root / "dv-2.bin").write_bytes(b"dv")
    with pytest.raises(InvalidArgumentError, match=r"dv-1\.bin"):
        log.restore(version=2)  # the old vector's file is gone: restoring would break reads
    (root / "dv-1.bin").write_bytes(b"dv")
    result = log.restore(version=2)
    assert (result.num_removed, result.num_restored) == (1, 1)
    assert live(DeltaLog.for_table(root).snapshot()) == live(log.snapshot(version=2))
    restored = {a.path: a for a in DeltaLog.for_table(root).snapshot().add_actions()}
    assert restored["f.parquet"].deletion_vector == dv1


# ---------------------------------------------------------------------------------------------- writes and conflicts
def test_a_concurrent_append_conflicts_instead_of_being_undone(tmp_path: Path) -> None:
    root = lake_table(tmp_path / "t")
    log = DeltaLog.for_table(root)
    other = DeltaLog.for_table(root)
    real_snapshot = log.snapshot

    def racing_snapshot(*args: Any, **kwargs: Any) -> Snapshot:
        if kwargs.get("version") is not None and other.latest_version() == 4:
            (root / "late.parquet").write_bytes(b"x")
            other.start_transaction().commit([A.Add("late.parquet", {"p": "z"}, 1, T0, True)])
        return real_snapshot(*args, **kwargs)

    log.snapshot = racing_snapshot  # type: ignore[method-assign]
    with pytest.raises(ConcurrentAppendError):
        log.restore(version=1)
    assert DeltaLog.for_table(root).latest_version() == 5  # only the concurrent append landed


def test_restore_on_an_append_only_table_is_refused_by_the_commit_rules(tmp_path: Path) -> None:
    root = tmp_path / "t"
    write_deltalake(str(root), pa.table({"id": [1]}), configuration={"delta.appendOnly": "true"})
    write_deltalake(str(root), pa.table({"id": [2]}), mode="append")
    with pytest.raises(InvalidCommitError) as exc:
        DeltaLog.for_table(root).restore(version=0)
    assert exc.value.rule == "append-only"


# ---------------------------------------------------------------------------------------------- CLI
def test_cli_restore(tmp_path: Path) -> None:
    root = lake_table(tmp_path / "t")
    runner = CliRunner()
    out = runner.invoke(cli, ["restore", str(root), "--version", "1", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["version"] == 5 and doc["restored_version"] == 1 and doc["read_version"] == 4
    assert doc["num_removed"] > 0 and doc["num_restored"] > 0
    uuid.UUID(doc["txn_id"])
    assert rows(root) == rows(root, 1)
    human = runner.invoke(cli, ["restore", str(root), "--timestamp", "2026-01-03T12:00:00"])
    assert human.exit_code == 0 and "restored version" in human.stdout
    assert rows(root) == rows(root, 2)
    for args in (["restore", str(root)], ["restore", str(root), "--version", "1", "--timestamp", "2026-01-02"]):
        bad = runner.invoke(cli, args)
        assert bad.exit_code == 2 and bad.stdout == "" and bad.stderr.startswith("error: ")
    missing = runner.invoke(cli, ["restore", str(root), "--version", "99"])
    assert missing.exit_code == 1 and missing.stderr.startswith("error: ")
