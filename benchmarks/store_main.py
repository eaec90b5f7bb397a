"""``scripts/bench --store s3|azure``: run the object-store cases, print them, update BENCHMARKS.md.

BENCHMARKS.md gets the store's results (between that store's markers, see :mod:`benchmarks.store_report`)
only from a run of every store case with ``--runs`` >= :data:`MIN_RUNS_FOR_MARKDOWN`, never from ``--quick``
(small tables, one run: it checks the harness end to end, its numbers mean nothing) or ``--no-write``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import time

from benchmarks.report import load_average, machine_facts, update_markdown
from benchmarks.store_bench import run_cases
from benchmarks.store_cases import CASES, StoreCase
from benchmarks.store_report import end_marker, markdown_section, start_marker, text_table

MIN_RUNS_FOR_MARKDOWN = 3
SUBDIR = "stores"
SECTION_TITLE = "## Object stores (issue 16 baseline)"


def run_store(args: argparse.Namespace, argv: list[str], root: str, banner: str) -> int:
    cases: list[StoreCase] = [args.cases_by_name[n] for n in args.case_names]
    work = os.path.join(root, SUBDIR)
    os.makedirs(work, exist_ok=True)
    load_start, t0 = load_average(), time.monotonic()
    results, overhead = run_cases(cases, args.store, args.latency_ms, args.runs, work)
    elapsed = time.monotonic() - t0
    raw = os.path.join(work, f"last-run-{args.store}.json")
    with open(raw, "w") as f:
        json.dump([{"case": r.case.name, "engine": r.engine, "runs": r.runs, "depth": r.depth} for r in results], f)
    print()
    print(text_table(results, overhead, args.latency_ms))
    facts = {k: v for k, v in machine_facts(["deltalog", "deltalake"]).items() if k in ("nproc", "cpu", "python")}
    facts["load average"] = f"{load_start} at start, {load_average()} at end (1 min)"
    facts["run took"] = f"{elapsed / 60:.1f} min"
    facts["deltalog measured"] = machine_facts([]).get("deltalog source", "unknown")
    print("\n" + "; ".join(f"{k} {v}" for k, v in facts.items()) + f"\n(every run's numbers: {raw})")
    if args.quick:
        print(f"\n{banner}: every check passed ({len(cases)} cases; {args.markdown} left alone)")
        return 0
    if args.no_write:
        return 0
    if args.runs < MIN_RUNS_FOR_MARKDOWN or set(CASES) - set(args.case_names):
        print(f"\n--runs below {MIN_RUNS_FOR_MARKDOWN} or not every store case run: {args.markdown} left alone")
        return 0
    command = " ".join([os.environ.get("BENCH_ENTRY", "python -m benchmarks"), *map(shlex.quote, argv)])
    section = markdown_section(args.store, command, facts, results, overhead, args.latency_ms, args.runs)
    update_markdown(args.markdown, section, SECTION_TITLE, start_marker(args.store), end_marker(args.store))
    print(f"\nupdated {args.markdown}")
    return 0


__all__ = ["MIN_RUNS_FOR_MARKDOWN", "SUBDIR", "run_store"]
