"""``deltalog changes``: a table's change data feed from the command line, in every format, one error line when
the range cannot be read."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import orjson
import pyarrow as pa

import deltalog
from deltalog import DeltaLog
from tests.peers import deltalake_view, duckdb_view
from tests.unit.cli_runs import fails, ok


def table(root: Path) -> DeltaLog:
    """v0 creates the table with ids 1..3 (inserts), v1 deletes id 2 (a rewrite with change files)."""
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p": ["a", "a", "b"]})
    deltalog.write(data, root, partition_by=["p"], configuration={"delta.enableChangeDataFeed": "true"})
    log = DeltaLog.for_table(root)
    log.delete("id = 2")
    assert deltalake_view(root).rows == duckdb_view(root).rows == 2
    return log


def test_changes_in_every_format(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table(root)
    people = ok("changes", root, "--from", "0")
    assert "Changes of" in people and "delete" in people and people.rstrip().endswith("4 rows")
    doc = orjson.loads(ok("changes", root, "--from", "1", "--json"))
    assert doc["from"] == 1 and doc["to"] is None and doc["num_rows"] == 1
    assert doc["columns"] == ["id", "p", "_change_type", "_commit_version", "_commit_timestamp"]
    assert doc["rows"][0]["id"] == 2 and doc["rows"][0]["_change_type"] == "delete"
    assert doc["rows"][0]["_commit_timestamp"].endswith("+00:00")
    rows = list(csv.DictReader(io.StringIO(ok("changes", root, "--to", "0", "--columns", "id,_change_type", "--csv"))))
    assert sorted((r["id"], r["_change_type"]) for r in rows) == [("1", "insert"), ("2", "insert"), ("3", "insert")]
    where = orjson.loads(ok("changes", root, "--where", "_change_type = 'insert' AND p = 'a'", "--json"))
    assert sorted(r["id"] for r in where["rows"]) == [1, 2]
    assert orjson.loads(ok("changes", root, "--limit", "1", "--json"))["num_rows"] == 1
    stamp = doc["rows"][0]["_commit_timestamp"]
    by_time = orjson.loads(ok("changes", root, "--from", stamp, "--json"))
    assert by_time["from"] == stamp and [r["_commit_version"] for r in by_time["rows"]] == [1]


def test_mistakes_are_one_line(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table(root)
    assert "starting version 7 is after the latest version 1" in fails("changes", root, "--from", "7")
    assert "before starting version 1" in fails("changes", root, "--from", "1", "--to", "0")
    assert "unknown column 'nope'" in fails("changes", root, "--columns", "nope")
    assert "nope" in fails("changes", root, "--where", "nope = 1")
    plain = tmp_path / "plain"
    deltalog.write(pa.table({"id": [1]}), plain)
    assert "not enabled at version 0" in fails("changes", plain)
