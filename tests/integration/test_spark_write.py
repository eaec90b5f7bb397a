"""Spark writes through deltalog: batch appends, partition overwrites, exactly-once reruns, conflicts, refusals.

``write`` is ``df.write.format("deltalog")`` behind Python arguments and ``read`` is
``spark.read.format("deltalog")``; the commit runs in Spark's Python worker beside the driver, so a test that
must act between a job's files and its commit waits for it at a cross-process gate (:mod:`deltalog.spark.gate`).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from pyspark.sql import functions as F

from deltalog import ConcurrentModificationError, DeltaLog, InvalidArgumentError
from deltalog.errors import NotNullViolationError, VersionNotFoundError
from deltalog.spark.gate import Gate
from deltalog.spark.reader import read
from deltalog.spark.writer import SchemaMismatchError, WriteResult, write
from tests.integration.test_merge_row_tracking import ids_of, three_files
from tests.peers import deltalake_view, duckdb_connection, duckdb_view
from tests.protocol_checker import assert_valid

SCHEMA = "id long, city string, amount double, day string"
APP = "daily-sales"


def batch(spark: Any, day: str, first: int, count: int, city: str = "Oslo") -> Any:
    rows = [(i, city, i * 1.5, day) for i in range(first, first + count)]
    return spark.createDataFrame(rows, SCHEMA).repartition(2)


def rows_at(spark: Any, table: Path, version: int | None = None) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in read(spark, str(table), version=version).collect())


def data_files(table: Path) -> set[str]:
    return {str(p.relative_to(table)) for p in table.rglob("*.parquet") if "_delta_log" not in p.parts}


def expected(day: str, first: int, count: int, city: str = "Oslo") -> list[tuple[Any, ...]]:
    return [(i, city, i * 1.5, day) for i in range(first, first + count)]


def test_batch_job_append_overwrite_rerun_and_time_travel(spark: Any, tmp_path: Path) -> None:
    table = tmp_path / "sales"
    r1 = write(batch(spark, "2026-11-01", 0, 5), str(table), partition_by=["day"], app_id=APP, app_version=1)
    r2 = write(batch(spark, "2026-11-02", 5, 4), str(table), app_id=APP, app_version=2)
    assert (r1.version, r2.version) == (0, 1)  # version 0 is the table's creation with the first batch
    assert r1.num_rows == 5 and r2.num_rows == 4

    # overwrite one partition: the other partition's rows survive
    r3 = write(
        batch(spark, "2026-11-01", 100, 2, city="Lima"),
        str(table),
        mode="overwrite",
        replace_where={"day": "2026-11-01"},
        app_id=APP,
        app_version=3,
    )
    assert r3.version == 2 and r3.num_removed == r1.num_files

    files_before = data_files(table)
    rerun = write(batch(spark, "2026-11-02", 5, 4), str(table), app_id=APP, app_version=2)
    assert rerun == WriteResult(None, True, 0, 0, 0, ())
    assert DeltaLog.for_table(table).latest_version() == 2
    assert data_files(table) == files_before  # a skipped batch writes no file

    assert rows_at(spark, table, 0) == expected("2026-11-01", 0, 5)
    assert rows_at(spark, table, 1) == sorted(expected("2026-11-01", 0, 5) + expected("2026-11-02", 5, 4))
    assert rows_at(spark, table, 2) == sorted(expected("2026-11-01", 100, 2, "Lima") + expected("2026-11-02", 5, 4))
    assert rows_at(spark, table) == rows_at(spark, table, 2)
    # Delta Spark's timestampAsOf rule: a time after the latest commit names that commit, reads nothing
    with pytest.raises(VersionNotFoundError, match=r"after the latest commit \(version 2 at "):
        read(spark, str(table), timestamp="2999-01-01T00:00:00Z")


def test_typed_partitions_escaping_and_nulls_round_trip(spark: Any, tmp_path: Path) -> None:
    table = tmp_path / "typed"
    df = spark.sql(
        """
        SELECT * FROM VALUES
          (1, DATE'2024-02-29', TIMESTAMP'2024-01-01 10:00:00.123456', 'a:b/c=d%e', CAST(1.50 AS DECIMAL(5,2))),
          (2, NULL, NULL, NULL, NULL),
          (3, DATE'2024-02-29', TIMESTAMP'2024-01-01 10:00:00.123456', '', CAST(-2.25 AS DECIMAL(5,2)))
        AS t(id, d, ts, s, dec)
        """
    )
    write(df, str(table), partition_by=["d", "ts", "s", "dec"])
    log = DeltaLog.for_table(table)
    for path in log.snapshot().files().column("path").to_pylist():
        assert (table / unquote(path)).is_file(), path
    assert any("a%253Ab%252Fc%253Dd%2525e" in p for p in log.snapshot().files().column("path").to_pylist())
    got = sorted((tuple(r) for r in read(spark, str(table)).collect()), key=lambda r: r[0])
    want = sorted((tuple(r) for r in df.collect()), key=lambda r: r[0])
    # the empty string partition value reads back as null, as in Delta
    assert got == [w if w[0] != 3 else (*w[:3], None, w[4]) for w in want]
    assert [(f.name, f.dataType) for f in read(spark, str(table)).schema] == [(f.name, f.dataType) for f in df.schema]


def test_timestamp_and_date_partitions_before_year_1000_round_trip(spark: Any, tmp_path: Path) -> None:
    """Spark's executors share the data writer's partition value spelling: four-digit years from 0001 to 9999
    (issue 23 item 6), which the commit check accepts and duckdb reads."""
    table = tmp_path / "old"
    df = spark.sql(
        """
        SELECT * FROM VALUES
          (1, DATE'0001-01-01', TIMESTAMP'0001-01-01 00:00:00', TIMESTAMP_NTZ'0001-01-01 00:00:00'),
          (2, DATE'0999-12-31', TIMESTAMP'0999-12-31 23:59:59.999999', TIMESTAMP_NTZ'0999-12-31 23:59:59.999999'),
          (3, DATE'9999-12-31', TIMESTAMP'9999-12-31 23:59:59.999999', TIMESTAMP_NTZ'9999-12-31 23:59:59.999999')
        AS t(id, d, ts, tsn)
        """
    )
    write(df, str(table), partition_by=["d", "ts", "tsn"])
    assert_valid(table)
    values = sorted(tuple(a.partition_values.values()) for a in DeltaLog.for_table(table).snapshot().add_actions())
    assert values[:2] == [
        ("0001-01-01", "0001-01-01T00:00:00.000000Z", "0001-01-01 00:00:00.000000"),
        ("0999-12-31", "0999-12-31T23:59:59.999999Z", "0999-12-31 23:59:59.999999"),
    ]

    def texts(frame: Any) -> list[tuple[Any, ...]]:  # PySpark's collect cannot make a datetime for year 1
        columns = ["id", *(f"cast({c} as string)" for c in ("d", "ts", "tsn"))]
        return sorted(tuple(r) for r in frame.selectExpr(*columns).collect())

    assert texts(read(spark, str(table))) == texts(df)
    con = duckdb_connection()
    try:
        found = con.execute(f"SELECT id, d, tsn FROM delta_scan('{table}') ORDER BY id").fetchall()
    finally:
        con.close()
    ends = [
        dt.datetime(1, 1, 1),
        dt.datetime(999, 12, 31, 23, 59, 59, 999999),
        dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
    ]
    assert found == [(i, end.date(), end) for i, end in enumerate(ends, 1)]


def test_schema_mismatch_refused_before_any_file_is_written(spark: Any, tmp_path: Path) -> None:
    table = tmp_path / "strict"
    write(batch(spark, "2026-11-01", 0, 3), str(table), partition_by=["day"])
    before = data_files(table)
    missing = spark.createDataFrame([(1, "x")], "id long, day string")
    with pytest.raises(SchemaMismatchError, match=r"missing columns \['city', 'amount'\]"):
        write(missing, str(table))
    wrong = spark.createDataFrame([("1", "x", 1.0, "d")], "id string, city string, amount double, day string")
    with pytest.raises(SchemaMismatchError, match="id: table long, data string"):
        write(wrong, str(table))
    extra = batch(spark, "2026-11-01", 0, 1).withColumn("bonus", F.lit(1))
    with pytest.raises(SchemaMismatchError, match=r"\['bonus'\]"):
        write(extra, str(table))
    with pytest.raises(SchemaMismatchError, match="partition_by"):
        write(batch(spark, "2026-11-01", 0, 1), str(table), partition_by=["city"])
    assert data_files(table) == before
    assert DeltaLog.for_table(table).latest_version() == 0


def test_a_new_table_is_created_by_the_jobs_own_commit_and_a_failed_job_leaves_none(spark: Any, tmp_path: Path) -> None:
    """Version 0 holds protocol, metadata and the job's files, as Delta Spark writes it; a job that fails on its
    data leaves no ``_delta_log``, so the rerun creates the table."""
    table = tmp_path / "fresh"
    failing = batch(spark, "2026-11-01", 0, 6).withColumn(
        "amount", F.expr("IF(id = 4, CAST(raise_error('bad row 4') AS DOUBLE), amount)")
    )
    with pytest.raises(Exception, match="bad row 4"):
        write(failing, str(table), partition_by=["day"])
    # (a task still running when another failed the job may leave its file: no commit references it)
    assert not (table / "_delta_log").exists()
    result = write(batch(spark, "2026-11-01", 0, 6), str(table), partition_by=["day"])
    assert result.version == 0 and sorted(p.name for p in (table / "_delta_log").iterdir()) == [f"{0:020d}.json"]
    snap = DeltaLog.for_table(table).snapshot()
    assert snap.num_files == result.num_files and snap.partition_columns == ["day"]
    assert deltalake_view(table).version == 0 and deltalake_view(table).rows == duckdb_view(table).rows == 6
    assert rows_at(spark, table) == expected("2026-11-01", 0, 6)


def test_executors_enforce_not_null_and_the_driver_gets_the_typed_error(spark: Any, tmp_path: Path) -> None:
    """The one data-file writer runs in the tasks: a null for a NOT NULL column fails the job with deltalog's
    own error (carried from the executor), the task's files are deleted and nothing is committed."""
    table = tmp_path / "strict_nulls"
    DeltaLog.for_table(table).create(
        '{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},'
        '{"name":"city","type":"string","nullable":true,"metadata":{}}]}'
    )
    write(spark.createDataFrame([(1, "Oslo")], "id long, city string"), str(table))
    before = data_files(table)
    nulls = spark.createDataFrame([(2, "Lima"), (None, "Kyoto")], "id long, city string").coalesce(1)
    with pytest.raises(NotNullViolationError, match="column id is non-nullable") as info:
        write(nulls, str(table))
    assert info.value.column == "id"
    assert data_files(table) == before
    assert DeltaLog.for_table(table).latest_version() == 1


