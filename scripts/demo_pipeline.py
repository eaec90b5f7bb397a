"""The demo's pipeline: what a day of a real Delta table looks like, run against a local directory.

Each step is a situation deltalog exists to get right, staged so it happens the same way on every run:

1. daily Spark batches with exactly-once bookkeeping, so a rerun of a committed day writes nothing;
2. a plain-Python writer committing while a Spark job is between writing its files and committing;
3. two overwrites of one partition racing: one wins, the other gets a typed conflict and its files go away;
4. the checkpoints that keep reads cheap: one written by the committing writer, one by a Spark job;
5. late corrections as a Delta Spark job writes them, through ``deltalog.spark.DeltaTable``: a MERGE of
   corrected and late sales (Spark joins the correction DataFrame with the table's rows) and a DELETE of voided
   sales (a pyspark Column condition), each one commit.

Every Spark job goes through ``format("deltalog")`` or ``DeltaTable``: the daily batches and the reads are
``df.write.format("deltalog")`` and ``spark.read.format("deltalog")`` as a PySpark user writes them, the
corrections ``DeltaTable.forPath(spark, uri).merge(...)`` and ``.delete(...)``; the races
use :func:`deltalog.spark.write` (the same sink) for its ``before_commit`` hook, which holds a job between
writing its files and committing them at a :class:`deltalog.spark.gate.Gate` (no sleeps: Spark commits in a
Python worker beside the driver, so the hook waits for this process over a socket). So the versions printed
here are the ones the test (tests/integration/test_demo.py) asserts.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import demo_plain_writer

from deltalog import DeltaLog
from deltalog.checkpoint.writer import CheckpointResult
from deltalog.errors import ConcurrentModificationError, TableNotFoundError
from deltalog.spark import DeltaTable, checkpoint, register, write
from deltalog.spark.gate import Gate
from deltalog.spark.writer import WriteResult

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Say = Callable[[str], None]

PARTITION = "day"
APP_ID = "daily-sales"  # the batch jobs' exactly-once id; app_version is the day as yyyymmdd
CHECKPOINT_INTERVAL = 4  # the racing overwrite of step 3 lands on v4: its committer writes the checkpoint
DAY1, DAY2, DAY3, DAY4 = "2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"
BACKFILL_DAY = "2026-10-31"  # the plain-Python writer's own partition
#: rows per batch: (day, first id, row count)
BATCHES = {DAY1: (0, 400), DAY2: (400, 500), DAY3: (900, 600), DAY4: (1500, 300)}
BACKFILL = (5000, 50)
OVERWRITE_A = (6000, 420)  # the recompute job that loses the race
OVERWRITE_B = (7000, 450)  # the correction job that wins it
#: step 5: the last CORRECTED ids of day 4 get new amounts, LATE ids after them arrive; sales of day 4 below
#: VOID_BELOW are voided
CORRECTED, LATE, VOID_BELOW = 20, 10, 5.0
WAIT_S = 120.0  # a guard against a hung handover, never reached on a healthy run


@dataclass(frozen=True)
class Conflict:
    """Step 3: the winner's version, and what the loser got."""

    winner_version: int
    winner_rows: int
    error: ConcurrentModificationError
    loser_files: tuple[str, ...]  # relative paths the losing job had written
    loser_files_left: tuple[str, ...]  # those still on disk afterwards (should be none)


@dataclass(frozen=True)
class Corrections:
    """Step 5: the MERGE's version and counts, the DELETE's version and rows."""

    merge_version: int
    updated: int
    inserted: int
    delete_version: int
    deleted: int


@dataclass(frozen=True)
class Outcome:
    """What the pipeline did, version by version; the demo prints it and the test asserts it."""

    root: Path
    day1_version: int
    day2_version: int
    rerun_skipped: bool
    plain_version: int
    concurrent_spark_version: int
    concurrent_spark_read_version: int
    conflict: Conflict
    auto_checkpoint_version: int | None
    auto_checkpoint_files: tuple[str, ...]
    day4_version: int
    spark_checkpoint: CheckpointResult
    corrections: Corrections


@dataclass(frozen=True)
class ReadBack:
    """Step 5: the table read by Spark at the latest version and at an earlier one."""

    latest_version: int
    latest_rows: int
    rows_per_day: dict[str, int]
    earlier_version: int
    earlier_rows: int


def batch_frame(spark: SparkSession, day: str, first_id: int, count: int) -> DataFrame:
    """One day of sales as a Spark job computes it (deterministic cities and amounts)."""
    return spark.range(first_id, first_id + count).selectExpr(
        "id",
        "element_at(array('Lisbon', 'Oslo', 'Kyoto', 'Lima', 'Accra'), CAST(id % 5 + 1 AS INT)) AS city",
        "round((id * 37 % 10000) / 100, 2) AS amount",
        f"DATE'{day}' AS {PARTITION}",
    )


