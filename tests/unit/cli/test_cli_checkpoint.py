"""``deltalog checkpoint`` and ``deltalog checkpoint-job`` (``compact`` before: a deprecated alias for one
release), and the library under ``checkpoint-job``.

The error contract is the CLI's: a failure prints one ``error:`` line on stderr. ``checkpoint-job`` is the verb
whose failure still prints a result: every table's outcome goes to stdout (one document), then one line on
stderr names the tables that failed, and the exit code is 1.
"""

from __future__ import annotations

import dataclasses
import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rich.console import Console

import deltalog.cli.checkpoint_cmd as cli_checkpoint
from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.cli.checkpoint_cmd import checkpoint_progress
from deltalog.core.log import last_checkpoint as hints
from deltalog.core.log.paths import LOG_DIR, checkpoint_name, commit_name, multipart_name
from deltalog.errors import InvalidArgumentError
from deltalog.maintenance.checkpoint_job import (
    CHECKPOINTED,
    FAILED,
    SKIPPED,
    TableCompaction,
    compact_tables,
    discover_tables,
    summarize,
)
from tests.unit.cli_runs import as_json, fails, ok, run
from tests.unit.logkit import Y2026, protocol
from tests.unit.logwriter import make_table

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string())])
V2_CONF = {"delta.feature.v2Checkpoint": "supported", "delta.checkpointPolicy": "v2"}


def table(root: Path, commits: int, configuration: dict[str, str] | None = None) -> Path:
    """Create + ``commits`` appends of one file each (version = ``commits``), no automatic checkpoints."""
    log = DeltaLog.for_table(root, auto_checkpoint=False)
    log.create(SCHEMA, partition_columns=["region"], configuration=configuration or {})
    for v in range(1, commits + 1):
        region = "eu" if v % 2 else "us"
        log.start_transaction().commit([A.Add(f"region={region}/f{v:03d}.parquet", {"region": region}, v, 1, True)])
    return root


def more(root: Path, commits: int) -> None:
    log = DeltaLog.for_table(root, auto_checkpoint=False)
    for _ in range(commits):
        v = log.snapshot().version + 1
        log.start_transaction().commit([A.Add(f"region=eu/g{v:03d}.parquet", {"region": "eu"}, v, 1, True)])


def hint(root: Path) -> dict[str, Any]:
    obj = orjson.loads((root / LOG_DIR / "_last_checkpoint").read_bytes())
    assert obj["checksum"] == hints.checksum(obj)
    return dict(obj)


def row(text: str, *cells: str) -> bool:
    pattern = r"\s+".join(re.escape(c) for c in cells)
    return any(re.search(pattern, line) for line in text.splitlines())


# ---------------------------------------------------------------------------------------------- checkpoint


def test_checkpoint_json_document(tmp_path: Path) -> None:
    root = table(tmp_path / "t", 4)
    doc = as_json("checkpoint", root)
    assert set(doc) == {
        "table",
        "version",
        "kind",
        "files",
        "num_actions",
        "num_add_files",
        "size_in_bytes",
        "already_existed",
        "seconds",
    }
    assert doc["table"] == str(root)
    assert (doc["version"], doc["kind"], doc["num_add_files"], doc["num_actions"]) == (4, "classic", 4, 6)
    assert doc["files"] == [f"{LOG_DIR}/{checkpoint_name(4)}"]
    assert doc["size_in_bytes"] == (root / doc["files"][0]).stat().st_size
    assert doc["already_existed"] is False and isinstance(doc["seconds"], float)
    assert pq.ParquetFile(root / doc["files"][0]).metadata.num_rows == 6
    assert (hint(root)["version"], hint(root)["size"]) == (4, 6)
    again = as_json("checkpoint", root)
    assert again["already_existed"] is True and again["files"] == doc["files"]


def test_checkpoint_human_names_what_was_written(tmp_path: Path) -> None:
    root = table(tmp_path / "t", 3)
    out = ok("checkpoint", root)
    assert out.startswith("Checkpoint\n")
    assert row(out, "location", str(root))
    assert row(out, "version", "3")
    assert row(out, "kind", "classic")
    assert row(out, "files", f"{LOG_DIR}/{checkpoint_name(3)}")
    assert row(out, "add files", "3")
    assert row(out, "already existed", "no")


