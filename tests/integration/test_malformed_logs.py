"""Malformed logs and checkpoints: a typed error naming the file, or a bounded fallback to the same state.

Each case damages a copy of a corpus table one way. A damaged checkpoint with the commits still there must
read exactly as the pristine table does (the loader skips the checkpoint, says so, and marks the file list
as distrusted, which ``vacuum`` then refuses); with ``0.json`` gone nothing can stand in for it, and the
error must name the checkpoint and what is wrong with it. Never a silently different table, a raw Python
exception or a ``RecursionError``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from deltalog import DeltaLog
from deltalog.cli.main import cli
from deltalog.core import last_checkpoint as hints
from deltalog.core.paths import checkpoint_name, commit_name, multipart_name
from deltalog.errors import CheckpointError, CorruptLogError, DeltaLogError, StorageError
from deltalog.storage.faults import FaultRule, FaultyStore, transient
from deltalog.storage.local import LocalLogStore
from tests.peers import try_deltalake, try_duckdb

from .logdamage import (
    LOG,
    as_type,
    checkpoint_files,
    copy_table,
    edit_lines,
    fresh,
    log_file,
    null_first_set,
    replace_with,
    rewrite_column,
    rewrite_field,
    state,
    within,
)

pytestmark = pytest.mark.corpus  # every case damages a copy of a corpus table: none without a corpus

BASIC = "delta/basic-with-checkpoint"  # versions 0-14, checkpoint at 10, every commit kept, 30 real data files
CP10 = checkpoint_name(10)
PARTITIONED = "dat/basic_partitioned"  # versions 0-1, partitioned by letter, no checkpoint
MULTIPART = "delta/multi-part-checkpoint"  # versions 0-1, a 2-part checkpoint at 1, real data files


def pristine(tmp_path: Path, name: str) -> Any:
    return state(fresh(copy_table(name, tmp_path / "pristine")).snapshot())


def skipped(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("skipping unreadable checkpoint")]


def assert_falls_back(root: Path, expected: Any, caplog: pytest.LogCaptureFixture, name: str = CP10) -> None:
    """The damaged checkpoint is skipped with one warning naming it; the state is the pristine one."""
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        snap = fresh(root).snapshot()
    assert state(snap) == expected
    warnings = skipped(caplog)
    assert len(warnings) == 1 and name in warnings[0], warnings
    assert snap.distrusted_checkpoints == (name,)


def assert_names(root: Path, *words: str) -> CorruptLogError:
    """Without ``0.json`` nothing can rebuild the table: the error names the file and the words given."""
    log_file(root, commit_name(0)).unlink()
    with pytest.raises(CorruptLogError) as info:
        fresh(root).snapshot()
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    return info.value


def damaged_checkpoint(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: Callable[[Path], None], *words: str
) -> None:
    """Damage checkpoint 10 of a copy of BASIC: it falls back to the same state, and without ``0.json`` the
    error names the checkpoint and ``words``."""
    expected = pristine(tmp_path, BASIC)
    root = copy_table(BASIC, tmp_path / "t")
    damage(log_file(root, CP10))
    assert_falls_back(root, expected, caplog)
    assert_names(root, CP10, *words)


# ---------------------------------------------------------------------------------------------- checkpoint columns


def _path_as_numbers(child: pa.Array) -> pa.Array:
    return pa.array([None if v is None else i for i, v in enumerate(child.to_pylist())], pa.int64())


RETYPED: dict[str, tuple[str, Callable[[pa.Array], pa.Array]]] = {
    "size-as-string": ("size", as_type(pa.string())),
    "size-as-double": ("size", as_type(pa.float64())),
    "modificationTime-as-string": ("modificationTime", as_type(pa.string())),
    "path-as-integer": ("path", _path_as_numbers),
    "dataChange-as-integer": ("dataChange", as_type(pa.int8())),
    "partitionValues-as-string": ("partitionValues", lambda c: pa.array(["{}"] * len(c), pa.string())),
    "stats-as-integer": ("stats", as_type(pa.int64())),
}


@pytest.mark.parametrize("case", sorted(RETYPED))
def test_checkpoint_add_column_of_the_wrong_type(tmp_path: Path, caplog: pytest.LogCaptureFixture, case: str) -> None:
    field, fn = RETYPED[case]
    damaged_checkpoint(tmp_path, caplog, lambda cp: rewrite_field(cp, "add", field, fn), f"add.{field}")


def test_add_that_is_not_a_struct(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    damage = lambda cp: rewrite_column(cp, "add", lambda c: pc.struct_field(c, "path"))  # noqa: E731
    damaged_checkpoint(tmp_path, caplog, damage, "add", "not a struct")


@pytest.mark.parametrize("field", ["path", "partitionValues", "size", "modificationTime", "dataChange"])
def test_checkpoint_add_without_a_required_field(tmp_path: Path, caplog: pytest.LogCaptureFixture, field: str) -> None:
    damaged_checkpoint(tmp_path, caplog, lambda cp: rewrite_field(cp, "add", field, lambda c: None), repr(field))


@pytest.mark.parametrize("field", ["partitionValues", "size", "modificationTime"])
def test_checkpoint_add_row_with_a_required_field_null(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, field: str
) -> None:
    damaged_checkpoint(tmp_path, caplog, lambda cp: rewrite_field(cp, "add", field, null_first_set), f"add.{field}")


def test_checkpoint_without_an_add_column_holds_no_adds(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """No damage a reader can see: PROTOCOL.md ("Checkpoints") reads a missing action column as null, so the
    checkpoint says version 10 had no live files (a lean checkpoint of an emptied table is written so). deltalog
    reads what deltalake and duckdb read, with no fallback and no warning; only a column present with the wrong
    type is damage (above). tests/integration/test_lean_checkpoints.py has lean checkpoints that are right."""
    root = copy_table(BASIC, tmp_path / "t")
    rewrite_column(log_file(root, CP10), "add", lambda c: None)
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        snap = fresh(root).snapshot()
    assert not skipped(caplog) and snap.distrusted_checkpoints == ()
    assert fresh(root).snapshot(version=10).num_files == 0
    ours = {unquote(p) for p in snap.files().column("path").to_pylist()}
    lake, duck = try_deltalake(root, rows=False), try_duckdb(root)
    assert not isinstance(lake, str) and not isinstance(duck, str), (lake, duck)
    assert lake.version == snap.version and lake.files == duck.files == ours and 0 < len(ours) < 30


def test_checkpoint_partition_columns_not_a_list(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    damage = lambda cp: rewrite_field(cp, "metaData", "partitionColumns", as_type(pa.string()))  # noqa: E731
    damaged_checkpoint(tmp_path, caplog, damage, "metaData.partitionColumns")


def test_checkpoint_schema_field_without_a_type(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    def untyped(child: pa.Array) -> pa.Array:
        out = []
        for text in child.to_pylist():
            if text is not None:
                schema = orjson.loads(text)
                del schema["fields"][0]["type"]
                text = orjson.dumps(schema).decode()
            out.append(text)
        return pa.array(out, pa.string())

    damaged_checkpoint(tmp_path, caplog, lambda cp: rewrite_field(cp, "metaData", "schemaString", untyped), "no type")


# ---------------------------------------------------------------------------------------------- JSON lines


def _metadata_edit(fn: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    def edit(obj: dict[str, Any]) -> dict[str, Any] | None:
        if "metaData" not in obj:
            return None
        fn(obj["metaData"])
        return obj

    return edit


def test_partition_columns_not_a_list_in_a_commit(tmp_path: Path) -> None:
    """``"letter"`` read as a sequence would be five partition columns named by its letters."""
    root = copy_table(PARTITIONED, tmp_path / "t")
    edit_lines(log_file(root, commit_name(0)), _metadata_edit(lambda m: m.update(partitionColumns="letter")))
    with pytest.raises(CorruptLogError) as info:
        fresh(root).snapshot()
    assert commit_name(0) in str(info.value) and "partitionColumns" in str(info.value)
    assert info.value.line == 2


def test_schema_field_without_a_type_in_a_commit(tmp_path: Path) -> None:
    def untype(m: dict[str, Any]) -> None:
        schema = orjson.loads(m["schemaString"])
        del schema["fields"][1]["type"]
        m["schemaString"] = orjson.dumps(schema).decode()

    root = copy_table(PARTITIONED, tmp_path / "t")
    edit_lines(log_file(root, commit_name(0)), _metadata_edit(untype))
    with pytest.raises(CorruptLogError) as info:
        fresh(root).snapshot()
    assert commit_name(0) in str(info.value) and "'number' has no type" in str(info.value)


@pytest.mark.parametrize("size", ["small", "bulk"])
def test_bare_null_line(tmp_path: Path, size: str) -> None:
    """``null`` is not a blank line: the exact and the bulk (Arrow) replay both refuse it by line."""
    root = copy_table(PARTITIONED, tmp_path / "t")
    path = log_file(root, commit_name(1))
    lines = path.read_bytes().rstrip(b"\n").split(b"\n")
    if size == "bulk":  # past parse_bulk.MIN_BYTES, so the Arrow JSON reader sees it first
        add = next(orjson.loads(line) for line in lines if b'"add"' in line)
        lines += [orjson.dumps({"add": {**add["add"], "path": f"pad-{i:06d}.parquet"}}) for i in range(6000)]
    lines.insert(1, b"null")
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(CorruptLogError) as info:
        fresh(root).snapshot()
    assert info.value.line == 2 and commit_name(1) in str(info.value) and "null" in str(info.value)


@pytest.mark.parametrize("field", ["size", "partitionValues", "modificationTime", "dataChange"])
def test_commit_add_without_a_required_field(tmp_path: Path, field: str) -> None:
    root = copy_table(PARTITIONED, tmp_path / "t")
    path = log_file(root, commit_name(1))
    seen = [0]

    def drop(obj: dict[str, Any]) -> dict[str, Any] | None:
        if "add" not in obj or seen[0]:
            return None
        seen[0] = 1
        del obj["add"][field]
        return obj

    edit_lines(path, drop)
    line = next(i for i, raw in enumerate(path.read_bytes().split(b"\n"), 1) if b'"add"' in raw)
    with pytest.raises(CorruptLogError) as info:
        fresh(root).snapshot()
    assert commit_name(1) in str(info.value) and repr(field) in str(info.value)
    assert info.value.line == line


# ---------------------------------------------------------------------------------------------- many bad checkpoints


def _checkpointed(root: Path, versions: int, every: int) -> DeltaLog:
    """A copy of BASIC extended by ``versions`` commits, with a classic checkpoint every ``every`` of them."""
    log = fresh(root)
    for v in range(versions):
        log.start_transaction().commit([])
        if (v + 1) % every == 0:
            log.checkpoint()
    return log


def _tear(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_many_torn_checkpoints_fall_back_once_in_a_bounded_number_of_requests(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = copy_table(BASIC, tmp_path / "t")
    _checkpointed(root, 40, 2)
    expected = state(fresh(root).snapshot())
    torn = checkpoint_files(root)
    assert len(torn) == 21
    for p in torn:
        _tear(p)
    store = FaultyStore(LocalLogStore(str(root)))
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        snap = DeltaLog(store, str(root), auto_checkpoint=False).snapshot()
    assert state(snap) == expected and snap.segment.checkpoint is None
    assert len(skipped(caplog)) == 21 and len(snap.distrusted_checkpoints) == 21
    listings = store.calls_to("list_from")
    reads = [c.path for c in store.calls_to("read") if c.path.endswith(".json")]
    assert len(listings) <= 3, [c.path for c in listings]
    assert len(reads) == len(set(reads)) == 55  # every commit read once, however many attempts it took
    assert len(store.calls_to("open")) == 21  # each torn checkpoint opened once


@pytest.mark.parametrize("seed", range(6))
def test_torn_checkpoints_under_store_faults_end_in_a_few_requests(tmp_path: Path, seed: int) -> None:
    """Transient store failures while falling back past torn checkpoints: the right table or a retryable
    StorageError, a handful of requests either way (it once re-listed until RecursionError), and a flaky
    read never makes a sound checkpoint look damaged."""
    root = copy_table(BASIC, tmp_path / "t")
    _checkpointed(root, 6, 2)
    expected = state(fresh(root).snapshot())
    for p in checkpoint_files(root)[1:]:
        _tear(p)  # the oldest, 10, stays sound
    rule = FaultRule(op=("list_from", "read", "open"), probability=0.05, error=transient())
    store = FaultyStore(LocalLogStore(str(root)), rule, seed=seed)
    try:
        snap = DeltaLog(store, str(root), auto_checkpoint=False).snapshot()
    except StorageError as exc:
        assert exc.retryable
        snap = None
    assert len(store.calls_to("list_from")) <= 3 and len(store.calls_to("open")) <= 4
    assert len(store.calls_to("read")) <= 1 + 21  # the hint and commits 0-20, at most once each
    if snap is not None:
        store.disarm()
        assert state(snap) == expected and snap.segment.checkpoint.version == 10  # type: ignore[union-attr]
        assert len(snap.distrusted_checkpoints) == 3


def test_two_torn_checkpoints_without_the_commits_name_both(tmp_path: Path) -> None:
    root = copy_table(BASIC, tmp_path / "t")
    _checkpointed(root, 4, 2)
    for p in checkpoint_files(root):
        _tear(p)
    log_file(root, commit_name(0)).unlink()
    with pytest.raises(CorruptLogError) as info:
        fresh(root).snapshot()
    text = str(info.value)
    assert all(p.name in text for p in checkpoint_files(root)), text


# ---------------------------------------------------------------------------------------------- part counts


def test_mismatched_part_counts(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A stray part of another part count is no checkpoint; a torn complete set gives way to a sound one."""
    expected = pristine(tmp_path, MULTIPART)
    root = copy_table(MULTIPART, tmp_path / "t")
    part1 = log_file(root, multipart_name(1, 1, 2))
    log_file(root, multipart_name(1, 2, 3)).write_bytes(part1.read_bytes())  # a lone part of a 3-part set
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        snap = fresh(root).snapshot()
    assert state(snap) == expected and snap.segment.checkpoint is not None
    assert len(snap.segment.checkpoint.files) == 2 and not skipped(caplog)
    # now a complete 3-part set whose last part is torn: readers prefer it, then fall back to the 2 parts
    log_file(root, multipart_name(1, 1, 3)).write_bytes(part1.read_bytes())
    log_file(root, multipart_name(1, 3, 3)).write_bytes(part1.read_bytes()[:100])
    assert_falls_back(root, expected, caplog, name=multipart_name(1, 1, 3))
    assert len(fresh(root).snapshot().segment.checkpoint.files) == 2  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------------- writing over


