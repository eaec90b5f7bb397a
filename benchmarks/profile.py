"""deltalog's operation under cProfile, in a fresh process, for finding where the time goes.

Imports and the operation's untimed setup are done before profiling starts, so the profile shows the
same span the timing measures (a snapshot load, open + checkpoint, the checkpoint call alone, or open +
one append: :data:`benchmarks.cases.OPS`). Prints the top functions by own time and by cumulative time,
and saves the raw stats for tools such as ``snakeviz`` or ``python -m pstats``. A write op changes the
table: ``scripts/bench --profile`` runs it on a scratch copy.

Usage: ``python -m benchmarks.profile TABLE [--version V] [--op OP] [--top N] [--out FILE.prof]``
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys

from benchmarks.source import use_exported_source


def profile_op(table: str, version: int | None, top: int, out: str | None, op: str = "load") -> str:
    import time

    from benchmarks.engines import DeltalogRunner, plan

    runner = DeltalogRunner()
    call = plan(runner, op, table, version)
    prof = cProfile.Profile()
    started = time.perf_counter()
    prof.enable()
    n = call()
    prof.disable()
    elapsed = time.perf_counter() - started
    if out:
        prof.dump_stats(out)
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    v = version if version is not None else "latest"
    buf.write(f"deltalog {op} of {table} (version {v}): {elapsed:.3f} s under the profiler; files: {n}\n")
    if runner.details:
        buf.write(f"details: {runner.details}\n")
    for key in ("tottime", "cumulative"):
        buf.write(f"\n--- top {top} by {key} ---\n")
        stats.sort_stats(key).print_stats(top)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile")
    parser.add_argument("table")
    parser.add_argument("--version", type=int, default=None)
    parser.add_argument(
        "--op", default="load", help="load | load_stats | checkpoint | checkpoint_call | append | append_loaded"
    )
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--out", default=None, help="write the raw cProfile stats here")
    args = parser.parse_args(argv)
    use_exported_source()
    sys.stdout.write(profile_op(args.table, args.version, args.top, args.out, args.op))
    return 0


if __name__ == "__main__":
    sys.exit(main())