def test_checkpoint_older_version_and_parts(tmp_path: Path) -> None:
    root = table(tmp_path / "t", 6)
    doc = as_json("checkpoint", root, "--version", 2, "--parts", 3)
    assert (doc["version"], doc["kind"], doc["num_add_files"]) == (2, "multipart", 2)
    assert doc["files"] == [f"{LOG_DIR}/{multipart_name(2, i, 3)}" for i in (1, 2, 3)]
    assert hint(root)["parts"] == 3
    one = as_json("checkpoint", root, "--parts", 1)
    assert (one["version"], one["kind"]) == (6, "classic")
    assert hint(root)["version"] == 6 and "parts" not in hint(root)


def test_checkpoint_of_a_v2_table_writes_a_manifest(tmp_path: Path) -> None:
    root = table(tmp_path / "t", 2, V2_CONF)
    doc = as_json("checkpoint", root)
    assert doc["kind"] == "v2"
    assert re.fullmatch(rf"{LOG_DIR}/00000000000000000002\.checkpoint\.[0-9a-f-]{{36}}\.parquet", doc["files"][0])
    line = fails("checkpoint", root, "--parts", 2)
    assert "multi-part" in line and "v2Checkpoint" in line


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (("--version", 99), 1, "version 99 does not exist"),
        (("--parts", 0), 2, "--parts"),
        (("--version", -1), 2, "--version"),
        (("--bogus",), 2, "--bogus"),
    ],
)
def test_checkpoint_errors(tmp_path: Path, args: tuple[Any, ...], code: int, needle: str) -> None:
    root = table(tmp_path / "t", 2)
    assert needle in fails("checkpoint", root, *args, code=code)
    assert not [p for p in (root / LOG_DIR).iterdir() if "checkpoint" in p.name]


def test_checkpoint_of_no_table_or_an_unwritable_one_but_of_a_dv_table(tmp_path: Path) -> None:
    assert "no Delta table" in fails("checkpoint", tmp_path / "nothing")
    dv = make_table(
        tmp_path / "dv",
        [
            [
                protocol(3, 7, ["deletionVectors"], ["deletionVectors"]),
                Y2026.metadata(configuration={"delta.enableDeletionVectors": "true"}),
            ]
        ],
    )
    ok("checkpoint", dv)  # deletion vectors impose no checkpoint duty deltalog leaves unmet
    assert (dv / LOG_DIR / "00000000000000000000.checkpoint.parquet").is_file()
    proposal = make_table(
        tmp_path / "collations",
        [[protocol(3, 7, ["deletionVectors"], ["deletionVectors", "collations"]), Y2026.metadata()]],
    )
    assert "collations" in fails("checkpoint", proposal)
    assert "checkpoint" not in " ".join(p.name for p in (proposal / LOG_DIR).iterdir())
    assert "TABLE" in fails("checkpoint", code=2)


@contextmanager
def recording(ticks: list[tuple[str, str, int, int]]) -> Iterator[Any]:
    yield lambda table, stage, done, total: ticks.append((table, stage, done, total))


def test_checkpoint_feeds_the_writer_progress_to_the_bar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = table(tmp_path / "t", 5)
    ticks: list[tuple[str, str, int, int]] = []
    monkeypatch.setattr(cli_checkpoint, "checkpoint_progress", lambda: recording(ticks))
    ok("checkpoint", root, "--parts", 2)
    assert {t[0] for t in ticks} == {str(root)}
    assert {t[1] for t in ticks} == {"part 1/2", "part 2/2"}
    assert all(0 < done <= total == 7 for _, _, done, total in ticks)


def test_progress_bar_draws_on_a_terminal_and_stays_off_elsewhere() -> None:
    term = io.StringIO()
    with checkpoint_progress(Console(file=term, force_terminal=True, width=100)) as tick:
        tick("/data/t", "write", 5, 10)
        tick("/data/t", "write", 10, 10)
    assert "/data/t: checkpoint write" in term.getvalue()
    piped = io.StringIO()
    with checkpoint_progress(Console(file=piped, force_terminal=False)) as tick:
        tick("/data/t", "write", 10, 10)
    assert piped.getvalue() == ""


# ---------------------------------------------------------------------------------------------- compact