def _peers_agree(root: Path, files: set[str], times: int = 4) -> None:
    for _ in range(times):  # duckdb picks among checkpoints on each fresh read: ask it more than once
        lake, duck = try_deltalake(root), try_duckdb(root)
        assert not isinstance(lake, str) and not isinstance(duck, str), (lake, duck)
        assert lake.files == duck.files == files


def test_checkpoint_over_an_existing_multipart_checkpoint_leaves_it_alone(tmp_path: Path) -> None:
    root = copy_table(MULTIPART, tmp_path / "t")
    before = sorted(p.name for p in (root / LOG).iterdir())
    hint = log_file(root, "_last_checkpoint").read_bytes()
    log = fresh(root)
    for parts in (None, 3):
        result = log.checkpoint(parts=parts)
        assert result.already_existed and result.kind == "multipart" and len(result.files) == 2
        assert result.num_add_files == 10
    assert sorted(p.name for p in (root / LOG).iterdir()) == before
    assert log_file(root, "_last_checkpoint").read_bytes() == hint
    _peers_agree(root, set(fresh(root).snapshot().files().column("path").to_pylist()))


def test_existing_checkpoint_found_without_a_hint_gets_one_describing_it(tmp_path: Path) -> None:
    root = copy_table(MULTIPART, tmp_path / "t")
    log_file(root, "_last_checkpoint").unlink()
    result = fresh(root).checkpoint()
    assert result.already_existed and result.kind == "multipart"
    hint = hints.parse(log_file(root, "_last_checkpoint").read_bytes())
    assert (hint.version, hint.parts, hint.size, hint.num_of_add_files) == (1, 2, 12, 10)
    _peers_agree(root, set(fresh(root).snapshot().files().column("path").to_pylist()))


