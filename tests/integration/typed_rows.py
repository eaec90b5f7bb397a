"""Rows of every type a Delta table holds, in the encodings callers hand a writer, and what readers must return.

Shared by the tests of the data-file writer and of ``deltalog.write``: nanosecond and foreign-zone timestamps,
unsigned and dictionary columns, large and view strings, nulls everywhere, awkward partition values; and the
two peers' rows made comparable (NaN equal to NaN, zones as UTC).
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder

from tests.peers import duckdb_connection

UTC = dt.timezone.utc
AWKWARD = ["a/b", "x:y %25 é=#", "", None, "with space", "a+b", "[]{}^*?", "tab\tquote'\"", "100%"]

# What the table holds (Arrow spelling of its Delta types); partition columns last.
TABLE = pa.schema(
    [
        ("id", pa.int64()),
        ("i", pa.int32()),
        ("sh", pa.int16()),
        ("by", pa.int8()),
        ("fl", pa.float32()),
        ("db", pa.float64()),
        ("dec", pa.decimal128(10, 2)),
        ("big", pa.decimal128(38, 6)),
        ("s", pa.string()),
        ("bin", pa.binary()),
        ("b", pa.bool_()),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("st", pa.struct([("x", pa.int64()), ("y", pa.string())])),
        ("arr", pa.list_(pa.int64())),
        ("m", pa.map_(pa.string(), pa.int64())),
        ("p", pa.string()),
        ("pd", pa.date32()),
    ]
)


def rows(n: int) -> dict[str, list[Any]]:
    """``n`` rows touching every awkward partition value, edge values and a null in every column."""

    def pick(values: list[Any], k: int) -> Any:
        return values[k % len(values)]

    return {
        "id": list(range(n)),
        "i": [pick([1, None, -(2**31), 2**31 - 1], k) for k in range(n)],
        "sh": [pick([1, 255, None], k) for k in range(n)],
        "by": [pick([-128, None, 127], k) for k in range(n)],
        "fl": [pick([1.5, None, math.nan, -0.0, math.inf], k) for k in range(n)],
        "db": [pick([1.25, -math.inf, None, 3e300], k) for k in range(n)],
        "dec": [pick([Decimal("1.10"), None, Decimal("-99999999.99")], k) for k in range(n)],
        "big": [
            pick([Decimal("12345678901234567890123456789012.123456"), None, Decimal("-0.000001")], k) for k in range(n)
        ],
        "s": [pick(["a", "é🙂", None, "x" * 40, ""], k) for k in range(n)],
        "bin": [pick([b"\x00\xff", None, b""], k) for k in range(n)],
        "b": [pick([True, False, None], k) for k in range(n)],
        "day": [pick([dt.date(2024, 2, 29), None, dt.date(1, 1, 1), dt.date(9999, 12, 31)], k) for k in range(n)],
        "ts": [
            pick(
                [
                    dt.datetime(2024, 1, 1, 12, tzinfo=UTC),
                    None,
                    dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
                    dt.datetime(2024, 6, 1, 1, 2, 3, 456789, tzinfo=UTC),
                ],
                k,
            )
            for k in range(n)
        ],
        "ntz": [pick([dt.datetime(2000, 2, 29, 12), None, dt.datetime(1900, 1, 1, 0, 0, 0, 1)], k) for k in range(n)],
        "st": [pick([{"x": 1, "y": "a"}, None, {"x": None, "y": None}], k) for k in range(n)],
        "arr": [pick([[1, 2], None, [], [None, 3]], k) for k in range(n)],
        "m": [pick([[("k", 1)], None, [], [("a", None)]], k) for k in range(n)],
        "p": [pick(AWKWARD, k) for k in range(n)],
        "pd": [pick([dt.date(2024, 1, 1), None], k // 3) for k in range(n)],
    }


def as_given(data: dict[str, list[Any]]) -> pa.Table:
    """The rows in the encodings callers hold, not the table's: the writer must convert each safely."""
    ts = pa.array(data["ts"], pa.timestamp("us", tz="UTC")).cast(pa.timestamp("ns", tz="Asia/Kolkata"))
    return pa.table(
        {
            "ID": pa.array(data["id"], pa.uint32()),  # another case, unsigned
            "i": pa.array(data["i"], pa.int64()),  # narrowed with a range check
            "sh": pa.array(data["sh"], pa.uint8()),
            "by": pa.array(data["by"], pa.int8()),
            "fl": pa.array(data["fl"], pa.float16()).cast(pa.float32()),
            "db": pa.array(data["db"], pa.float64()),
            "dec": pa.array(data["dec"], pa.decimal128(12, 2)),
            "big": pa.array(data["big"], pa.decimal256(38, 6)),
            "s": pa.array(data["s"], pa.large_string()),
            "bin": pa.array(data["bin"], pa.binary_view()),
            "b": pa.array(data["b"], pa.bool_()),
            "day": pa.array(data["day"], pa.date32()).cast(pa.date64()),
            "ts": ts,
            "ntz": pa.array(data["ntz"], pa.timestamp("us")).cast(pa.timestamp("ns")),
            "st": pa.array(data["st"], TABLE.field("st").type),
            "arr": pa.array(data["arr"], pa.large_list(pa.int32())),
            "m": pa.array(data["m"], TABLE.field("m").type),
            "p": pa.array(data["p"], pa.string()).dictionary_encode(),
            "pd": pa.array(data["pd"], pa.date32()),
        }
    )


def expected(data: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """What a reader must return: the input, with the empty-string partition value read as null (Delta)."""
    out = pa.table(data, schema=TABLE).to_pylist()
    for row in out:
        row["p"] = row["p"] or None
    return [canonical(r) for r in out]


def canonical(value: Any) -> Any:
    """Rows comparable across readers: NaN equal to NaN, maps as sorted pairs, zones as UTC."""
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    if isinstance(value, tuple):
        return tuple(canonical(v) for v in value)
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(UTC)
    return value


def read_back(result: Any, columns: list[str] | None = None) -> list[dict[str, Any]]:
    schema = TABLE if columns is None else pa.schema([TABLE.field(c) for c in columns])
    table = pa.table(result).select(schema.names).cast(schema).sort_by("id")
    return [canonical(r) for r in table.to_pylist()]


def duckdb_rows(root: Path, columns: list[str] | None = None) -> list[dict[str, Any]]:
    con = duckdb_connection()
    try:
        con.execute("SET TimeZone = 'UTC'")
        return read_back(con.execute(f"SELECT * FROM delta_scan('{root}')").arrow(), columns)
    finally:
        con.close()


def deltalake_rows(root: Path, columns: list[str] | None = None) -> list[dict[str, Any]]:
    table = DeltaTable(str(root))
    return read_back(QueryBuilder().register("t", table).execute("SELECT * FROM t").read_all(), columns)


__all__ = [
    "AWKWARD",
    "TABLE",
    "UTC",
    "as_given",
    "canonical",
    "deltalake_rows",
    "duckdb_rows",
    "expected",
    "read_back",
    "rows",
]
