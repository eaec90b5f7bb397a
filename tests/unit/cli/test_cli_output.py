"""Human output that scales and never cuts a value: every verb at terminal widths 60 and 120 and piped.

What a user copies out of the output (a timestamp into ``--timestamp``, a path into a shell, a txn id into a
search) must appear whole: timestamps and ids on one line, paths and locations either on one line or folded
(their pieces continuing at one column), never ellipsized. The table is built with deltalog's API over real
parquet files, with a partition value long enough that no 60-column terminal can hold a path.
"""

from __future__ import annotations

import csv
import io
import os
import re
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.cli import layout, render
from tests.peers import deltalake_view, duckdb_view
from tests.unit.cli_terminal import Run, in_terminal, on_one_line, piped, shows_whole

REGION = "north-east-" * 5 + "coast"  # 55 characters: its paths cannot fit one 60-column line
LONG_PARAMETER = "a predicate long enough to need folding on any terminal narrower than its own width"
DAY_MS = 86_400_000
WIDTHS = [60, 120, None]  # None: piped
ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"  # a whole instant, milliseconds and zone included


def _write_file(root: Path, region: str, ids: list[int]) -> A.Add:
    rel = f"region={region}/part-{uuid.uuid4()}.c000.snappy.parquet"
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), root / rel)
    stats = {"numRecords": len(ids), "minValues": {"id": min(ids)}, "maxValues": {"id": max(ids)}}
    return A.Add(
        path=rel,
        partition_values={"region": region},
        size=(root / rel).stat().st_size,
        modification_time=int((root / rel).stat().st_mtime * 1000),
        data_change=True,
        stats=orjson.dumps({**stats, "nullCount": {"id": 0}}).decode(),
    )


def _age(path: Path, days: int) -> None:
    t = time.time() - days * DAY_MS / 1000
    os.utime(path, (t, t))


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    """Versions 0-3 (the first three 40 days old behind a checkpoint at 2), and old unreferenced files."""
    root = tmp_path / "sales"
    log = DeltaLog.for_table(root, auto_checkpoint=False)
    log.create(pa.schema([("id", pa.int64()), ("region", pa.string())]), partition_columns=["region"])
    for n, region in enumerate([REGION, "eu", REGION]):
        params = {"mode": "Append", "predicate": LONG_PARAMETER}
        log.start_transaction().commit(
            [_write_file(root, region, [n, n + 1])], operation="WRITE", operation_parameters=params
        )
        if n == 1:
            log.checkpoint()
    for v in range(3):
        _age(root / "_delta_log" / f"{v:020d}.json", 40 - v)
    orphans = ["part-orphan.snappy.parquet", f"deletion_vector_{uuid.uuid4()}.bin", "_change_data/cdc-00000.parquet"]
    for rel in orphans:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"orphan")
        _age(root / rel, 30)
    return root


def run(args: list[Any], width: int | None) -> Run:
    result = piped(args) if width is None else in_terminal(args, width)
    assert result.code == 0, (result.out, result.err)
    assert result.err == "", result.err
    assert "…" not in result.out and "..." not in result.out
    if width is not None:
        assert all(len(line) <= width for line in result.out.splitlines()), result.out
    return result


def doc(*args: Any) -> Any:
    result = piped([*args, "--json"])
    assert result.code == 0, result.err
    return orjson.loads(result.out)


def assert_shows(out: str, whole: list[str], one_line: list[str]) -> None:
    for value in whole:
        assert shows_whole(out, value), f"{value!r} is cut in:\n{out}"
    for value in one_line:
        assert on_one_line(out, value), f"{value!r} is not on one line in:\n{out}"


def assert_peers_agree(root: Path) -> None:
    live = set(DeltaLog.for_table(root).snapshot().files().column("path").to_pylist())
    assert deltalake_view(root).files == live
    assert duckdb_view(root).files == live


# ---------------------------------------------------------------------------------------------- read verbs


@pytest.mark.parametrize("width", WIDTHS)
def test_history_timestamps_are_whole_at_every_width(lake: Path, width: int | None) -> None:
    commits = doc("history", lake)["commits"]
    out = run(["history", lake], width).out
    assert_shows(out, [str(lake)], [c["timestamp"] for c in commits])
    assert set(LONG_PARAMETER.split()) <= set(re.split(r"[\s,=]+", out))  # folded at blanks, every word kept
    # what history shows is what --timestamp takes: the copied value selects that very version
    for c in commits:
        assert doc("snapshot", lake, "--timestamp", c["timestamp"])["version"] == c["version"]