def test_hint_naming_the_version_with_the_wrong_part_count_is_corrected(tmp_path: Path) -> None:
    root = copy_table(MULTIPART, tmp_path / "t")
    log_file(root, "_last_checkpoint").write_bytes(orjson.dumps({"version": 1, "size": 12, "parts": 3}))
    assert fresh(root).checkpoint().already_existed
    hint = hints.parse(log_file(root, "_last_checkpoint").read_bytes())
    assert (hint.version, hint.parts) == (1, 2)
    _peers_agree(root, set(fresh(root).snapshot().files().column("path").to_pylist()), times=1)


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_checkpoint_with_a_hint_that_is_not_a_file(tmp_path: Path, caplog: pytest.LogCaptureFixture, kind: str) -> None:
    """The checkpoint is written and complete; the hint cannot be, and readers find the checkpoint by listing."""
    root = copy_table(BASIC, tmp_path / "t")
    replace_with(log_file(root, "_last_checkpoint"), kind)
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        result = within(20, lambda: fresh(root).checkpoint())
    assert not result.already_existed and result.version == 14
    assert fresh(root).snapshot().segment.checkpoint.version == 14  # type: ignore[union-attr]
    assert any("_last_checkpoint" in r.getMessage() for r in caplog.records)


def test_checkpoint_over_an_existing_classic_checkpoint_leaves_it_alone(tmp_path: Path) -> None:
    root = copy_table(BASIC, tmp_path / "t")
    before = sorted(p.name for p in (root / LOG).iterdir())
    result = fresh(root).checkpoint(version=10, parts=3)
    assert result.already_existed and result.kind == "classic" and result.files == (f"{LOG}/{CP10}",)
    assert sorted(p.name for p in (root / LOG).iterdir()) == before


