"""Daily batch append with exactly-once: re-running a day that is already committed writes nothing.

    .venv/bin/python scripts/spark_append_job.py TABLE --day 2026-11-01 [--rows 1000] [--master local[2]]

The batch's version is the day as ``yyyymmdd`` under the application id ``daily-sales-append``; deltalog
records it in the commit's ``txn`` action, so a retried or duplicated run of the same day is skipped.
"""

from __future__ import annotations

import argparse
import datetime as dt

from deltalog.spark.session import get_session
from deltalog.spark.writer import write

APP_ID = "daily-sales-append"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table")
    ap.add_argument("--day", default=dt.date.today().isoformat())
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()
    day = dt.date.fromisoformat(args.day)
    spark = get_session(args.master, "daily-sales-append")
    df = spark.range(args.rows).selectExpr(
        "id", "concat('city-', id % 5) AS city", "round(rand(7) * 100, 2) AS amount", f"DATE'{day}' AS day"
    )
    result = write(df, args.table, partition_by=["day"], app_id=APP_ID, app_version=int(day.strftime("%Y%m%d")))
    if result.skipped:
        print(f"{day}: already committed, nothing written")
    else:
        print(f"{day}: version {result.version}, {result.num_files} file(s), {result.num_rows} rows")
    spark.stop()


if __name__ == "__main__":
    main()
