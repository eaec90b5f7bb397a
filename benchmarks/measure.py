"""Spawning the child processes, collecting their numbers, and checking every engine saw the same table.

Runs are interleaved (run 1 of every engine, then run 2, ...) with the engine order rotated each round, so
a slow drift of the machine (page cache, thermal, a neighbour) spreads over all engines instead of landing
on whichever ran last. An untimed warm-up round per case comes first: it fills the OS page cache, so every
timed run reads the log from memory, and it is where engines without a free file count are counted.

Cases that write (a checkpoint, an append) run every child, warm-up included, on a fresh scratch copy of
the log and check the copy afterwards (:mod:`benchmarks.scratch`): a run that did not write what it was
timed for fails the case.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

from benchmarks import scratch
from benchmarks.cases import WRITE_OPS, BuiltTable, Case
from benchmarks.child import MARK
from benchmarks.engines import ENGINES, READ_OPS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class BenchError(RuntimeError):
    """A run that cannot be trusted (an engine failed, or engines disagree): no numbers get written."""


@dataclass
class EngineResult:
    case: Case
    engine: str
    expected_files: int
    runs: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None  # set when an optional engine was left out
    verified: bool = False  # some run reported a live-file count, and it matched the generator's

    def _values(self, key: str) -> list[float]:
        return [float(r[key]) for r in self.runs]

    @property
    def median(self) -> float:
        return statistics.median(self._values("load_s"))

    @property
    def minimum(self) -> float:
        return min(self._values("load_s"))

    @property
    def cpu_median(self) -> float:
        """CPU seconds (all threads) of the load: less sensitive than wall time to a busy machine."""
        return statistics.median(self._values("cpu_s"))

    @property
    def import_median(self) -> float:
        return statistics.median(self._values("import_s"))

    @property
    def peak_rss_mib(self) -> float:
        """Median over runs of each process's peak RSS (imports included)."""
        return statistics.median(self._values("peak_rss_kib")) / 1024

    @property
    def import_rss_mib(self) -> float:
        return statistics.median(self._values("rss_import_kib")) / 1024

    @property
    def rss_before_mib(self) -> float:
        return statistics.median(self._values("rss_before_kib")) / 1024

    @property
    def call_peak_rss_mib(self) -> float | None:
        """Median peak RSS of the timed call alone (None where VmHWM could not be reset)."""
        vals = [r.get("call_peak_rss_kib") for r in self.runs]
        return None if any(v is None for v in vals) else statistics.median(float(v) for v in vals) / 1024

    def median_of(self, key: str) -> float | None:
        vals = [r.get(key) for r in self.runs]
        return None if not vals or any(v is None for v in vals) else statistics.median(float(v) for v in vals)

    def detail_median(self, key: str) -> float | None:
        vals = [r.get("details", {}).get(key) for r in self.runs]
        return None if not vals or any(v is None for v in vals) else statistics.median(float(v) for v in vals)


def run_child(engine: str, table: str, version: int | None, count: bool, op: str = "load") -> dict[str, Any]:
    """One fresh interpreter; returns its JSON result (with ``error`` set if the engine raised)."""
    cmd = [sys.executable, "-m", "benchmarks.child", engine, table]
    if version is not None:
        cmd += ["--version", str(version)]
    if op != "load":
        cmd += ["--op", op]
    if count:
        cmd.append("--count")
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if not lines:
        tail = (proc.stderr or proc.stdout).strip()[-2000:]
        return {
            "engine": engine,
            "error": f"child exited {proc.returncode} without a result: {tail}",
            "signal": -proc.returncode if proc.returncode < 0 else None,
        }
    result: dict[str, Any] = json.loads(lines[-1][len(MARK) :])
    return result


