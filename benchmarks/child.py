"""One measurement in a fresh interpreter: import an engine, do one operation, print one JSON line.

A fresh process per run is the point: nothing is cached from an earlier load (no warm module state, no
reused Arrow pools), which is what a user opening a table in a new job pays. The parent reads the last
stdout line that starts with :data:`MARK`; anything an engine prints before it is ignored.

The operation is a snapshot load by default; ``--op`` picks another (:data:`benchmarks.cases.OPS`), whose
untimed setup (e.g. loading the table before timing only the checkpoint call) runs before the clock starts.
ENGINE may also name a parsing bound (:data:`benchmarks.bounds.BOUNDS`, op ``bound``), timed the same way.

Usage: ``python -m benchmarks.child ENGINE TABLE [--version V] [--op OP] [--count]``
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from benchmarks.source import ENV_SRC, use_exported_source

MARK = "BENCH_RESULT "


def status_kib(field: str) -> int | None:
    """A ``VmRSS``/``VmHWM`` line of /proc/self/status, in KiB (None where there is no /proc)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def peak_rss_kib() -> int:
    """This process's peak RSS.

    ``VmHWM`` first: ``getrusage(RUSAGE_SELF).ru_maxrss`` is carried across ``execve`` on Linux, so a child
    spawned by a parent that once held 500 MiB reports at least 500 MiB whatever it did itself. ru_maxrss
    (KiB on Linux) is the fallback where /proc is missing.
    """
    hwm = status_kib("VmHWM")
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def reset_peak_rss() -> bool:
    """Reset ``VmHWM`` to the current RSS (Linux >= 4.0: write 5 to ``/proc/self/clear_refs``).

    Lets a run report the peak of the timed call alone, after an untimed setup that used more memory.
    """
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def _check_source(engine: str) -> None:
    """With ``--rev``, make sure the exported deltalog was the one imported, not the working tree's."""
    src = os.environ.get(ENV_SRC)
    module = sys.modules.get("deltalog")
    if src and engine == "deltalog" and module is not None:
        where = os.path.abspath(module.__file__ or "")
        if not where.startswith(os.path.abspath(src) + os.sep):
            raise RuntimeError(f"deltalog was imported from {where}, not from the exported {src}")


def runner_class(name: str) -> type[Any]:
    """An engine's runner, or a parsing bound's (:mod:`benchmarks.bounds`): both are timed the same way."""
    from benchmarks.bounds import BOUNDS
    from benchmarks.engines import ENGINES

    entry = ENGINES.get(name) or BOUNDS.get(name)
    if entry is None:
        raise ValueError(f"no engine or bound named {name!r}")
    return entry.runner  # type: ignore[no-any-return]


def measure(engine: str, table: str, version: int | None, count: bool, op: str = "load") -> dict[str, Any]:
    from benchmarks.engines import READ_OPS, plan

    cls = runner_class(engine)
    t0 = time.perf_counter()
    runner = cls()
    t1 = time.perf_counter()
    _check_source(engine)
    rss_import = status_kib("VmRSS") or 0
    call = plan(runner, op, table, version)  # untimed setup: nothing for a load
    rss_before = status_kib("VmRSS") or 0
    peak_before = peak_rss_kib()
    reset = op not in READ_OPS and reset_peak_rss()
    had_pandas = "pandas" in sys.modules
    c2, t2 = time.process_time(), time.perf_counter()
    files = call()
    t3, c3 = time.perf_counter(), time.process_time()
    # pyarrow imports pandas (when installed) on the first pa.array() of a Python sequence: ~0.3-0.5 s in a
    # fresh process, inside the timed call. Recorded so the report can say when that happened.
    pandas_in_call = not had_pandas and "pandas" in sys.modules
    peak_call = peak_rss_kib()  # before the untimed count, so the count cannot inflate it
    verify = getattr(runner, "verify", None)
    if verify is not None:
        verify()  # untimed checks of what the call returned (e.g. deltalog's stats column has no nulls)
    if count and op in READ_OPS:
        files = runner.count_files(table, version)
    return {
        "engine": engine,
        "op": op,
        "import_s": t1 - t0,
        "load_s": t3 - t2,  # the timed call, whatever the op ("load" is kept for older readers)
        "cpu_s": c3 - c2,  # all threads: above load_s when an engine runs in parallel
        "files": files,
        "rss_import_kib": rss_import,
        "rss_before_kib": rss_before,  # right before the timed call (after the setup)
        "peak_rss_kib": max(peak_before, peak_call),  # the whole process
        "call_peak_rss_kib": peak_call if reset else None,  # the timed call alone (VmHWM reset before it)
        "details": getattr(runner, "details", {}),
        "pandas_imported_in_call": pandas_in_call,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.child")
    parser.add_argument("engine")
    parser.add_argument("table")
    parser.add_argument("--version", type=int, default=None)
    parser.add_argument(
        "--op", default="load", help="load | load_stats | bound | checkpoint | checkpoint_call | append | append_loaded"
    )
    parser.add_argument("--count", action="store_true", help="also count live files independently (untimed)")
    args = parser.parse_args(argv)
    use_exported_source()
    return report(args.engine, lambda: measure(args.engine, args.table, args.version, args.count, args.op))


def report(engine: str | None, run: Callable[[], dict[str, Any]]) -> int:
    """Print what ``run`` measured, or its error, as the one line the parent reads; the exit code."""
    try:
        out = run()
        code = 0
    except Exception as exc:  # reported to the parent, which decides whether the engine is required
        out = {"engine": engine, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        code = 3
    import json  # only now: deltalog imports json too, and a pre-import would shave its import time

    sys.stdout.write(MARK + json.dumps(out) + "\n")
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
