"""Log compaction files on real tables: written by ``DeltaLog.compact_log`` (and the opt-in automatic mode), read
in place of their commits by later loads, deleted by cleanup, and invisible in every answer.

Delta Spark reads compaction files by default, delta-rs and duckdb ignore them: a wrong file would change what
Spark sees and nothing else. So the proof is differential (every version of every corpus table and of a table
with deletion vectors, txns, overwrites and property changes reads the same with and without them), every file
written is validated by the independent checker (``tests/compaction_checker.py``), and deltalake and duckdb
still read each table as before. A Spark read cannot run here (no Delta jars offline): the protocol and the
checker stand in for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import deltalog
from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.core.codec import encode_actions
from deltalog.core.paths import compaction_name
from deltalog.errors import (
    CorruptLogError,
    DeltaLogError,
    InvalidArgumentError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from deltalog.table import listing, load
from deltalog.table.snapshot import Snapshot
from tests import compaction_checker, protocol_checker
from tests.corpus import corpus_entries, table_path
from tests.foreign_compaction import commit_versions, contiguous_tail
from tests.integration.dml_kit import enable_deletion_vectors
from tests.peers import try_deltalake, try_duckdb
from tests.unit.cli_runs import as_json, fails, ok
from tests.unit.test_replay_differential import SETTINGS, logs

LOG = "_delta_log"


def _rows(table: pa.Table) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist())


def state_of(snap: Snapshot) -> dict[str, Any]:
    """Everything a snapshot is: files with every column and stats, tombstones, txns, domains, metadata,
    protocol, the version's commitInfo (its in-commit timestamp) and the row-tracking fields of the files."""
    return {
        "version": snap.version,
        "protocol": snap.protocol,
        "metadata": snap.metadata,
        "txns": snap.txns,
        "domains": snap.domain_metadata,
        "commit_info": snap.commit_info,
        "files": _rows(snap.raw_files(stats=True)),
        "tombstones": _rows(snap.tombstones()),
        "num_files": snap.num_files,
    }


def outcome(root: Path, version: int) -> tuple[dict[str, Any] | str, int]:
    """The state of ``version`` loaded fresh (or its error's class), and how many compaction files it read."""
    try:
        snap = DeltaLog.for_table(root).fresh_snapshot(version)
        return state_of(snap), len(snap.segment.compactions)
    except DeltaLogError as exc:
        return type(exc).__name__, 0


def assert_peers_read(root: Path) -> None:
    """deltalake and duckdb open the table (they ignore compaction files) and see deltalog's live files."""
    ours = {unquote(p) for p in DeltaLog.for_table(root).snapshot().files().column("path").to_pylist()}
    lake, duck = try_deltalake(root), try_duckdb(root)
    assert not isinstance(lake, str) and not isinstance(duck, str), (lake, duck)
    assert lake.files == ours and duck.files <= ours and lake.rows == duck.rows


