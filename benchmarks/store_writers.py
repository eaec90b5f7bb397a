"""Concurrent blind appends on an object store: N writer processes x M appends on one fresh table per run.

Each writer (a spawned process, like :mod:`benchmarks.writers` on local disk) imports its engine and loads
the table (writer 0 creates it first), waits at a barrier, then appends M times through the proxy: deltalog
commits one ``add`` per append (``auto_checkpoint=False``), deltalake's ``write_deltalake`` writes a 10-row
file and commits it (post-commit hooks off, as in :mod:`benchmarks.store_child`). A failed append is counted,
never fatal. Each writer reports when it started and finished on ``time.monotonic()``; the proxy's requests
between the first start and the last finish are the run's. Afterwards the table's commits are listed
straight from the server: versions 0..N with no gap, N the number of successful appends.
"""

from __future__ import annotations

import os
import time
import traceback
from typing import Any

from benchmarks.source import use_exported_source
from benchmarks.stores import Target
from benchmarks.writers import append_stats, run_processes

BARRIER_TIMEOUT_S = 300.0


def _writer(idx: int, engine: str, target: Target, appends: int, barrier: Any, queue: Any) -> None:
    """One writer process (the spawn target): set up, wait at the barrier, append, report one dict."""
    try:
        use_exported_source()
        os.environ.update(target.env)
        from benchmarks.store_child import OPS

        ops = OPS[engine](target.options)
        if idx == 0:
            ops.create(target.location)
        barrier.wait(timeout=BARRIER_TIMEOUT_S)  # the table exists
        ops.attach(target.location)
    except BaseException:
        barrier.abort()
        queue.put({"idx": idx, "error": traceback.format_exc()})
        return
    barrier.wait(timeout=BARRIER_TIMEOUT_S)
    start = time.monotonic()
    latencies: list[float] = []
    attempts: list[int] = []
    failures: list[str] = []
    for _ in range(appends):
        t0 = time.monotonic()
        try:
            out = ops.append()
        except Exception as exc:
            failures.append(f"{type(exc).__name__}: {exc}"[:500])
            continue
        latencies.append(time.monotonic() - t0)
        if out.get("attempts") is not None:
            attempts.append(int(out["attempts"]))
    queue.put(
        {
            "idx": idx,
            "start": start,
            "end": time.monotonic(),
            "latencies": latencies,
            "attempts": attempts,
            "failures": failures,
        }
    )


def run_writers(engine: str, target: Target, writers: int, appends: int) -> dict[str, Any]:
    """One run; returns the window (``start``, ``end``) and the appends' numbers. Raises if a writer broke."""
    outs = run_processes(_writer, writers, (engine, target, appends), engine)
    return {"start": min(o["start"] for o in outs), "end": max(o["end"] for o in outs), **append_stats(outs)}


__all__ = ["run_writers"]
