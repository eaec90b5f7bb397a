"""Log compaction files other engines wrote: checked on their own, used when they hold reconciled actions, read
around (their commits instead, with one warning naming the file) when they do not.

delta-kernel-rs wrote a table whose compaction files list the newest commit's actions first and keep the
superseded adds and removes of a file (and the range's ``cdc`` actions); read in file order they bring removed
files back, and a checkpoint written from that state makes every reader wrong. The table here has that shape,
built from deltalog's own commits (appends, a txn, deletion vectors, an overwrite, whole-file deletes and a
file re-added after its remove) with the files written by :mod:`tests.foreign_compaction`; every version must
read the same with and without them, and a checkpoint and an append on it must leave deltalake and duckdb
reading the right rows.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import orjson
import pyarrow as pa
import pytest

import deltalog
from deltalog import DeltaLog
from deltalog import actions as A
from tests import compaction_checker
from tests import foreign_compaction as fc
from tests.integration.dml_kit import deltalog_rows, enable_deletion_vectors, hand_commit
from tests.integration.restore_kit import duck_rows, lake_rows
from tests.integration.test_log_compaction import LOG, assert_peers_read, log_copy, outcome

WARNING = "is not used, its commits are read instead"


def kernel_rs_table(root: Path) -> DeltaLog:
    """10 versions: v0 the table created by a partitioned append, v1 a txn, v2 deletion vectors switched on, v3 an
    append, v4 and v5 two DV deletes on its file, v6 an overwrite of a partition, v7 a whole-partition delete, v8 a
    removed file added back, v9 another append."""
    log = DeltaLog.for_table(root, auto_checkpoint=False)
    deltalog.write(pa.table({"id": [1, 2, 3], "p": ["a", "b", "a"]}), log, partition_by="p")
    deltalog.write(pa.table({"id": [4], "p": ["b"]}), log, app_id="job", app_version=1)
    enable_deletion_vectors(log)
    deltalog.write(pa.table({"id": [5, 6, 7], "p": ["c", "c", "c"]}), log)
    log.delete("id = 6")
    log.delete("id = 5")  # the file's DV changes: a remove of the old (path, DV), an add of the new
    deltalog.write(pa.table({"id": [8], "p": ["a"]}), log, mode="overwrite", replace_where="p = 'a'")
    before = {r["path"]: r for r in log.snapshot().raw_files().to_pylist()}
    log.delete("p = 'b'")  # whole files removed
    back = next(r for path, r in before.items() if path.startswith("p=b/"))
    values = dict(back["partitionValues"])  # Arrow gives a map as pairs
    again = A.Add(back["path"], values, back["size"], back["modificationTime"], True, back["stats"])
    hand_commit(log, [again], "RESTORE")  # one removed file added back: a remove superseded by an add
    deltalog.write(pa.table({"id": [9], "p": ["d"]}), log, app_id="job", app_version=2)
    return log


def write_layout(root: Path, ranges: list[tuple[int, int]]) -> list[str]:
    """Kernel-rs-shaped compaction files of ``ranges`` beside the commits; the names of those that are not
    reconciled (a file key named twice in the range)."""
    unusable = []
    for start, end in ranges:
        commits = fc.commit_bytes(root, start, end)
        fc.write(root, start, end, fc.kernel_rs_shaped(commits))
        if fc.has_superseded(commits):
            unusable.append(fc.compaction_name(start, end))
    return unusable


def layouts(latest: int) -> dict[str, list[tuple[int, int]]]:
    return {
        "widest": [(0, latest - 1)],
        "pairs": [(v, v + 1) for v in range(1, latest - 1, 2)],  # (3, 4) and (7, 8) not reconciled
        "overlapping": [(1, latest - 1), (1, 4), (3, 7), (5, latest - 1), (6, 7)],  # (6, 7) reconciled
    }


def test_every_version_reads_the_same_with_kernel_rs_shaped_compaction_files(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    plain = tmp_path / "plain"
    latest = kernel_rs_table(plain).latest_version()
    assert latest == 9
    used = refused = 0
    for name, ranges in layouts(latest).items():
        root = log_copy(plain, tmp_path / name)
        unusable = write_layout(root, ranges)
        assert unusable, name  # every layout has files that are not reconciled
        assert name == "widest" or len(unusable) < len(ranges), (name, unusable)  # and most have some that are
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="deltalog"):
            for v in range(latest + 1):
                want, _ = outcome(plain, v)
                got, n = outcome(root, v)
                assert isinstance(want, dict) and got == want, f"{name}: version {v}"
                used += n
        warned = {f for f in unusable if f in caplog.text}
        refused += len(warned)
        assert warned, (name, caplog.text)
        assert not any(f in caplog.text for _, f in _usable(ranges, unusable)), caplog.text
    assert used >= 5 and refused >= 3, (used, refused)  # reconciled files are still read; the others never


def _usable(ranges: list[tuple[int, int]], unusable: list[str]) -> list[tuple[tuple[int, int], str]]:
    named = [((s, e), fc.compaction_name(s, e)) for s, e in ranges]
    return [(r, n) for r, n in named if n not in unusable]


def test_a_checkpoint_and_an_append_on_such_a_table_leave_every_reader_right(tmp_path: Path) -> None:
    root, plain = tmp_path / "t", tmp_path / "plain"
    log = kernel_rs_table(root)
    latest = log.latest_version()
    shutil.copytree(root, plain)
    assert write_layout(root, [(0, latest - 1), (1, latest - 1)])
    assert len(compaction_checker.check_table(root)[1]) >= 2  # the independent checker rejects them too
    expected = deltalog_rows(plain)
    assert lake_rows(plain) == duck_rows(plain) == expected  # the peers ignore compaction files

    fresh = DeltaLog.for_table(root)
    assert fresh.snapshot().num_files == DeltaLog.for_table(plain).snapshot().num_files
    fresh.checkpoint()
    deltalog.write(pa.table({"id": [100], "p": ["z"]}), DeltaLog.for_table(root))
    deltalog.write(pa.table({"id": [100], "p": ["z"]}), DeltaLog.for_table(plain))
    after = deltalog_rows(plain)
    assert len(after) == len(expected) + 1
    assert deltalog_rows(root) == lake_rows(root) == duck_rows(root) == after
    assert_peers_read(root)  # deltalake's live files are deltalog's, duckdb's rows deltalake's


def test_each_unusable_file_is_warned_about_once_naming_it_and_a_reconciled_one_is_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "t"
    log = kernel_rs_table(root)
    latest = log.latest_version()
    # a kernel-rs file of a range without superseded actions is reconciled (newest first is no harm): used
    assert not fc.has_superseded(fc.commit_bytes(root, 0, 1))
    assert write_layout(root, [(0, 1)]) == []
    fc.write(root, 2, 3, fc.not_reconciled_metadata(fc.commit_bytes(root, 2, 3)))
    fc.write(root, 4, 6, fc.torn([]))
    write_layout(root, [(7, latest - 1)])
    bad = [fc.compaction_name(2, 3), fc.compaction_name(4, 6), fc.compaction_name(7, latest - 1)]
    plain = log_copy(root, tmp_path / "plain")
    for name in [fc.compaction_name(0, 1), *bad]:
        (plain / LOG / name).unlink()

    reader = DeltaLog.for_table(root)
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        for _ in range(3):  # the same handle meets the same files on every load
            snap = reader.fresh_snapshot()
            assert [p.name for p in snap.segment.compactions] == [fc.compaction_name(0, 1)]
            assert snap.num_files == DeltaLog.for_table(plain).snapshot().num_files
        deltalog.write(pa.table({"id": [10], "p": ["e"]}), reader)  # a blind append's deferred load too
    for name in bad:
        lines = [r.getMessage() for r in caplog.records if name in r.getMessage()]
        assert len(lines) == 1 and WARNING in lines[0], (name, lines)
    assert "metaData" in caplog.text and "line" in caplog.text
    assert_peers_read(root)


def test_a_reconciled_file_with_an_action_replay_cannot_read_is_read_around(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The check is structural; an action that does not decode is found by replay, and the file is dropped the
    same way (before, this failed every load of the latest version although the commits were sound)."""
    root = tmp_path / "t"
    log = kernel_rs_table(root)
    want = outcome(root, log.latest_version())[0]
    bad = orjson.dumps({"add": {"path": "x.parquet", "partitionValues": {}, "size": "big", "dataChange": True}})
    name = fc.write(root, 0, 1, bad + b"\n").name
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        got, n = outcome(root, log.latest_version())
    assert got == want and n == 0
    assert name in caplog.text and WARNING in caplog.text
    assert_peers_read(root)