@pytest.mark.parametrize("name", ["delta-kernel-rs/v2-checkpoints-json-with-sidecars", "delta/v2-checkpoint-json"])
def test_checkpoint_over_an_existing_v2_checkpoint_leaves_it_alone(tmp_path: Path, name: str) -> None:
    root = copy_table(name, tmp_path / "t")
    log = fresh(root)
    version = log.snapshot().segment.checkpoint.version  # type: ignore[union-attr]
    before = sorted(p.name for p in (root / LOG).iterdir())
    result = log.checkpoint(version=version)
    assert result.already_existed and result.kind == "v2"
    assert sorted(p.name for p in (root / LOG).iterdir()) == before


def test_checkpoint_beside_a_damaged_checkpoint_of_another_layout_is_refused(tmp_path: Path) -> None:
    root = copy_table(MULTIPART, tmp_path / "t")
    _tear(log_file(root, multipart_name(1, 2, 2)))
    before = sorted(p.name for p in (root / LOG).iterdir())
    with pytest.raises(CheckpointError) as info:
        fresh(root).checkpoint()
    assert multipart_name(1, 1, 2) in str(info.value)
    assert sorted(p.name for p in (root / LOG).iterdir()) == before  # nothing written beside it


def test_existing_checkpoint_describing_another_table_is_refused(tmp_path: Path) -> None:
    """A readable checkpoint under the version's name that holds fewer files than the log is not passed off
    as this version's checkpoint: a handle whose snapshot came from the commits says what is wrong with it."""
    other = copy_table(BASIC, tmp_path / "other")
    fresh(other).checkpoint()  # version 14
    damaged = log_file(other, checkpoint_name(14))
    kept = _drop_one_add(damaged)
    root = copy_table(BASIC, tmp_path / "t")
    log = fresh(root)
    assert log.snapshot().num_files == kept + 1  # cached: checkpoint 10 and commits 11-14
    log_file(root, checkpoint_name(14)).write_bytes(damaged.read_bytes())
    with pytest.raises(CheckpointError) as info:
        log.checkpoint()
    assert checkpoint_name(14) in str(info.value) and f"holds {kept} live files" in str(info.value)