@pytest.mark.parametrize("width", WIDTHS)
def test_files_paths_fold_and_times_stay_whole(lake: Path, width: int | None) -> None:
    files = doc("files", lake)["files"]
    out = run(["files", lake], width).out
    assert_shows(out, [f["path"] for f in files], [f["modification_time"] for f in files])
    assert out.splitlines()[-1] == f"3 files, {sum(f['size'] for f in files):,} bytes"


@pytest.mark.parametrize("width", WIDTHS)
def test_describe_and_snapshot(lake: Path, width: int | None) -> None:
    described = doc("describe", lake)
    out = run(["describe", lake], width).out
    assert_shows(out, [str(lake)], [described["metadata"]["id"], described["metadata"]["created_time"]])
    snap = doc("snapshot", lake)
    out = run(["snapshot", lake], width).out
    assert_shows(out, [str(lake)], [snap["timestamp"]])


@pytest.mark.parametrize("width", WIDTHS)
def test_vacuum_dry_run_lists_deletion_vectors_and_change_data(lake: Path, width: int | None) -> None:
    planned = doc("vacuum", lake)
    paths = sorted(f["path"] for f in planned["files"])
    assert [render.deletion_kind(p) for p in paths] == ["change data", "deletion vector", "data"]
    out = run(["vacuum", lake], width).out
    assert_shows(out, paths, [])
    assert re.search(r"^cutoff +" + ISO + "$", out, re.M)
    assert "1 change data, 1 data, 1 deletion vector" in " ".join(out.split())


@pytest.mark.parametrize("width", WIDTHS)
def test_cleanup_dry_run(lake: Path, width: int | None) -> None:
    planned = doc("cleanup", lake)
    assert [f["version"] for f in planned["files"]] == [0, 1]
    out = run(["cleanup", lake], width).out
    assert_shows(out, [f["path"] for f in planned["files"]], [planned["cutoff"]])  # midnight: the same all day


@pytest.mark.parametrize("width", WIDTHS)
def test_intents(lake: Path, width: int | None) -> None:
    txn = DeltaLog.for_table(lake).start_transaction()
    txn.declare_intent(where={"region": REGION}, heartbeat_s=30)
    try:
        (intent,) = doc("intents", lake)["intents"]
        out = run(["intents", lake], width).out
        assert_shows(out, [intent["predicate"]], [intent["txn_id"]])
    finally:
        txn.abort()


@pytest.mark.parametrize("width", WIDTHS)
def test_compact_and_doctor(lake: Path, width: int | None) -> None:
    out = run(["checkpoint-job", lake, "--min-commits", "100"], width).out
    assert_shows(out, [str(lake)], [])
    result = piped(["doctor", lake, "--rounds", "1", "--threads", "2"]) if width is None else None
    out = result.out if result else in_terminal(["doctor", lake, "--rounds", "1", "--threads", "2"], width).out
    assert_shows(out, [str(lake)], [])


# ---------------------------------------------------------------------------------------------- writing verbs


@pytest.mark.parametrize("width", WIDTHS)
def test_commit_checkpoint_restore(lake: Path, width: int | None, tmp_path: Path) -> None:
    actions = tmp_path / "actions.jsonl"
    add = _write_file(lake, "eu", [7])
    body = {"path": add.path, "partitionValues": {"region": "eu"}, "size": add.size}
    actions.write_bytes(orjson.dumps({"add": {**body, "modificationTime": add.modification_time, "dataChange": True}}))
    out = run(["commit", lake, "--actions", actions, "--operation", "WRITE"], width).out
    log = DeltaLog.for_table(lake)
    assert_shows(out, [str(lake)], [log.snapshot().commit_info["txnId"]])
    assert_peers_agree(lake)

    out = run(["checkpoint", lake], width).out
    assert_shows(out, ["_delta_log/00000000000000000004.checkpoint.parquet"], [])
    assert_peers_agree(lake)

    out = run(["restore", lake, "--version", "3", "--apply"], width).out
    assert_shows(out, [str(lake)], [log.snapshot().commit_info["txnId"]])
    assert_peers_agree(lake)


# ---------------------------------------------------------------------------------------------- scaling


def _many_files(root: Path, n: int) -> Path:
    log = DeltaLog.for_table(root, auto_checkpoint=False)
    log.create(pa.schema([("id", pa.int64())]))
    old = int(time.time() * 1000) - 30 * DAY_MS
    for i in range(n):
        (root / f"orphan-{i:04d}.parquet").write_bytes(b"x")
        _age(root / f"orphan-{i:04d}.parquet", 30)
    del old
    return root