def test_compact_checkpoints_only_tables_past_the_threshold(tmp_path: Path) -> None:
    busy = table(tmp_path / "busy", 12)  # 13 commit files (0..12) to replay
    quiet = table(tmp_path / "quiet", 3)
    doc = as_json("checkpoint-job", busy, quiet)
    assert doc["min_commits"] == 10
    assert (doc["num_checkpointed"], doc["num_skipped"], doc["num_failed"]) == (1, 1, 0)
    first, second = doc["tables"]
    assert set(first) == {
        "table",
        "status",
        "version",
        "last_checkpoint",
        "commits_since_checkpoint",
        "checkpoint",
        "error",
        "error_type",
    }
    assert (first["table"], first["status"], first["version"], first["last_checkpoint"]) == (
        str(busy),
        "checkpointed",
        12,
        None,
    )
    assert first["commits_since_checkpoint"] == 13
    assert first["checkpoint"]["files"] == [f"{LOG_DIR}/{checkpoint_name(12)}"]
    assert (first["error"], first["error_type"]) == (None, None)
    assert (second["status"], second["commits_since_checkpoint"], second["checkpoint"]) == ("skipped", 4, None)
    assert not [p for p in (quiet / LOG_DIR).iterdir() if "checkpoint" in p.name]
    assert hint(busy)["version"] == 12

    # the next run finds nothing to do; ten commits later it checkpoints again
    doc = as_json("checkpoint-job", busy)
    assert doc["tables"][0]["status"] == "skipped" and doc["tables"][0]["commits_since_checkpoint"] == 0
    more(busy, 10)
    doc = as_json("checkpoint-job", busy, "--parts", 2)
    t = doc["tables"][0]
    assert (t["status"], t["version"], t["last_checkpoint"], t["commits_since_checkpoint"]) == (
        "checkpointed",
        22,
        12,
        10,
    )
    assert t["checkpoint"]["kind"] == "multipart" and len(t["checkpoint"]["files"]) == 2


def test_compact_is_a_deprecated_alias_that_says_what_it_became(tmp_path: Path) -> None:
    busy = table(tmp_path / "busy", 10)
    result = run("compact", busy, "--json")
    assert result.exit_code == 0 and orjson.loads(result.stdout)["tables"][0]["status"] == "checkpointed"
    (warning,) = result.stderr.splitlines()
    assert warning.startswith(
        "WARNING deltalog.cli.checkpoint_cmd: 'deltalog compact' is now 'deltalog checkpoint-job'"
    )
    assert "'compact' will then mean data-file compaction (OPTIMIZE)" in warning
    assert "compact " not in ok("--help").replace("compact-log", "")  # not listed: the old name is on its way out


def test_compact_min_commits(tmp_path: Path) -> None:
    root = table(tmp_path / "t", 3)
    assert as_json("checkpoint-job", root, "--min-commits", 5)["tables"][0]["status"] == "skipped"
    assert as_json("checkpoint-job", root, "--min-commits", 4)["tables"][0]["status"] == "checkpointed"
    assert "--min-commits" in fails("checkpoint-job", root, "--min-commits", 0, code=2)


def test_compact_human_output(tmp_path: Path) -> None:
    busy = table(tmp_path / "busy", 10)
    quiet = table(tmp_path / "quiet", 1)
    out = ok("checkpoint-job", busy, quiet)
    assert out.startswith("Checkpoint job")
    assert row(out, str(busy), "checkpointed", "10", "-", "11", "classic v10")
    assert row(out, str(quiet), "skipped", "1", "-", "2", "-", "-")
    assert "1 checkpointed, 1 skipped, 0 failed (min commits 10)" in out


def test_compact_reports_failures_and_carries_on(tmp_path: Path) -> None:
    broken = table(tmp_path / "broken", 12)
    (broken / LOG_DIR / commit_name(5)).unlink()  # a gap: the log is corrupt
    missing = tmp_path / "missing"
    good = table(tmp_path / "good", 11)
    result = run("checkpoint-job", broken, missing, good, "--json")
    assert result.exit_code == 1
    doc = orjson.loads(result.stdout)  # the whole result is still printed
    assert [t["status"] for t in doc["tables"]] == ["failed", "failed", "checkpointed"]
    assert (doc["num_checkpointed"], doc["num_skipped"], doc["num_failed"]) == (1, 0, 2)
    bad, gone, fine = doc["tables"]
    assert bad["error_type"] == "CorruptLogError" and "00000000000000000005.json" in bad["error"]
    assert gone["error_type"] == "TableNotFoundError" and gone["version"] is None
    assert fine["checkpoint"]["version"] == 11 and (good / LOG_DIR / checkpoint_name(11)).is_file()
    # the library's warning for each failed table (visible by default), then the one error line
    *warnings, last = result.stderr.splitlines()
    assert [w.split(":")[0] for w in warnings] == ["WARNING deltalog.maintenance.checkpoint_job"] * 2
    assert str(broken) in warnings[0] and str(missing) in warnings[1]
    assert last == (
        f"error: checkpoints failed for 2 of 3 tables: {broken} (CorruptLogError); {missing} (TableNotFoundError)"
    )
    quiet = run("checkpoint-job", broken, missing, good, "--json", "--quiet")
    assert quiet.stderr.splitlines() == [last]