def test_replace_where_on_a_data_column_replaces_the_matching_rows(spark: Any, tmp_path: Path) -> None:
    """As in Delta Spark, replaceWhere may name data columns: the matching rows are removed (whole files, or
    rows by deletion vectors or rewritten files) and the new rows must match too."""
    table = tmp_path / "rw"
    write(batch(spark, "2026-11-01", 0, 3), str(table), partition_by=["day"])
    write(batch(spark, "2026-11-01", 3, 2, city="Lima"), str(table))
    result = write(batch(spark, "2026-11-01", 10, 1), str(table), mode="overwrite", replace_where={"city": "Oslo"})
    assert result.version == 2 and result.num_removed >= 1
    want = sorted(expected("2026-11-01", 3, 2, "Lima") + expected("2026-11-01", 10, 1))
    assert rows_at(spark, table) == want
    assert deltalake_view(table).rows == duckdb_view(table).rows == len(want)


def test_replace_where_refusals(spark: Any, tmp_path: Path) -> None:
    table = tmp_path / "rw"
    write(batch(spark, "2026-11-01", 0, 3), str(table), partition_by=["day"])
    before = data_files(table)
    with pytest.raises(InvalidArgumentError, match="unknown column 'nope'"):
        write(batch(spark, "2026-11-01", 0, 1), str(table), mode="overwrite", replace_where={"nope": "x"})
    assert data_files(table) == before
    # rows outside the predicate: refused, and the files just written are deleted
    with pytest.raises(InvalidArgumentError, match="does not satisfy replace_where"):
        write(batch(spark, "2026-11-09", 0, 1), str(table), mode="overwrite", replace_where={"day": "2026-11-01"})
    assert data_files(table) == before
    assert DeltaLog.for_table(table).latest_version() == 0


