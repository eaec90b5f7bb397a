"""The compaction job on Spark: checkpoint each table whose readers replay too many commits.

    .venv/bin/python scripts/spark_compaction_job.py TABLE [TABLE ...] [--after 10] [--parts 4] [--master local[2]]

For each table, if at least ``--after`` commits follow its newest checkpoint, Spark executors reconcile the
log and write a multi-part checkpoint (deltalog.spark.distributed_checkpoint); the driver only moves _last_checkpoint.
"""

from __future__ import annotations

import argparse

from deltalog import DeltaLog
from deltalog.spark.distributed_checkpoint import checkpoint
from deltalog.spark.session import get_session


def commits_since_checkpoint(table: str) -> tuple[int, int]:
    log = DeltaLog.for_table(table, auto_checkpoint=False)
    segment = log.segment()
    return segment.version, len(segment.commits)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="+")
    ap.add_argument("--after", type=int, default=10, help="checkpoint when this many commits follow the last one")
    ap.add_argument("--parts", type=int, default=None)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()
    spark = get_session(args.master, "deltalog-compaction")
    for table in args.tables:
        version, since = commits_since_checkpoint(table)
        if since < args.after:
            print(f"{table}: version {version}, {since} commit(s) since the last checkpoint: skipped")
            continue
        result = checkpoint(spark, table, version=version, parts=args.parts)
        print(
            f"{table}: checkpoint v{result.version}, {len(result.files)} part(s), {result.num_add_files} files, "
            f"{result.seconds:.1f} s"
        )
    spark.stop()


if __name__ == "__main__":
    main()
