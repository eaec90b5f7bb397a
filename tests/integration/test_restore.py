"""RESTORE: one new commit that makes an older version current again, checked by both peers.

Tables are written by ``deltalake`` (appends, an overwrite, a delete that rewrites files), restored by
deltalog, and read back by ``deltalake`` and duckdb: the restored table must hold exactly the rows of the
target version. Refusals (not older than the latest, beyond the deleted-file retention, files gone),
deletion-vector identity, conflicts and the CLI are covered on tables built here. Metadata, protocol and
domains across a restore are in ``test_restore_metadata.py``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable, write_deltalake

from deltalog import (
    ConcurrentAppendError,
    DeltaLog,
    InvalidArgumentError,
    InvalidCommitError,
    Snapshot,
    VersionNotFoundError,
)
from deltalog.cli.main import cli
from deltalog.errors import RestoreFilesMissingError
from tests.integration.restore_kit import (
    DAY,
    T0,
    assert_peers_read,
    clocked,
    commit_actions,
    data_file,
    dv_file,
    dv_path,
    lake_rows,
    set_commit_times,
)

NOW = T0 + 5 * DAY  # the clock of these tests: every version of lake_table is within a week of it


def live(snap: Snapshot) -> set[tuple[str, str | None]]:
    out = set()
    for a in snap.add_actions():
        out.add((a.path, a.deletion_vector.unique_id if a.deletion_vector else None))
    return out


def lose_a_file(root: Path, version: int) -> tuple[str, list[dict[str, Any]]]:
    """Delete one data file of ``version`` (as a vacuum would); return its path and the version's other rows."""
    gone = sorted(DeltaLog.for_table(root).snapshot(version=version).add_actions(), key=lambda a: a.path)[0].path
    ids = set(pq.read_table(root / gone).column("id").to_pylist())
    expected = [r for r in lake_rows(root, version) if r["id"] not in ids]
    (root / gone).unlink()
    return gone, expected


def lake_table(root: Path) -> Path:
    """Versions 0-4: create, append, overwrite, delete (rewrites a file), append; commit ``v`` at T0 + v days."""
    write_deltalake(str(root), pa.table({"id": [1, 2, 3], "p": ["a", "a", "b"]}), partition_by=["p"])
    write_deltalake(str(root), pa.table({"id": [4, 5], "p": ["b", "c"]}), mode="append")
    write_deltalake(str(root), pa.table({"id": [6, 7, 8], "p": ["a", "a", "d"]}), mode="overwrite")
    DeltaTable(str(root)).delete("id = 7")
    write_deltalake(str(root), pa.table({"id": [9], "p": ["c"]}), mode="append")
    set_commit_times(root, T0)
    return root


@pytest.mark.interop
@pytest.mark.parametrize("target", [0, 1, 2, 3])
def test_restored_table_reads_like_the_target_version_in_both_peers(tmp_path: Path, target: int) -> None:
    root = lake_table(tmp_path / "t")
    expected = lake_rows(root, target)
    log = clocked(root, NOW)
    result = log.restore(version=target)
    assert result.version == 5 and result.read_version == 4 and result.restored_version == target
    assert_peers_read(root, expected)
    assert live(DeltaLog.for_table(root).snapshot()) == live(log.snapshot(version=target))
    info = DeltaTable(str(root)).history(1)[0]
    assert info["operation"] == "RESTORE"
    assert json.loads(info["operationParameters"]["version"]) == target
    # every change is data: removes and re-adds carry dataChange=true
    committed = commit_actions(root, 5)
    file_actions = [next(iter(a.values())) for a in committed if "add" in a or "remove" in a]
    assert file_actions and all(a["dataChange"] is True for a in file_actions)
    assert len(file_actions) == result.num_removed + result.num_restored
    # the same table at every version: no metaData or protocol action when the target's equal today's
    assert not any("metaData" in a or "protocol" in a for a in committed)
    assert not (result.metadata_restored or result.protocol_upgraded)


@pytest.mark.interop
def test_restore_copies_the_target_add_actions_with_their_stats(tmp_path: Path) -> None:
    root = lake_table(tmp_path / "t")
    log = clocked(root, NOW)
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
    assert_peers_read(root, lake_rows(root, 1))


@pytest.mark.interop
def test_restore_by_timestamp_picks_the_version_as_of_that_time(tmp_path: Path) -> None:
    root = lake_table(tmp_path / "t")
    expected = lake_rows(root, 1)
    result = clocked(root, NOW).restore(timestamp="2026-01-02T12:00:00Z")
    assert result.restored_version == 1
    assert_peers_read(root, expected)
    # Spark's Restore(version, timestamp): what the caller gave, the other one null (values as JSON text)
    params = next(a["commitInfo"] for a in commit_actions(root, 5) if "commitInfo" in a)["operationParameters"]
    assert params == {"version": "null", "timestamp": "2026-01-02T12:00:00.000Z"}
    expected = lake_rows(root, 2)
    again = clocked(root, NOW).restore(timestamp=dt.datetime(2026, 1, 3, 1, tzinfo=dt.timezone.utc))
    assert again.restored_version == 2
    assert_peers_read(root, expected)


