"""The demo's plain-Python writer: a pyarrow table handed to ``deltalog.write``. No Spark.

It stands for the small services that write next to the Spark jobs (a backfill, an ingest lambda): they share
the table only through the log, so a Spark job and this writer must be able to commit at the same time and
both land. ``deltalog.write`` does what such a service would otherwise get wrong by hand: the Hive-escaped
partition directory, the file name, Delta statistics, the schema check against the table (the partition
column is a date, as the Spark jobs write it), and the commit.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa

import deltalog
from deltalog import CommitResult

CITIES = ("Lisbon", "Oslo", "Kyoto", "Lima", "Accra")
#: the columns as the Spark jobs write them: the partition column is a date
SCHEMA = pa.schema([("id", pa.int64()), ("city", pa.string()), ("amount", pa.float64()), ("day", pa.date32())])


def rows(first_id: int, count: int, day: str) -> pa.Table:
    """``count`` deterministic rows starting at ``first_id`` for ``day`` (the Spark jobs' columns and values)."""
    ids = range(first_id, first_id + count)
    return pa.table(
        {
            "id": list(ids),
            "city": [CITIES[i % len(CITIES)] for i in ids],
            "amount": [round((i * 37 % 10_000) / 100, 2) for i in ids],
            "day": [dt.date.fromisoformat(day)] * count,
        },
        schema=SCHEMA,
    )


class PlainWriter:
    """Appends one day of rows to a table partitioned by ``column``, as one commit."""

    def __init__(self, root: Path, column: str, value: str) -> None:
        self.root = root
        self.column = column
        self.value = value
        self.num_rows = 0
        self.num_files = 0

    def write(self, first_id: int, count: int) -> CommitResult:
        data = rows(first_id, count, self.value)
        result = deltalog.write(data, self.root, partition_by=[self.column])
        self.num_rows = data.num_rows
        self.num_files = sum(1 for a in result.actions if isinstance(a, deltalog.actions.Add))
        return result


__all__ = ["SCHEMA", "PlainWriter", "rows"]