def case_engines(case: Case, engines: list[str]) -> list[str]:
    """The asked-for engines that can do the case's operation; every bound of a ``bound`` case.

    Bounds are not engines (``--engines`` picks what is compared, not the floor it is read against).
    """
    if case.op == "bound":
        return list(case.engines or ())
    return [e for e in engines if case.engines is None or e in case.engines]


def _required(engine: str) -> bool:
    """Whether a failure stops the run: an optional engine is left out instead; a bound always counts."""
    entry = ENGINES.get(engine)
    return entry is None or entry.required


def _run_one(case: Case, built: BuiltTable, engine: str, count: bool, work_dir: str) -> dict[str, Any]:
    """:func:`_run_one_child`, run once more if the child was killed by a signal before it reported.

    The machine is shared: a child killed from outside (a SIGBUS once, while another engineer's test suite
    was reinstalling packages under the same venv) is not an engine error. The retry is recorded in the
    run (``killed_by_signal``) and reported; a second kill fails the case like any error.
    """
    out = _run_one_child(case, built, engine, count, work_dir)
    if out.get("signal"):
        print(
            f"  case {case.name}: {engine}'s child was killed by signal {out['signal']}; running it again",
            file=sys.stderr,
            flush=True,
        )
        killed = out["signal"]
        out = _run_one_child(case, built, engine, count, work_dir)
        out["killed_by_signal"] = killed
    return out


def _run_one_child(case: Case, built: BuiltTable, engine: str, count: bool, work_dir: str) -> dict[str, Any]:
    """One child; for a case that writes, on a fresh scratch copy that is checked and removed afterwards."""
    if case.op not in WRITE_OPS:
        return run_child(engine, built.path, case.version, count, case.op)
    dest = scratch.prepare(case, built, scratch.scratch_dir(work_dir, case, engine))
    try:
        out = run_child(engine, dest, case.version, False, case.op)
        if "error" not in out:
            try:
                out.update(scratch.verify(case, built, dest))
            except scratch.ScratchError as exc:
                raise BenchError(f"case {case.name}: {engine}: {exc}") from None
        return out
    finally:
        scratch.discard(dest)


def run_case(
    case: Case, built: BuiltTable, engines: list[str], runs: int, warmup: int, work_dir: str
) -> list[EngineResult]:
    """Time ``case`` with every engine; raises :class:`BenchError` on a required failure or a disagreement."""
    expected = built.expected_files(case.version if case.op in READ_OPS else scratch.target_version(case, built))
    engines = case_engines(case, engines)
    results = {e: EngineResult(case, e, expected) for e in engines}
    active = list(engines)
    for round_no in range(warmup + runs):
        timed = round_no >= warmup
        shift = round_no % len(active) if active else 0
        for engine in active[shift:] + active[:shift]:
            res = results[engine]
            if res.error is not None:
                continue
            out = _run_one(case, built, engine, not timed or round_no == 0, work_dir)
            if "error" in out:
                msg = f"case {case.name}: {engine} failed: {out['error']}"
                if _required(engine):
                    raise BenchError(msg + "\n" + out.get("traceback", ""))
                print(f"  {msg}; leaving {engine} out of this case", file=sys.stderr)
                res.error = out["error"]
                continue
            seen = out.get("files")
            if seen is not None and seen != expected:
                raise BenchError(
                    f"case {case.name}: {engine} saw {seen} live files, the generator wrote {expected} "
                    f"(table {built.path}, version {case.version if case.version is not None else 'latest'})"
                )
            res.verified = res.verified or seen is not None or bool(out.get("verified"))
            if timed:
                res.runs.append(out)
        print(f"  case {case.name}: {'run ' + str(round_no - warmup + 1) if timed else 'warm-up'} done", flush=True)
    for res in results.values():
        if res.error is None and not (res.runs and res.verified):
            raise BenchError(f"case {case.name}: {res.engine} produced no timed run or no file count")
    return list(results.values())


__all__ = ["ROOT", "BenchError", "EngineResult", "case_engines", "run_case", "run_child"]
