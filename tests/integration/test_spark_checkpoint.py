"""The Spark checkpoint writer reconstructs the same state as the local writer, without the driver holding
the file list (the session's ``spark.driver.maxResultSize`` is 1 MB; the log's adds are several MB)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from deltalog import DeltaLog
from deltalog.cli.main import cli
from deltalog.core.paths import Kind, parse
from deltalog.errors import CorruptLogError
from deltalog.spark.distributed_checkpoint import checkpoint
from tests.integration.spark_logs import build_log

NOW = 1_800_000_000_000
WEEK = 7 * 86_400_000


def _drop_commits_through(root: Path, version: int) -> None:
    for f in (root / "_delta_log").iterdir():
        p = parse(f.name)
        if p is not None and p.kind is Kind.COMMIT and p.version <= version:
            f.unlink()


def _state(root: Path) -> dict[str, Any]:
    snap = DeltaLog.for_table(root, clock=lambda: NOW / 1000).snapshot()
    return {
        "version": snap.version,
        "paths": sorted(snap.files().column("path").to_pylist()),
        "stats": sorted(snap.files(stats=True).column("stats").to_pylist()),
        # tombstones past delta.deletedFileRetentionDuration (7 days here) are not carried into checkpoints
        "tombstones": sorted(r["path"] for r in snap.tombstones().to_pylist() if r["deletionTimestamp"] > NOW - WEEK),
        "txns": {k: (t.version, t.last_updated) for k, t in snap.txns.items()},
        "protocol": snap.protocol,
        "metadata": snap.metadata,
    }


def _part_rows(root: Path, files: tuple[str, ...]) -> list[tuple[list[Any], list[Any]]]:
    out = []
    for f in files:
        t = pq.read_table(io.BytesIO((root / f).read_bytes()), columns=["add", "remove"])
        adds = sorted(a["path"] for a in t.column("add").to_pylist() if a)
        removes = sorted(r["path"] for r in t.column("remove").to_pylist() if r)
        out.append((adds, removes))
    return out


def test_spark_checkpoint_matches_local_writer(spark: Any, tmp_path: Path) -> None:
    assert spark.conf.get("spark.driver.maxResultSize") == "1m"
    base = tmp_path / "base"
    live = build_log(base, commits=100, per_commit=200, now_ms=NOW)
    DeltaLog.for_table(base, clock=lambda: NOW / 1000).checkpoint(version=40)  # the segment starts at a checkpoint
    log_bytes = sum(f.stat().st_size for f in (base / "_delta_log").glob("*.json"))
    assert log_bytes > 4 * 1024 * 1024  # collecting the adds on the driver would break maxResultSize
    with_spark, with_local = tmp_path / "spark", tmp_path / "local"
    shutil.copytree(base, with_spark)
    shutil.copytree(base, with_local)

    result = checkpoint(spark, str(with_spark), parts=3, now_ms=NOW)
    local = DeltaLog.for_table(with_local, clock=lambda: NOW / 1000).checkpoint(parts=3)
    assert (result.version, result.num_add_files, result.num_actions) == (100, live, local.num_actions)
    assert [Path(f).name for f in result.files] == [Path(f).name for f in local.files]
    # the same hash: every part holds the same file actions in both writers
    assert _part_rows(with_spark, result.files) == _part_rows(with_local, local.files)
    hint = DeltaLog.for_table(with_spark).read_hint()
    assert hint is not None and (hint.version, hint.parts) == (100, 3)

    expected = _state(base)
    for root in (with_spark, with_local):
        _drop_commits_through(root, 100)
        assert _state(root) == expected
    assert len(expected["paths"]) == live
    assert len(expected["txns"]) == 11


def test_spark_checkpoint_single_part_and_cli(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "small"
    build_log(root, commits=12, per_commit=3, now_ms=NOW)
    expected = _state(root)
    result = checkpoint(spark, str(root), version=12, parts=1, now_ms=NOW)
    assert result.kind == "classic" and result.files == ("_delta_log/00000000000000000012.checkpoint.parquet",)
    _drop_commits_through(root, 12)
    assert _state(root) == expected

    other = tmp_path / "cli"
    build_log(other, commits=5, per_commit=2, now_ms=NOW)
    out = CliRunner().invoke(cli, ["checkpoint", "--engine", "spark", "--parts", "2", "--json", str(other)])
    assert out.exit_code == 0, out.output
    assert '"version":5' in out.output.replace(" ", "")
    assert sorted(p.name for p in (other / "_delta_log").glob("*.checkpoint.*")) == [
        "00000000000000000005.checkpoint.0000000001.0000000002.parquet",
        "00000000000000000005.checkpoint.0000000002.0000000002.parquet",
    ]


def test_spark_checkpoint_refuses_bad_part_count(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    build_log(root, commits=2, per_commit=1, now_ms=NOW)
    with pytest.raises(ValueError, match="parts must be >= 1"):
        checkpoint(spark, str(root), parts=0)


def test_a_corrupt_commit_read_on_an_executor_fails_typed_and_writes_nothing(spark: Any, tmp_path: Path) -> None:
    """The executors parse the commits: a broken line there reaches the caller as the CorruptLogError the local
    reader would raise, naming the file and line, not as a Python worker's traceback inside a Spark error."""
    root = tmp_path / "corrupt"
    build_log(root, commits=4, per_commit=2, now_ms=NOW)
    commit = root / "_delta_log" / "00000000000000000003.json"
    lines = commit.read_bytes().rstrip(b"\n").split(b"\n")
    commit.write_bytes(b"\n".join([*lines, b'{"add": {"path": "x.parquet",', b""]))
    before = sorted(p.name for p in (root / "_delta_log").iterdir())
    with pytest.raises(CorruptLogError) as info:
        checkpoint(spark, str(root), parts=2, now_ms=NOW)
    assert "00000000000000000003.json" in str(info.value) and info.value.line == len(lines) + 1
    assert sorted(p.name for p in (root / "_delta_log").iterdir()) == before


@pytest.mark.parametrize(
    ("line", "kind"),
    [(b'{"add": "part-9.parquet"}', "add"), (b'{"txn": {"appId": "etl", "version": "7"}}', "txn")],
)
def test_an_action_the_local_reader_refuses_is_refused_on_the_executors_alike(
    spark: Any, tmp_path: Path, line: bytes, kind: str
) -> None:
    """The executors decode commits with the core decoder: an action that does not decode (an add that is not
    an object, a txn whose version is a string) is the local reader's CorruptLogError, same file and line,
    where the executors' own parsing once skipped the add or carried the string into the checkpoint."""
    root = tmp_path / "bad"
    build_log(root, commits=3, per_commit=2, now_ms=NOW)
    commit = root / "_delta_log" / "00000000000000000002.json"
    lines = commit.read_bytes().rstrip(b"\n").split(b"\n")
    commit.write_bytes(b"\n".join([*lines, line, b""]))
    with pytest.raises(CorruptLogError) as local:
        DeltaLog.for_table(root, clock=lambda: NOW / 1000).snapshot().files()
    before = sorted(p.name for p in (root / "_delta_log").iterdir())
    with pytest.raises(CorruptLogError) as executors:
        checkpoint(spark, str(root), parts=2, now_ms=NOW)
    for caught in (local.value, executors.value):
        assert "00000000000000000002.json" in str(caught) and caught.line == len(lines) + 1
        assert f"{kind} action" in str(caught)
    assert sorted(p.name for p in (root / "_delta_log").iterdir()) == before
