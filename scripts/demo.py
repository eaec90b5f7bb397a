"""The deltalog demo: the real pipeline (Spark batch jobs, a plain-Python writer, a conflict, checkpoints,
corrections through Delta Spark's ``DeltaTable`` API) on a local table, then what any reader sees of it.

Run through ``scripts/demo``, which prepares the virtualenv with the ``spark`` extra. One SparkSession
(``local[2]``, no UI, loopback only) serves every Spark step, because starting one costs more than all the
jobs together. The steps live in :mod:`demo_pipeline`, the read-back in :mod:`demo_report`; this file only
wires them and turns a wrong outcome into a non-zero exit, so a green run means the engine behaved.

Spark is started, and Java looked for, before the previous demo table is deleted: a machine without Java
gets one line saying so (exit 1) and keeps its table.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import demo_pipeline  # sibling modules: running this script puts scripts/ first on sys.path
import demo_report
from rich.console import Console
from rich.markup import escape

from deltalog.errors import DeltaLogError
from deltalog.spark.session import find_java, get_session, require_pyspark

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_DIR = Path(__file__).resolve().parent.parent / "demo-table"
#: small-data settings: few shuffle partitions (the checkpoint job shuffles), UTC so dates print as written
SPARK_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.bindAddress": "127.0.0.1",
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Run the demo pipeline on a local Delta table and show it.")
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"the table to (re)create ({DEFAULT_DIR})")
    parser.add_argument("--master", default="local[2]", help="Spark master (default: local[2])")
    return parser.parse_args(argv)


def check_replaceable(root: Path) -> None:
    """Refuse a ``--dir`` that holds something other than a Delta table (it could be a typo)."""
    if root.exists() and any(root.iterdir()) and not (root / "_delta_log").is_dir():
        raise SystemExit(f"{root} exists and is not a Delta table; refusing to replace it")


def reset(root: Path) -> None:
    """Delete an earlier demo table (after :func:`check_replaceable`)."""
    if root.exists():
        check_replaceable(root)
        shutil.rmtree(root)


#: Spark's own log at WARN from the JVM's first line (its default profile prints INFO banners until
#: ``setLogLevel`` runs), minus the warning every machine without native Hadoop libraries gets
LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
"""


def start_spark(master: str) -> SparkSession:
    """The one session of the run, with WARN logs from the start."""
    with tempfile.TemporaryDirectory(prefix="deltalog-demo-") as tmp:
        config = Path(tmp) / "log4j2.properties"
        config.write_text(LOG4J2)
        conf = {**SPARK_CONF, "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={config.as_uri()}"}
        spark = get_session(master, "deltalog-demo", conf)  # the JVM has read the file once this returns
    spark.sparkContext.setLogLevel("WARN")
    return spark


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    root = args.dir.resolve()
    started = time.monotonic()
    try:
        require_pyspark("the demo")
        find_java()
        check_replaceable(root)
    except (DeltaLogError, SystemExit) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    console = Console(highlight=False)
    if not console.is_terminal:  # piped or logged: rich's default would be 80 columns
        console = Console(highlight=False, width=120)

    def say(text: str) -> None:
        console.print(text, markup=False, soft_wrap=True)

    console.print(f"Starting Spark ({args.master})...")
    try:
        spark = start_spark(args.master)
    except DeltaLogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    reset(root)
    ready = time.monotonic()
    try:
        console.print(f"Spark {spark.version} ready in {ready - started:.0f} s\n")
        outcome = demo_pipeline.run_pipeline(spark, root, say=say)
        console.print("\n== 6. what readers see")
        demo_report.show_history(root, console)
        demo_report.show_snapshot(root, console)
        back = demo_pipeline.read_back(spark, root, earlier_version=outcome.day2_version)
        demo_report.show_reads(back, console)
        demo_report.show_scan(demo_report.scan(root, demo_pipeline.BACKFILL_DAY, 50.0), console)
    finally:
        spark.stop()
    done = time.monotonic()
    took = f"{done - started:.0f} s: Spark startup {ready - started:.0f} s, the rest {done - ready:.0f} s"
    found = demo_pipeline.problems(outcome, back)
    if found:
        console.print("\n[bold red]FAILED[/bold red]: " + escape("; ".join(found)))
        return 1
    console.print(f"\nAll steps behaved as expected ({took}). Table: {root}", markup=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
