"""Spark SQL expressions where tables and callers use them (issue 25): generated columns computed on write and
checked when given, read by the peers with the same values; every filter form at every entry point selecting
the same rows; a delete's read predicate the same whatever form it was written in, so none conflicts with an
append to another partition; generated partition columns pruning through their source column; the Spark
writer, which evaluates the rules with Spark SQL, agreeing with deltalog's evaluator on the same rows.
"""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable, Field, Schema

import deltalog
from deltalog import DeltaLog
from deltalog.errors import ConstraintViolationError, ExpressionValueError
from tests.peers import duckdb_connection
from tests.protocol_checker import assert_valid

UTC = dt.timezone.utc
GENERATED = {
    "day": ("date", "CAST(ts AS DATE)"),
    "year": ("integer", "YEAR(ts)"),
    "month": ("string", "date_format(ts, 'yyyy-MM')"),
    "up": ("string", "upper(s)"),
    "ab": ("string", "concat(a, '-', b)"),
}
STAMPS = [
    dt.datetime(2024, 2, 29, 23, 30, tzinfo=UTC),
    dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC),
    dt.datetime(2024, 11, 3, 8, 30, tzinfo=UTC),
    None,
]


def generated_table(root: Path, partition_by: list[str] | None = None) -> None:
    fields = [
        Field("id", "long"),
        Field("ts", "timestamp"),
        Field("s", "string"),
        Field("a", "string"),
        Field("b", "string"),
    ]
    fields += [Field(name, t, metadata={"delta.generationExpression": sql}) for name, (t, sql) in GENERATED.items()]
    DeltaTable.create(str(root), Schema(fields), partition_by=partition_by)


def source_rows(ids: range | list[int]) -> pa.Table:
    n = len(ids)
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "ts": pa.array([STAMPS[i % len(STAMPS)] for i in range(n)], pa.timestamp("us", tz="UTC")),
            "s": pa.array([["straße", "x", None, "日本"][i % 4] for i in range(n)]),
            "a": pa.array([["p", None, "q", ""][i % 4] for i in range(n)]),
            "b": pa.array([["1", "2", None, "é"][i % 4] for i in range(n)]),
        }
    )


def expected(table: pa.Table) -> list[dict[str, Any]]:
    out = []
    for row in table.to_pylist():
        ts, s, a, b = row["ts"], row["s"], row["a"], row["b"]
        out.append(
            {
                "id": row["id"],
                "day": ts.date() if ts else None,
                "year": ts.year if ts else None,
                "month": ts.strftime("%Y-%m") if ts else None,
                "up": s.upper() if s is not None else None,
                "ab": None if a is None or b is None else f"{a}-{b}",
            }
        )
    return out


COLUMNS = ["id", *GENERATED]