def app_version(day: str) -> int:
    return int(dt.date.fromisoformat(day).strftime("%Y%m%d"))


def _latest(uri: str) -> int:
    try:
        return DeltaLog.for_table(uri).latest_version()
    except TableNotFoundError:
        return -1


def daily_batch(
    spark: SparkSession, uri: str, day: str, say: Say, configuration: Mapping[str, str] | None = None
) -> int | None:
    """One daily append, exactly once (``txnAppId``/``txnVersion``), as a PySpark job writes it; returns the
    version, None when the day was already committed."""
    first, count = BATCHES[day]
    writer = (
        batch_frame(spark, day, first, count)
        .write.format("deltalog")
        .mode("append")
        .option("partitionBy", PARTITION)
        .option("txnAppId", APP_ID)
        .option("txnVersion", str(app_version(day)))
    )
    for key, value in (configuration or {}).items():  # delta.* options: the table's properties when created
        writer = writer.option(key, value)
    before = _latest(uri)
    writer.save(uri)
    entry = DeltaLog.for_table(uri).history(limit=1)[0]
    if entry.version == before:
        say(f"    day {day} again ({APP_ID}={app_version(day)}): already committed, skipped")
        return None
    metrics = entry.operation_metrics or {}
    say(f"    day {day}: v{entry.version}, {metrics.get('numFiles')} file(s), {metrics.get('numOutputRows')} rows")
    return entry.version


def _held_at_commit(job: Callable[[Callable[[], None]], Any]) -> tuple[threading.Thread, Gate, list[Any], list[Any]]:
    """Run ``job(before_commit)`` in a thread; return once its files are written and its commit waits at a gate."""
    gate = Gate()
    done: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(job(gate.hook))
        except BaseException as exc:  # the caller reports it
            failed.append(exc)

    thread = threading.Thread(target=run, name="spark-job")
    thread.start()
    try:
        gate.arrivals(1, alive=thread.is_alive)
    except BaseException:
        gate.close()
        thread.join(timeout=WAIT_S)
        if failed:
            raise failed[0] from None
        raise
    return thread, gate, done, failed


def _finish(thread: threading.Thread, gate: Gate) -> None:
    gate.close()  # the held commit goes ahead
    thread.join(timeout=WAIT_S)
    if thread.is_alive():
        raise TimeoutError("the Spark job did not finish its commit")


# ---------------------------------------------------------------------------------------------- step 2


def concurrent_writers(spark: SparkSession, root: Path, say: Say) -> tuple[int, int, int]:
    """A plain-Python writer (``deltalog.write``) and a Spark job on the same table at the same time; both
    must land.

    The Spark job is held between writing its files and committing them while the plain writer writes and
    commits its day, so the Spark commit finds a winner it did not read, checks it (an append into another
    partition: no conflict) and lands on the next version.
    Returns (plain writer's version, Spark job's version, the version the Spark job read).
    """
    writer = demo_plain_writer.PlainWriter(root, PARTITION, BACKFILL_DAY)
    first, count = BATCHES[DAY3]

    def spark_job(before_commit: Callable[[], None]) -> WriteResult:
        frame = batch_frame(spark, DAY3, first, count)
        what = {"app_id": APP_ID, "app_version": app_version(DAY3), "before_commit": before_commit}
        return write(frame, str(root), partition_by=[PARTITION], **what)

    thread, gate, done, failed = _held_at_commit(spark_job)
    try:
        result = writer.write(*BACKFILL)
        assert result.version is not None
        plain_version = result.version
        say(
            f"    plain-Python writer (deltalog.write): v{plain_version}, {writer.num_files} file, "
            f"{writer.num_rows} rows into {PARTITION}={BACKFILL_DAY}, committed while the Spark job had its "
            "files written"
        )
    finally:
        _finish(thread, gate)
    if failed:
        raise failed[0]
    spark_version = done[0].version
    assert spark_version is not None
    say(f"    day {DAY3}: v{spark_version}, {done[0].num_files} file(s), {done[0].num_rows} rows")
    commit_info = DeltaLog.for_table(root).snapshot(version=spark_version).commit_info or {}
    spark_read = int(commit_info.get("readVersion", -1))
    say(f"    the Spark job had read v{spark_read}: checked v{plain_version} (no conflict), landed as v{spark_version}")
    return plain_version, spark_version, spark_read


# ---------------------------------------------------------------------------------------------- step 3


def _on_disk(root: Path, day: str) -> set[str]:
    return {p.relative_to(root).as_posix() for p in (root / f"{PARTITION}={day}").glob("*.parquet")}


def _live(root: Path) -> set[str]:
    return {unquote(p) for p in DeltaLog.for_table(root).snapshot().files().column("path").to_pylist()}


