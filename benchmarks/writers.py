"""Concurrent blind appends: N writer processes x M appends each on one fresh local table.

Every run of every variant starts from a fresh, empty table (version 0, created by the variant's own
engine before the clock starts). Writers are ``multiprocessing`` *spawn* processes: each imports its
engine and opens the table, then waits at a shared barrier; the clock starts when the barrier releases.
Each append writes the same 10-row parquet file under a new name and commits it:

- ``deltalog``: ``pyarrow.parquet.write_table`` into the table dir, then
  ``log.start_transaction().commit([Add])`` on one ``DeltaLog`` per writer (its cached snapshot advances
  with every commit), opened with ``auto_checkpoint=False``; ``deltalog+autocp`` is the same with the
  default ``auto_checkpoint=True`` (a checkpoint, then expired-log cleanup, after commits at multiples of
  ``delta.checkpointInterval``, 10 by default; the writer whose commit lands there pays for it);
- ``deltalake``: ``write_deltalake(path, rows, mode="append")`` with its defaults (it retries a lost
  commit race up to 15 times, then raises; a post-commit checkpoint at multiples of 100).

A failed append is counted, never fatal. After each run the log is checked: versions 0..N with no gap,
N equal to the successful appends, each commit one ``add`` of a distinct file that exists, and for
deltalog the versions the writers were told equal 1..N. A run that fails a check fails the benchmark.

Reported per variant: commits/second (successful commits / wall time from the barrier to the last writer
done), p50 and p95 latency of one append (file write + commit, successful appends), failed appends, and
for deltalog the mean commit attempts; the median over runs of each.
"""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from benchmarks.cases import WriteCase
from benchmarks.source import ENV_SRC, use_exported_source
from benchmarks.synth import LOG_DIR

BARRIER_TIMEOUT_S = 300.0
RESULT_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class Variant:
    name: str
    engine: str
    auto_checkpoint: bool = False
    label: str = ""


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("deltalog", "deltalog", False, "deltalog, auto_checkpoint=False"),
        Variant("deltalog+autocp", "deltalog", True, "deltalog, auto_checkpoint=True (default)"),
        Variant("deltalake", "deltalake", False, "deltalake write_deltalake (defaults)"),
    )
}


class _DeltalogAppender:
    def __init__(self, table: str, rows: int, auto_checkpoint: bool) -> None:
        from benchmarks.engines import sample_rows
        from deltalog import DeltaLog, actions

        self.table = table
        self.rows = sample_rows(rows, None)
        self.log = DeltaLog.for_table(table, auto_checkpoint=auto_checkpoint)
        self._add = actions.Add
        src = os.environ.get(ENV_SRC)
        module = sys.modules["deltalog"]
        if src and not os.path.abspath(module.__file__ or "").startswith(os.path.abspath(src) + os.sep):
            raise RuntimeError(f"deltalog was imported from {module.__file__}, not from the exported {src}")

    def create(self) -> None:
        self.log.create(self.rows.schema)

    def append(self) -> tuple[int | None, int | None]:
        from benchmarks.engines import write_data_file

        rel, size, mtime = write_data_file(self.table, self.rows, None)
        add = self._add(path=rel, partition_values={}, size=size, modification_time=mtime, data_change=True)
        result = self.log.start_transaction().commit([add])
        return result.version, result.attempts


class _DeltalakeAppender:
    def __init__(self, table: str, rows: int, auto_checkpoint: bool) -> None:
        from deltalake import DeltaTable, write_deltalake

        from benchmarks.engines import sample_rows

        self.table = table
        self.rows = sample_rows(rows, None)
        self._create = DeltaTable.create
        self._write = write_deltalake

    def create(self) -> None:
        self._create(self.table, schema=self.rows.schema)

    def append(self) -> tuple[int | None, int | None]:
        self._write(self.table, self.rows, mode="append")
        return None, None  # write_deltalake tells neither the version nor the attempts


