"""Log cleanup on real tables: deltalog commits, deltalake (delta-rs) checkpoints, chosen file times.

Each table is built through deltalog's own API, checkpointed by ``deltalake`` (an independent writer,
so the boundary checkpoint is not one deltalog wrote), and given commit times with ``os.utime``: without
in-commit timestamps, a commit file's modification time is its commit time. A fixed clock makes "now"
exact. What is checked is the promise: every version from the reported horizon on reads exactly as it
did before the cleanup, versions below it are reported as cleaned up, and nothing else is touched.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltalog import DeltaLog, InvalidArgumentError, Snapshot, UnsupportedFeatureError, VersionNotFoundError
from deltalog import actions as A
from deltalog.cli.main import cli
from deltalog.core.plans.cleanup import truncate_to_day
from tests.corpus import corpus_entries, table_path, writable_copy
from tests.unit.logkit import Y2026, protocol
from tests.unit.logwriter import make_table

DAY = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z, a midnight
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])
CONF = {"delta.checkpointInterval": "1000"}  # checkpoints only where a test puts them


def set_mtime(path: Path, ms: int) -> None:
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


def clock(ms: int) -> Any:
    return lambda: ms / 1000


def log_dir(root: Path) -> Path:
    return root / "_delta_log"


def commit_file(root: Path, v: int) -> Path:
    return log_dir(root) / f"{v:020d}.json"


class Builder:
    """A partitioned table, one commit per ``step`` from ``t0``, each commit file's mtime its commit time.

    Every third commit also removes the oldest live file, so versions differ by removes as well as adds.
    """

    def __init__(self, root: Path, step: int = DAY, configuration: dict[str, str] | None = None, t0: int = T0) -> None:
        self.root = root
        self.step = step
        self.now = t0
        self.log = DeltaLog.for_table(root, clock=lambda: self.now / 1000)
        self.log.create(SCHEMA, partition_columns=["p"], configuration={**CONF, **(configuration or {})})
        set_mtime(commit_file(root, 0), t0)
        self.version = 0
        self.states: dict[int, Any] = {0: state(self.log.snapshot())}

    def commit(self, n: int = 1, step: int | None = None) -> None:
        for _ in range(n):
            v = self.version + 1
            self.now += self.step if step is None else step
            actions: list[A.Action] = [A.Add(f"p={v % 3}/f{v}.parquet", {"p": str(v % 3)}, 100 + v, self.now, True)]
            txn = self.log.start_transaction()
            if v % 3 == 0:
                live = sorted(txn.snapshot.add_actions(), key=lambda a: a.path)
                if live:
                    actions.append(live[0].remove(self.now))
            txn.commit(actions)
            set_mtime(commit_file(self.root, v), self.now)
            self.version = v
            self.states[v] = state(self.log.snapshot())

    def checkpoint(self) -> Path:
        """A deltalake checkpoint of the latest version, written when that version was committed."""
        DeltaTable(str(self.root)).create_checkpoint()
        path = log_dir(self.root) / f"{self.version:020d}.checkpoint.parquet"
        assert path.is_file()
        set_mtime(path, self.now)
        return path


def state(snap: Snapshot) -> tuple[Any, ...]:
    files = sorted(
        (r["path"], r["size"], tuple(r["partition_values"]), repr(r["deletion_vector"]))
        for r in snap.files().to_pylist()
    )
    return snap.version, snap.protocol, snap.metadata, tuple(files)


def fresh(root: Path, now: int | None = None) -> DeltaLog:
    return DeltaLog.for_table(root, clock=clock(now if now is not None else T0))


def names(root: Path) -> set[str]:
    return {p.name for p in log_dir(root).iterdir() if p.is_file()}


def assert_reads_from(root: Path, horizon: int, states: dict[int, Any]) -> None:
    """Every version from ``horizon`` reads as recorded; every version below it is reported cleaned up."""
    log = fresh(root)
    latest = max(states)
    assert log.earliest_version() == horizon
    for v in range(horizon, latest + 1):
        assert state(log.snapshot(version=v)) == states[v], v
    for v in range(horizon):
        with pytest.raises(VersionNotFoundError):
            log.snapshot(version=v)


# ---------------------------------------------------------------------------------------------- basics
def test_cleanup_deletes_below_the_newest_old_checkpoint_and_every_later_version_reads_the_same(
    tmp_path: Path,
) -> None:
    b = Builder(tmp_path / "t")
    b.commit(10)
    b.checkpoint()
    b.commit(10)
    cp20 = b.checkpoint()
    b.commit(15)
    b.checkpoint()  # version 35: younger than the cutoff below
    b.commit(4)
    before = names(b.root)
    now = T0 + 60 * DAY  # cutoff 30 days back = T0 + 30 days: versions <= 30 are expired
    log = fresh(b.root, now)

    dry = log.cleanup()
    assert dry.dry_run and dry.deleted == () and names(b.root) == before
    assert dry.plan.boundary == 20
    expected = {f"{v:020d}.json" for v in range(20)} | {f"{10:020d}.checkpoint.parquet"}
    assert {d.path for d in dry.plan.deletions} == expected
    assert dry.horizon is not None and dry.horizon.version == 20 and dry.horizon.timestamp == T0 + 20 * DAY

    done = fresh(b.root, now).cleanup(dry_run=False)
    assert set(done.deleted) == {f"_delta_log/{n}" for n in expected}
    assert names(b.root) == before - expected
    assert cp20.is_file() and commit_file(b.root, 20).is_file() and (log_dir(b.root) / "_last_checkpoint").is_file()
    assert_reads_from(b.root, 20, b.states)
    after = fresh(b.root)
    assert after.version_at(T0 + 20 * DAY) == 20  # time travel to the horizon's reported time
    assert [h.version for h in after.history()][-1] == 20
    # an independent reader agrees about the table and can still travel to the horizon
    assert sorted(DeltaTable(str(b.root)).file_uris()) == sorted(
        str(b.root / p) for p in after.snapshot().files().column("path").to_pylist()
    )
    assert DeltaTable(str(b.root), version=20).version() == 20


def test_a_second_cleanup_finds_nothing_more_to_delete(tmp_path: Path) -> None:
    b = Builder(tmp_path / "t")
    b.commit(10)
    b.checkpoint()
    b.commit(30)
    now = T0 + 80 * DAY
    first = fresh(b.root, now).cleanup(dry_run=False)
    assert first.plan.boundary == 10 and len(first.deleted) == 10
    second = fresh(b.root, now).cleanup(dry_run=False)
    assert second.deleted == () and second.horizon == first.horizon


def test_without_a_checkpoint_nothing_is_deleted_however_old(tmp_path: Path) -> None:
    b = Builder(tmp_path / "t")
    b.commit(20)
    before = names(b.root)
    result = fresh(b.root, T0 + 900 * DAY).cleanup(dry_run=False)
    assert result.deleted == () and names(b.root) == before
    assert result.horizon is not None and result.horizon.version == 0
    assert "no complete checkpoint" in result.plan.reason


def test_the_table_property_sets_the_retention_and_an_argument_overrides_it(tmp_path: Path) -> None:
    b = Builder(tmp_path / "t", configuration={"delta.logRetentionDuration": "interval 100 days"})
    b.commit(10)
    b.checkpoint()
    b.commit(10)
    now = T0 + 60 * DAY
    assert fresh(b.root, now).cleanup().plan.deletions == ()  # 100 days: nothing is old enough
    plan = fresh(b.root, now).cleanup(retention="interval 30 days").plan
    assert plan.boundary == 10 and plan.retention_ms == 30 * DAY
    assert fresh(b.root, now).cleanup(retention=45 * DAY).plan.boundary == 10
    with pytest.raises(InvalidArgumentError):
        fresh(b.root, now).cleanup(retention="3 months")


def test_orphan_temp_files_and_hadoop_checksums_go_and_last_checkpoint_stays(tmp_path: Path) -> None:
    b = Builder(tmp_path / "t")
    b.commit(10)
    b.checkpoint()
    b.commit(25)
    now = T0 + 60 * DAY
    d = log_dir(b.root)
    planted = {
        ".00000000000000000036.json.0f3a9c2d.tmp": now - 2 * DAY,  # a crashed writer's temp file
        "_commit_5f0c2a9e-3d1b.json.tmp": now - 3 * DAY,  # delta-rs's
        ".00000000000000000037.json.aa11.tmp": now - 3_600_000,  # may still be in use
        ".00000000000000000003.json.crc": T0,  # Hadoop checksum of a commit that goes
        ".00000000000000000030.json.crc": T0,  # ... of one that stays
        "notes.txt": T0,
    }
    for name, ms in planted.items():
        (d / name).write_bytes(b"x")
        set_mtime(d / name, ms)
    result = fresh(b.root, now).cleanup(dry_run=False)
    left = names(b.root)
    assert ".00000000000000000036.json.0f3a9c2d.tmp" not in left and "_commit_5f0c2a9e-3d1b.json.tmp" not in left
    assert ".00000000000000000003.json.crc" not in left
    assert {".00000000000000000037.json.aa11.tmp", ".00000000000000000030.json.crc", "notes.txt"} <= left
    assert "_last_checkpoint" in left
    kinds = {d.path: d.kind for d in result.plan.deletions}
    assert kinds["_commit_5f0c2a9e-3d1b.json.tmp"] == "temp"
    assert kinds[".00000000000000000003.json.crc"] == "hadoop-crc"


def test_an_unreadable_boundary_checkpoint_is_passed_over_for_an_older_sound_one(tmp_path: Path) -> None:
    b = Builder(tmp_path / "t")
    b.commit(10)
    b.checkpoint()
    b.commit(10)
    torn = b.checkpoint()
    b.commit(20)
    data = torn.read_bytes()
    torn.write_bytes(data[: len(data) // 2])  # a torn write: the footer is gone
    set_mtime(torn, T0 + 20 * DAY)
    result = fresh(b.root, T0 + 70 * DAY).cleanup(dry_run=False)
    assert result.plan.boundary == 10
    assert torn.is_file()
    assert_reads_from(b.root, 10, b.states)


def test_cleanup_refuses_a_protocol_it_cannot_write_and_deletes_nothing(tmp_path: Path) -> None:
    root = make_table(
        tmp_path / "t",
        [[protocol(1, 7, writer_features=["collations"]), Y2026.metadata()], *[[{"commitInfo": {}}]] * 3],
    )
    before = names(root)
    with pytest.raises(UnsupportedFeatureError, match="collations"):
        fresh(root, T0 + 900 * DAY).cleanup(dry_run=False)
    assert names(root) == before


# ---------------------------------------------------------------------------------------------- V2 sidecars
def sidecar_refs(checkpoint: Path) -> set[str]:
    """The sidecar names a V2 checkpoint manifest references, read here without deltalog."""
    if checkpoint.suffix == ".json":
        lines = [json.loads(x) for x in checkpoint.read_text().splitlines() if x.strip()]
        return {x["sidecar"]["path"].rsplit("/", 1)[-1] for x in lines if "sidecar" in x}
    table = pq.read_table(checkpoint)
    if "sidecar" not in table.column_names:
        return set()
    return {s["path"].rsplit("/", 1)[-1] for s in table.column("sidecar").to_pylist() if s}


def _has_sidecars(name: str) -> bool:
    d = table_path(name) / "_delta_log" / "_sidecars"
    return d.is_dir() and any(d.iterdir())


V2_TABLES = sorted(
    e["name"] for e in corpus_entries() if e.get("latest_version") is not None and _has_sidecars(e["name"])
)
COMMIT_NAME = re.compile(r"[0-9]{20}\.json")


@pytest.mark.corpus
@pytest.mark.parametrize("name", V2_TABLES)
def test_v2_cleanup_keeps_referenced_sidecars_and_drops_orphans(tmp_path: Path, name: str) -> None:
    root = writable_copy(name, tmp_path / "t")
    for p in root.rglob("*"):
        set_mtime(p, T0)
    for p in log_dir(root).iterdir():
        if COMMIT_NAME.fullmatch(p.name):
            set_mtime(p, T0 + int(p.name[:20]) * 1000)
    sidecars = log_dir(root) / "_sidecars"
    (sidecars / "orphan-old.parquet").write_bytes(b"PAR1")
    set_mtime(sidecars / "orphan-old.parquet", T0)
    before = state(fresh(root).snapshot())
    now = T0 + 400 * DAY
    (sidecars / "orphan-new.parquet").write_bytes(b"PAR1")
    set_mtime(sidecars / "orphan-new.parquet", now - 3_600_000)
    result = fresh(root, now).cleanup(dry_run=False)
    assert result.plan.boundary is not None
    kept = [log_dir(root) / n for n in result.plan.remaining_checkpoints]
    referenced = set().union(*(sidecar_refs(p) for p in kept))
    left = {p.name for p in sidecars.iterdir() if not p.name.startswith(".")}
    hidden = {p.name for p in sidecars.iterdir() if p.name.startswith(".")}
    assert all(n[1:-4] in left for n in hidden if n.endswith(".crc"))  # Hadoop checksums went with their files
    assert referenced <= left
    assert "orphan-old.parquet" not in left and "orphan-new.parquet" in left
    assert left == referenced | {"orphan-new.parquet"}
    assert state(fresh(root).snapshot()) == before


@pytest.mark.corpus
@pytest.mark.parametrize("name", [n for n in V2_TABLES if n == "delta-kernel-rs/v2-checkpoints-json-with-sidecars"])
def test_sidecar_paths_are_uri_references(tmp_path: Path, name: str) -> None:
    # Regression (deltalog/checkpoint/reader.py, _sidecar_name): a sidecar's path is a URI reference, decoded once.
    root = writable_copy(name, tmp_path / "t")
    before = state(fresh(root).snapshot())
    manifest = next(log_dir(root).glob(f"{6:020d}.checkpoint.*.json"))
    text = manifest.read_text()
    old = sorted(sidecar_refs(manifest))[0]
    new = old.replace(".parquet", " renamed.parquet")
    (log_dir(root) / "_sidecars" / old).rename(log_dir(root) / "_sidecars" / new)
    manifest.write_text(text.replace(f'"path":"{old}"', f'"path":"{quote(new)}"'))
    assert quote(new) in sidecar_refs(manifest) and quote(new) != new
    snap = fresh(root).snapshot()
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 6  # no fallback
    assert state(snap) == before


def test_a_table_that_uses_deletion_vectors_can_be_cleaned(tmp_path: Path) -> None:
    """Cleanup commits nothing, so using a feature deltalog does not write (DVs) is no reason to refuse."""
    root = make_table(
        tmp_path / "t",
        [
            [
                protocol(3, 7, ["deletionVectors"], ["deletionVectors"]),
                Y2026.metadata(configuration={"delta.enableDeletionVectors": "true"}),
            ],
            [{"commitInfo": {}}],
        ],
    )
    result = fresh(root, T0 + 900 * DAY).cleanup(dry_run=False)
    assert result.deleted == () and result.horizon is not None and result.horizon.version == 0


# ---------------------------------------------------------------------------------------------- CLI
def test_cli_cleanup_prints_the_plan_and_the_horizon(tmp_path: Path) -> None:
    # the CLI runs on the wall clock: a table whose commits are 40 days apart, the newest 240 days ago
    t0 = truncate_to_day(int(time.time() * 1000)) - 400 * DAY
    b = Builder(tmp_path / "t", step=DAY * 40, t0=t0)
    b.commit(3)
    b.checkpoint()
    b.commit(1)
    runner = CliRunner()
    dry = runner.invoke(cli, ["cleanup", str(b.root), "--json"])
    assert dry.exit_code == 0, dry.output
    doc = json.loads(dry.stdout)
    assert doc["dry_run"] is True and doc["deleted"] == [] and doc["boundary_version"] == 3
    assert doc["horizon"]["version"] == 3 and doc["horizon"]["timestamp_ms"] == t0 + 3 * 40 * DAY
    assert [f["path"] for f in doc["files"]] == [f"_delta_log/{v:020d}.json" for v in range(3)]
    assert {f["kind"] for f in doc["files"]} == {"commit"}
    human = runner.invoke(cli, ["cleanup", str(b.root), "--retention", "30d"])
    assert human.exit_code == 0 and "time-travel horizon" in human.stdout and "version 3" in human.stdout
    assert "dry run: 3 files would be deleted" in human.stdout
    applied = runner.invoke(cli, ["cleanup", str(b.root), "--apply", "--json"])
    assert applied.exit_code == 0
    assert json.loads(applied.stdout)["deleted"] == [f"_delta_log/{v:020d}.json" for v in range(3)]
    assert not commit_file(b.root, 0).exists()
    bad = runner.invoke(cli, ["cleanup", str(b.root), "--retention", "soon"])
    assert bad.exit_code == 2 and bad.stdout == "" and bad.stderr.startswith("error: ")


# ---------------------------------------------------------------------------------------------- the promise
Op = tuple[Any, ...]
COMMITS = st.tuples(
    st.just("commit"),
    st.integers(min_value=1, max_value=5),  # how many
    st.integers(min_value=1, max_value=240),  # hours between them
    st.booleans(),  # checkpoint the last one
)
CLEANUP = st.tuples(
    st.just("cleanup"),
    st.one_of(st.none(), st.integers(min_value=0, max_value=20).map(lambda d: d * DAY), st.just("2 days")),
    st.integers(min_value=0, max_value=60),  # days after the last commit
)
OPS = st.lists(st.one_of(COMMITS, COMMITS, CLEANUP), min_size=2, max_size=20)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_no_cleanup_ever_makes_a_version_at_or_after_the_horizon_unreadable(ops: list[Op]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        b = Builder(Path(tmp) / "t")
        for op in ops:
            if op[0] == "commit":
                _, n, hours, then_checkpoint = op
                b.commit(n, step=hours * 3_600_000)
                if then_checkpoint:
                    b.checkpoint()
            else:
                _, retention, days_later = op
                now = b.now + days_later * DAY
                times = {v: commit_file(b.root, v).stat().st_mtime_ns // 1_000_000 for v in b.states}
                result = fresh(b.root, now).cleanup(retention=retention, dry_run=False)
                assert result.horizon is not None
                h = result.horizon.version
                b.states = {v: s for v, s in b.states.items() if v >= h}
                assert_reads_from(b.root, h, b.states)
                # no version younger than the cutoff became unreachable
                assert all(v >= h for v, t in times.items() if t > result.plan.cutoff_ms)
                assert result.horizon.timestamp == times[h]
                b.now = now
