"""The Spark writer on tables with rules: column mapping, CHECK constraints, generated columns.

The tables are created by ``deltalake`` (another engine's metadata, as a user would meet it). The writer
evaluates the rules with Spark SQL on the executors, so functions outside deltalog's own SQL subset work
(``upper`` below); a row fails a CHECK constraint when it is false **or null**, and a violation fails the job
with a :class:`ConstraintViolationError` naming the rule, with nothing committed and no file left behind.
Every resulting table passes the protocol checker and is read back by ``deltalake``, duckdb and
:func:`deltalog.spark.read`.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, Field, QueryBuilder, Schema

import deltalog.spark
from deltalog import DeltaLog
from deltalog.errors import ConstraintViolationError, UnsupportedExpressionError
from deltalog.table import snapshot as snapshots
from tests.peers import duckdb_connection, duckdb_view
from tests.protocol_checker import assert_valid


def data_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*.parquet") if "_delta_log" not in p.parts}


def lake_rows(root: Path, sql: str) -> list[dict[str, Any]]:
    return pa.table(QueryBuilder().register("t", DeltaTable(str(root))).execute(sql).read_all()).to_pylist()


def last_commit_info(root: Path) -> dict[str, Any]:
    log = DeltaLog.for_table(root)
    name = f"{log.latest_version():020d}.json"
    for line in (root / "_delta_log" / name).read_bytes().splitlines():
        doc = orjson.loads(line)
        if "commitInfo" in doc:
            return dict(doc["commitInfo"])
    raise AssertionError("no commitInfo")


def test_column_mapped_table_is_written_with_physical_names(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "mapped"
    schema = pa.schema([("id", pa.int64()), ("Full Name", pa.string()), ("st", pa.struct([("x y", pa.int64())]))])
    DeltaTable.create(str(root), schema, configuration={"delta.columnMapping.mode": "name"})
    df = spark.createDataFrame(
        [(1, "Ada L", (10,)), (2, None, None), (3, "Bo", (30,))], "id long, `Full Name` string, st struct<`x y`: long>"
    )
    result = deltalog.spark.write(df.coalesce(1), str(root))
    assert result.version == 1 and result.num_rows == 3

    physical = DeltaLog.for_table(root).snapshot().physical_names
    (path,) = result.paths
    file_columns = pq.read_schema(root / path).names
    assert file_columns == [physical["id"], physical["Full Name"], physical["st"]]
    assert all(name.startswith("col-") for name in file_columns)
    raw = snapshots.raw_files(DeltaLog.for_table(root).snapshot(), stats=True)
    stats = orjson.loads(raw.column("stats")[0].as_py())
    assert set(stats["minValues"]) == {physical["id"], physical["Full Name"], physical["st"]}
    assert_valid(root)

    expected = [
        {"id": 1, "Full Name": "Ada L", "st": {"x y": 10}},
        {"id": 2, "Full Name": None, "st": None},
        {"id": 3, "Full Name": "Bo", "st": {"x y": 30}},
    ]
    assert lake_rows(root, "SELECT * FROM t ORDER BY id") == expected
    con = duckdb_connection()
    try:
        duck = con.execute(f"SELECT id, \"Full Name\", st FROM delta_scan('{root}') ORDER BY id").fetchall()
    finally:
        con.close()
    assert duck == [(1, "Ada L", {"x y": 10}), (2, None, None), (3, "Bo", {"x y": 30})]
    back = deltalog.spark.read(spark, str(root)).orderBy("id").collect()
    assert [r.asDict(recursive=True) for r in back] == expected


@pytest.fixture
def constrained(tmp_path: Path) -> Path:
    """amount > 0 (deltalog's subset) and upper(city) = city (a Spark function outside it)."""
    root = tmp_path / "constrained"
    schema = pa.schema([("id", pa.int64()), ("city", pa.string()), ("amount", pa.float64())])
    table = DeltaTable.create(str(root), schema)
    table.alter.add_constraint({"positive": "amount > 0"})
    table.alter.add_constraint({"upper_city": "upper(city) = city"})
    return root


ROW_DDL = "id long, city string, amount double"


@pytest.mark.parametrize(
    ("bad", "constraint"),
    [
        ((9, "OSLO", -1.0), "CHECK constraint positive"),
        ((9, "OSLO", None), "CHECK constraint positive"),  # null is a violation
        ((9, "Oslo", 1.0), "CHECK constraint upper_city"),
        ((9, None, 1.0), "CHECK constraint upper_city"),  # upper(null) = null: null, a violation
    ],
)
def test_check_constraints_run_on_the_executors_and_a_violation_commits_nothing(
    spark: Any, constrained: Path, bad: tuple[Any, ...], constraint: str
) -> None:
    good = [(1, "OSLO", 2.5), (2, "LIMA", 1.0)]
    first = deltalog.spark.write(spark.createDataFrame(good, ROW_DDL), str(constrained))
    assert first.version == 3 and last_commit_info(constrained)["deltalogValidation"] == {"newRows": "checked"}
    before = data_files(constrained)

    rows = [(3, "KYOTO", 4.0), (4, "PARIS", 5.0), bad]
    with pytest.raises(ConstraintViolationError) as info:
        deltalog.spark.write(spark.createDataFrame(rows, ROW_DDL).repartition(2), str(constrained))
    assert info.value.constraint == constraint
    assert constraint in str(info.value) and "nothing was committed" in str(info.value)
    assert info.value.row is not None and info.value.row["id"] == 9
    assert DeltaLog.for_table(constrained).latest_version() == 3
    assert data_files(constrained) == before  # the failed tasks' files, and the other tasks', are gone

    assert_valid(constrained)
    assert lake_rows(constrained, "SELECT id FROM t ORDER BY id") == [{"id": 1}, {"id": 2}]
    assert duckdb_view(constrained).rows == 2
    assert sorted(r.id for r in deltalog.spark.read(spark, str(constrained)).collect()) == [1, 2]


def test_a_constraint_spark_cannot_evaluate_refuses_the_write_by_name(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "unknown_function"
    table = DeltaTable.create(str(root), pa.schema([("id", pa.int64())]))
    table.alter.add_constraint({"odd": "id > 0"})
    meta = DeltaLog.for_table(root).snapshot().metadata
    assert meta.configuration == {"delta.constraints.odd": "id > 0"}
    # the same key with text Spark cannot analyse (an unknown column), as a damaged or foreign table may hold
    log_file = root / "_delta_log" / "00000000000000000001.json"
    log_file.write_bytes(log_file.read_bytes().replace(b'"id > 0"', b'"nope > 0"'))
    with pytest.raises(UnsupportedExpressionError) as info:
        deltalog.spark.write(spark.createDataFrame([(1,)], "id long"), str(root))
    assert info.value.constraint == "CHECK constraint odd" and info.value.expression == "nope > 0"
    assert DeltaLog.for_table(root).latest_version() == 1 and data_files(root) == set()


def test_generated_column_is_computed_or_checked_by_spark(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "generated"
    schema = Schema(
        [
            Field("id", "long"),
            Field("ts", "timestamp"),
            Field("day", "date", metadata={"delta.generationExpression": "CAST(ts AS DATE)"}),
        ]
    )
    DeltaTable.create(str(root), schema)
    utc = dt.timezone.utc
    t1, t2 = dt.datetime(2026, 11, 1, 10, 0, tzinfo=utc), dt.datetime(2026, 11, 2, 23, 59, tzinfo=utc)
    computed = deltalog.spark.write(spark.createDataFrame([(1, t1), (2, t2)], "id long, ts timestamp"), str(root))
    assert computed.version == 1
    given = spark.createDataFrame([(3, t1, dt.date(2026, 11, 1))], "id long, ts timestamp, day date")
    assert deltalog.spark.write(given, str(root)).version == 2

    wrong = spark.createDataFrame([(4, t1, dt.date(2026, 1, 1))], "id long, ts timestamp, day date")
    with pytest.raises(ConstraintViolationError) as info:
        deltalog.spark.write(wrong, str(root))
    assert info.value.constraint == "generated column day"
    assert DeltaLog.for_table(root).latest_version() == 2

    assert_valid(root)
    days = [dt.date(2026, 11, 1), dt.date(2026, 11, 2), dt.date(2026, 11, 1)]
    assert [r["day"] for r in lake_rows(root, "SELECT id, day FROM t ORDER BY id")] == days
    con = duckdb_connection()
    try:
        duck = con.execute(f"SELECT id, day FROM delta_scan('{root}') ORDER BY id").fetchall()
    finally:
        con.close()
    assert [d for _, d in duck] == days
    assert [r.day for r in deltalog.spark.read(spark, str(root)).orderBy("id").collect()] == days


@pytest.mark.parametrize(
    ("rule", "given", "label"),
    [
        ("check", True, "CHECK constraint grows"),  # evaluated on the executors: id + 1 overflows
        ("generated", True, "generated column twice"),  # checked: id * 2 overflows
        ("generated", False, "generated column twice"),  # computed for a DataFrame without it
    ],
)
def test_an_overflow_inside_a_rule_under_ansi_mode_is_a_typed_error_naming_the_rule(
    spark: Any, tmp_path: Path, rule: str, given: bool, label: str
) -> None:
    root = tmp_path / f"overflow_{rule}_{given}"
    if rule == "check":
        table = DeltaTable.create(str(root), pa.schema([("id", pa.int64()), ("twice", pa.int64())]))
        table.alter.add_constraint({"grows": "id + 1 > id"})
    else:
        generated = Field("twice", "long", metadata={"delta.generationExpression": "id * 2"})
        DeltaTable.create(str(root), Schema([Field("id", "long"), generated]))
    before = DeltaLog.for_table(root).latest_version()
    big = 2**63 - 1
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"  # Spark 4's default: overflow raises
    if given:
        df = spark.createDataFrame([(1, 2), (big, 0)], "id long, twice long")
    else:
        df = spark.createDataFrame([(1,), (big,)], "id long")
    with pytest.raises(ConstraintViolationError) as info:
        deltalog.spark.write(df.coalesce(1), str(root))
    assert info.value.constraint == label
    assert label in str(info.value) and "overflow" in str(info.value).lower()
    assert "nothing was committed" in str(info.value)
    assert DeltaLog.for_table(root).latest_version() == before and data_files(root) == set()
    assert_valid(root)
    assert duckdb_view(root).rows == 0