class _Counter(logging.Handler):
    """Counts what the engine logs at WARNING and above (e.g. a failed automatic checkpoint)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0
        self.first: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        if self.first is None:
            self.first = record.getMessage()[:300]
            if record.exc_info and record.exc_info[1] is not None:
                self.first += f" ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})"[:300]


def _writer(idx: int, variant: str, table: str, appends: int, rows: int, barrier: Any, queue: Any) -> None:
    """One writer process (the spawn target): set up, wait at the barrier, append, report one dict."""
    try:
        use_exported_source()
        counter = _Counter()
        logging.getLogger("deltalog").addHandler(counter)
        v = VARIANTS[variant]
        cls = _DeltalogAppender if v.engine == "deltalog" else _DeltalakeAppender
        app = cls(table, rows, v.auto_checkpoint)
        if idx == 0:
            app.create()
    except BaseException:
        barrier.abort()
        queue.put({"idx": idx, "error": traceback.format_exc()})
        return
    barrier.wait(timeout=BARRIER_TIMEOUT_S)  # writer 0 has created the table before it arrives here
    start = time.monotonic()
    latencies: list[float] = []
    versions: list[int] = []
    attempts: list[int] = []
    failures: list[str] = []
    for _ in range(appends):
        t0 = time.monotonic()
        try:
            version, tries = app.append()
        except Exception as exc:
            failures.append(f"{type(exc).__name__}: {exc}"[:500])
            continue
        latencies.append(time.monotonic() - t0)
        if version is not None:
            versions.append(version)
        if tries is not None:
            attempts.append(tries)
    end = time.monotonic()
    queue.put(
        {
            "idx": idx,
            "start": start,
            "end": end,
            "latencies": latencies,
            "versions": versions,
            "attempts": attempts,
            "failures": failures,
            "logged": counter.count,
            "first_logged": counter.first,
        }
    )


def _verify(table: str, outs: list[dict[str, Any]], variant: Variant) -> dict[str, Any]:
    """Dense versions, one commit per successful append, one distinct existing file per commit."""
    log_dir = os.path.join(table, LOG_DIR)
    names = os.listdir(log_dir)
    commits = sorted(int(n[:20]) for n in names if len(n) == 25 and n.endswith(".json") and n[:20].isdigit())
    successes = sum(len(o["latencies"]) for o in outs)
    if commits != list(range(len(commits))):
        gaps = sorted(set(range(commits[-1] + 1)) - set(commits)) if commits else []
        raise RuntimeError(f"{log_dir}: versions are not dense (missing {gaps[:10]})")
    if len(commits) - 1 != successes:
        raise RuntimeError(f"{log_dir}: {len(commits) - 1} commits after version 0, {successes} successful appends")
    paths = set()
    for v in commits[1:]:
        with open(os.path.join(log_dir, f"{v:020d}.json"), "rb") as f:
            actions = [json.loads(line) for line in f.read().splitlines() if line.strip()]
        adds = [a["add"]["path"] for a in actions if "add" in a]
        if len(adds) != 1 or any("remove" in a for a in actions):
            raise RuntimeError(f"{log_dir}: version {v} holds {len(adds)} adds (expected one, no removes)")
        if not os.path.isfile(os.path.join(table, unquote(adds[0]))):
            raise RuntimeError(f"{log_dir}: version {v} adds {adds[0]}, which does not exist")
        paths.add(adds[0])
    if len(paths) != successes:
        raise RuntimeError(f"{log_dir}: {len(paths)} distinct files for {successes} commits")
    if variant.engine == "deltalog":
        told = sorted(v for o in outs for v in o["versions"])
        if told != list(range(1, successes + 1)):
            raise RuntimeError(f"{log_dir}: the writers were told versions {told[:10]}..., expected 1..{successes}")
    checkpoints = {n[:20] for n in names if ".checkpoint." in n and n.endswith(".parquet")}
    return {"versions": len(commits), "checkpoints": len(checkpoints)}


def run_processes(target: Callable[..., None], writers: int, args: tuple[Any, ...], label: str) -> list[dict[str, Any]]:
    """``writers`` spawned processes running ``target(idx, *args, barrier, queue)`` behind one barrier; each puts
    one dict on the queue (``error`` when it failed before appending, which fails the run)."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(writers)
    queue = ctx.Queue()
    procs = [ctx.Process(target=target, args=(i, *args, barrier, queue)) for i in range(writers)]
    for p in procs:
        p.start()
    outs: list[dict[str, Any]] = []
    try:
        for _ in procs:
            outs.append(queue.get(timeout=RESULT_TIMEOUT_S))
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.terminate()
                p.join()
    errors = [o["error"] for o in outs if "error" in o]
    if errors:
        raise RuntimeError(f"{label}: a writer failed before appending:\n{errors[0]}")
    return outs


