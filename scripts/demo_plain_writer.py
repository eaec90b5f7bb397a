"""The demo's plain-Python writer: pyarrow writes one parquet file, deltalog commits it. No Spark.

It stands for the small services that write next to the Spark jobs (a backfill, an ingest lambda): they share
the table only through the log, so it must let a Spark job and this writer commit at the same time and keep
both. The work is split in two (:meth:`PlainWriter.prepare`, :meth:`PlainWriter.commit`) so the demo can hold
the commit until a Spark job is in flight, which makes the race the same on every run.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog import CommitResult, DeltaLog, Transaction
from deltalog.actions import Add
from deltalog.arrow.stats import stats_json

CITIES = ("Lisbon", "Oslo", "Kyoto", "Lima", "Accra")
#: the data columns as the Spark jobs write them; the partition column lives in the directory name
DATA_SCHEMA = pa.schema([("id", pa.int64()), ("city", pa.string()), ("amount", pa.float64())])


def rows(first_id: int, count: int) -> pa.Table:
    """``count`` deterministic rows starting at ``first_id`` (the same columns the Spark jobs produce)."""
    ids = range(first_id, first_id + count)
    return pa.table(
        {
            "id": list(ids),
            "city": [CITIES[i % len(CITIES)] for i in ids],
            "amount": [round((i * 37 % 10_000) / 100, 2) for i in ids],
        },
        schema=DATA_SCHEMA,
    )


class PlainWriter:
    """Appends one file to one partition of a table in a transaction of its own."""

    def __init__(self, root: Path, column: str, value: str) -> None:
        self.root = root
        self.column = column
        self.value = value
        self.log = DeltaLog.for_table(root)
        self.txn: Transaction | None = None
        self.add: Add | None = None
        self.num_rows = 0

    def prepare(self, data: pa.Table) -> None:
        """Start the transaction first, then write the file: the commit is checked against whatever lands
        after the version read here."""
        self.txn = self.log.start_transaction()
        relative = f"{self.column}={self.value}/part-{uuid.uuid4()}.snappy.parquet"
        target = self.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(data, target, compression="snappy")
        info = target.stat()
        self.add = Add(
            path=quote(relative, safe="/="),  # log paths are URI-encoded, as Spark writes them
            partition_values={self.column: self.value},
            size=info.st_size,
            modification_time=info.st_mtime_ns // 1_000_000,
            data_change=True,
            stats=stats_json(data, configuration=self.txn.snapshot.configuration),
        )
        self.num_rows = data.num_rows

    def commit(self) -> CommitResult:
        assert self.txn is not None and self.add is not None, "prepare() first"
        params = {"mode": "Append", "partitionBy": [self.column]}
        return self.txn.commit([self.add], operation="WRITE", operation_parameters=params)


__all__ = ["DATA_SCHEMA", "PlainWriter", "rows"]