# ---------------------------------------------------------------------------------------------- refusals
def test_restore_rejects_meaningless_targets(tmp_path: Path) -> None:
    root = lake_table(tmp_path / "t")
    log = clocked(root, NOW)
    for kwargs in ({}, {"version": 1, "timestamp": "2026-01-02"}, {"version": -1}, {"version": 9}):
        with pytest.raises(InvalidArgumentError):
            log.restore(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(VersionNotFoundError):
        log.restore(timestamp="2025-01-01")  # before the first commit
    assert DeltaLog.for_table(root).latest_version() == 4
    assert_peers_read(root, lake_rows(root, 4))


def test_restoring_the_latest_version_is_refused(tmp_path: Path) -> None:
    """Spark's ``require(versionToRestore < latestVersion)``: a restore to the latest version is a mistake,
    not an empty commit (a64d181 committed one)."""
    root = lake_table(tmp_path / "t")
    with pytest.raises(InvalidArgumentError, match="older than the latest version, 4"):
        clocked(root, NOW).restore(version=4)
    with pytest.raises(InvalidArgumentError, match="older than the latest"):
        clocked(root, NOW).restore(timestamp="2026-01-05T12:00:00Z")  # as of then, version 4 is the latest
    assert DeltaLog.for_table(root).latest_version() == 4
    assert_peers_read(root, lake_rows(root, 4))


@pytest.mark.interop
def test_a_target_beyond_the_deleted_file_retention_is_refused_unless_forced(tmp_path: Path) -> None:
    """Spark's RESTORE travels with ``enforceTimeTravelWithinDeletedFileRetention``: VACUUM may have deleted
    an older version's files. The retention is the table's (1 week by default), from the target's commit time."""
    root = lake_table(tmp_path / "t")
    expected = lake_rows(root, 1)
    late = T0 + 1 * DAY + 7 * DAY + 1  # a week and 1 ms after version 1, less than a week after version 2
    with pytest.raises(InvalidArgumentError, match=r"delta\.deletedFileRetentionDuration.*force=True") as exc:
        clocked(root, late).restore(version=1)
    assert "version 1" in str(exc.value) and "2026-01-02T00:00:00.000Z" in str(exc.value)
    with pytest.raises(InvalidArgumentError, match="deletedFileRetentionDuration"):
        clocked(root, late).restore(timestamp="2026-01-02T06:00:00Z")
    assert DeltaLog.for_table(root).latest_version() == 4
    assert_peers_read(root, lake_rows(root, 4))
    assert clocked(root, late).restore(version=2).restored_version == 2  # within the week: allowed
    result = clocked(root, late).restore(version=1, force=True)
    assert (result.version, result.restored_version) == (6, 1)
    assert_peers_read(root, expected)


@pytest.mark.interop
def test_the_table_retention_property_decides_how_far_back_a_restore_may_go(tmp_path: Path) -> None:
    root = lake_table(tmp_path / "t")
    expected = lake_rows(root, 0)
    far = T0 + 20 * DAY
    with pytest.raises(InvalidArgumentError, match="604800000 ms"):
        clocked(root, far).restore(version=0)
    props = {"delta.logRetentionDuration": "interval 60 days", "delta.deletedFileRetentionDuration": "interval 30 days"}
    clocked(root, far).set_properties(props)  # version 5
    result = clocked(root, far).restore(version=0)  # 20 days back, within the table's 30
    assert result.restored_version == 0
    assert_peers_read(root, expected)
    # the retention in force is today's, not the target's: version 0 had none, and the restore brought that back
    assert "delta.deletedFileRetentionDuration" not in DeltaLog.for_table(root).snapshot().configuration


@pytest.mark.interop
def test_an_unusable_retention_property_is_named_and_force_restores_past_it(tmp_path: Path) -> None:
    """Another engine stored a retention in months, which has no length: the refusal names the property,
    and a forced restore to a version before it brings back that version's (valid) configuration."""
    root = lake_table(tmp_path / "t")
    expected = lake_rows(root, 3)
    lines = commit_actions(root, 0)
    (meta,) = [a["metaData"] for a in lines if "metaData" in a]
    bad = {"metaData": {**meta, "configuration": {"delta.deletedFileRetentionDuration": "interval 1 month"}}}
    (root / "_delta_log" / f"{5:020d}.json").write_text(
        json.dumps({"commitInfo": {"timestamp": NOW}}) + "\n" + json.dumps(bad) + "\n"
    )
    with pytest.raises(InvalidArgumentError, match=r"delta\.deletedFileRetentionDuration='interval 1 month'"):
        clocked(root, NOW).restore(version=3)
    assert DeltaLog.for_table(root).latest_version() == 5
    result = clocked(root, NOW).restore(version=3, force=True)
    assert result.metadata_restored
    assert "delta.deletedFileRetentionDuration" not in DeltaLog.for_table(root).snapshot().configuration
    assert_peers_read(root, expected)


@pytest.mark.interop
def test_restore_refuses_when_a_file_to_re_add_was_vacuumed(tmp_path: Path) -> None:
    root = lake_table(tmp_path / "t")
    log = clocked(root, NOW)
    gone, expected_without = lose_a_file(root, 1)
    with pytest.raises(RestoreFilesMissingError, match="gone from storage") as exc:
        log.restore(version=1)
    assert isinstance(exc.value, InvalidArgumentError)
    assert gone in str(exc.value) and exc.value.paths == (gone,) and exc.value.version == 1
    assert DeltaLog.for_table(root).latest_version() == 4  # nothing was committed
    assert_peers_read(root, lake_rows(root, 4))
    # told to ignore it: the restore goes ahead without the lost file, and the table stays readable
    forced = clocked(root, NOW).restore(version=1, ignore_missing_files=True)
    assert forced.version == 5 and forced.skipped_missing == (gone,)
    assert not any(a.path == gone for a in DeltaLog.for_table(root).snapshot().add_actions())
    assert forced.metrics["numOfFilesAfterRestore"] == str(len(list(log.snapshot(version=1).add_actions())) - 1)
    assert_peers_read(root, expected_without)


def test_check_files_false_is_the_old_spelling_of_ignore_missing_files(tmp_path: Path) -> None:
    root = lake_table(tmp_path / "t")
    gone, expected = lose_a_file(root, 1)
    result = clocked(root, NOW).restore(version=1, check_files=False)
    assert result.skipped_missing == (gone,)
    assert_peers_read(root, expected)


# ---------------------------------------------------------------------------------------------- deletion vectors
@pytest.mark.interop
def test_a_file_whose_deletion_vector_changed_is_swapped_back_to_its_old_vector(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = clocked(root, NOW)
    log.create(
        pa.schema([("id", pa.int64())]),
        configuration={"delta.enableDeletionVectors": "true", "delta.checkpointInterval": "1000"},
    )
    f = data_file(root, "f.parquet", pa.table({"id": [0, 1, 2, 3, 4]}))
    g = data_file(root, "g.parquet", pa.table({"id": [10, 11]}))
    log.start_transaction().commit([f, g])  # v1
    dv1 = dv_file(root, [1])
    f1 = dataclasses.replace(f, deletion_vector=dv1)
    log.start_transaction().commit([f.remove(T0), f1])  # v2: a DELETE marks rows in f
    dv2 = dv_file(root, [1, 3])
    f2 = dataclasses.replace(f, deletion_vector=dv2)
    log.start_transaction().commit([f1.remove(T0), f2])  # v3: more rows deleted
    set_commit_times(root, T0 + DAY)
    expected = lake_rows(root, 2)
    assert len(expected) == 6
    hidden = dv_path(root, dv1).rename(tmp_path / "dv1.bin")
    with pytest.raises(RestoreFilesMissingError, match=dv_path(root, dv1).name) as exc:
        log.restore(version=2)  # the old vector's file is gone: restoring would break reads
    assert exc.value.paths == (dv_path(root, dv1).name,)
    assert_peers_read(root, lake_rows(root, 3))
    hidden.rename(dv_path(root, dv1))
    result = log.restore(version=2)
    assert (result.num_removed, result.num_restored) == (1, 1)
    assert live(DeltaLog.for_table(root).snapshot()) == live(log.snapshot(version=2))
    restored = {a.path: a for a in DeltaLog.for_table(root).snapshot().add_actions()}
    assert restored["f.parquet"].deletion_vector == dv1
    removes = [a["remove"] for a in commit_actions(root, 4) if "remove" in a]
    assert [r["deletionVector"]["pathOrInlineDv"] for r in removes] == [dv2.path_or_inline_dv]  # carries its DV
    assert_peers_read(root, expected)


# ---------------------------------------------------------------------------------------------- writes and conflicts
def test_a_concurrent_append_conflicts_instead_of_being_undone(tmp_path: Path) -> None:
    root = lake_table(tmp_path / "t")
    log = clocked(root, NOW)
    other = DeltaLog.for_table(root)
    real_snapshot = log.snapshot
    late = data_file(root, "p=z/late.parquet", pa.table({"id": [99]}), {"p": "z"})

    def racing_snapshot(*args: Any, **kwargs: Any) -> Snapshot:
        if kwargs.get("version") is not None and other.latest_version() == 4:
            other.start_transaction().commit([late])
        return real_snapshot(*args, **kwargs)

    log.snapshot = racing_snapshot  # type: ignore[method-assign]
    with pytest.raises(ConcurrentAppendError):
        log.restore(version=1)
    assert DeltaLog.for_table(root).latest_version() == 5  # only the concurrent append landed
    assert_peers_read(root, lake_rows(root, 5))
    assert {"id": 99, "p": "z"} in lake_rows(root, 5)


def test_restore_on_an_append_only_table_is_refused_by_the_commit_rules(tmp_path: Path) -> None:
    root = tmp_path / "t"
    write_deltalake(str(root), pa.table({"id": [1]}), configuration={"delta.appendOnly": "true"})
    write_deltalake(str(root), pa.table({"id": [2]}), mode="append")
    with pytest.raises(InvalidCommitError) as exc:
        DeltaLog.for_table(root).restore(version=0)
    assert exc.value.rule == "append-only"
    assert DeltaLog.for_table(root).latest_version() == 1
    assert_peers_read(root, [{"id": 1}, {"id": 2}])


# ---------------------------------------------------------------------------------------------- CLI
def test_cli_restore(tmp_path: Path) -> None:
    root = lake_table(tmp_path / "t")
    runner = CliRunner()
    # the CLI runs on the wall clock: these commits are months old, beyond the one-week retention
    old = runner.invoke(cli, ["restore", str(root), "--version", "1", "--json"])
    assert old.exit_code == 1 and old.stdout == "" and "deletedFileRetentionDuration" in old.stderr
    assert DeltaLog.for_table(root).latest_version() == 4
    # like vacuum and cleanup, restore shows its plan unless --apply is given
    preview = runner.invoke(cli, ["restore", str(root), "--version", "1", "--force", "--json"])
    assert preview.exit_code == 0, preview.output
    planned = json.loads(preview.stdout)
    assert planned["dry_run"] is True and planned["version"] is None and planned["txn_id"] is None
    assert planned["restored_version"] == 1 and planned["num_removed"] > 0 and planned["num_restored"] > 0
    assert DeltaLog.for_table(root).latest_version() == 4  # nothing committed
    said = runner.invoke(cli, ["restore", str(root), "--version", "1", "--force"])
    assert "dry run: nothing committed (--apply commits version 5 or later)" in " ".join(said.stdout.split())
    out = runner.invoke(cli, ["restore", str(root), "--version", "1", "--force", "--apply", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["version"] == 5 and doc["restored_version"] == 1 and doc["read_version"] == 4 and not doc["dry_run"]
    assert {k: doc[k] for k in ("num_removed", "num_restored")} == {
        k: planned[k] for k in ("num_removed", "num_restored")
    }
    assert doc["num_removed"] > 0 and doc["num_restored"] > 0
    assert doc["metadata_restored"] is False and doc["protocol_upgraded"] is False and doc["skipped_missing"] == []
    uuid.UUID(doc["txn_id"])
    assert_peers_read(root, lake_rows(root, 1))
    human = runner.invoke(cli, ["restore", str(root), "--timestamp", "2026-01-03T12:00:00", "--force", "--apply"])
    assert human.exit_code == 0 and "restored version" in human.stdout
    assert_peers_read(root, lake_rows(root, 2))
    for args in (["restore", str(root)], ["restore", str(root), "--version", "1", "--timestamp", "2026-01-02"]):
        bad = runner.invoke(cli, args)
        assert bad.exit_code == 2 and bad.stdout == "" and bad.stderr.startswith("error: ")
    missing = runner.invoke(cli, ["restore", str(root), "--version", "99"])
    assert missing.exit_code == 1 and missing.stderr.startswith("error: ")


def test_cli_restore_without_missing_files(tmp_path: Path) -> None:
    root = lake_table(tmp_path / "t")
    gone, expected = lose_a_file(root, 1)
    runner = CliRunner()
    refused = runner.invoke(cli, ["restore", str(root), "--version", "1", "--force"])
    assert refused.exit_code == 1 and gone in refused.stderr and "--ignore-missing-files" in refused.stderr
    assert DeltaLog.for_table(root).latest_version() == 4
    args = ["restore", str(root), "--version", "1", "--force", "--ignore-missing-files", "--apply", "--json"]
    out = runner.invoke(cli, args)
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["skipped_missing"] == [gone]
    assert_peers_read(root, expected)