def racing_overwrites(spark: SparkSession, root: Path, say: Say) -> Conflict:
    """Two jobs replace day 1 at the same time. Job A writes its files; before it commits, job B runs whole.

    Both read day 1 (an overwrite reads what it replaces), so when A commits it finds B's commit touching
    what it read: a typed conflict naming the winning version, and A's written files are deleted.
    """
    uri = str(root)
    where = {PARTITION: DAY1}

    def job_a(before_commit: Callable[[], None]) -> WriteResult:
        frame = batch_frame(spark, DAY1, *OVERWRITE_A)
        return write(frame, uri, mode="overwrite", replace_where=where, before_commit=before_commit)

    thread, gate, _, failed = _held_at_commit(job_a)
    try:
        a_files = sorted(_on_disk(root, DAY1) - _live(root))  # what A wrote: on disk, not in the log
        # B runs inside A's commit window, so it declared later than A; it skips the early check to show
        # the commit protocol's own conflict (on its own, B would stop early, before writing anything).
        b = write(
            batch_frame(spark, DAY1, *OVERWRITE_B), uri, mode="overwrite", replace_where=where, early_conflicts=False
        )
        say(f"    job B: v{b.version}, replaced {b.num_removed} file(s) of {PARTITION}={DAY1} by {b.num_files}")
    finally:
        _finish(thread, gate)
    if not failed:
        raise AssertionError("job A committed although job B replaced the same partition first")
    error = failed[0]
    if not isinstance(error, ConcurrentModificationError):
        raise error
    left = tuple(f for f in a_files if (root / f).exists())
    say(f"    job A: {type(error).__name__} (winning version {error.winning_version})")
    say(f"           {error}")
    say(f"    job A's {len(a_files)} written file(s) deleted: {'yes' if not left else f'NO, {len(left)} left'}")
    assert b.version is not None
    return Conflict(b.version, b.num_rows, error, tuple(a_files), left)


# ---------------------------------------------------------------------------------------------- step 5


def corrections(spark: SparkSession, root: Path, say: Say) -> Corrections:
    """Day 4's corrections through ``DeltaTable``, Delta Spark's Python API: corrected amounts for its last sales
    and its late sales merged in on the sale id (matched: update the amount; not matched: insert), then its voided
    sales deleted. The merge's source is a DataFrame Spark joins with the table's rows: nothing of it is
    collected here."""
    from pyspark.sql import functions as F

    first, count = BATCHES[DAY4]
    fixes = batch_frame(spark, DAY4, first + count - CORRECTED, CORRECTED + LATE).withColumn(
        "amount", F.round(F.col("amount") + 1, 2)
    )
    table = DeltaTable.forPath(spark, str(root))
    merged = (
        table.alias("t")
        .merge(fixes.alias("s"), "t.id = s.id")
        .whenMatchedUpdate(set={"amount": "s.amount"})
        .whenNotMatchedInsertAll()
        .execute()
        .collect()[0]
    )
    merge_version = DeltaLog.for_table(root).latest_version()
    say(
        f"    MERGE of {CORRECTED + LATE} corrections into {PARTITION}={DAY4}: v{merge_version}, "
        f"{merged.num_updated_rows} amounts updated, {merged.num_inserted_rows} late sales inserted"
    )
    table.delete((F.col(PARTITION) == F.lit(dt.date.fromisoformat(DAY4))) & (F.col("amount") < VOID_BELOW))
    entry = DeltaLog.for_table(root).history(limit=1)[0]
    deleted = int((entry.operation_metrics or {}).get("numDeletedRows", 0))
    say(f"    DELETE of {PARTITION}={DAY4}'s sales below {VOID_BELOW}: v{entry.version}, {deleted} rows")
    return Corrections(merge_version, merged.num_updated_rows, merged.num_inserted_rows, entry.version, deleted)


# ---------------------------------------------------------------------------------------------- the pipeline


def _checkpoint_files(root: Path, version: int) -> tuple[str, ...]:
    return tuple(sorted(p.name for p in (root / "_delta_log").glob(f"{version:020d}.checkpoint*.parquet")))