def _drop_one_add(path: Path) -> int:
    """Drop the first add row of a checkpoint; the number of adds left."""
    table = pq.read_table(path)
    first = pc.is_valid(table.column("add")).to_pylist().index(True)
    table = table.filter(pa.array([i != first for i in range(table.num_rows)]))
    pq.write_table(table, path)
    return int(pc.sum(pc.is_valid(table.column("add"))).as_py())


# ---------------------------------------------------------------------------------------------- vacuum


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
def test_vacuum_refuses_a_file_list_rebuilt_past_a_damaged_checkpoint(tmp_path: Path, dry_run: bool) -> None:
    root = copy_table(BASIC, tmp_path / "t")
    rewrite_field(log_file(root, CP10), "add", "size", as_type(pa.string()))
    data_before = sorted(p.name for p in root.iterdir())
    log = fresh(root)
    with pytest.raises(CorruptLogError) as info:
        log.vacuum(dry_run=dry_run, force=True, retention=0)
    assert CP10 in str(info.value) and info.value.path == f"{LOG}/{CP10}"
    # a handle that kept committing (its cached snapshot advanced past the fallback) refuses as well
    log.start_transaction().commit([])
    with pytest.raises(CorruptLogError):
        log.vacuum(dry_run=True)
    with pytest.raises(CorruptLogError):
        fresh(root).vacuum(dry_run=True)  # a fresh load, deferred file list included
    assert sorted(p.name for p in root.iterdir()) == data_before
    # a checkpoint of the latest version, written once the table reads as expected, lifts the refusal
    fresh(root).checkpoint()
    live = set(fresh(root).snapshot().files().column("path").to_pylist())
    assert not live & set(fresh(root).vacuum(dry_run=True).paths)


