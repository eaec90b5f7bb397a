"""The demo's pipeline (scripts/demo_pipeline.py) in-process: every outcome the README's main job prints.

The demo forces its races with ``before_commit`` hooks, so the versions are fixed and asserted exactly; a
change in the engine that moved one (a lost exactly-once skip, an untyped conflict, a missing checkpoint)
fails here rather than in a demo nobody reads closely.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from deltalog import ConcurrentAppendError, DeltaLog

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
# scripts/ is not a package: the demo runs its modules as siblings
import demo_pipeline
import demo_plain_writer
import demo_report


def test_demo_pipeline_outcomes(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "demo-table"
    said: list[str] = []
    outcome = demo_pipeline.run_pipeline(spark, root, say=said.append)

    # 1. daily batches: v0 is the table's creation with day 1's files, then one version per day; the rerun
    # commits nothing
    assert (outcome.day1_version, outcome.day2_version) == (0, 1)
    assert outcome.rerun_skipped
    assert any("already committed, skipped" in line for line in said)

    # 2. both concurrent writers landed: the plain writer first, the Spark job over it from the same read
    assert (outcome.plain_version, outcome.concurrent_spark_version) == (2, 3)
    assert outcome.concurrent_spark_read_version == 1

    # 3. the losing overwrite got a typed conflict naming the winner, and its files are gone
    conflict = outcome.conflict
    assert conflict.winner_version == 4
    assert isinstance(conflict.error, ConcurrentAppendError)
    assert conflict.error.winning_version == 4
    assert conflict.loser_files and conflict.loser_files_left == ()
    log = DeltaLog.for_table(root)
    day1 = {f"day={demo_pipeline.DAY1}/{p.name}" for p in (root / f"day={demo_pipeline.DAY1}").glob("*.parquet")}
    snap = log.snapshot()
    live_day1 = set(snap.files(where={"day": demo_pipeline.DAY1}).column("path").to_pylist())
    removed = {  # day 1's first files, replaced by job B
        p for p in snap.tombstones().column("path").to_pylist() if p.startswith(f"day={demo_pipeline.DAY1}/")
    }
    assert live_day1 and removed and day1 == live_day1 | removed  # nothing on disk the log does not know

    # 4. the automatic checkpoint at v4 and the Spark one at v5 (two parts), which readers now start from
    assert outcome.auto_checkpoint_version == 4
    assert outcome.auto_checkpoint_files == ("00000000000000000004.checkpoint.parquet",)
    assert (root / "_delta_log" / outcome.auto_checkpoint_files[0]).is_file()
    cp = outcome.spark_checkpoint
    assert (outcome.day4_version, cp.version, len(cp.files)) == (5, 5, 2)
    assert all((root / f).is_file() for f in cp.files)

    # 5. corrections through DeltaTable: the MERGE and the DELETE, one version each, over the Spark checkpoint
    assert outcome.corrections == demo_pipeline.Corrections(6, 20, 10, 7, demo_pipeline.voided())
    assert outcome.corrections.deleted == 14
    assert [e.operation for e in log.history(limit=2)] == ["DELETE", "MERGE"]
    snap = log.snapshot()
    assert snap.version == 7 and snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 5

    # 6. Spark reads: latest and time travel to day 2's version
    back = demo_pipeline.read_back(spark, root, earlier_version=outcome.day2_version)
    assert back.latest_version == 7
    assert back.latest_rows == demo_pipeline.expected_rows() == 1896
    assert back.earlier_rows == 900
    assert sum(rows for _, rows in demo_report.rows_by_partition(snap).values()) == 1896
    assert demo_pipeline.problems(outcome, back) == []

    # 7. the same table read in Python: every row Spark counted, and day filters that prune to one partition
    scanned = demo_report.scan(root, demo_pipeline.BACKFILL_DAY, 50.0)
    assert scanned.rows == 1896
    plain = demo_plain_writer.rows(*demo_pipeline.BACKFILL, demo_pipeline.BACKFILL_DAY).to_pylist()
    cities = [r["city"] for r in plain if r["amount"] > 50.0]
    assert scanned.by_city == {c: cities.count(c) for c in sorted(set(cities))}

    out = io.StringIO()
    console = Console(file=out, width=120)
    demo_report.show_history(root, console)
    demo_report.show_snapshot(root, console)
    demo_report.show_reads(back, console)
    demo_report.show_scan(scanned, console)
    text = out.getvalue()
    assert "mode=Append" in text and "mode=Overwrite" in text and "1896 rows" in text
    assert "CREATE TABLE" not in text  # the first job created the table in its own commit, as Delta Spark does
    assert "Python reads" in text and "every live row: 1896 rows" in text
    assert any("deltalog.write" in line for line in said)
    assert any("MERGE of 30 corrections" in line for line in said) and "DELETE" in text and "MERGE" in text
