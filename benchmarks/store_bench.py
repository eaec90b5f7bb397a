"""``scripts/bench --store s3|azure --latency-ms N``: issue 16's object-store cases through the counting proxy.

One run: start the store's server (moto or Azurite), build the tables locally (:mod:`benchmarks.cases`,
cached in ``<dir>/stores/``) and upload their logs straight to the server, start a
:class:`~benchmarks.proxy.LatencyProxy` in front of it, then time every case with every engine in fresh
processes (:mod:`benchmarks.store_child`; the writers case in :mod:`benchmarks.store_writers`), engines
interleaved and their order rotated each round as in the local bench. Every run is checked (live-file
count, version, history versions, dense commits after appends) and a failed check stops the benchmark.
Requests are counted inside each child's timed window only; request counts are exact, times are medians.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.cases import BuiltTable, build
from benchmarks.child import MARK
from benchmarks.measure import ROOT, BenchError
from benchmarks.proxy import LatencyProxy, Request
from benchmarks.request_stats import CLASSES, Tally, tally
from benchmarks.store_cases import StoreCase
from benchmarks.store_writers import run_writers
from benchmarks.stores import ENGINES, Backend, DirectClient, Target, serving, upload_log

CHILD_TIMEOUT_S = 1800.0
#: the dependency pass answers in rounds closed after this much quiet (:class:`benchmarks.withhold.Rounds`):
#: far above any gap between the sends of a working client, even on a loaded machine
DEPTH_QUIET_S = 0.25


@dataclass
class StoreResult:
    """Every run of one case with one engine; each run's numbers are per window (per append for appends)."""

    case: StoreCase
    engine: str
    runs: list[dict[str, Any]] = field(default_factory=list)
    #: dependent round trips: the rounds one extra run spanned with answers released in rounds (the most of
    #: any window: per append for appends); None where not measured (the writers case)
    depth: int | None = None

    def values(self, key: str) -> list[float]:
        return [float(r[key]) for r in self.runs if r.get(key) is not None]

    def median(self, key: str) -> float | None:
        vals = self.values(key)
        return statistics.median(vals) if vals else None


@dataclass
class Overhead:
    """What the proxy itself cost over the run: its thread's CPU and its per-request added time."""

    cpu_s: float = 0.0
    requests: int = 0
    added_s: list[float] = field(default_factory=list)
    queued_s: list[float] = field(default_factory=list)

    def add(self, cpu_s: float, seen: int, timed: list[Request], latency_s: float) -> None:
        self.cpu_s += cpu_s
        self.requests += seen
        self.added_s += [r.overhead_s(latency_s) for r in timed]
        self.queued_s += [r.queued_s for r in timed]


@dataclass(frozen=True)
class Prepared:
    """A table on the store: its local build (the expected answers) and where it was uploaded."""

    built: BuiltTable
    prefix: str
    timestamp_ms: int | None  # between the pause commit and the next (cases with a ``pause_after``)


def _prepare(cases: list[StoreCase], root: str, client: DirectClient) -> dict[str, Prepared]:
    pauses = {c.table.name: c.pause_after for c in cases if c.table is not None and c.pause_after is not None}
    out: dict[str, Prepared] = {}
    for case in cases:
        table = case.table
        if table is None or table.name in out:
            continue
        built = build(table, root)
        pause = pauses.get(table.name)
        print(f"uploading {table.name} ({table.spec.commits} commits) ...", flush=True)
        upload_log(client, built.path, table.name, pause)
        ts = None
        if pause is not None:
            mtimes = client.commit_versions(table.name)
            if mtimes.get(pause + 1, 0) - mtimes.get(pause, 0) < 1000:
                raise BenchError(f"{table.name}: commits {pause} and {pause + 1} are less than 1 s apart on the store")
            ts = mtimes[pause + 1] - 1
        out[table.name] = Prepared(built, table.name, ts)
    return out


def child_spec(case: StoreCase, engine: str, target: Target, ts: int | None, server_pid: int) -> dict[str, Any]:
    return {
        "server_pid": server_pid,
        "engine": engine,
        "op": case.op,
        "location": target.location,
        "options": target.options,
        "env": target.env,
        "version": case.version if case.op == "load" else None,
        "timestamp_ms": ts,
        "limit": case.history_limit,
        "appends": case.appends,
    }


