"""Benchmark: a Spark checkpoint of a 100k-file log; prints wall time, peak driver RSS, and checks the state.

    .venv/bin/python scripts/bench_spark_checkpoint.py [--files 100000] [--parts 4] [--master local[2]]

The log is synthetic (tests/integration/spark_logs.py): commit files only, 200 adds per commit, a few removes
and txns per commit. ``spark.driver.maxResultSize`` is 1 MB, so the run fails if the file list reached the driver.
Afterwards the local writer checkpoints a copy of the same log, the commits before the checkpoint are deleted
from both, and the live files rebuilt from each checkpoint must equal the replay of the JSON commits.
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

from deltalog import DeltaLog  # noqa: E402
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


def _live_paths(root: Path) -> list[str]:
    return sorted(DeltaLog.for_table(root, auto_checkpoint=False).snapshot().files().column("path").to_pylist())


def _drop_commits_before(root: Path, version: int) -> None:
    """Leave only the checkpoint to rebuild the version: the commits before it are deleted."""
    for f in (root / "_delta_log").glob("*.json"):
        if f.name[:20].isdigit() and int(f.name[:20]) < version:
            f.unlink()


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
        table = work / "t"
        expected = _live_paths(table)  # replayed from the JSON commits alone
        local_copy = work / "local"
        shutil.copytree(table, local_copy)
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
        local = DeltaLog.for_table(local_copy, auto_checkpoint=False).checkpoint(version=result.version)
        for root in (table, local_copy):
            _drop_commits_before(root, result.version)
        from_spark, from_local = _live_paths(table), _live_paths(local_copy)
        same = from_spark == from_local == expected
        print(
            f"same reconstructed state from the Spark checkpoint, the local checkpoint ({local.kind}) and the "
            f"JSON commits: {'yes' if same else 'NO'} ({len(expected)} live files)"
        )
        if not same:
            raise SystemExit("the Spark and local checkpoints disagree with the log")
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
