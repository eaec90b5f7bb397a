"""One run of a streaming query's driver, for the kill test (``python -m tests.integration.stream_driver ...``).

A new SparkSession (its own JVM: killing this process group kills the driver whole), the deltalog source read
one file per micro-batch (``maxFilesPerTrigger=1``) into the deltalog sink, with ``Trigger.AvailableNow``: the
query reads what the source holds and stops. A restart with the same checkpoint resumes where the last
committed batch ended. Exit status 0 when the query finished, 2 when it failed (its error on stderr).
"""

from __future__ import annotations

import argparse
import sys

import deltalog.spark
from deltalog.spark.session import get_session

CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.bindAddress": "127.0.0.1",
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("source")
    parser.add_argument("sink")
    parser.add_argument("checkpoint")
    args = parser.parse_args(argv)
    spark = get_session("local[2]", "deltalog-stream-kill", CONF)
    spark.sparkContext.setLogLevel("ERROR")
    deltalog.spark.register(spark)
    query = (
        spark.readStream.format("deltalog")
        .option("maxFilesPerTrigger", 1)
        .load(args.source)
        .writeStream.format("deltalog")
        .option("checkpointLocation", args.checkpoint)
        .trigger(availableNow=True)
        .start(args.sink)
    )
    try:
        query.awaitTermination()
    except Exception as exc:  # the query failed: say why, typed when deltalog raised it
        print(f"query failed: {deltalog.spark.carried_error(exc) or exc}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