def _run_child(spec: dict[str, Any]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.store_child", json.dumps(spec)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False, timeout=CHILD_TIMEOUT_S)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if not lines:
        raise BenchError(f"{spec['engine']} child exited {proc.returncode} without a result: {proc.stderr[-2000:]}")
    out: dict[str, Any] = json.loads(lines[-1][len(MARK) :])
    if "error" in out:
        raise BenchError(f"{spec['engine']} failed ({spec['op']} {spec['location']}): {out['traceback']}")
    return out


def _check(case: StoreCase, engine: str, prepared: Prepared | None, results: list[dict[str, Any]]) -> None:
    """The answers every run must give; a wrong one stops the benchmark (no numbers from a wrong load)."""
    problems = []
    if case.op == "append":
        if [r["version"] for r in results] != list(range(1, case.appends + 1)):
            problems.append(f"appended as versions {[r['version'] for r in results]}")
    elif prepared is not None:
        built, (res,) = prepared.built, results
        latest = built.latest
        if case.op == "history":
            want = list(range(latest, max(latest - case.history_limit, -1), -1))
            if res["versions"] != want:
                problems.append(f"history versions {res['versions']}, expected {want}")
        else:
            version = latest if case.version is None else case.version
            if res["version"] != version or res["files"] != built.expected_files(version):
                problems.append(
                    f"loaded version {res['version']} with {res['files']} files; "
                    f"expected {version} with {built.expected_files(version)}"
                )
    if problems:
        raise BenchError(f"case {case.name}: {engine}: {'; '.join(problems)}")


def _tallied(windows: list[tuple[float, float]], seen: list[Request]) -> dict[str, Any]:
    tallies: list[Tally] = [tally([r for r in seen if t0 <= r.start <= t1]) for t0, t1 in windows]
    n = len(tallies)
    return {
        "requests": sum(t.requests for t in tallies) / n,
        "serial": sum(t.serial for t in tallies) / n,
        "outside_log": sum(t.outside_log for t in tallies) / n,
        "by_class": {c: sum(t.by_class.get(c, 0) for t in tallies) / n for c in CLASSES},
        "total_requests": sum(t.requests for t in tallies),
        "setup_requests": len(seen) - sum(t.requests for t in tallies),
    }


def _one_run(
    case: StoreCase,
    engine: str,
    backend: Backend,
    proxy: LatencyProxy,
    prepared: Prepared | None,
    client: DirectClient,
) -> tuple[dict[str, Any], list[Request]]:
    """One fresh-process measurement (or one writers run): its numbers, and the requests it timed; with the
    proxy answering in rounds, ``depth`` is the most rounds one window's requests spanned."""
    prefix = prepared.prefix if prepared is not None else f"scratch-{case.name}-{engine}-{uuid.uuid4().hex[:8]}"
    target = backend.target(engine, prefix, proxy.endpoint)
    n0, cpu0 = len(proxy.records()), proxy.cpu_s()
    if case.op == "writers":
        out = run_writers(engine, target, case.writers, case.appends)
        windows = [(out["start"], out["end"])]
        commits = sorted(client.commit_versions(prefix))
        if commits != list(range(out["successes"] + 1)):
            raise BenchError(f"case {case.name}: {engine}: commits {commits[:5]}... for {out['successes']} appends")
        run = {"wall_s": out["end"] - out["start"], **{k: v for k, v in out.items() if k not in ("start", "end")}}
    else:
        ts = prepared.timestamp_ms if prepared is not None else None
        out = _run_child(child_spec(case, engine, target, ts, backend.server.proc.pid))
        _check(case, engine, prepared, out["results"])
        windows = [(w[0], w[1]) for w in out["windows"]]
        n = len(windows)
        server_cpu = out.get("server_cpu_s")
        run = {
            "wall_s": sum(t1 - t0 for t0, t1 in windows) / n,
            "cpu_s": out["cpu_s"] / n,
            "server_cpu_s": None if server_cpu is None else server_cpu / n,
        }
    seen = proxy.records()[n0:]
    run.update(_tallied(windows, seen))
    run["proxy_cpu_s"] = proxy.cpu_s() - cpu0
    run["seen"] = len(seen)
    timed = [r for r in seen if any(t0 <= r.start <= t1 for t0, t1 in windows)]
    # how long the server took to answer (queueing in it included): on a busy machine a bulk read is bounded
    # by the server's throughput, not by the latency, and this shows it
    run["server_ms"] = statistics.median(r.server_s for r in timed) * 1000 if timed else None
    if any(r.round >= 0 for r in seen):  # answered in rounds (the dependency pass); timed runs have none
        run["depth"] = max((len({r.round for r in seen if t0 <= r.start <= t1}) for t0, t1 in windows), default=0)
    return run, timed


def _depth(
    case: StoreCase, engine: str, backend: Backend, proxy: LatencyProxy, table: Prepared | None, client: DirectClient
) -> int:
    """The dependent round trips of one more run, its answers released in rounds (never timed: the rounds'
    quiet periods are in its wall time)."""
    proxy.answer_in_rounds(DEPTH_QUIET_S)
    try:
        run, _ = _one_run(case, engine, backend, proxy, table, client)
    finally:
        proxy.answer_in_rounds(None)
    return int(run["depth"])


def run_cases(
    cases: list[StoreCase], store: str, latency_ms: float, runs: int, work_dir: str
) -> tuple[list[StoreResult], Overhead]:
    """Every case x engine, ``runs`` times, interleaved; returns the results and the proxy's overhead."""
    results: list[StoreResult] = []
    overhead = Overhead()
    with serving(store, Path(work_dir) / f"server-{store}") as backend:
        client = DirectClient(backend)
        try:
            prepared = _prepare(cases, work_dir, client)
            with LatencyProxy(backend.server.endpoint, latency_ms) as proxy:
                print(f"proxy {proxy.endpoint} -> {backend.server.endpoint}, {latency_ms:g} ms per request", flush=True)
                for case in cases:
                    print(f"case {case.name}: {case.title}", flush=True)
                    by_engine = {e: StoreResult(case, e) for e in ENGINES}
                    for round_no in range(runs):
                        shift = round_no % len(ENGINES)
                        for engine in ENGINES[shift:] + ENGINES[:shift]:
                            table = prepared.get(case.table.name) if case.table is not None else None
                            run, timed = _one_run(case, engine, backend, proxy, table, client)
                            overhead.add(run["proxy_cpu_s"], run["seen"], timed, latency_ms / 1000)
                            by_engine[engine].runs.append(run)
                            print(
                                f"  {engine} run {round_no + 1}: {run['requests']:g} requests, "
                                f"{run['serial']:g} serial, {run['wall_s']:.3f} s",
                                flush=True,
                            )
                    if case.op != "writers":
                        table = prepared.get(case.table.name) if case.table is not None else None
                        for engine in ENGINES:
                            by_engine[engine].depth = _depth(case, engine, backend, proxy, table, client)
                            print(f"  {engine}: {by_engine[engine].depth} dependent round trips", flush=True)
                    results += by_engine.values()
        finally:
            client.close()
    return results, overhead


__all__ = ["DEPTH_QUIET_S", "Overhead", "StoreResult", "child_spec", "run_cases"]
