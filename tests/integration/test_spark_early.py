"""Spark overwrites declare an intent for the whole job and stop early: before the job writes anything.

``write`` declares the intent in the caller's process (alive for the whole job, so it keeps the heartbeat) and
checks it before handing the DataFrame to ``format("deltalog")``; the sink's commit is then checked against
every commit since the version the job planned on.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from deltalog import ConcurrentAppendError, DeltaLog
from deltalog import actions as A
from deltalog.spark.gate import Gate
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


def test_an_overwrite_whose_partition_changes_while_it_writes_fails_and_cleans_up(spark: Any, tmp_path: Path) -> None:
    table = seeded(spark, tmp_path)
    before = data_files(table)
    gate = Gate()
    failed: list[BaseException] = []

    def writer_b() -> None:
        try:
            write(
                batch(spark, P, 100, 6), str(table), mode="overwrite", replace_where={"day": P}, before_commit=gate.hook
            )
        except BaseException as exc:  # asserted below
            failed.append(exc)

    b = threading.Thread(target=writer_b)
    b.start()
    try:
        gate.arrivals(1, alive=b.is_alive)  # B's files are written, its commit waits
        live = intents(table)
        add = A.Add(path=sorted(before)[0], partition_values={"day": P}, size=1, modification_time=1, data_change=True)
        version = DeltaLog.for_table(table).start_transaction().commit([add]).version  # A commits into P
    finally:
        gate.close()
    b.join(timeout=300)
    assert len(live) == 1  # B's intent was live during its job
    assert len(failed) == 1 and isinstance(failed[0], ConcurrentAppendError), failed
    assert failed[0].winning_version == version == 2
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
