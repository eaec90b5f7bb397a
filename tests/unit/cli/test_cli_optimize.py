"""``deltalog optimize``: compaction, Z-order and purge from the command line, with the ``--json`` contract and
one ``error:`` line for every mistake."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog import DeltaLog
from deltalog.cli.optimize_cmd import parse_size
from tests.unit.cli_runs import as_json, fails, ok

KEYS = {
    "table",
    "operation",
    "num_files_added",
    "num_files_removed",
    "bytes_added",
    "bytes_removed",
    "partitions_optimized",
    "num_batches",
    "files_considered",
    "files_skipped",
    "deletion_vectors_purged",
    "dry_run",
    "version",
    "versions",
}


def small_files(root: Path, n: int = 4) -> None:
    for i in range(n):
        deltalog.write(pa.table({"id": [i, i + 100], "part": ["a", "b"]}), root, partition_by=["part"])


def test_optimize_reports_what_it_did_as_json_and_for_people(tmp_path: Path) -> None:
    small_files(tmp_path)
    planned = as_json("optimize", tmp_path, "--dry-run")
    assert set(planned) == KEYS and planned["dry_run"] and planned["version"] is None
    assert planned["num_files_removed"] == 8 and planned["partitions_optimized"] == 2
    done = as_json("optimize", tmp_path, "--where", "part = 'a'", "--target-size", "1MB", "--zorder-by", "id")
    assert done["version"] == 4 and done["versions"] == [4] and done["num_files_removed"] == 4
    assert done["num_files_added"] == 1 and done["partitions_optimized"] == 1
    text = ok("optimize", tmp_path)
    assert "Optimize" in text and "committed version" in text
    assert DeltaLog.for_table(tmp_path).snapshot().num_files == 2


def test_purge_commits_a_reorg(tmp_path: Path) -> None:
    small_files(tmp_path, 1)
    done = as_json("optimize", tmp_path, "--purge")
    assert done["operation"] == "REORG" and done["version"] is None  # no deletion vectors: nothing to purge


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (("--where", "id = 1"), 1, "'id' is a data column"),
        (("--zorder-by", "part"), 1, "partition column"),
        (("--zorder-by", "id,,x"), 2, "comma-separated"),
        (("--target-size", "12XB"), 2, "is not a size"),
        (("--purge", "--zorder-by", "id"), 2, "--purge"),
    ],
)
def test_mistakes_are_one_error_line(tmp_path: Path, args: tuple[str, ...], code: int, said: str) -> None:
    small_files(tmp_path, 2)
    assert said in fails("optimize", tmp_path, *args, code=code)


@pytest.mark.parametrize(
    ("text", "size"),
    [("134217728", 134217728), ("128MB", 128 * 1024**2), ("1GiB", 1024**3), ("64k", 64 * 1024), ("2 gb", 2 * 1024**3)],
)
def test_sizes_take_a_unit(text: str, size: int) -> None:
    assert parse_size(None, None, text) == size  # type: ignore[arg-type]
