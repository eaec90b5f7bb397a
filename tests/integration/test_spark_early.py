"""Spark overwrites declare an intent and stop early: between stages, not at commit time."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from deltalog import ConcurrentAppendError, DeltaLog
from deltalog import actions as A
from deltalog.spark.writer import write

SCHEMA = "id long, city string, amount double, day string"
P, Q = "2026-11-01", "2026-11-02"


def batch(spark: Any, day: str, first: int, count: int) -> Any:
    return spark.createDataFrame([(i, "Oslo", i * 1.5, day) for i in range(first, first + count)], SCHEMA).repartition(
        2
    )


def data_files(table: Path) -> set[str]:
    return {str(p.relative_to(table)) for p in table.rglob("*.parquet") if "_delta_log" not in p.parts}


def intents(table: Path) -> list[str]:
    d = table / "_delta_log" / "_intents"
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def seeded(spark: Any, tmp_path: Path) -> Path:
    table = tmp_path / "sales"
    write(batch(spark, P, 0, 4), str(table), partition_by=["day"])
    write(batch(spark, Q, 10, 4), str(table))
    return table


def test_overwrite_stops_at_the_check_after_its_write_stage(spark: Any, tmp_path: Path) -> None:
    table = seeded(spark, tmp_path)
    before = data_files(table)
    seen: dict[str, Any] = {}

    def writer_a_commits_into_p() -> None:  # runs after B's files are written, before B's last check
        seen["intents"] = intents(table)
        add = A.Add(path=sorted(before)[0], partition_values={"day": P}, size=1, modification_time=1, data_change=True)
        seen["version"] = DeltaLog.for_table(table).start_transaction().commit([add]).version

    with pytest.raises(ConcurrentAppendError) as exc:
        write(
            batch(spark, P, 100, 6),
            str(table),
            mode="overwrite",
            replace_where={"day": P},
            before_commit=writer_a_commits_into_p,
        )
    assert len(seen["intents"]) == 1  # B's intent was live during its job
    assert exc.value.winning_version == seen["version"] == 2
    assert any(entry.name == "check_early" for entry in exc.traceback)  # stopped early, not by the commit
    assert not any(entry.name == "_commit" for entry in exc.traceback)
    assert data_files(table) == before  # B's written files were deleted
    assert intents(table) == []
    assert DeltaLog.for_table(table).latest_version() == 2


def test_a_live_intent_with_priority_stops_the_job_before_any_file_is_written(spark: Any, tmp_path: Path) -> None:
    table = seeded(spark, tmp_path)
    holder = DeltaLog.for_table(table, clock=lambda: 1.0).start_transaction()  # declared long ago
    holder.declare_intent(where={"day": P})
    before = data_files(table)
    with pytest.raises(ConcurrentAppendError, match=holder.txn_id) as exc:
        write(batch(spark, P, 100, 6), str(table), mode="overwrite", replace_where={"day": P})
    assert exc.value.winning_version is None
    assert data_files(table) == before and intents(table) == [f"{holder.txn_id}.json"]

    # another partition is unaffected by the intent on P
    other = write(batch(spark, Q, 200, 3), str(table), mode="overwrite", replace_where={"day": Q})
    assert other.version == 2 and other.num_rows == 3 and other.num_removed > 0
    holder.abort()
    assert intents(table) == []


def test_a_dead_writers_expired_intent_blocks_no_spark_job(spark: Any, tmp_path: Path) -> None:
    table = seeded(spark, tmp_path)
    dead = DeltaLog.for_table(table, clock=lambda: 1.0).start_transaction()
    handle = dead.declare_intent(where={"day": P}, timeout_s=60)
    handle.stop()  # crashed: the heartbeat stops, the file stays
    past = time.time() - 61
    os.utime(table / handle.path, (past, past))
    result = write(batch(spark, P, 300, 5), str(table), mode="overwrite", replace_where={"day": P})
    assert result.version == 2 and result.num_rows == 5
    assert intents(table) == [f"{dead.txn_id}.json"]  # left for cleanup