def test_vacuum_on_a_sound_table_is_not_refused(tmp_path: Path) -> None:
    root = copy_table(BASIC, tmp_path / "t")
    assert fresh(root).snapshot().distrusted_checkpoints == ()
    assert fresh(root).vacuum(dry_run=True).version == 14


# ---------------------------------------------------------------------------------------------- non-files


KINDS = ["directory", "fifo", "symlink-loop"]


@pytest.mark.parametrize("kind", KINDS)
def test_last_checkpoint_that_is_not_a_file_is_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    expected = pristine(tmp_path, BASIC)
    root = copy_table(BASIC, tmp_path / "t")
    replace_with(log_file(root, "_last_checkpoint"), kind)
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        snap = within(20, lambda: fresh(root).snapshot())
    assert state(snap) == expected
    assert any("_last_checkpoint" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("kind", KINDS)
def test_sidecar_that_is_not_a_file_falls_back(tmp_path: Path, caplog: pytest.LogCaptureFixture, kind: str) -> None:
    name = "delta-kernel-rs/v2-checkpoints-json-with-sidecars"
    expected = pristine(tmp_path, name)
    root = copy_table(name, tmp_path / "t")
    newest = fresh(root).snapshot().segment.checkpoint
    assert newest is not None
    sidecars = sorted((root / LOG / "_sidecars").glob(f"{newest.version:020d}.*"))
    replace_with(sidecars[0], kind)
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        snap = within(20, lambda: fresh(root).snapshot())
    assert state(snap) == expected
    assert snap.distrusted_checkpoints == (newest.files[0].name,)


@pytest.mark.parametrize("kind", KINDS)
def test_commit_that_is_not_a_file_is_named(tmp_path: Path, kind: str) -> None:
    root = copy_table(BASIC, tmp_path / "t")
    replace_with(log_file(root, commit_name(12)), kind)
    with pytest.raises(DeltaLogError) as info:
        within(20, lambda: fresh(root).snapshot())
    assert commit_name(12) in str(info.value)


# ---------------------------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize("verb", ["files", "describe", "snapshot"])
def test_cli_prints_one_line_for_a_malformed_checkpoint(tmp_path: Path, verb: str) -> None:
    root = copy_table(BASIC, tmp_path / "t")
    rewrite_column(log_file(root, CP10), "add", lambda c: pc.struct_field(c, "path"))
    log_file(root, commit_name(0)).unlink()
    result = CliRunner().invoke(cli, [verb, str(root)])
    assert result.exit_code == 1 and result.stdout == "" and "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and CP10 in lines[0], result.stderr