def test_concurrent_jobs_on_disjoint_partitions_both_commit(spark: Any, tmp_path: Path) -> None:
    table = tmp_path / "concurrent"
    write(batch(spark, "2026-11-01", 0, 2), str(table), partition_by=["day"])
    write(batch(spark, "2026-11-02", 2, 2), str(table))
    gate = Gate()  # both jobs have written their files before either commits
    results: dict[str, WriteResult] = {}
    errors: list[BaseException] = []

    def job(day: str, first: int) -> None:
        try:
            results[day] = write(
                batch(spark, day, first, 3, city="Kyoto"),
                str(table),
                mode="overwrite",
                replace_where={"day": day},
                before_commit=gate.hook,
            )
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=job, args=a) for a in (("2026-11-01", 10), ("2026-11-02", 20))]
    for t in threads:
        t.start()
    try:
        gate.arrivals(2, alive=lambda: all(t.is_alive() for t in threads))
    finally:
        gate.close()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    assert sorted(r.version for r in results.values() if r.version is not None) == [2, 3]
    assert rows_at(spark, table) == sorted(
        expected("2026-11-01", 10, 3, "Kyoto") + expected("2026-11-02", 20, 3, "Kyoto")
    )


def _in_background(call: Callable[[], Any]) -> tuple[threading.Thread, list[Any], list[BaseException]]:
    done: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(call())
        except BaseException as exc:  # reported by the caller
            failed.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, done, failed