def test_long_dry_runs_show_a_summary_and_the_first_rows(tmp_path: Path) -> None:
    root = _many_files(tmp_path / "t", render.SUMMARY_THRESHOLD + 10)
    out = run(["vacuum", root], None).out
    listed = [line for line in out.splitlines() if line.startswith("orphan-")]
    assert len(listed) == render.SUMMARY_ROWS
    assert f"20 files of {render.SUMMARY_THRESHOLD + 10} shown; --all lists every one" in out
    assert "would be deleted" in out and f"{render.SUMMARY_THRESHOLD + 10} files" in out
    assert len([ln for ln in run(["vacuum", root, "--all"], None).out.splitlines() if ln.startswith("orphan-")]) == 60
    limited = run(["vacuum", root, "--limit", "5"], None).out
    assert len([ln for ln in limited.splitlines() if ln.startswith("orphan-")]) == 5
    # JSON: --limit cuts the list, the counts still describe the whole plan
    shown = doc("vacuum", root, "--limit", "5")
    assert (len(shown["files"]), shown["num_files"]) == (5, render.SUMMARY_THRESHOLD + 10)
    assert len(doc("vacuum", root)["files"]) == render.SUMMARY_THRESHOLD + 10  # the contract: everything


def test_csv_format_streams_raw_rows(lake: Path) -> None:
    files = doc("files", lake)["files"]
    rows = list(csv.DictReader(io.StringIO(run(["files", lake, "--format", "csv"], None).out)))
    assert [r["path"] for r in rows] == [f["path"] for f in files]
    assert [r["modification_time"] for r in rows] == [f["modification_time"] for f in files]
    assert [r["region"] for r in rows] == [f["partition_values"]["region"] for f in files]
    assert {r["deletion_vector"] for r in rows} == {"false"}
    history = list(csv.DictReader(io.StringIO(run(["history", lake, "--format", "csv"], None).out)))
    assert [r["version"] for r in history] == ["3", "2", "1", "0"]
    assert orjson.loads(history[0]["operation_parameters"])["predicate"] == LONG_PARAMETER
    assert [r["kind"] for r in csv.DictReader(io.StringIO(run(["vacuum", lake, "--format", "csv"], None).out))] == [
        render.deletion_kind(f["path"]) for f in doc("vacuum", lake)["files"]
    ]


def test_files_limit(lake: Path) -> None:
    everything = doc("files", lake)
    first = doc("files", lake, "--limit", "2")
    assert first["files"] == everything["files"][:2]
    assert (first["num_files"], first["total_size"]) == (everything["num_files"], everything["total_size"])
    out = run(["files", lake, "--limit", "1"], None).out
    assert "1 file of 3 shown" in out


def test_format_json_is_the_json_contract(lake: Path) -> None:
    assert piped(["describe", lake, "--format", "json"]).out == piped(["describe", lake, "--json"]).out


def test_folding_keeps_every_character() -> None:
    text = "region=" + REGION + "/part-0000-" + "x" * 70 + ".parquet"
    for width in (7, 16, 33, 60):
        pieces = layout.fold(text, width)
        assert "".join(pieces) == text
        assert all(0 < len(p) <= width for p in pieces)


def test_records_when_a_row_cannot_fit(lake: Path) -> None:
    out = run(["history", lake], 60).out
    assert any(line.startswith("timestamp ") for line in out.splitlines())  # one block per commit
    wide = run(["history", lake], 120).out
    assert any(line.startswith("version  timestamp") for line in wide.splitlines())  # one row per commit


@pytest.mark.parametrize("width", WIDTHS)
def test_write_and_scan_show_whole_values(tmp_path: Path, width: int | None) -> None:
    source = tmp_path / "rows.parquet"
    rows = pa.table({"id": [1, 2], "region": [REGION, "eu"], "note": [LONG_PARAMETER, None]})
    pq.write_table(rows, source)
    table = tmp_path / "t"
    written = run(["write", table, source, "--partition-by", "region"], width).out
    assert_shows(written, [str(table), str(source)], [])
    out = run(["scan", table], width).out
    assert_shows(out, [REGION], ["eu"])
    assert set(LONG_PARAMETER.split()) <= set(re.split(r"[\s,=]+", out))  # folded at blanks, every word kept
    assert sorted(doc("scan", table)["rows"], key=lambda r: r["id"])[0]["region"] == REGION
    assert_peers_agree(table)
