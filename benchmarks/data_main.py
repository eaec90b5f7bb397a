"""``python -m benchmarks --data``: issue 15's data-plane cases (:mod:`benchmarks.data_cases`), printed, and
written to BENCHMARKS.md between the ``bench:data`` markers by a run of every case with ``--runs`` >= 3.

Each engine runs each case ``--runs`` times in fresh processes, alternating engines so that a change in the
machine's load falls on both; the medians are reported. Both engines must agree on the rows (written,
returned, left after the delete) or the run fails: a fast wrong answer is not a result.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from benchmarks.child import MARK
from benchmarks.data_cases import CASES, ENGINES, FULL, QUICK, DataCase, Sizes, build
from benchmarks.measure import ROOT, BenchError
from benchmarks.report import load_average, machine_facts, markdown_grid, text_grid, update_markdown

MIN_RUNS_FOR_MARKDOWN = 3
SUBDIR = "data"
SECTION_TITLE = "## Data plane (issues 15 and 26)"
START = "<!-- bench:data:start -->"
END = "<!-- bench:data:end -->"


@dataclass
class DataResult:
    case: DataCase
    engine: str
    runs: list[dict[str, Any]] = field(default_factory=list)

    def median(self, key: str) -> float | None:
        values = [r[key] for r in self.runs if r.get(key) is not None]
        return statistics.median(values) if values else None


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.data_child", json.dumps(spec)], cwd=ROOT, capture_output=True, text=True
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    if not lines:
        raise BenchError(
            f"{spec['case']} / {spec['engine']}: no result (exit {done.returncode}): {done.stderr[-2000:]}"
        )
    out: dict[str, Any] = json.loads(lines[-1][len(MARK) :])
    if "error" in out:
        raise BenchError(f"{spec['case']} / {spec['engine']}: {out['error']}\n{out.get('traceback', '')}")
    return out


def run_case(case: DataCase, sizes: Sizes, runs: int, work: str) -> list[DataResult]:
    table = build(case, work, sizes)
    results = {e: DataResult(case, e) for e in ENGINES}
    for i in range(runs):
        for engine in ENGINES if i % 2 == 0 else tuple(reversed(ENGINES)):
            target = table or os.path.join(work, f"out-{case.name}-{engine}")
            scratch = os.path.join(work, f"scratch-{case.name}-{engine}")
            for path in (scratch, *([] if table else [target])):
                shutil.rmtree(path, ignore_errors=True)
            spec = {"engine": engine, "case": case.name, "table": target, "scratch": scratch, "sizes": asdict(sizes)}
            try:
                out = _child(spec)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            results[engine].runs.append(out)
            print(f"  {case.name} {engine} run {i + 1}: {out['seconds']:.2f} s", flush=True)
    for key in ("rows", "digest"):  # a digest of the rows, where the case gives one
        seen = {e: {r.get(key) for r in res.runs} for e, res in results.items()}
        if len({frozenset(v) for v in seen.values()}) != 1 or any(len(v) != 1 for v in seen.values()):
            raise BenchError(f"{case.name}: the engines disagree on the rows ({key}): {seen}")
    return list(results.values())


def _cells(res: DataResult, base: DataResult) -> list[str]:
    seconds, other = res.median("seconds"), base.median("seconds")
    peak, base_peak = res.median("call_peak_rss_kib"), base.median("call_peak_rss_kib")
    growth = res.median("call_rss_growth_kib")
    files, kept = res.median("files"), res.median("kept_rows")
    ratio = f"{seconds / other:.2f}" if seconds and other else "—"
    read, least = res.median("read_bytes"), res.median("min_bytes")
    return [
        res.case.name,
        res.engine,
        f"{seconds:.2f}" if seconds is not None else "—",
        ratio,
        f"{res.median('cpu_s') or 0:.2f}",
        f"{peak / 1024:.0f}" if peak else "—",
        f"{peak / base_peak:.2f}" if peak and base_peak else "—",
        f"{growth / 1024:.0f}" if growth is not None else "—",
        f"{files:.0f}" if files is not None else "—",
        f"{kept:.0f}" if kept is not None else "—",
        f"{read / 2**20:.1f}" if read is not None else "—",
        f"{least / 2**20:.1f}" if least is not None else "—",
        str(res.runs[0]["rows"]),
    ]


HEADER = [
    "case",
    "engine",
    "median s",
    "x deltalake",
    "cpu s",
    "call peak RSS MiB",
    "RSS x deltalake",
    "peak growth MiB",
    "files opened",
    "rows in files opened",
    "MiB read",
    "minimum MiB",
    "rows",
]


def grid(results: Sequence[DataResult]) -> tuple[list[str], list[list[str]]]:
    by_case: dict[str, dict[str, DataResult]] = {}
    for r in results:
        by_case.setdefault(r.case.name, {})[r.engine] = r
    body = [_cells(r, engines["deltalake"]) for engines in by_case.values() for r in engines.values()]
    return HEADER, body


def section(command: str, facts: dict[str, str], results: Sequence[DataResult], runs: int, sizes: Sizes) -> str:
    header, body = grid(results)
    targets = "\n".join(f"- `{c.name}`: {c.title}; target: {c.target}" for c in CASES.values())
    facts_text = "; ".join(f"{k} {v}" for k, v in facts.items())
    return "\n".join(
        [
            START,
            f"Command: `{command}` (median of {runs} fresh processes per engine and case, engines alternating).",
            "",
            markdown_grid(header, body),
            "",
            targets,
            "",
            f"Sizes: {asdict(sizes)}. {facts_text}.",
            END,
        ]
    )


def run_data(args: argparse.Namespace, argv: list[str], root: str, quick: bool, banner: str) -> int:
    sizes = QUICK if quick else FULL
    work = os.path.join(root, SUBDIR)
    os.makedirs(work, exist_ok=True)
    names = [n.strip() for n in (args.cases or ",".join(CASES)).split(",") if n.strip()]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        raise SystemExit(f"unknown data case: {', '.join(unknown)} (known: {', '.join(CASES)})")
    load_start, t0 = load_average(), time.monotonic()
    results: list[DataResult] = []
    try:
        for name in names:
            print(f"case {name}: {CASES[name].title}", flush=True)
            results += run_case(CASES[name], sizes, args.runs, work)
    except BenchError as exc:
        print(f"\nBENCHMARK FAILED: {exc}", file=sys.stderr)
        return 1
    raw = os.path.join(work, "last-run.json")
    with open(raw, "w") as f:
        json.dump([{"case": r.case.name, "engine": r.engine, "runs": r.runs} for r in results], f)
    header, body = grid(results)
    print("\n" + text_grid(header, body) + f"\n(every run's numbers: {raw})")
    facts = {k: v for k, v in machine_facts(["deltalog", "deltalake"]).items() if k not in ("os", "memory")}
    facts["load average"] = f"{load_start} at start, {load_average()} at end (1 min)"
    facts["run took"] = f"{(time.monotonic() - t0) / 60:.1f} min"
    print("\n" + "; ".join(f"{k} {v}" for k, v in facts.items()))
    if quick:
        print(f"\n{banner}: every check passed ({len(names)} data cases; {args.markdown} left alone)")
        return 0
    if args.no_write:
        return 0
    if args.runs < MIN_RUNS_FOR_MARKDOWN or set(CASES) - set(names):
        print(f"\n--runs below {MIN_RUNS_FOR_MARKDOWN} or not every data case run: {args.markdown} left alone")
        return 0
    command = " ".join([os.environ.get("BENCH_ENTRY", "python -m benchmarks"), *map(shlex.quote, argv)])
    text = section(command, facts, results, args.runs, sizes)
    if START not in _read(args.markdown):  # the first run adds the section's title too
        text = f"{SECTION_TITLE}\n\n{text}"
    update_markdown(args.markdown, text, "", START, END)
    print(f"\nupdated {args.markdown}")
    return 0


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


__all__ = ["CASES", "DataResult", "MIN_RUNS_FOR_MARKDOWN", "grid", "run_case", "run_data", "section"]
