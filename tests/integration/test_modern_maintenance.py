"""Maintenance on modern tables (issue 14 item 1): checkpoints follow ``delta.checkpointPolicy``, cleanup writes a
classic compatibility checkpoint before deleting on V2 tables and keeps checkpoint-protected checkpoints, and
restore and the checkpoint job work on tables deltalog does not append to (deletion vectors, column mapping,
change data feed). Every result is opened by the protocol checker, deltalake and duckdb."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from deltalog import DeltaLog
from deltalog.cli.main import cli
from deltalog.core.log.codec import encode_actions
from deltalog.data.files import WriteTarget, write_files
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.maintenance.vacuum import vacuum
from deltalog.storage.fault_rules import fail_before
from deltalog.storage.faults import FaultyStore
from deltalog.storage.local import LocalLogStore
from deltalog.storage.retry import missing
from deltalog.table.context import TableContext
from tests.corpus import table_path, writable_copy
from tests.peers import deltalake_view, duckdb_view, try_deltalake, try_duckdb
from tests.protocol_checker import assert_valid

LOG = "_delta_log"
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
DAY_S = 86_400


def append(log: DeltaLog, start: int, n: int = 2) -> None:
    data = pa.table({"id": list(range(start, start + n)), "name": [f"n{i}" for i in range(start, start + n)]}, SCHEMA)
    log.start_transaction().commit(write_files(log.store, data, WriteTarget.of(log.snapshot())))


def age_log(root: Path, days: int = 40) -> None:
    """Date every log file back, keeping their order: cleanup expires whole days."""
    for name in os.listdir(root / LOG):
        path = root / LOG / name
        if path.is_file():
            st = path.stat()
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - days * DAY_S * 10**9))


def log_names(root: Path) -> list[str]:
    return sorted(n for n in os.listdir(root / LOG) if not n.startswith("."))


def rows(root: Path) -> int:
    view = duckdb_view(root)
    assert view.rows is not None
    return view.rows


def live(root: Path) -> set[str]:
    return set(DeltaLog.for_table(root).snapshot().files().column("path").to_pylist())


# ---------------------------------------------------------------------------------------------- checkpoint policy
def test_a_v2_table_checkpoints_classic_or_uuid_as_its_policy_says_and_never_in_parts(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root, auto_checkpoint=False)
    log.create(SCHEMA, configuration={"delta.feature.v2Checkpoint": "supported"})
    append(log, 0)
    classic = log.checkpoint()
    assert classic.kind == "classic" and classic.files == (f"{LOG}/{1:020d}.checkpoint.parquet",)
    assert "checkpointMetadata" not in pq.read_schema(root / classic.files[0]).names  # V1 spec under the policy
    with pytest.raises(InvalidArgumentError, match="multi-part"):
        log.checkpoint(parts=2)
    log.set_properties({"delta.checkpointPolicy": "v2"})
    append(log, 2)
    v2 = log.checkpoint()
    assert v2.kind == "v2" and v2.files[0].startswith(f"{LOG}/{3:020d}.checkpoint.") and v2.files[0].count(".") == 3
    with pytest.raises(InvalidArgumentError, match="multi-part"):
        log.checkpoint(parts=2)
    assert_valid(root)
    assert rows(root) == 4
    assert deltalake_view(root, rows=False).files == live(root)


# ---------------------------------------------------------------------------------------------- V2 compatibility
def test_cleanup_of_a_v2_table_writes_a_classic_compatibility_checkpoint_before_deleting(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root, auto_checkpoint=False)
    log.create(SCHEMA, configuration={"delta.checkpointPolicy": "v2"})
    for i in range(3):
        append(log, 2 * i)
    uuid_named = log.checkpoint().files[0]
    age_log(root)
    compat = f"{LOG}/{3:020d}.checkpoint.parquet"

    planned = DeltaLog.for_table(root).cleanup(retention=0)  # a dry run writes nothing, says what it would
    assert planned.compat_checkpoint == compat and not (root / compat).exists()

    result = DeltaLog.for_table(root).cleanup(retention=0, dry_run=False)
    assert result.compat_checkpoint == compat
    assert f"{LOG}/{0:020d}.json" in result.deleted
    names = log_names(root)
    assert f"{0:020d}.json" not in names and uuid_named.split("/")[-1] in names
    table = pq.read_table(root / compat)
    assert table.column("checkpointMetadata").drop_null()[0]["version"].as_py() == 3  # V2 content
    assert table.column("add").drop_null().to_pylist() != []  # every row inline: no sidecar to keep alive
    assert_valid(root)
    assert rows(root) == 6
    assert deltalake_view(root, rows=False).files == live(root)
    again = DeltaLog.for_table(root).cleanup(retention=0, dry_run=False)
    assert again.compat_checkpoint is None and again.deleted == ()  # nothing left to delete, nothing written


# ---------------------------------------------------------------------------------------------- protection
@pytest.mark.parametrize("protected", [100, 3])
def test_cleanup_keeps_checkpoints_below_the_protected_version_unless_it_truncates_past_it(
    tmp_path: Path, protected: int
) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root, auto_checkpoint=False)
    log.create(SCHEMA, configuration={"delta.feature.checkpointProtection": "supported"})
    append(log, 0)
    append(log, 2)
    log.checkpoint()  # version 2
    append(log, 4)
    append(log, 6)
    log.checkpoint()  # version 4
    # what DROP FEATURE leaves behind (deltalog refuses to set it by hand): the protected version
    snap = log.snapshot()
    conf = {**snap.metadata.configuration, "delta.requireCheckpointProtectionBeforeVersion": str(protected)}
    (root / LOG / f"{5:020d}.json").write_bytes(
        encode_actions([dataclasses.replace(snap.metadata, configuration=conf)])
    )
    age_log(root)
    result = DeltaLog.for_table(root).cleanup(retention=0, dry_run=False)
    names = log_names(root)
    assert result.plan.boundary == 4
    assert [n for n in names if n.endswith(".json") and n[0] == "0"] == [f"{v:020d}.json" for v in (4, 5)]
    kept = f"{2:020d}.checkpoint.parquet" in names
    assert kept == (protected > 4)  # a cleanup short of the protected version deletes no checkpoint below it
    assert ("checkpoint protection" in result.plan.reason) == kept
    assert_valid(root)
    assert rows(root) == 8
    assert deltalake_view(root).files == live(root)


# ---------------------------------------------------------------------------------------------- tables deltalog
# does not append to: deletion vectors, column mapping, change data feed
MODERN = ["dat/deletion_vectors", "delta-rs/table_with_column_mapping", "dat/cdf", "dat/check_constraints"]


@pytest.mark.corpus
@pytest.mark.parametrize("name", MODERN)
def test_the_cli_checkpoint_and_compact_jobs_maintain_modern_tables(tmp_path: Path, name: str) -> None:
    root = writable_copy(name, tmp_path / "t")
    before = live(root), rows(root), try_deltalake(root)
    runner = CliRunner()
    version = DeltaLog.for_table(root).snapshot().version
    out = runner.invoke(cli, ["compact", "--prefix", str(tmp_path), "--min-commits", "1", "--json"])
    assert out.exit_code == 0, out.output
    assert '"checkpointed"' in out.output and f"{version:020d}.checkpoint.parquet" in log_names(root)
    out = runner.invoke(cli, ["checkpoint", str(root)])  # already there: kept, not refused
    assert out.exit_code == 0, out.output
    age_log(root)
    log = DeltaLog.for_table(root)
    log.cleanup(retention=0, dry_run=False)
    log.vacuum(retention=0, dry_run=False, force=True)
    assert_valid(root)
    assert (live(root), rows(root), try_deltalake(root)) == before


@pytest.mark.corpus
def test_restore_of_a_deletion_vector_table_is_a_restore_commit_peers_read(tmp_path: Path) -> None:
    root = writable_copy("dat/deletion_vectors", tmp_path / "t")
    log = DeltaLog.for_table(root)
    latest = log.snapshot().version
    target = next(v for v in range(latest - 1, -1, -1) if log.snapshot(version=v).files().num_rows)
    want = duckdb_view(root).rows, deltalake_view(root, version=target).rows
    result = log.restore(version=target, force=True)
    assert result.version == latest + 1 and result.restored_version == target
    assert_valid(root)
    assert deltalake_view(root).rows == want[1]
    assert rows(root) == want[1]
    assert live(root) == set(DeltaLog.for_table(root).snapshot(version=target).files().column("path").to_pylist())


# ---------------------------------------------------------------------------------------------- unknown features
@pytest.mark.corpus
def test_a_table_with_a_proposal_feature_is_planned_but_not_maintained(tmp_path: Path) -> None:
    root = writable_copy("delta/collations-table", tmp_path / "t")
    age_log(root)
    log = DeltaLog.for_table(root)
    before = log_names(root)
    assert log.history(limit=1)  # readable
    for plan in (log.cleanup(retention=0), log.vacuum(retention=0, force=True), log.vacuum(lite=True)):
        assert plan.refusal is not None and "collations" in plan.refusal
    for real in (
        lambda: log.cleanup(retention=0, dry_run=False),
        lambda: log.vacuum(retention=0, dry_run=False, force=True),
        log.checkpoint,
    ):
        with pytest.raises(UnsupportedFeatureError) as info:
            real()
        assert info.value.feature == "collations"
    assert log_names(root) == before


# ---------------------------------------------------------------------------------------------- checkpoint columns
@pytest.mark.corpus
def test_a_column_mapped_checkpoint_keys_parsed_columns_by_physical_name(tmp_path: Path) -> None:
    root = writable_copy("delta-kernel-rs/partition_cm-name", tmp_path / "t")
    snap = DeltaLog.for_table(root).snapshot()
    conf = {**snap.metadata.configuration, "delta.checkpoint.writeStatsAsStruct": "true"}
    (root / LOG / f"{snap.version + 1:020d}.json").write_bytes(
        encode_actions([dataclasses.replace(snap.metadata, configuration=conf)])
    )
    result = DeltaLog.for_table(root).checkpoint()
    add = pq.read_schema(root / result.files[0]).field("add").type
    physical = set(DeltaLog.for_table(root).snapshot().physical_names.values())
    for column in ("partitionValues_parsed", "stats_parsed"):
        names = {f.name for f in add.field(column).type} if column == "partitionValues_parsed" else set()
        if column == "stats_parsed":
            names = {f.name for f in add.field(column).type.field("minValues").type}
        assert names and names <= physical, (column, names, physical)
    assert_valid(root)
    assert rows(root) == duckdb_view(table_path("delta-kernel-rs/partition_cm-name")).rows


def test_the_cli_runs_a_lite_vacuum(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(SCHEMA)
    append(log, 0)
    gone = sorted(live(root))
    txn = log.start_transaction()
    txn.remove_files(gone)
    txn.commit()
    append(log, 2)
    out = CliRunner().invoke(cli, ["vacuum", str(root), "--lite", "--retention", "0", "--force", "--apply", "--json"])
    assert out.exit_code == 0, out.output
    doc = orjson.loads(out.stdout)
    assert doc["mode"] == "lite" and doc["refusal"] is None and doc["deleted"] == gone
    assert not (root / gone[0]).exists()
    assert_valid(root)
    assert rows(root) == 2
    assert deltalake_view(root).files == live(root)


def test_a_lite_vacuum_racing_log_cleanup_skips_the_commit_it_lost(tmp_path: Path) -> None:
    """A commit cleanup deleted between the listing and the read is skipped (no raw error); its removes still
    come from the snapshot's tombstones while they are there."""
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(SCHEMA)
    append(log, 0)  # v1
    first = sorted(live(root))
    txn = log.start_transaction()
    txn.remove_files(first)
    txn.commit()  # v2: its removes are lost below
    append(log, 2)  # v3
    second = sorted(live(root))
    txn = log.start_transaction()
    txn.remove_files(second)
    txn.commit()  # v4
    racing = FaultyStore(
        LocalLogStore(str(root)),
        fail_before("read", f"{LOG}/{2:020d}.json", error=lambda op, path: missing(path)),
    )
    result = vacuum(TableContext(racing, racing.root), log.snapshot(), retention=0, force=True, lite=True)
    assert sorted(result.paths) == sorted(first + second) and result.deleted == ()
    assert_valid(root)
    assert deltalake_view(root).files == live(root) == set() and rows(root) == 0


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["dat/cdf", "dat/deletion_vectors", "delta/table-with-dv-large", "dat/basic_append"])
def test_lite_vacuum_finds_a_subset_of_what_a_full_vacuum_finds_and_no_live_file(tmp_path: Path, name: str) -> None:
    root = writable_copy(name, tmp_path / "t")
    for folder, _, names in os.walk(root):
        for n in names:
            st = os.stat(os.path.join(folder, n))
            os.utime(os.path.join(folder, n), ns=(st.st_atime_ns, st.st_mtime_ns - 400 * DAY_S * 10**9))
    before = peer_outcomes(root)  # whatever each peer made of it
    log = DeltaLog.for_table(root)
    lite = set(log.vacuum(retention=0, force=True, lite=True).paths)
    full = set(log.vacuum(retention=0, force=True).paths)
    assert lite <= full
    if name == "dat/cdf":
        assert any(p.startswith("_change_data/") for p in lite)  # change data files: no add ever names them
    assert set(log.vacuum(retention=0, force=True, lite=True, dry_run=False).deleted) == lite
    assert_valid(root)
    assert peer_outcomes(root) == before


_MISSING = re.compile(r"(?:File not found: |not found: )(\S+)")


def peer_outcomes(root: Path) -> tuple[object, ...]:
    """The live files and each peer's view, where a refusal over a missing file keeps only that the file
    (still) does not exist: a table with several unreadable deletion vectors (table-with-dv-large's
    ``test%dv%prefix`` files, which neither peer resolves) is refused naming whichever one the peer's
    parallel scan reached first."""

    def settled(view: object) -> object:
        if not isinstance(view, str):
            return view
        for named in _MISSING.findall(view):
            assert not os.path.exists(named.rstrip("'\",")), view
        return _MISSING.sub("not found: <a missing file>", view)

    return live(root), settled(try_duckdb(root)), settled(try_deltalake(root))