def append_stats(outs: list[dict[str, Any]]) -> dict[str, Any]:
    """The writers' reports (``start``, ``end``, ``latencies``, ``attempts``, ``failures``) summed up."""
    wall = max(o["end"] for o in outs) - min(o["start"] for o in outs)
    lat = sorted(x for o in outs for x in o["latencies"])
    attempts = [a for o in outs for a in o["attempts"]]
    failures = [f for o in outs for f in o["failures"]]
    return {
        "wall_s": wall,
        "successes": len(lat),
        "commits_per_s": len(lat) / wall if wall > 0 else 0.0,
        "p50_s": statistics.median(lat) if lat else None,
        "p95_s": statistics.quantiles(lat, n=100, method="inclusive")[94] if len(lat) > 1 else None,
        "max_s": lat[-1] if lat else None,
        "failed": len(failures),
        "first_failure": failures[0] if failures else None,
        "mean_attempts": statistics.fmean(attempts) if attempts else None,
        "max_attempts": max(attempts) if attempts else None,
    }


def run_once(case: WriteCase, variant: Variant, table: str) -> dict[str, Any]:
    """One run: a fresh table, ``case.writers`` spawn processes behind a barrier; returns the run's numbers."""
    shutil.rmtree(table, ignore_errors=True)
    os.makedirs(table)
    outs = run_processes(_writer, case.writers, (variant.name, table, case.appends, case.rows), variant.name)
    facts = _verify(table, outs, variant)
    return {
        **append_stats(outs),
        "logged": sum(o["logged"] for o in outs),
        "first_logged": next((o["first_logged"] for o in outs if o["first_logged"]), None),
        **facts,
    }


@dataclass
class WriteResult:
    case: WriteCase
    variant: Variant
    runs: list[dict[str, Any]] = field(default_factory=list)

    def median(self, key: str) -> float | None:
        vals = [r[key] for r in self.runs if r.get(key) is not None]
        return statistics.median(vals) if vals else None


def run_write_case(case: WriteCase, runs: int, work_dir: str) -> list[WriteResult]:
    """Every variant ``runs`` times, interleaved with the order rotated each round; tables under scratch/."""
    results = {name: WriteResult(case, VARIANTS[name]) for name in case.variants}
    names = list(case.variants)
    for round_no in range(runs):
        shift = round_no % len(names)
        for name in names[shift:] + names[:shift]:
            table = os.path.join(work_dir, "scratch", f"{case.name}-{name}")
            out = run_once(case, VARIANTS[name], table)
            results[name].runs.append(out)
            shutil.rmtree(table, ignore_errors=True)
            print(
                f"  case {case.name} run {round_no + 1} {name}: {out['commits_per_s']:.1f} commits/s, "
                f"{out['failed']} failed, {out['checkpoints']} checkpoints",
                flush=True,
            )
    return list(results.values())


__all__ = ["VARIANTS", "Variant", "WriteResult", "append_stats", "run_once", "run_processes", "run_write_case"]
