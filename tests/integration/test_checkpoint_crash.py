"""Checkpoints interrupted, torn or lost: readers must still get the right table, or a clear error naming the file.

A checkpoint is several writes (each part or sidecar, then the manifest, then ``_last_checkpoint``), and a process
can die between any two of them. Each test arranges one such failure: in-process with
:class:`~deltalog.storage.faults.FaultyStore` (``SimulatedCrash`` stands for the death), with bytes cut off a
finished file (a bad copy, a non-atomic store), or with a real child process killed by SIGKILL while it is
parked inside the checkpoint (a FaultyStore delay whose sleep signals the parent and then blocks, so the kill
lands at a known step with no timing guesswork). Then a fresh reader, as the next process would be, must see
the state the JSON commits describe.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog.checkpoint.v2 as v2
from deltalog import DeltaLog, Snapshot
from deltalog import actions as A
from deltalog.core.log import last_checkpoint as hints
from deltalog.core.log.paths import LOG_DIR, Kind, checkpoint_name, commit_name, multipart_name, parse
from deltalog.core.log.segment import complete_checkpoints
from deltalog.errors import CheckpointError, CorruptLogError, DeltaLogError, StorageError
from deltalog.storage.faults import FaultyStore, Outcome, SimulatedCrash, crash, fail_before, server_error, slow
from deltalog.storage.local import LocalLogStore

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
V2_CONF = {"delta.feature.v2Checkpoint": "supported", "delta.checkpointPolicy": "v2"}
HINT = f"{LOG_DIR}/_last_checkpoint"

State = tuple[int, tuple[tuple[str, int], ...], tuple[tuple[str, int], ...], tuple[str, ...]]


# ---------------------------------------------------------------------------------------------- helpers


def faulty_log(root: Path, *rules: Any) -> tuple[FaultyStore, DeltaLog]:
    store = FaultyStore(LocalLogStore(str(root)), *rules)
    return store, DeltaLog(store, str(root), auto_checkpoint=False)


def fresh(root: Path) -> DeltaLog:
    """The next process: a plain store and no cached state."""
    return DeltaLog(LocalLogStore(str(root)), str(root), auto_checkpoint=False)


def state(snap: Snapshot) -> State:
    files = snap.files()
    live = tuple(sorted(zip(files.column("path").to_pylist(), files.column("size").to_pylist(), strict=True)))
    txns = tuple(sorted((k, t.version) for k, t in snap.txns.items()))
    tomb = tuple(sorted(snap.tombstones().column("path").to_pylist()))
    return (snap.version, live, txns, tomb)


def build(
    root: Path,
    versions: int,
    files_per_commit: int = 3,
    configuration: dict[str, str] | None = None,
    checkpoint_at: tuple[int, ...] = (),
) -> DeltaLog:
    """Create + ``versions`` commits (adds, an app txn, every third commit also a remove), checkpointing as told."""
    log = fresh(root)
    log.create(SCHEMA, configuration=configuration or {})
    for v in range(1, versions + 1):
        adds = [
            A.Add(f"v{v:03d}-{i:05d}.parquet", {}, 100 + i, 1, True, '{"numRecords":1}')
            for i in range(files_per_commit)
        ]
        actions: list[A.Action] = [*adds, A.Txn("app", v, log.now_ms())]
        if v % 3 == 0:
            victim = sorted(log.snapshot().add_actions(), key=lambda a: a.path)[0]
            actions.append(victim.remove(deletion_timestamp=log.now_ms()))
        log.start_transaction().commit(actions)
        if v in checkpoint_at:
            log.checkpoint()
    return log


def json_state(root: Path) -> State:
    """The state the JSON commits alone describe: a copy of the commits, every checkpoint left out."""
    copy = root.parent / f"{root.name}-json-only"
    shutil.rmtree(copy, ignore_errors=True)
    (copy / LOG_DIR).mkdir(parents=True)
    for name in log_names(root):
        p = parse(name)
        if p is not None and p.kind is Kind.COMMIT:
            shutil.copy2(root / LOG_DIR / name, copy / LOG_DIR / name)
    snap = fresh(copy).snapshot()
    assert snap.segment.checkpoint is None
    return state(snap)


def log_names(root: Path) -> list[str]:
    return sorted(p.name for p in (root / LOG_DIR).iterdir() if p.is_file())


def drop_commits_before(root: Path, version: int) -> None:
    for v in range(version):
        (root / LOG_DIR / commit_name(v)).unlink()


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def hint_version(root: Path) -> int | None:
    try:
        return hints.parse((root / HINT).read_bytes()).version
    except FileNotFoundError:
        return None


def skipped_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "skipping" in r.getMessage()]


# ---------------------------------------------------------------------------------------------- killed mid-way


@pytest.mark.parametrize("older", ["checkpoint", "commits"], ids=["older-checkpoint", "commits-only"])
def test_killed_between_parts_of_a_multipart_checkpoint(tmp_path: Path, older: str) -> None:
    root = tmp_path / "t"
    build(root, 8, checkpoint_at=(4,) if older == "checkpoint" else ())
    expected = json_state(root)
    part2 = f"{LOG_DIR}/{multipart_name(8, 2, 3)}"
    _, log = faulty_log(root, crash("put_if_absent", part2))
    with pytest.raises(SimulatedCrash):
        log.checkpoint(parts=3)
    names = log_names(root)
    assert multipart_name(8, 1, 3) in names
    assert multipart_name(8, 2, 3) not in names and multipart_name(8, 3, 3) not in names
    leftovers = [n for n in names if n.startswith(f".{multipart_name(8, 2, 3)}.")]
    assert len(leftovers) == 1 and parse(leftovers[0]) is None  # the torn temp file is not a log file
    assert hint_version(root) == (4 if older == "checkpoint" else None)  # the hint was never touched

    snap = fresh(root).snapshot()
    assert state(snap) == expected
    used = snap.segment.checkpoint
    assert (used.version if used else None) == (4 if older == "checkpoint" else None)

    # the job runs again: the missing parts are written, the first is recognised as already there
    result = fresh(root).checkpoint(parts=3)
    assert result.already_existed is False and result.kind == "multipart"
    assert hint_version(root) == 8
    again = fresh(root).snapshot()
    assert again.segment.checkpoint is not None and again.segment.checkpoint.version == 8
    assert state(again) == expected


@pytest.mark.parametrize("mode", ["crash", "hint-write-fails"])
@pytest.mark.parametrize("older", [True, False], ids=["older-hint", "no-hint"])
def test_killed_between_checkpoint_and_hint(tmp_path: Path, mode: str, older: bool) -> None:
    root = tmp_path / "t"
    build(root, 8, checkpoint_at=(4,) if older else ())
    expected = json_state(root)
    if mode == "crash":
        _, log = faulty_log(root, crash("put", HINT))
        with pytest.raises(SimulatedCrash):
            log.checkpoint()
    else:
        _, log = faulty_log(root, fail_before("put", HINT, error=server_error()))
        with pytest.raises(StorageError):
            log.checkpoint()
    assert checkpoint_name(8) in log_names(root)
    assert hint_version(root) == (4 if older else None)  # stale

    reader_store, reader = faulty_log(root)
    snap = reader.snapshot()
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 8
    assert state(snap) == expected
    # found by listing: no commit up to 8 was read
    read = {c.path for c in reader_store.calls_to("read") if c.outcome is Outcome.OK}
    assert not any(
        parse(p.rsplit("/", 1)[-1]) is not None and p.endswith(".json") and parse(p.rsplit("/", 1)[-1]).version <= 8
        for p in read
    )  # type: ignore[union-attr]
    drop_commits_before(root, 8)
    assert state(fresh(root).snapshot()) == expected


def test_crash_while_publishing_a_checkpoint_leaves_nothing_under_its_name(tmp_path: Path) -> None:
    root = tmp_path / "t"
    build(root, 6, checkpoint_at=(3,))
    expected = json_state(root)
    _, log = faulty_log(root, crash("put_if_absent", f"{LOG_DIR}/{checkpoint_name(6)}"))
    with pytest.raises(SimulatedCrash):
        log.checkpoint()
    names = log_names(root)
    assert checkpoint_name(6) not in names
    assert [n for n in names if n.startswith(f".{checkpoint_name(6)}.") and n.endswith(".tmp")]
    assert hint_version(root) == 3
    snap = fresh(root).snapshot()
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 3
    assert state(snap) == expected
    assert fresh(root).checkpoint().already_existed is False
    assert fresh(root).snapshot().segment.checkpoint.version == 6  # type: ignore[union-attr]


def test_v2_killed_between_sidecars_and_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(v2, "SIDECAR_ROWS", 4)
    root = tmp_path / "t"
    build(root, 6, configuration=V2_CONF)
    expected = json_state(root)
    _, log = faulty_log(root, crash("put_if_absent", f"{LOG_DIR}/0*.checkpoint.*.parquet"))
    with pytest.raises(SimulatedCrash):
        log.checkpoint()
    sidecars = list((root / LOG_DIR / "_sidecars").iterdir())
    assert sidecars and all(pq.ParquetFile(s).metadata.num_rows > 0 for s in sidecars)  # orphans, but whole
    assert not [n for n in log_names(root) if parse(n) is not None and parse(n).is_checkpoint]  # type: ignore[union-attr]
    snap = fresh(root).snapshot()
    assert snap.segment.checkpoint is None and state(snap) == expected


# ---------------------------------------------------------------------------------------------- torn files


def _checkpoint_kind(log: DeltaLog, kind: str) -> list[str]:
    result = log.checkpoint(parts=3 if kind == "multipart" else None)
    return list(result.files)


@pytest.mark.parametrize("older", [True, False], ids=["older-checkpoint", "commits-only"])
@pytest.mark.parametrize("kind", ["classic", "multipart", "v2-manifest"])
def test_truncated_checkpoint_falls_back_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, kind: str, older: bool
) -> None:
    root = tmp_path / "t"
    conf = V2_CONF if kind.startswith("v2") else {}
    log = build(root, 8, configuration=conf, checkpoint_at=(4,) if older else ())
    expected = json_state(root)
    files = _checkpoint_kind(log, kind)
    torn = files[1] if kind == "multipart" else files[0]
    truncate(root / torn)
    name = torn.rsplit("/", 1)[-1]
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        snap = fresh(root).snapshot()
    assert state(snap) == expected
    assert (snap.segment.checkpoint.version if snap.segment.checkpoint else None) == (4 if older else None)
    warnings = skipped_warnings(caplog)
    assert len(warnings) == 1 and name in warnings[0]


@pytest.mark.parametrize("kind", ["classic", "multipart", "v2-manifest"])
def test_truncated_checkpoint_without_older_commits_is_a_corrupt_log_naming_it(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "t"
    conf = V2_CONF if kind.startswith("v2") else {}
    log = build(root, 8, configuration=conf)
    files = _checkpoint_kind(log, kind)
    torn = files[-1] if kind == "multipart" else files[0]
    truncate(root / torn)
    drop_commits_before(root, 8)
    name = torn.rsplit("/", 1)[-1]
    with pytest.raises(CorruptLogError) as info:
        fresh(root).snapshot()
    assert name in str(info.value)
    assert info.value.path is not None and info.value.path.endswith(name)


def test_zero_byte_checkpoint_is_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "t"
    build(root, 5, checkpoint_at=(2,))
    expected = json_state(root)
    (root / LOG_DIR / checkpoint_name(5)).write_bytes(b"")
    snap = fresh(root).snapshot()
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 2
    assert state(snap) == expected


def test_truncated_sidecar_falls_back_like_a_truncated_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Regression (deltalog/table/load.py, _in_checkpoint): a torn V2 sidecar is part of its checkpoint: fall back.
    monkeypatch.setattr(v2, "SIDECAR_ROWS", 4)
    root = tmp_path / "t"
    log = build(root, 8, configuration=V2_CONF)
    expected = json_state(root)
    result = log.checkpoint()
    assert len(result.files) > 2
    truncate(root / result.files[1])
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        snap = fresh(root).snapshot()
    assert state(snap) == expected
    assert any(result.files[1].rsplit("/", 1)[-1] in w for w in skipped_warnings(caplog))


def test_rerun_over_a_truncated_checkpoint_does_not_claim_success(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Regression (deltalog/checkpoint/publish.py, existing.py): a torn checkpoint under our name is replaced.
    root = tmp_path / "t"
    log = build(root, 6)
    result = log.checkpoint()
    truncate(root / result.files[0])
    try:
        again = fresh(root).checkpoint()
    except CheckpointError as exc:
        assert checkpoint_name(6) in str(exc)
        return
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        snap = fresh(root).snapshot()
    assert skipped_warnings(caplog) == [], f"checkpoint() returned {again} but the file is still torn"
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 6


# ---------------------------------------------------------------------------------------------- lost checkpoints


@pytest.mark.parametrize("lost", ["whole", "one-part"])
def test_hint_naming_a_deleted_checkpoint(tmp_path: Path, caplog: pytest.LogCaptureFixture, lost: str) -> None:
    root = tmp_path / "t"
    log = build(root, 9, checkpoint_at=(3,))
    result = log.checkpoint(version=6, parts=2 if lost == "one-part" else None)
    log.start_transaction().commit([A.Add("late.parquet", {}, 1, 1, True)])
    expected = json_state(root)
    assert hint_version(root) == 6
    doomed = result.files if lost == "whole" else result.files[:1]
    for f in doomed:
        (root / f).unlink()
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        snap = fresh(root).snapshot()
    assert state(snap) == expected
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 3
    assert any("names version 6" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    # older history gone too: an error, never a plausible table built from what is left
    (root / LOG_DIR / checkpoint_name(3)).unlink()
    drop_commits_before(root, 6)
    with pytest.raises(DeltaLogError):
        fresh(root).snapshot()


# ---------------------------------------------------------------------------------------------- SIGKILL


KILL_POINTS: dict[str, tuple[str, str, int | None, bool]] = {
    # name: (operation to park in, path glob, parts, is the new checkpoint visible afterwards)
    "before-checkpoint-file": ("put_if_absent", f"{LOG_DIR}/*.checkpoint.parquet", None, False),
    "between-parts": ("put_if_absent", f"{LOG_DIR}/*.checkpoint.0000000002.0000000003.parquet", 3, False),
    "before-hint": ("put", HINT, None, True),
    "v2-before-manifest": ("put_if_absent", f"{LOG_DIR}/0*.checkpoint.*.parquet", None, False),
    "v2-before-hint": ("put", HINT, None, True),
}
BIG_VERSIONS = 4
BIG_FILES = 4000  # per commit: a checkpoint of ~16k actions, a few MB


def _checkpoint_child(
    root: str, op: str, glob: str, parts: int | None, sidecar_rows: int, parked: Any, release: Any
) -> None:
    """Runs in the child: checkpoint through a store that parks at ``op`` on ``glob`` until killed."""
    v2.SIDECAR_ROWS = sidecar_rows

    def park(_seconds: float) -> None:
        parked.set()
        release.wait()  # never set: the parent kills us here

    store = FaultyStore(LocalLogStore(root), slow(op, glob, delay_s=1.0), sleep=park)  # type: ignore[arg-type]
    DeltaLog(store, root, auto_checkpoint=False).checkpoint(parts=parts)
    os._exit(3)  # unreachable when the kill lands; a distinct code if it does not


@pytest.fixture(scope="module")
def big_tables(tmp_path_factory: pytest.TempPathFactory) -> Callable[[bool], Path]:
    made: dict[bool, Path] = {}

    def get(v2: bool) -> Path:
        if v2 not in made:
            root = tmp_path_factory.mktemp("big") / "t"
            build(
                root, BIG_VERSIONS, files_per_commit=BIG_FILES, configuration=V2_CONF if v2 else {}, checkpoint_at=(2,)
            )
            made[v2] = root
        return made[v2]

    return get


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_sigkill_mid_checkpoint_leaves_all_or_nothing(
    tmp_path: Path, big_tables: Callable[[bool], Path], point: str
) -> None:
    op, glob, parts, visible = KILL_POINTS[point]
    v2 = point.startswith("v2")
    root = tmp_path / "t"
    shutil.copytree(big_tables(v2), root)
    expected = json_state(root)
    before = set(log_names(root))

    ctx = multiprocessing.get_context("spawn")
    parked, release = ctx.Event(), ctx.Event()
    child = ctx.Process(
        target=_checkpoint_child, args=(str(root), op, glob, parts, 5000 if v2 else 100_000, parked, release)
    )
    child.start()
    try:
        assert parked.wait(timeout=300), "the child never reached the kill point"
        os.kill(child.pid, signal.SIGKILL)  # type: ignore[arg-type]
    finally:
        child.join(timeout=120)
    assert child.exitcode == -signal.SIGKILL

    # no partial file under a final name: everything that parses as a log file is whole
    new = sorted(set(log_names(root)) - before)
    for name in new:
        p = parse(name)
        if p is None:
            assert name.startswith("."), f"unexpected file {name}"
            continue
        if p.is_checkpoint:
            assert pq.ParquetFile(root / LOG_DIR / name).metadata.num_rows > 0
    sidecar_dir = root / LOG_DIR / "_sidecars"
    for s in sidecar_dir.iterdir() if sidecar_dir.is_dir() else []:
        if not s.name.startswith("."):
            pq.read_table(s)  # whole, or it would raise
    if (root / HINT).exists():
        raw = orjson.loads((root / HINT).read_bytes())
        assert raw["checksum"] == hints.checksum(raw)

    listing = fresh(root).list_log(0)
    assert (BIG_VERSIONS in [c.version for c in complete_checkpoints(listing)]) is visible
    assert hint_version(root) == 2  # the kill always lands before the hint moves
    snap = fresh(root).snapshot()
    assert state(snap) == expected
    assert snap.segment.checkpoint is not None
    assert snap.segment.checkpoint.version == (BIG_VERSIONS if visible else 2)
    if visible:
        drop_commits_before(root, BIG_VERSIONS)
        assert state(fresh(root).snapshot()) == expected
