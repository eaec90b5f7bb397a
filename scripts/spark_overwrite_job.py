"""Partition overwrite: recompute one day and replace exactly that partition in one commit.

    .venv/bin/python scripts/spark_overwrite_job.py TABLE --day 2026-11-01 [--rows 500] [--master local[2]]

``replace_where={"day": ...}`` removes the partition's live files and adds the new ones atomically; the
read of the partition is recorded, so a concurrent writer into the same day makes one of the two fail with
a typed conflict (its files are deleted) instead of silently losing rows.
"""

from __future__ import annotations

import argparse

from deltalog.spark.session import get_session
from deltalog.spark.writer import write


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table")
    ap.add_argument("--day", required=True)
    ap.add_argument("--rows", type=int, default=500)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()
    spark = get_session(args.master, "daily-sales-overwrite")
    df = spark.range(args.rows).selectExpr(
        "id", "concat('city-', id % 5) AS city", "round(rand(11) * 100, 2) AS amount", f"DATE'{args.day}' AS day"
    )
    result = write(df, args.table, mode="overwrite", partition_by=["day"], replace_where={"day": args.day})
    print(f"day={args.day}: version {result.version}, replaced {result.num_removed} file(s) by {result.num_files}")
    spark.stop()


if __name__ == "__main__":
    main()
