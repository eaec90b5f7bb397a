"""Spark-written tables read by the peers: deltalake (delta-rs) and duckdb's delta extension.

The pruning test is the one that catches wrong statistics: each edge value sits in its own file, and the
readers skip files by min/max. A max truncated down (a timestamp's microseconds, a long string's tail, a
decimal rounded through a float) would make the reader skip the file that holds the matching row.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pytest
from deltalake import DeltaTable, QueryBuilder

from deltalog import DeltaLog
from deltalog.arrow.stats import TIE_BREAKER
from deltalog.spark.reader import read
from deltalog.spark.writer import write

LONG = "x" * 40 + "b"
LONG_LOW = "x" * 40 + "a"


def _extension() -> Path:
    spec = importlib.util.find_spec("duckdb_extension_delta")
    assert spec is not None and spec.origin is not None
    found = sorted(Path(spec.origin).parent.rglob("delta.duckdb_extension"))
    assert found, "duckdb_extension_delta ships no delta.duckdb_extension"
    return found[-1]


@pytest.fixture(scope="module")
def duck() -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    con.execute(f"INSTALL '{_extension()}'; LOAD delta;")
    yield con
    con.close()


def _count_duck(con: duckdb.DuckDBPyConnection, table: Path, where: str = "true") -> int:
    row = con.execute(f"SELECT count(*) FROM delta_scan('{table}') WHERE {where}").fetchone()
    assert row is not None
    return int(row[0])


def _count_lake(table: Path, where: str = "true") -> int:
    batches = QueryBuilder().register("t", DeltaTable(str(table))).execute(f"SELECT count(*) AS n FROM t WHERE {where}")
    return int(sum(b.column(0)[0].as_py() for b in batches.read_all().to_batches()))


def test_peers_read_spark_written_partitioned_table(
    spark: Any, tmp_path: Path, duck: duckdb.DuckDBPyConnection
) -> None:
    table = tmp_path / "peers"
    df = spark.range(0, 3000).selectExpr("id", "cast(id % 7 as string) as k", "concat('day-', id % 3) as day")
    write(df.repartition(3), str(table), partition_by=["day"])
    write(df.where("id < 500 AND day = 'day-1'"), str(table), mode="overwrite", replace_where={"day": "day-1"})
    expected = 2000 + sum(1 for i in range(500) if i % 3 == 1)
    assert read(spark, str(table)).count() == expected
    assert DeltaTable(str(table)).to_pyarrow_table().num_rows == expected
    assert _count_duck(duck, table) == expected
    assert _count_lake(table, "day = 'day-1'") == _count_duck(duck, table, "day = 'day-1'") == expected - 2000


def test_pruning_with_edge_values_finds_the_matching_rows(
    spark: Any, tmp_path: Path, duck: duckdb.DuckDBPyConnection
) -> None:
    table = tmp_path / "edges"
    files = [
        "SELECT 1 AS id, TIMESTAMP'2024-01-01 12:00:00.123456' AS ts, 'a' AS s, CAST(1.00000 AS DECIMAL(38,5)) AS dec",
        "SELECT 2 AS id, TIMESTAMP'2024-01-01 12:00:00.123' AS ts, '{low}' AS s, CAST(2 AS DECIMAL(38,5)) AS dec",
        "SELECT 3 AS id, TIMESTAMP'2024-01-01 12:00:00.124' AS ts, '{long}' AS s, "
        "CAST(12345678901234567890123456789.12345 AS DECIMAL(38,5)) AS dec",
        "SELECT 4 AS id, TIMESTAMP'9999-12-31 23:59:59.999999' AS ts, 'z' AS s, "
        "CAST(12345678901234567890123456789.12344 AS DECIMAL(38,5)) AS dec",
    ]
    for sql in files:  # one commit, one file each
        write(spark.sql(sql.format(low=LONG_LOW, long=LONG)).coalesce(1), str(table))
    stats = [
        orjson.loads(s) for s in DeltaLog.for_table(table).snapshot().files(stats=True).column("stats").to_pylist()
    ]
    by_id = {s["minValues"]["id"]: s for s in stats}
    assert by_id[1]["maxValues"]["ts"] == "2024-01-01T12:00:00.124Z"  # rounded up from .123456
    assert by_id[3]["maxValues"]["s"] == "x" * 32 + TIE_BREAKER
    assert by_id[3]["maxValues"]["dec"] == 12345678901234567890123456789.12345
    assert "ts" not in by_id[4]["maxValues"]  # 9999-12-31 23:59:59.999999 cannot be rounded up: no bound

    queries = {
        "ts = TIMESTAMP '2024-01-01 12:00:00.123456'": 1,
        "ts > TIMESTAMP '2024-01-01 12:00:00.1234'": 3,
        "ts > TIMESTAMP '2200-01-01 00:00:00'": 1,
        f"s = '{LONG}'": 1,
        f"s > '{LONG_LOW}'": 2,
        "dec = CAST('12345678901234567890123456789.12345' AS DECIMAL(38,5))": 1,
        "dec > CAST('12345678901234567890123456789.12344' AS DECIMAL(38,5))": 1,
    }
    for where, n in queries.items():
        spark_n = read(spark, str(table)).where(where).count()
        assert (spark_n, _count_duck(duck, table, where), _count_lake(table, where)) == (n, n, n), where
    # delta-rs's query engine cannot even plan a year-9999 literal (it casts to nanoseconds): Spark and duckdb only
    top = "ts = TIMESTAMP '9999-12-31 23:59:59.999999'"
    assert read(spark, str(table)).where(top).count() == _count_duck(duck, table, top) == 1
