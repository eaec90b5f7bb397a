"""``deltalog scan`` and ``deltalog write``: rows out and rows in from the command line, one error line when not.

A table is written from parquet and CSV files (creating it, appending, overwriting by predicate, merging a new
column), then scanned as people, JSON and CSV see it: columns chosen, a Spark SQL ``--where``, ``--limit``,
``--version``; deleted rows stay deleted. Every mistake is one ``error:`` line on stderr and nothing on stdout.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from deltalog import DeltaLog
from tests.peers import deltalake_view, duckdb_view
from tests.protocol_checker import assert_valid
from tests.unit.cli_runs import fails, ok


def inputs(tmp: Path) -> tuple[Path, Path]:
    parquet = tmp / "sales.parquet"
    pq.write_table(
        pa.table(
            {
                "id": pa.array([1, 2, 3], pa.int64()),
                "region": ["eu", "us/west", "eu"],
                "amount": [1.5, None, 3.25],
                "day": [dt.date(2024, 1, 1)] * 3,
            }
        ),
        parquet,
    )
    more = tmp / "more.csv"
    more.write_text("id,region,amount,day\n4,eu,7.5,2024-01-02\n5,us/west,,2024-01-03\n")
    return parquet, more


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_write_then_scan_in_every_format(tmp_path: Path) -> None:
    table = tmp_path / "t"
    parquet, more = inputs(tmp_path)
    written = ok("write", table, parquet, "--partition-by", "region")
    assert "committed version  0" in written and "3 rows" in written and "2 files" in written
    doc = orjson.loads(ok("write", table, more, "--json"))
    assert doc["version"] == 1 and doc["num_rows"] == 2 and not doc["skipped"]
    assert DeltaLog.for_table(table).snapshot().schema_json["fields"][3]["type"] == "date"  # CSV read as the table's
    assert_valid(table)
    assert deltalake_view(table).rows == duckdb_view(table).rows == 5

    people = ok("scan", table)
    assert "Rows of" in people and "us/west" in people and people.rstrip().endswith("5 rows")
    rows = csv_rows(ok("scan", table, "--where", "amount > 2 OR amount IS NULL", "--columns", "id,amount", "--csv"))
    assert sorted(rows, key=lambda r: r["id"]) == [
        {"id": "2", "amount": ""},
        {"id": "3", "amount": "3.25"},
        {"id": "4", "amount": "7.5"},
        {"id": "5", "amount": ""},
    ]
    doc = orjson.loads(ok("scan", table, "--where", "region = 'us/west'", "--json"))
    assert doc["columns"] == ["id", "region", "amount", "day"] and doc["where"] == "region = 'us/west'"
    assert sorted(r["id"] for r in doc["rows"]) == [2, 5] and doc["rows"][0]["day"].startswith("2024-01-0")
    assert orjson.loads(ok("scan", table, "--limit", "2", "--json"))["num_rows"] == 2
    assert len(csv_rows(ok("scan", table, "--version", "0", "--format", "csv"))) == 3

    DeltaLog.for_table(table).delete("id = 1")
    assert sorted(r["id"] for r in csv_rows(ok("scan", table, "--csv"))) == ["2", "3", "4", "5"]


def test_overwrite_by_predicate_and_merge_schema(tmp_path: Path) -> None:
    table = tmp_path / "t"
    parquet, _ = inputs(tmp_path)
    ok("write", table, parquet)
    fix = tmp_path / "fix.csv"
    fix.write_text("id,region,amount,day\n3,eu,30.0,2024-01-01\n")
    ok("write", table, fix, "--mode", "overwrite", "--replace-where", "id = 3")
    wider = tmp_path / "wider.csv"
    wider.write_text("id,region,amount,day,note\n9,eu,1.0,2024-02-01,new\n")
    assert "--merge-schema adds them" in fails("write", table, wider)  # the flag, not the Python parameter
    ok("write", table, wider, "--merge-schema")
    doc = orjson.loads(ok("scan", table, "--json"))
    assert sorted((r["id"], r["amount"], r["note"]) for r in doc["rows"]) == [
        (1, 1.5, None),
        (2, None, None),
        (3, 30.0, None),
        (9, 1.0, "new"),
    ]
    assert "nothing written" in ok("write", table, wider, "--mode", "ignore")
    assert_valid(table)


def test_mistakes_are_one_line(tmp_path: Path) -> None:
    table = tmp_path / "t"
    parquet, _ = inputs(tmp_path)
    assert "no Delta table" in fails("scan", tmp_path / "nothing")
    ok("write", table, parquet)
    assert "nope" in fails("scan", table, "--where", "nope = 1")
    assert "soundex" in fails("scan", table, "--where", "soundex(region) = 'E000'")
    assert "unknown column 'nope'" in fails("scan", table, "--columns", "id,nope")
    assert "cannot be used together" in fails("scan", table, "--json", "--csv", code=2)
    bad = tmp_path / "bad.csv"
    bad.write_text("id,region,amount,day\nx,eu,1.0,2024-01-01\n")
    assert "bad.csv: not a readable csv file" in fails("write", table, bad)
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not really")
    assert "broken.parquet: not a readable parquet file" in fails("write", table, broken)
    other = tmp_path / "data.txt"
    other.write_text("x")
    assert "expected a .parquet or .csv file" in fails("write", table, other, code=2)
    assert "already exists" in fails("write", table, parquet, "--mode", "error")
    assert DeltaLog.for_table(table).latest_version() == 0


def test_update_and_merge_verbs(tmp_path: Path) -> None:
    """``deltalog update`` and ``deltalog merge`` commit as log.update and log.merge do and show Delta Spark's
    metrics; a table written with deletion vectors keeps its files. Mistakes are one error line."""
    table = tmp_path / "t"
    parquet, more = inputs(tmp_path)
    ok("write", table, parquet)
    people = ok("update", table, "--set", "amount = amount * 10", "--set", "region='eu'", "--where", "id = 3")
    assert "Update" in people and "committed version  1" in people and "1 row" in people
    source = tmp_path / "source.parquet"
    pq.write_table(
        pa.table(
            {
                "id": pa.array([1, 9], pa.int64()),
                "region": ["us", "ap"],
                "amount": [0.5, 9.0],
                "day": [dt.date(2024, 2, 1)] * 2,
            }
        ),
        source,
    )
    doc = orjson.loads(ok("merge", table, source, "--on", "t.id = s.id", "--update-all", "--insert-all", "--json"))
    assert doc["operation"] == "MERGE" and doc["version"] == 2
    assert doc["metrics"]["numTargetRowsUpdated"] == 1 and doc["metrics"]["numTargetRowsInserted"] == 1
    deleted = ok("merge", table, more, "--on", "t.id = s.id OR s.id = 4 AND t.id = 2", "--delete-matched")
    assert "deleted            1 row" in deleted
    rows = {r["id"]: r for r in DeltaLog.for_table(table).snapshot().to_arrow().to_pylist()}
    assert sorted(rows) == [1, 3, 9] and rows[3]["amount"] == 32.5 and rows[3]["region"] == "eu"
    assert rows[1]["region"] == "us" and rows[9]["amount"] == 9.0
    assert "nothing changed" in ok("update", table, "--set", "amount=0", "--where", "id > 100")
    assert_valid(table)
    assert deltalake_view(table).rows == duckdb_view(table).rows == 3

    assert "COLUMN=EXPR" in fails("update", table, "--set", "amount", code=2)
    assert "nope" in fails("update", table, "--set", "nope=1")
    assert "at least one of" in fails("merge", table, source, "--on", "t.id = s.id", code=2)
    assert "both unconditional" in fails(
        "merge", table, source, "--on", "t.id = s.id", "--update-all", "--delete-matched", code=2
    )
    assert "ambiguous" in fails("merge", table, source, "--on", "id = s.id", "--update-all")