def log_copy(src: Path, dest: Path) -> Path:
    """A writable copy of a table's ``_delta_log`` (replay never opens a data file)."""
    shutil.copytree(src / LOG, dest / LOG)
    for p in [dest, *dest.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return dest


def ranges_for(versions: list[int]) -> list[tuple[int, int]]:
    """Various ranges over a contiguous run of commits: the widest below the tip, pairs, halves, overlaps."""
    first, last = versions[0], versions[-1]
    out: list[tuple[int, int]] = []
    if last - 1 > first:
        out.append((first, last - 1))
    out += [(v, v + 1) for v in range(first, last, 3)]
    mid = (first + last) // 2
    if mid > first:
        out.append((first, mid))
    if last > mid + 1:
        out.append((mid + 1, last))
    if last - first >= 3:
        out.append((first + 1, last - 1))
    return list(dict.fromkeys(out))


def assert_same_with_and_without(plain: Path, compacted: Path, first: int) -> int:
    """Every version from ``first`` to the latest reads the same on both; how many loads read a compaction."""
    used = 0
    for v in range(first, commit_versions(plain)[-1] + 1):
        want, _ = outcome(plain, v)
        got, n = outcome(compacted, v)
        assert got == want, f"{compacted} version {v}"
        used += n
    return used


# ---------------------------------------------------------------------------------------------- the corpus


@pytest.mark.corpus
def test_every_corpus_table_reads_the_same_with_compaction_files(tmp_path: Path) -> None:
    entries = corpus_entries()
    assert entries, "no conformance corpus (DELTALOG_CORPUS)"
    checked: list[str] = []
    refused: dict[str, str] = {}
    single: list[str] = []
    used = files = 0
    for entry in entries:
        name = entry["name"]
        src = table_path(name)
        versions = contiguous_tail(commit_versions(src)) if (src / LOG).is_dir() else []
        if len(versions) < 2:
            single.append(name)  # no range of 2 commits to compact: nothing to compare
            continue
        copy = log_copy(src, tmp_path / name.replace("/", "__"))
        log = DeltaLog.for_table(copy)
        written = 0
        try:
            for start, end in ranges_for(versions):
                written += log.compact_log(start, end).written
        except UnsupportedFeatureError as exc:
            refused[name] = f"refused: {exc.feature}"
            continue
        except DeltaLogError as exc:
            # only a log deltalog cannot load at all is refused here; it must be refused as a plain load too
            assert outcome(src, versions[-1])[0] == type(exc).__name__ or isinstance(exc, CorruptLogError), name
            refused[name] = f"unreadable: {type(exc).__name__}"
            continue
        files += compaction_checker.assert_valid(copy)
        used += assert_same_with_and_without(src, copy, versions[0])
        checked.append(name)
    print(
        f"compaction differential: {len(checked)} corpus tables checked; {len(refused)} refused by deltalog: "
        f"{sorted(refused.items())}; {len(single)} have a single commit (no range to compact): {sorted(single)}"
    )
    assert len(checked) + len(refused) + len(single) == len(entries)
    assert len(refused) <= 3 and len(checked) >= 80, refused
    assert files >= 200 and used >= 150, (files, used)  # every table gets files, and loads read them


# ---------------------------------------------------------------------------------------------- generated logs


def test_generated_logs_read_the_same_at_every_version_with_compaction_files() -> None:
    """The parser differential's generated logs (path spellings, deletion vectors, txns, domains, protocol and
    metadata changes, partition shapes, odd JSON) as real tables: compaction files written by ``compact_log``
    for drawn ranges, then every version loaded fresh from disk with and without them."""
    written: list[int] = []

    @SETTINGS
    @given(logs().filter(lambda drawn: drawn[0].version == -1), st.data())
    def check(drawn: tuple[Any, list[Any], bool, int], data: st.DataObject) -> None:
        _, commits, _, _ = drawn
        with tempfile.TemporaryDirectory() as tmp:
            plain, compacted = Path(tmp) / "plain", Path(tmp) / "compacted"
            for root in (plain, compacted):
                (root / LOG).mkdir(parents=True)
                for c in commits:
                    (root / LOG / f"{c.version:020d}.json").write_bytes(c.data)
            last = len(commits) - 1
            log = DeltaLog.for_table(compacted)
            for _ in range(data.draw(st.integers(1, 2))):
                if last < 1:
                    break
                start = data.draw(st.integers(0, last - 1))
                end = data.draw(st.integers(start + 1, last))
                with contextlib.suppress(DeltaLogError):  # a log deltalog cannot load stays commit-only
                    written.append(log.compact_log(start, end).written)
            compaction_checker.assert_valid(compacted)
            for v in range(len(commits)):
                assert outcome(compacted, v)[0] == outcome(plain, v)[0], v

    check()
    assert sum(written) >= 50, sum(written)


# ---------------------------------------------------------------------------------------------- a table of ours


def busy_table(root: Path) -> DeltaLog:
    """Appends, a txn, an overwrite, a property change, deletion vectors, a DV delete: 10 versions."""
    log = DeltaLog.for_table(root, auto_checkpoint=False)
    deltalog.write(pa.table({"id": [1, 2, 3], "p": ["a", "b", "a"]}), log, partition_by="p")
    deltalog.write(pa.table({"id": [4], "p": ["b"]}), log, app_id="job", app_version=1)
    deltalog.write(pa.table({"id": [5, 6], "p": ["c", "c"]}), log, app_id="job", app_version=2)
    deltalog.write(pa.table({"id": [7], "p": ["a"]}), log, mode="overwrite", replace_where="p = 'a'")
    log.set_properties({"delta.logRetentionDuration": "interval 30 days"})
    enable_deletion_vectors(log)
    deltalog.write(pa.table({"id": [8, 9, 10], "p": ["d", "d", "d"]}), log)
    log.delete("id = 9")
    deltalog.write(pa.table({"id": [11], "p": ["b"]}), log, app_id="other", app_version=7)
    log.delete("p = 'c'")
    return log


def test_a_busy_table_reads_the_same_with_compaction_files_and_peers_see_no_change(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = busy_table(root)
    latest = log.latest_version()
    assert latest >= 9
    plain = tmp_path / "plain"
    shutil.copytree(root, plain)
    before = {"deltalake": try_deltalake(root), "duckdb": try_duckdb(root)}
    for start, end in ranges_for(list(range(latest + 1))):
        assert log.compact_log(start, end).written
    assert compaction_checker.assert_valid(root) >= 6
    protocol_checker.assert_valid(root)  # the suite's whole-log checker, its compaction rule included
    assert assert_same_with_and_without(plain, root, 0) >= latest - 1
    assert {"deltalake": try_deltalake(root), "duckdb": try_duckdb(root)} == before
    assert all(isinstance(v, object) and not isinstance(v, str) for v in before.values()), before
    # rows, through deltalog's own scan, with the compaction files in use
    assert (
        DeltaLog.for_table(root).snapshot().to_arrow().num_rows
        == DeltaLog.for_table(plain).snapshot().to_arrow().num_rows
    )


def test_the_default_range_and_an_identical_file_already_there(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = busy_table(root)
    latest = log.latest_version()
    first = log.compact_log()  # no checkpoint: from version 0 to the latest
    assert (first.start, first.end, first.written) == (0, latest, True)
    again = log.compact_log(0, latest)
    assert again.existed and again.identical and not again.written
    with pytest.raises(InvalidArgumentError, match=r"nothing to compact .*: no commit after the newest checkpoint"):
        log.compact_log()  # nothing after the compaction just written
    log.checkpoint(latest - 3)
    dry = log.compact_log(dry_run=True)
    assert (dry.start, dry.end, dry.written) == (latest - 2, latest, False)
    assert not (root / LOG / compaction_name(latest - 2, latest)).exists()
    compaction_checker.assert_valid(root)
    assert_peers_read(root)


def test_refused_ranges_are_typed_errors(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = busy_table(root)
    latest = log.latest_version()
    with pytest.raises(InvalidArgumentError):
        log.compact_log(3, 3)
    with pytest.raises(VersionNotFoundError):
        log.compact_log(2, latest + 2)
    (root / LOG / f"{4:020d}.json").rename(tmp_path / "moved")
    with pytest.raises(CorruptLogError, match=f"{4:020d}.json is missing") as err:
        log.compact_log(2, 6)
    assert err.value.path is not None and err.value.path.endswith(f"{4:020d}.json")
    (tmp_path / "moved").rename(root / LOG / f"{4:020d}.json")
    log.checkpoint(5)
    for v in range(5):
        (root / LOG / f"{v:020d}.json").unlink()  # as log cleanup leaves it
    with pytest.raises(VersionNotFoundError, match="deleted by log cleanup"):
        DeltaLog.for_table(root).compact_log(2, 7)
    assert not list((root / LOG).glob("*.compacted.json"))
    assert_peers_read(root)


def test_tables_with_features_deltalog_cannot_reconcile_are_refused_by_name(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    deltalog.write(pa.table({"id": [1]}), log)
    deltalog.write(pa.table({"id": [2]}), log)
    snap = log.snapshot()
    odd = A.Protocol(1, 7, None, ("appendOnly", "invariants", "madeUpFeature"))
    data = encode_actions([A.CommitInfo(timestamp=1, operation="UPGRADE"), odd, snap.metadata])
    upgraded = log.latest_version() + 1
    log.store.put_if_absent(f"{LOG}/{upgraded:020d}.json", data)
    with pytest.raises(UnsupportedFeatureError, match=r"cannot write a log compaction file.*madeUpFeature") as err:
        DeltaLog.for_table(root).compact_log(0, upgraded)
    assert err.value.feature == "madeUpFeature"
    assert not list((root / LOG).glob("*.compacted.json"))
    assert_peers_read(root)


# ---------------------------------------------------------------------------------------------- reading


def small_table(root: Path, commits: int) -> DeltaLog:
    log = DeltaLog.for_table(root, auto_checkpoint=False)
    for i in range(commits):
        deltalog.write(pa.table({"id": [i]}), log)
    return log


def test_a_corrupt_compaction_file_is_read_around_with_a_warning_naming_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A compaction file is only an accelerator: a torn one never makes the table unreadable while its commits
    are there (they always are when it is chosen); the load reads them and says which file it passed over."""
    root = tmp_path / "t"
    small_table(root, 6)
    at_3 = state_of(DeltaLog.for_table(root).snapshot(version=3))
    latest = state_of(DeltaLog.for_table(root).snapshot())
    peers = (try_deltalake(root), try_duckdb(root))
    name = compaction_name(1, 3)
    (root / LOG / name).write_bytes(b'{"add":{"path":"x.parquet"\n')
    with caplog.at_level("WARNING", logger="deltalog"):
        snap = DeltaLog.for_table(root).snapshot()
    assert state_of(snap) == latest and snap.segment.compactions == ()
    assert name in caplog.text and "malformed JSON" in caplog.text
    # time travel into its range, or to its end, reads the commits and is not affected
    assert state_of(DeltaLog.for_table(root).snapshot(version=3)) == at_3
    assert (try_deltalake(root), try_duckdb(root)) == peers  # they ignore compaction files, this one too


def test_empty_and_misnamed_compaction_files_are_ignored(tmp_path: Path) -> None:
    root = tmp_path / "t"
    small_table(root, 6)
    (root / LOG / compaction_name(1, 3)).write_bytes(b"")
    (root / LOG / f"{4:020d}.{2:020d}.compacted.json").write_bytes(b"garbage")
    (root / LOG / f"{1:019d}.{4:020d}.compacted.json").write_bytes(b"garbage")
    snap = DeltaLog.for_table(root).snapshot()
    assert snap.num_files == 6 and snap.segment.compactions == ()
    assert_peers_read(root)


def test_a_compaction_file_is_used_only_where_it_stands_for_commits_the_load_replays(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = small_table(root, 12)
    log.compact_log(2, 6)
    log.compact_log(7, 9)
    log.checkpoint(4)
    segs = {v: DeltaLog.for_table(root).fresh_snapshot(v).segment for v in range(12)}
    assert [p.name for p in segs[11].compactions] == [compaction_name(7, 9)]  # (2, 6) starts before checkpoint 4
    assert segs[3].compactions == () and segs[4].compactions == ()  # inside (2, 6), at the checkpoint
    assert [p.name for p in segs[10].compactions] == [compaction_name(7, 9)]
    assert segs[9].compactions == () and segs[8].compactions == ()  # its end, and inside it
    assert_peers_read(root)


def test_a_load_with_compaction_files_reads_fewer_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "t"
    log = small_table(root, 20)
    latest = log.latest_version()
    log.compact_log(0, latest - 1)
    from deltalog.storage.local import LocalLogStore as LocalStore

    read: list[str] = []
    original = LocalStore.read

    def counting(self: LocalStore, path: str) -> bytes:
        read.append(path.rsplit("/", 1)[-1])
        return original(self, path)

    monkeypatch.setattr(LocalStore, "read", counting)
    snap = DeltaLog.for_table(root).snapshot()
    assert snap.num_files == 20
    logs = [n for n in read if n != "_last_checkpoint"]
    assert logs == [compaction_name(0, latest - 1), f"{latest:020d}.json"], read  # not latest + 1 commits
    monkeypatch.undo()
    assert_peers_read(root)


def test_a_compaction_file_deleted_after_the_listing_reads_its_commits(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = small_table(root, 8)
    log.compact_log(1, 5)
    ctx = DeltaLog.for_table(root).context
    found = listing.find_segment(ctx, None)
    assert [p.name for p in found.segment.compactions] == [compaction_name(1, 5)]
    (root / LOG / compaction_name(1, 5)).unlink()  # as a concurrent log cleanup would
    snap = load.load(ctx, found.segment)
    assert snap.segment.compactions == () and state_of(snap) == state_of(DeltaLog.for_table(root).snapshot())
    assert_peers_read(root)


def test_a_deferred_load_takes_txns_and_metadata_from_the_compaction_file(tmp_path: Path) -> None:
    """A blind append's load (protocol, metadata, txns now, files on first use) reads the compaction too."""
    root = tmp_path / "t"
    log = small_table(root, 3)
    log.checkpoint()
    for i in range(5):
        deltalog.write(pa.table({"id": [i]}), log, app_id="job", app_version=i)
    log.set_properties({"delta.appendOnly": "true"})
    deltalog.write(pa.table({"id": [9]}), log)
    log.compact_log(4, log.latest_version() - 1)
    ctx = DeltaLog.for_table(root).context
    found = listing.find_segment(ctx, None)
    snap = load.load_state(ctx, found.segment, checkpoint_store=found.checkpoint_store)
    assert not snap.files_loaded and len(snap.segment.compactions) == 1
    assert snap.app_version("job") == 4 and snap.configuration["delta.appendOnly"] == "true"
    assert state_of(snap) == state_of(DeltaLog.for_table(root).fresh_snapshot())
    compaction_checker.assert_valid(root)
    assert_peers_read(root)


# ---------------------------------------------------------------------------------------------- automatic, cleanup


def test_the_automatic_mode_compacts_every_interval_commits_and_only_logs_failures(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root, log_compaction_interval=4)
    deltalog.write(pa.table({"id": [0]}), log)
    (root / LOG / compaction_name(4, 7)).write_bytes(b"{}\n")  # someone else's, different: left alone
    odd = log.store
    for i in range(1, 12):
        deltalog.write(pa.table({"id": [i]}), log)
    names = sorted(p.name for p in (root / LOG).glob("*.compacted.json"))
    assert names == [compaction_name(0, 3), compaction_name(4, 7), compaction_name(8, 11)]
    assert "exists with other content" in caplog.text
    assert odd.read(f"{LOG}/{compaction_name(4, 7)}") == b"{}\n"
    (root / LOG / compaction_name(4, 7)).unlink()
    compaction_checker.assert_valid(root)
    assert DeltaLog.for_table(root).snapshot().num_files == 12
    assert DeltaLog.for_table(root, log_compaction_interval=0).log_compaction_interval == 0
    assert_peers_read(root)


def test_cleanup_deletes_compaction_files_starting_at_or_below_the_boundary(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = small_table(root, 14)
    for start, end in ((1, 4), (5, 8), (8, 10), (9, 12)):
        log.compact_log(start, end)
    log.checkpoint(8)
    old = 1_000_000_000  # seconds: 2001, long expired
    for p in (root / LOG).iterdir():
        if p.name[:20] <= f"{8:020d}" and not p.name.startswith("_"):
            os.utime(p, (old, old))
    result = DeltaLog.for_table(root).cleanup(dry_run=False)
    gone = {Path(p).name for p in result.deleted}
    assert {compaction_name(1, 4), compaction_name(5, 8), compaction_name(8, 10)} <= gone
    assert (root / LOG / compaction_name(9, 12)).exists()
    snap = DeltaLog.for_table(root).snapshot()
    assert snap.num_files == 14 and [p.name for p in snap.segment.compactions] == [compaction_name(9, 12)]
    compaction_checker.assert_valid(root)
    assert not isinstance(try_deltalake(root), str) and not isinstance(try_duckdb(root), str)


# ---------------------------------------------------------------------------------------------- the CLI


def test_the_compact_log_verb(tmp_path: Path) -> None:
    root = tmp_path / "t"
    small_table(root, 5)
    text = ok("compact-log", str(root), "--from", "1", "--to", "3", "--dry-run")
    assert "Log compaction" in text and "dry run" in text and compaction_name(1, 3) in text
    assert not (root / LOG / compaction_name(1, 3)).exists()
    doc = as_json("compact-log", str(root), "--from", "1", "--to", "3")
    assert doc["written"] is True and doc["num_commits"] == 3 and doc["path"] == f"{LOG}/{compaction_name(1, 3)}"
    assert as_json("compact-log", str(root), "--from", "1", "--to", "3")["identical"] is True
    assert "at least 2 commits" in fails("compact-log", str(root), "--from", "4", "--to", "4")
    compaction_checker.assert_valid(root)
    assert_peers_read(root)