def peers_read(root: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    lake = DeltaTable(str(root)).to_pyarrow_table(columns=COLUMNS).sort_by("id").to_pylist()
    con = duckdb_connection()
    try:
        duck = con.execute(f"SELECT {', '.join(COLUMNS)} FROM delta_scan('{root}') ORDER BY id").fetchall()
    finally:
        con.close()
    return lake, [dict(zip(COLUMNS, r, strict=True)) for r in duck]


@pytest.mark.parametrize("partition_by", [None, ["day"]])
def test_generated_columns_are_computed_and_the_peers_read_the_same_values(
    tmp_path: Path, partition_by: list[str] | None
) -> None:
    root = tmp_path / "t"
    generated_table(root, partition_by)
    data = source_rows(range(8))
    deltalog.write(data, root)
    given = source_rows(range(8, 12))
    for name in GENERATED:  # explicit values that agree are accepted
        values = [r[name] for r in expected(given)]
        given = given.append_column(
            name, pa.array(values, given.schema.field(name).type if name in given.schema.names else None)
        )
    deltalog.write(given, root)
    assert_valid(root)
    want = expected(pa.concat_tables([data, source_rows(range(8, 12))]))
    mine = DeltaLog.for_table(root).snapshot().to_arrow(columns=COLUMNS).sort_by("id").to_pylist()
    lake, duck = peers_read(root)
    assert mine == lake == duck == want


@pytest.mark.parametrize("column", list(GENERATED))
def test_an_explicit_value_that_violates_the_generation_expression_is_refused(tmp_path: Path, column: str) -> None:
    root = tmp_path / "t"
    generated_table(root)
    data = source_rows(range(2))
    good = {name: [r[name] for r in expected(data)] for name in GENERATED}
    bad = dict(good)
    bad[column] = [
        good[column][0],
        {"day": dt.date(2000, 1, 1), "year": 1, "month": "1999-01", "up": "no", "ab": "n-o"}[column],
    ]
    for name, values in bad.items():
        data = data.append_column(name, pa.array(values))
    with pytest.raises(ConstraintViolationError, match=f"generated column {column}") as info:
        deltalog.write(data, root)
    assert info.value.row is not None and info.value.row[column] == bad[column][1]
    assert DeltaLog.for_table(root).latest_version() == 0


def test_generated_columns_use_the_session_time_zone(tmp_path: Path) -> None:
    root = tmp_path / "t"
    generated_table(root)
    stamp = dt.datetime(2024, 3, 1, 3, 0, tzinfo=UTC)  # still Feb 29 in Los Angeles
    data = pa.table({"id": pa.array([1], pa.int64()), "ts": pa.array([stamp], pa.timestamp("us", tz="UTC"))})
    deltalog.write(data, root, session_time_zone="America/Los_Angeles")
    row = DeltaLog.for_table(root).snapshot().to_arrow(columns=["day", "month"]).to_pylist()[0]
    assert row == {"day": dt.date(2024, 2, 29), "month": "2024-02"}


def test_a_malformed_value_fails_the_write_before_anything_is_committed(tmp_path: Path) -> None:
    root = tmp_path / "t"
    DeltaTable.create(
        str(root), Schema([Field("s", "string"), Field("n", "long", metadata={"delta.generationExpression": "s + 1"})])
    )
    with pytest.raises(ExpressionValueError, match="'a'") as info:
        deltalog.write(pa.table({"s": ["1", "a"]}), root)
    assert info.value.error_class == "CAST_INVALID_INPUT"
    assert DeltaLog.for_table(root).latest_version() == 0
    deltalog.write(pa.table({"s": ["1", "41"]}), root)
    assert sorted(DeltaLog.for_table(root).snapshot().to_arrow(columns=["n"]).column("n").to_pylist()) == [2, 42]


# ---------------------------------------------------------------------------------------------- filter forms
def day_table(root: Path) -> None:
    days = ["x", "y", "z"]
    data = pa.table(
        {
            "id": pa.array(range(9), pa.int64()),
            "day": [days[i % 3] for i in range(9)],
            "v": [float(i) for i in range(9)],
        }
    )
    deltalog.write(data, root, partition_by=["day"])


FORMS: dict[str, Any] = {
    "sql": "day = 'x' AND id >= 3",
    "expression": (pc.field("day") == "x") & (pc.field("id") >= 3),
    "dnf": [("day", "=", "x"), ("id", ">=", 3)],
    "dnf-or": [[("day", "=", "x"), ("id", ">=", 3)]],
    "mapping": {"day": "x", "id": {">=": 3}},
}


@pytest.mark.parametrize("form", list(FORMS))
def test_every_read_entry_point_takes_every_filter_form(tmp_path: Path, form: str) -> None:
    root = tmp_path / "t"
    day_table(root)
    snap = DeltaLog.for_table(root).snapshot()
    where = FORMS[form]
    assert sorted(snap.to_arrow(filter=where).column("id").to_pylist()) == [3, 6]
    assert sorted(b.num_rows for b in snap.scan(filter=where)) in ([2], [1, 1])
    files = snap.files(where=where)
    assert {dict(r)["day"] for r in files.column("partition_values").to_pylist()} == {"x"}
    txn = DeltaLog.for_table(root).start_transaction()
    assert txn.read(where).num_rows == files.num_rows
    txn.abort()


@pytest.mark.parametrize("form", list(FORMS))
def test_every_write_entry_point_takes_every_filter_form(tmp_path: Path, form: str) -> None:
    root = tmp_path / "t"
    day_table(root)
    DeltaLog.for_table(root).delete(FORMS[form])
    assert sorted(DeltaLog.for_table(root).snapshot().to_arrow().column("id").to_pylist()) == [0, 1, 2, 4, 5, 7, 8]
    other = tmp_path / "o"
    day_table(other)
    fresh = pa.table({"id": pa.array([30, 60], pa.int64()), "day": ["x", "x"], "v": [0.0, 0.0]})
    deltalog.write(fresh, other, mode="overwrite", replace_where=FORMS[form])
    assert sorted(DeltaLog.for_table(other).snapshot().to_arrow().column("id").to_pylist()) == [
        0,
        1,
        2,
        4,
        5,
        7,
        8,
        30,
        60,
    ]
    assert_valid(root)
    assert_valid(other)


@pytest.mark.parametrize("form", list(FORMS))
def test_changes_take_every_filter_form(tmp_path: Path, form: str) -> None:
    root = tmp_path / "t"
    days = ["x", "y", "z"]
    data = pa.table({"id": pa.array(range(9), pa.int64()), "day": [days[i % 3] for i in range(9)], "v": [0.0] * 9})
    deltalog.write(data, root, partition_by=["day"], configuration={"delta.enableChangeDataFeed": "true"})
    rows = DeltaLog.for_table(root).changes(0, filter=FORMS[form]).read_all()
    assert sorted(rows.column("id").to_pylist()) == [3, 6]
    assert set(rows.column("_change_type").to_pylist()) == {"insert"}


# ---------------------------------------------------------------------------------------------- read predicates
DELETES = {
    "sql": "day = 'x'",
    "expression": pc.field("day") == "x",
    "mapping": {"day": "x"},
    "dnf": [("day", "=", "x")],
}


def test_a_delete_records_the_same_read_predicate_whatever_form_it_is_written_in(tmp_path: Path) -> None:
    root = tmp_path / "t"
    day_table(root)
    snap = DeltaLog.for_table(root).snapshot()
    conditions = {form: snap.row_filter(where).conditions() for form, where in DELETES.items()}
    assert len(set(conditions.values())) == 1, conditions
    (only,) = conditions["sql"]
    assert (only.column, only.op, only.values) == ("day", "=", ("x",))


@pytest.mark.parametrize("form", list(DELETES))
def test_a_delete_on_one_partition_does_not_conflict_with_an_append_to_another(tmp_path: Path, form: str) -> None:
    root = tmp_path / "t"
    day_table(root)
    log = DeltaLog.for_table(root)
    started = threading.Event()
    appended = threading.Event()
    real_start = log.start_transaction

    def start_then_let_the_append_land() -> Any:
        txn = real_start()
        txn.snapshot.files()  # the delete's snapshot is loaded before the append lands
        started.set()
        assert appended.wait(60)
        return txn

    def append() -> None:
        assert started.wait(60)
        deltalog.write(pa.table({"id": pa.array([100], pa.int64()), "day": ["y"], "v": [1.0]}), root)
        appended.set()

    worker = threading.Thread(target=append)
    worker.start()
    from deltalog.dml.delete import delete

    result = delete(start_then_let_the_append_land, DELETES[form])
    worker.join()
    assert (result.version, result.attempts, result.winners) == (2, 2, (1,))  # retried past the append, not refused
    ids = sorted(DeltaLog.for_table(root).snapshot().to_arrow().column("id").to_pylist())
    assert ids == [1, 2, 4, 5, 7, 8, 100]


def test_a_predicate_on_a_generated_partitions_source_prunes_and_records_it(tmp_path: Path) -> None:
    root = tmp_path / "t"
    generated_table(root, ["day"])
    deltalog.write(source_rows(range(8)), root)
    snap = DeltaLog.for_table(root).snapshot()
    where = "ts >= '2024-02-29 00:00:00' AND ts < '2024-03-01 00:00:00'"
    chosen = snap.row_filter(where)
    assert {(c.column, c.op) for c in chosen.conditions()} == {("day", ">="), ("day", "<=")}
    files = snap.files(where=where)
    assert {dict(r)["day"] for r in files.column("partition_values").to_pylist()} == {"2024-02-29"}
    assert sorted(snap.to_arrow(filter=where).column("id").to_pylist()) == [0, 4]
    exact = snap.row_filter("ts = TIMESTAMP '2024-11-03 08:30:00'")
    assert [(c.column, c.op, c.values) for c in exact.conditions()] == [("day", "=", (dt.date(2024, 11, 3),))]


# ---------------------------------------------------------------------------------------------- Spark agrees
SPARK_RULES = {
    **GENERATED,
    "h": ("integer", "hash(id, s, ts)"),
    "xx": ("long", "xxhash64(s, a)"),
    "digest": ("string", "md5(s)"),
    "sha": ("string", "sha2(concat_ws('|', a, b), 256)"),
    "q": ("integer", "quarter(ts) * 10 + dayofweek(ts)"),
    "cut": ("string", "substring(rpad(coalesce(s, '?'), 4, '.'), 2, 2)"),
    "span": ("double", "months_between(ts, TIMESTAMP '2000-01-01 00:00:00')"),
    "trunc_day": ("timestamp", "date_trunc('DAY', ts)"),
}
SPARK_COLUMNS = ["id", *SPARK_RULES]


def spark_rules_table(root: Path) -> None:
    fields = [
        Field("id", "long"),
        Field("ts", "timestamp"),
        Field("s", "string"),
        Field("a", "string"),
        Field("b", "string"),
    ]
    fields += [Field(name, t, metadata={"delta.generationExpression": sql}) for name, (t, sql) in SPARK_RULES.items()]
    DeltaTable.create(str(root), Schema(fields))
    DeltaLog.for_table(root).add_constraint("sane", "length(coalesce(s, '')) < 10 AND id >= 0")


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
def test_the_spark_writer_and_deltalog_compute_the_same_generated_values(spark: Any, tmp_path: Path, zone: str) -> None:
    """The Spark writer evaluates the rules with Spark SQL on the executors, deltalog.write with its own
    evaluator: on the same rows they write the same values and refuse the same rows."""
    import deltalog.spark

    by_spark, by_deltalog = tmp_path / "spark", tmp_path / "deltalog"
    spark_rules_table(by_spark)
    spark_rules_table(by_deltalog)
    data = source_rows(range(16))
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        frame = spark.createDataFrame(data, schema="id BIGINT, ts TIMESTAMP, s STRING, a STRING, b STRING")
        deltalog.spark.write(frame.coalesce(1), str(by_spark))
        deltalog.write(data, by_deltalog, session_time_zone=zone)
        violating = source_rows([-1])
        with pytest.raises(ConstraintViolationError, match="sane"):
            deltalog.spark.write(
                spark.createDataFrame(violating, schema="id BIGINT, ts TIMESTAMP, s STRING, a STRING, b STRING"),
                str(by_spark),
            )
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    with pytest.raises(ConstraintViolationError, match="sane"):
        deltalog.write(violating, by_deltalog, session_time_zone=zone)
    mine = DeltaLog.for_table(by_deltalog).snapshot().to_arrow(columns=SPARK_COLUMNS).sort_by("id")
    theirs = DeltaLog.for_table(by_spark).snapshot().to_arrow(columns=SPARK_COLUMNS).sort_by("id")
    assert mine.to_pylist() == theirs.to_pylist()
    assert DeltaLog.for_table(by_spark).latest_version() == DeltaLog.for_table(by_deltalog).latest_version() == 2


@pytest.mark.parametrize("form", list(DELETES))
def test_optimize_takes_every_filter_form(tmp_path: Path, form: str) -> None:
    root = tmp_path / "t"
    day_table(root)
    day_table(root)  # two files in each partition
    result = DeltaLog.for_table(root).optimize(where=DELETES[form])
    assert result.partitions_optimized == 1 and result.num_files_removed == 2 and result.num_files_added == 1
    snap = DeltaLog.for_table(root).snapshot()
    assert {dict(r)["day"] for r in snap.files().column("partition_values").to_pylist()} == {"x", "y", "z"}
    assert snap.files().num_rows == 5
    assert_valid(root)
