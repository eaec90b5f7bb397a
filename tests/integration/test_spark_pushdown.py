"""Filters Spark pushes into ``format("deltalog")`` cut the files read: counted at the store, not timed.

The table lives on a moto S3 server, so every file an executor opens is a request in the server's own log: the
count of distinct data files requested is the number of files the read opened. A 1,000-file table (one file per
partition value of ``bucket``, ten ids each) is read three ways: with a filter Spark cannot push (``id % 1000 =
7``: every file), with a partition filter (pruning: one file) and with a range on a data column (statistics
skipping: the two files whose id bounds overlap it). Each answer is the full scan's, filtered.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa

import deltalog
import deltalog.spark
from tests.storage.servers import BUCKET, Server, moto_server, s3_options, unique

__all__ = ["moto_server"]

FILES = 1000
IDS_PER_FILE = 10


def data_files_requested(server: Server, prefix: str, since: int) -> set[str]:
    """The data files of the table under ``prefix`` requested from the server after byte ``since`` of its log."""
    with open(server.log_path, "rb") as log:
        log.seek(since)
        text = log.read().decode("utf-8", "replace")
    pattern = re.compile(rf'"(?:GET|HEAD) /{BUCKET}/{re.escape(prefix)}/(?!_delta_log/)([^ ?"]+\.parquet)')
    return set(pattern.findall(text))


def log_size(server: Server) -> int:
    return server.log_path.stat().st_size


def test_pushed_filters_open_fewer_of_a_thousand_files(spark: Any, moto_server: Server) -> None:
    prefix = unique("pushdown")
    location, options = f"s3://{BUCKET}/{prefix}", s3_options(moto_server.endpoint)
    ids = pa.array(range(FILES * IDS_PER_FILE), pa.int64())
    data = pa.table({"id": ids, "bucket": pa.compute.divide(ids, IDS_PER_FILE)})
    deltalog.write(data, location, partition_by=["bucket"], storage_options=options)
    assert deltalog.DeltaLog.for_table(location, options).snapshot().num_files == FILES

    deltalog.spark.register(spark)
    reader = spark.read.format("deltalog")
    for key, value in options.items():
        reader = reader.option(key, value)
    table = reader.load(location)

    def opened(query: Callable[[], list[Any]]) -> tuple[set[str], list[int]]:
        before = log_size(moto_server)
        got = sorted(r.id for r in query())
        return data_files_requested(moto_server, prefix, before), got

    every, unpushed = opened(lambda: table.where("id % 1000 = 7").select("id").collect())
    pruned, by_bucket = opened(lambda: table.where("bucket = 7").select("id").collect())
    skipped, by_range = opened(lambda: table.where("id >= 5005 AND id < 5015").select("id").collect())

    assert unpushed == list(range(7, FILES * IDS_PER_FILE, 1000))
    assert by_bucket == list(range(70, 80)) and by_range == list(range(5005, 5015))
    assert len(every) == FILES  # nothing Spark could push: every file opened
    assert len(pruned) == 1 and next(iter(pruned)).startswith("bucket=7/")  # partition pruning
    assert len(skipped) == 2  # statistics skipping: the files of ids 5000-5009 and 5010-5019
    assert pruned < every and skipped < every
