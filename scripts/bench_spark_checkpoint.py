"""Benchmark: a Spark checkpoint of a 100k-file log; prints wall time and peak driver RSS (Python and JVM).

    .venv/bin/python scripts/bench_spark_checkpoint.py [--files 100000] [--parts 4] [--master local[2]]

The log is synthetic (tests/integration/spark_logs.py): commit files only, 200 adds per commit, a few removes
and txns per commit. ``spark.driver.maxResultSize`` is 1 MB, so the run fails if the file list reached the driver.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deltalog.spark.distributed_checkpoint import checkpoint  # noqa: E402
from deltalog.spark.session import get_session  # noqa: E402
from tests.integration.spark_logs import build_log  # noqa: E402

PER_COMMIT = 200


def _jvm_peak_kb(spark: object) -> int | None:
    proc = getattr(getattr(spark, "sparkContext", None), "_gateway", None)
    pid = getattr(getattr(proc, "proc", None), "pid", None)
    if pid is None:
        return None
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()
    now = int(time.time() * 1000)
    work = Path(tempfile.mkdtemp(prefix="deltalog-bench-spark-"))
    try:
        started = time.monotonic()
        live = build_log(work / "t", commits=max(1, args.files // PER_COMMIT), per_commit=PER_COMMIT, now_ms=now)
        built = time.monotonic() - started
        spark = get_session(args.master, "deltalog-bench", {"spark.driver.maxResultSize": "1m"})
        spark.sparkContext.setLogLevel("ERROR")
        started = time.monotonic()
        result = checkpoint(spark, str(work / "t"), parts=args.parts, now_ms=now)
        elapsed = time.monotonic() - started
        py_peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        jvm_kb = _jvm_peak_kb(spark)
        print(f"log: {live} live files, built in {built:.1f} s")
        print(
            f"spark checkpoint v{result.version}: {len(result.files)} parts, {result.num_actions} actions, "
            f"{result.size_in_bytes / 1e6:.1f} MB in {elapsed:.1f} s"
        )
        print(f"peak driver RSS: python {py_peak_mb:.0f} MB, JVM {jvm_kb / 1024 if jvm_kb else float('nan'):.0f} MB")
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