def run_pipeline(spark: SparkSession, root: Path, say: Say = print) -> Outcome:
    """Steps 1-4 on a table that does not exist yet at ``root``; returns what happened."""
    uri = str(root)
    register(spark)  # format("deltalog") for this session
    say(f"== 1. daily Spark batches into {root} (exactly once: {APP_ID}, app_version=yyyymmdd)")
    conf = {"delta.checkpointInterval": str(CHECKPOINT_INTERVAL)}
    day1 = daily_batch(spark, uri, DAY1, say, configuration=conf)
    say(
        f"    (the first job created the table with its files as v0, with "
        f"delta.checkpointInterval={CHECKPOINT_INTERVAL})"
    )
    day2 = daily_batch(spark, uri, DAY2, say)
    rerun = daily_batch(spark, uri, DAY2, say)
    assert day1 is not None and day2 is not None

    say("\n== 2. a plain-Python writer and a Spark job (day 3) commit at the same time")
    plain_version, spark_version, spark_read = concurrent_writers(spark, root, say)

    say(f"\n== 3. two jobs overwrite {PARTITION}={DAY1} at the same time (B starts while A is committing)")
    conflict = racing_overwrites(spark, root, say)

    say("\n== 4. checkpoints")
    hint = DeltaLog.for_table(root).read_hint()
    auto_version = hint.version if hint is not None else None
    auto_files = _checkpoint_files(root, auto_version) if auto_version is not None else ()
    if auto_version is not None:
        say(
            f"    automatic: v{auto_version} is a multiple of delta.checkpointInterval={CHECKPOINT_INTERVAL}, "
            f"so its committer also wrote {', '.join(auto_files)}"
        )
    else:
        say("    automatic: NONE written")
    day4 = daily_batch(spark, uri, DAY4, say)
    assert day4 is not None
    spark_cp = checkpoint(spark, uri, parts=2)
    say(
        f"    Spark job: checkpoint of v{spark_cp.version} in {len(spark_cp.files)} parts "
        f"({spark_cp.num_add_files} live files, {spark_cp.num_actions} actions, {spark_cp.seconds:.1f} s)"
    )

    say(f"\n== 5. corrections to {PARTITION}={DAY4} through deltalog.spark.DeltaTable (Delta Spark's API)")
    fixed = corrections(spark, root, say)
    return Outcome(
        root=root,
        day1_version=day1,
        day2_version=day2,
        rerun_skipped=rerun is None,
        plain_version=plain_version,
        concurrent_spark_version=spark_version,
        concurrent_spark_read_version=spark_read,
        conflict=conflict,
        auto_checkpoint_version=auto_version,
        auto_checkpoint_files=auto_files,
        day4_version=day4,
        spark_checkpoint=spark_cp,
        corrections=fixed,
    )


def read_back(spark: SparkSession, root: Path, earlier_version: int) -> ReadBack:
    """Step 5's Spark side: the latest version and ``earlier_version`` (time travel), counted by Spark."""
    register(spark)
    latest = spark.read.format("deltalog").load(str(root))
    per_day = {str(r[PARTITION]): int(r["count"]) for r in latest.groupBy(PARTITION).count().collect()}
    return ReadBack(
        latest_version=DeltaLog.for_table(root).snapshot().version,
        latest_rows=sum(per_day.values()),  # the same job as the per-day counts: one Spark job fewer
        rows_per_day=dict(sorted(per_day.items())),
        earlier_version=earlier_version,
        earlier_rows=spark.read.format("deltalog").option("versionAsOf", earlier_version).load(str(root)).count(),
    )


def voided() -> int:
    """Day 4's sales step 5 deletes: amounts (``batch_frame``'s, plus one for the corrected and late ones) below
    :data:`VOID_BELOW`."""
    first, count = BATCHES[DAY4]
    out = 0
    for i in range(first, first + count + LATE):
        amount = round((i * 37 % 10000) / 100, 2) + (1 if i >= first + count - CORRECTED else 0)
        out += amount < VOID_BELOW
    return out


def expected_rows() -> int:
    """The final row count the pipeline should leave: day 1 is job B's, the rest as appended, then day 4's late
    sales in and its voided ones out."""
    appended = sum(count for day, (_, count) in BATCHES.items() if day != DAY1)
    return appended + BACKFILL[1] + OVERWRITE_B[1] + LATE - voided()


def problems(outcome: Outcome, back: ReadBack) -> list[str]:
    """What a green run must show; anything listed here makes the demo exit non-zero."""
    found = []
    if not outcome.rerun_skipped:
        found.append("the rerun of day 2 committed again")
    if outcome.conflict.loser_files_left:
        found.append(f"the losing job's files were left behind: {outcome.conflict.loser_files_left}")
    if outcome.auto_checkpoint_version is None or not outcome.auto_checkpoint_files:
        found.append("no automatic checkpoint was written")
    fixed = outcome.corrections
    if (fixed.updated, fixed.inserted, fixed.deleted) != (CORRECTED, LATE, voided()):
        found.append(f"the corrections changed {fixed} rows, expected {CORRECTED}, {LATE}, {voided()}")
    if back.latest_rows != expected_rows():
        found.append(f"Spark read {back.latest_rows} rows, expected {expected_rows()}")
    return found


__all__ = ["Corrections", "Outcome", "ReadBack", "expected_rows", "problems", "read_back", "run_pipeline", "voided"]
