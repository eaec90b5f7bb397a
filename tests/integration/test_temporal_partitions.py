"""Date and timestamp partition values over the whole representable range, years 0001-9999 (issue 23 item 6).

Before year 1000, ``strftime("%Y")`` wrote three digits (``999-01-01 ...``) and deltalog's own commit check
refused the write. Every value is now written in PROTOCOL.md's "Partition Value Serialization" format, reads
back equal through deltalog's reader and partition pruning, and is read by both peers (duckdb's
``delta_scan`` and deltalake's SQL ``QueryBuilder``): neither has trouble with any year from 0001 to 9999.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, QueryBuilder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import deltalog
from deltalog import DeltaLog
from deltalog.core.partitions import check_serialized
from tests.peers import duckdb_connection
from tests.protocol_checker import assert_valid

UTC = dt.timezone.utc
FIRST = dt.datetime(1, 1, 1)
LAST = dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
EDGES = [FIRST, dt.datetime(999, 12, 31, 23, 59, 59, 999999), dt.datetime(1000, 1, 1), LAST]
TYPES = {"ts": "timestamp", "tsn": "timestamp_ntz", "d": "date"}
TABLE_COLUMNS = ("id", *TYPES)


def table_of(values: list[dt.datetime]) -> pa.Table:
    """Row ``i`` holds ``values[i]`` as a timestamp (UTC), a timestamp_ntz and a date."""
    return pa.table(
        {
            "id": pa.array(range(len(values)), pa.int64()),
            "ts": pa.array([v.replace(tzinfo=UTC) for v in values], pa.timestamp("us", tz="UTC")),
            "tsn": pa.array(values, pa.timestamp("us")),
            "d": pa.array([v.date() for v in values], pa.date32()),
        }
    )


def rows(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows sorted by id, zone-aware timestamps compared as UTC instants (peers attach their own tzinfo)."""
    return sorted(({**row, "ts": row["ts"].astimezone(UTC)} for row in found), key=lambda row: row["id"])


def duckdb_rows(root: Path) -> list[dict[str, Any]]:
    con = duckdb_connection()
    try:
        found = con.execute(f"SELECT id, ts, tsn, d FROM delta_scan('{root}')").fetchall()
    finally:
        con.close()
    return rows([dict(zip(TABLE_COLUMNS, row, strict=True)) for row in found])


def deltalake_rows(root: Path) -> list[dict[str, Any]]:
    query = QueryBuilder().register("t", DeltaTable(str(root))).execute("select id, ts, tsn, d from t")
    return rows(pa.table(query.read_all()).to_pylist())


@settings(max_examples=6, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.datetimes(FIRST, LAST), min_size=1, max_size=6, unique=True))
def test_partition_values_over_years_1_to_9999_write_read_back_and_peers_read_them(
    tmp_path: Path, drawn: list[dt.datetime]
) -> None:
    values = list(dict.fromkeys([*EDGES, *drawn]))
    data = table_of(values)
    root = Path(tempfile.mkdtemp(dir=tmp_path)) / "t"
    deltalog.write(data, str(root), partition_by=["ts", "tsn", "d"])

    assert_valid(root)
    snap = DeltaLog.for_table(root).snapshot()
    for add in snap.add_actions():
        for column, kind in TYPES.items():
            check_serialized(kind, add.partition_values[column])  # the protocol's format, four-digit years
    expected = rows(data.to_pylist())
    assert rows(snap.to_arrow().to_pylist()) == expected
    assert duckdb_rows(root) == expected
    assert deltalake_rows(root) == expected

    for i, value in enumerate(values):  # pruning parses the log's values back: each finds its own file
        assert snap.files(where={"ts": value.replace(tzinfo=UTC)}).num_rows == 1
        assert snap.files(where={"tsn": value}).num_rows == 1
        assert snap.to_arrow(filter=pc.field("tsn") == pa.scalar(value, pa.timestamp("us")))["id"].to_pylist() == [i]