def test_overwrites_of_one_partition_conflict_and_loser_files_are_deleted(spark: Any, tmp_path: Path) -> None:
    table = tmp_path / "conflict"
    write(batch(spark, "2026-11-01", 0, 2), str(table), partition_by=["day"])
    before = data_files(table)
    gate = Gate()
    first, _, failed = _in_background(
        lambda: write(
            batch(spark, "2026-11-01", 90, 2),
            str(table),
            mode="overwrite",
            replace_where={"day": "2026-11-01"},
            before_commit=gate.hook,
        )
    )
    try:
        gate.arrivals(1, alive=first.is_alive)  # the first job sits between writing its files and committing
        # The first job declared an intent for the whole job; this rival opts out of early checks, since this
        # test is about the commit protocol's own conflict.
        winner = write(
            batch(spark, "2026-11-01", 50, 2),
            str(table),
            mode="overwrite",
            replace_where={"day": "2026-11-01"},
            early_conflicts=False,
        )
    finally:
        gate.close()
    first.join(timeout=300)
    assert len(failed) == 1 and isinstance(failed[0], ConcurrentModificationError), failed
    assert failed[0].winning_version == 1
    winner_files = {unquote(p) for p in winner.paths}
    assert data_files(table) == before | winner_files  # the loser's files are gone, the winner's stay
    assert rows_at(spark, table) == expected("2026-11-01", 50, 2)


def test_exactly_once_batch_committed_meanwhile_is_skipped_and_cleaned(spark: Any, tmp_path: Path) -> None:
    table = tmp_path / "once"
    write(batch(spark, "2026-11-01", 0, 1), str(table), partition_by=["day"])
    gate = Gate()
    first, done, failed = _in_background(
        lambda: write(batch(spark, "2026-11-05", 7, 2), str(table), app_id=APP, app_version=5, before_commit=gate.hook)
    )
    try:
        gate.arrivals(1, alive=first.is_alive)
        other = write(batch(spark, "2026-11-05", 7, 2), str(table), app_id=APP, app_version=5)  # the same batch
    finally:
        gate.close()
    first.join(timeout=300)
    assert not failed, failed
    assert done[0].skipped and done[0].version is None
    assert other.version == 1
    assert DeltaLog.for_table(table).latest_version() == 1
    assert len(data_files(table)) == 1 + other.num_files
    assert rows_at(spark, table) == sorted(expected("2026-11-01", 0, 1) + expected("2026-11-05", 7, 2))


def test_replace_where_on_a_row_tracking_table_keeps_the_copied_rows_ids(spark: Any, tmp_path: Path) -> None:
    """The sink's replace_where copies the unmatched rows of the files it touches with their row ids and commit
    versions, as deltalog.write's does; the rows it writes get fresh ids."""
    table = tmp_path / "rt"
    three_files(table, {"delta.enableRowTracking": "true"})
    before = ids_of(table)
    new = spark.createDataFrame([(i, -i) for i in range(5, 15)], "id long, v long").repartition(2)
    result = write(new, str(table), mode="overwrite", replace_where="id >= 5 AND id < 15")
    after = ids_of(table)
    kept = [k for k in range(30) if not 5 <= k < 15]
    assert {k: after[k] for k in kept} == {k: before[k] for k in kept}
    assert {after[k][1] for k in range(5, 15)} == {result.version}
    assert len({i for i, _ in after.values()}) == len(after) == 30
    assert_valid(table)
    assert deltalake_view(table).rows == duckdb_view(table).rows == 30