def test_compact_prefix_finds_every_table_once(tmp_path: Path) -> None:
    a = table(tmp_path / "lake" / "a", 10)
    b = table(tmp_path / "lake" / "x" / "b", 2)
    (b / "region=eu" / "nested" / LOG_DIR).mkdir(parents=True)  # inside a table: data, not another table
    (tmp_path / "lake" / "empty" / "deeper").mkdir(parents=True)
    assert discover_tables(str(tmp_path / "lake")) == [str(a), str(b)]
    assert discover_tables(f"file://{tmp_path / 'lake'}") == [str(a), str(b)]
    assert discover_tables(str(a)) == [str(a)]
    doc = as_json("checkpoint-job", "--prefix", tmp_path / "lake", a)
    assert [(t["table"], t["status"]) for t in doc["tables"]] == [(str(a), "checkpointed"), (str(b), "skipped")]
    assert as_json("checkpoint-job", "--prefix", tmp_path / "lake" / "empty")["tables"] == []


def test_compact_usage_and_prefix_errors(tmp_path: Path) -> None:
    assert "TABLE or --prefix" in fails("checkpoint-job", code=2)
    assert "no such directory" in fails("checkpoint-job", "--prefix", tmp_path / "nope")
    assert "--parts" in fails("checkpoint-job", tmp_path, "--parts", 0, code=2)


# ---------------------------------------------------------------------------------------------- library


def test_compact_tables_library(tmp_path: Path) -> None:
    busy = str(table(tmp_path / "busy", 10))
    quiet = str(table(tmp_path / "quiet", 2))
    ticks: list[tuple[str, str, int, int]] = []
    results = compact_tables(
        [busy, quiet, busy], min_commits=3, progress=lambda *t: ticks.append(t)
    )  # duplicates run once
    assert [(r.location, r.status) for r in results] == [(busy, CHECKPOINTED), (quiet, CHECKPOINTED)]
    assert all(isinstance(r, TableCompaction) for r in results)
    with pytest.raises(dataclasses.FrozenInstanceError):
        results[0].status = FAILED  # type: ignore[misc]
    assert results[0].checkpoint is not None and results[0].checkpoint.version == 10
    assert {t[0] for t in ticks} == {busy, quiet} and {t[1] for t in ticks} == {"write"}
    assert summarize(results) == {CHECKPOINTED: 2, SKIPPED: 0, FAILED: 0}
    again = compact_tables([busy, quiet], min_commits=3)
    assert [r.status for r in again] == [SKIPPED, SKIPPED]
    assert [(r.last_checkpoint, r.commits_since) for r in again] == [(10, 0), (2, 0)]
    with pytest.raises(InvalidArgumentError):
        compact_tables([busy], min_commits=0)
    with pytest.raises(InvalidArgumentError):
        compact_tables([busy], parts=0)


def test_compact_counts_commits_past_an_unreadable_checkpoint(tmp_path: Path) -> None:
    root = table(tmp_path / "t", 8)
    DeltaLog.for_table(root, auto_checkpoint=False).checkpoint(version=4)
    more(root, 1)
    cp = root / LOG_DIR / checkpoint_name(4)
    cp.write_bytes(cp.read_bytes()[:100])  # torn: readers replay all 10 commits instead
    (result,) = compact_tables([str(root)], min_commits=10)
    assert (result.status, result.last_checkpoint, result.commits_since) == (CHECKPOINTED, None, 10)
    assert DeltaLog.for_table(root).snapshot().segment.checkpoint.version == 9  # type: ignore[union-attr]


def test_compact_an_in_memory_prefix() -> None:
    base = "memory://compaction-test/lake"
    for name, commits in (("a", 10), ("b/c", 1)):
        log = DeltaLog.for_table(f"{base}/{name}", auto_checkpoint=False)
        log.create(SCHEMA)
        for v in range(commits):
            log.start_transaction().commit([A.Add(f"f{v}.parquet", {}, 1, 1, True)])
    found = discover_tables(base)
    assert found == [f"{base}/a", f"{base}/b/c"]
    results = compact_tables(found)
    assert [r.status for r in results] == [CHECKPOINTED, SKIPPED]
    assert DeltaLog.for_table(f"{base}/a").snapshot().segment.checkpoint is not None
