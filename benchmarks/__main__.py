"""Command line: build the tables, time every case with every engine, print the tables, update BENCHMARKS.md.

``scripts/bench --help`` lists the options. Numbers are written to BENCHMARKS.md only from a full-strength
run (``--runs`` and ``--slow-runs`` >= 5, ``--write-runs`` >= 3) of every default case that every required
engine passed, so a quick look or a partial run never overwrites real numbers. ``--quick`` is the smoke
check: every case on small tables under ``<dir>/quick/`` with every check of a full run, in well under a
minute; its numbers are not comparable to anything, so it never writes BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys

from benchmarks import quick, scratch
from benchmarks.bounds import BOUNDS
from benchmarks.cases import CASES, GROUPS, WRITE_OPS, BuiltTable, Case, Table, WriteCase, build
from benchmarks.data_main import run_data
from benchmarks.engines import ENGINES
from benchmarks.measure import ROOT, BenchError, EngineResult, case_engines, run_case
from benchmarks.report import load_average, machine_facts, markdown_section, text_table, update_markdown
from benchmarks.source import ENV_REV, ENV_SRC, export_rev
from benchmarks.store_cases import CASES as STORE_CASES
from benchmarks.store_cases import QUICK_CASES as QUICK_STORE_CASES
from benchmarks.store_main import run_store
from benchmarks.stores import STORES
from benchmarks.writers import WriteResult, run_write_case

MIN_RUNS_FOR_MARKDOWN = 5
MIN_WRITE_RUNS_FOR_MARKDOWN = 3
PREAMBLE = "# Benchmarks\n\nTimings of deltalog against other engines; see `scripts/bench --help`.\n"


def _names(
    value: str, known: dict[str, object], what: str, groups: dict[str, tuple[str, ...]] | None = None
) -> list[str]:
    names = [n for v in value.split(",") if v.strip() for n in (groups or {}).get(v.strip(), (v.strip(),))]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    return names


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=os.environ.get("BENCH_ENTRY", "python -m benchmarks"), description=__doc__)
    add = p.add_argument
    add("--dir", default=os.path.join(ROOT, "bench-data"), help="work dir for the tables (default: %(default)s)")
    add("--runs", type=int, help="timed fresh processes per engine and case (default: 5; 1 with --quick)")
    add("--slow-runs", type=int, help="the same for the slow cases (D, D-*) (default: 5; 1 with --quick)")
    add("--write-runs", type=int, help="runs of the concurrent-writer case (default: 3; 1 with --quick)")
    add("--warmup", type=int, help="untimed rounds first, which also count files (default: 1; 0 with --quick)")
    add(
        "--quick",
        action="store_true",
        help=f"smoke check in seconds: every case on small tables under <dir>/{quick.SUBDIR}/ with every "
        f"correctness check, W as {quick.WRITERS} writers x {quick.APPENDS} appends, one run each, no warm-up; "
        "implies --no-write (its numbers are not comparable)",
    )
    add(
        "--cases",
        help="comma-separated (default: "
        + ",".join(n for n, c in CASES.items() if c.default)
        + "; with --store: "
        + ",".join(STORE_CASES)
        + ")",
    )
    add("--engines", default=",".join(n for n, e in ENGINES.items() if e.default), help="comma-separated (%(default)s)")
    add("--markdown", default=os.path.join(ROOT, "BENCHMARKS.md"), help="file to update (default: %(default)s)")
    add("--no-write", action="store_true", help="print only; leave BENCHMARKS.md alone")
    add("--build-only", action="store_true", help="build the tables and stop")
    add("--profile", action="store_true", help="profile deltalog's operation (cProfile) on the cases instead of timing")
    add("--top", type=int, default=25, help="functions to show with --profile (default: %(default)s)")
    add("--rev", default=None, help="measure deltalog as of this git commit (exported), not the working tree")
    add("--list", action="store_true", help="list cases and engines and stop")
    add(
        "--store",
        choices=STORES,
        help="run issue 16's object-store cases on this store's server through the latency-injecting, "
        "request-counting proxy (benchmarks/proxy.py) instead of the local cases; --runs defaults to 3",
    )
    add("--latency-ms", type=float, default=25.0, help="with --store: ms the proxy adds per request (%(default)s)")
    add(
        "--data",
        action="store_true",
        help="run the data-plane cases (issue 15: write, scans, delete; issue 26: merge, update) against deltalake "
        "instead of the log cases; --runs defaults to 3",
    )
    args = p.parse_args(argv)
    for name, full, smoke in (
        ("runs", 3 if args.store or args.data else 5, 1),
        ("slow_runs", 5, 1),
        ("write_runs", 3, 1),
    ):
        if getattr(args, name) is None:
            setattr(args, name, smoke if args.quick else full)
    if args.warmup is None:
        args.warmup = 0 if args.quick else 1
    args.no_write = args.no_write or args.quick
    if args.data:  # its cases are checked by run_data
        args.case_names, args.engine_names = [], []
        return args
    if args.store:
        args.cases_by_name = QUICK_STORE_CASES if args.quick else STORE_CASES
        default_cases = ",".join(args.cases_by_name)
    else:
        args.cases_by_name = quick.quick_cases() if args.quick else CASES
        default_cases = ",".join(n for n, c in CASES.items() if c.default)
    if min(args.runs, args.slow_runs, args.write_runs) < 1 or args.warmup < 0 or args.latency_ms < 0:
        p.error("--runs, --slow-runs and --write-runs must be >= 1, --warmup and --latency-ms >= 0")
    args.case_names = _names(args.cases or default_cases, args.cases_by_name, "case", GROUPS)
    args.engine_names = _names(args.engines, ENGINES, "engine")
    return args


def _list(cases: dict[str, Case | WriteCase]) -> None:
    for c in cases.values():
        flags = ("" if c.default else " (not default)") + (" (slow)" if c.slow else "")
        if isinstance(c, WriteCase):
            print(f"case {c.name}: {c.title} [variants {', '.join(c.variants)}]{flags}")
            continue
        v = "latest" if c.version is None else f"v{c.version}"
        print(f"case {c.name}: {c.title} [{c.op} of {c.table.name} @ {v}]{flags}")
    for e in ENGINES.values():
        doc = (e.runner.__doc__ or "").replace("``", "").splitlines()
        print(f"engine {e.name}: {doc[0] if doc else ''}")
    for b in BOUNDS.values():
        print(f"bound {b.name}: {b.what.replace('`', '')}")
    for group, members in GROUPS.items():
        print(f"--cases {group}: {', '.join(members)}")


def _profile(cases: list[Case | WriteCase], tables: dict[str, BuiltTable], root: str, top: int) -> None:
    for case in cases:
        name = case.name
        if isinstance(case, WriteCase):
            print(f"\n===== case {name}: not profiled (many processes; profile D-append for one append)")
            continue
        if case.op == "bound":
            print(f"\n===== case {name}: not profiled (parsing bounds, not deltalog)")
            continue
        built = tables[case.table.name]
        out = os.path.join(root, f"profile-{name}.prof")
        print(f"\n===== case {name}: {case.title} (raw stats: {out})", flush=True)
        path = built.path
        if case.op in WRITE_OPS:
            path = scratch.prepare(case, built, scratch.scratch_dir(root, case, "profile"))
        cmd = [sys.executable, "-m", "benchmarks.profile", path, "--top", str(top), "--out", out, "--op", case.op]
        if case.version is not None:
            cmd += ["--version", str(case.version)]
        try:
            subprocess.run(cmd, cwd=ROOT, check=True)
            if case.op in WRITE_OPS:
                scratch.verify(case, built, path)
        finally:
            if path != built.path:
                scratch.discard(path)


def _runs_text(args: argparse.Namespace, cases: list[Case | WriteCase]) -> str:
    fast = [c.name for c in cases if isinstance(c, Case) and not c.slow]
    slow = [c.name for c in cases if isinstance(c, Case) and c.slow]
    writes = [c.name for c in cases if isinstance(c, WriteCase)]
    parts = []
    if fast:
        parts.append(f"median of {args.runs} fresh processes per engine for {', '.join(fast)}")
    if slow:
        parts.append(f"{args.slow_runs} for {', '.join(slow)}")
    if writes:
        parts.append(f"median of {args.write_runs} runs of {', '.join(writes)}")
    return "; ".join(parts)


def _notes(writes: list[WriteResult], results: list[EngineResult] | None = None) -> list[str]:
    notes = []
    pandas_cases = [
        r.case.name
        for r in results or []
        if r.engine == "deltalog" and r.runs and all(x.get("pandas_imported_in_call") for x in r.runs)
    ]
    if pandas_cases:
        notes.append(
            f"- deltalog: pyarrow imported pandas inside the timed call in every run of {', '.join(pandas_cases)} "
            "(its first pa.array() of a Python sequence does, when pandas is installed)"
        )
    for r in results or []:
        killed = [x["killed_by_signal"] for x in r.runs if x.get("killed_by_signal")]
        if killed:
            notes.append(
                f"- {r.case.name} / {r.engine}: {len(killed)} child process(es) killed by signal "
                f"{', '.join(map(str, sorted(set(killed))))} before reporting, and run again"
            )
    for w in writes:
        failed = sum(r["failed"] for r in w.runs)
        first = next((r["first_failure"] for r in w.runs if r["first_failure"]), None)
        if failed:
            notes.append(
                f"- {w.case.name} / {w.variant.name}: {failed} failed appends over {len(w.runs)} runs; "
                f"first: `{' '.join(str(first).split())[:300]}`"
            )
        logged = sum(r["logged"] for r in w.runs)
        first_logged = next((r["first_logged"] for r in w.runs if r["first_logged"]), None)
        if logged:
            notes.append(
                f"- {w.case.name} / {w.variant.name}: the engine logged {logged} warnings or errors over "
                f"{len(w.runs)} runs; first: `{' '.join(str(first_logged).split())[:300]}`"
            )
    return notes


def _use_rev(rev: str | None, base: str) -> None:
    """With ``--rev``: export that commit's deltalog and make every child import it."""
    if rev:
        sha, src = export_rev(ROOT, rev, base)
        os.environ[ENV_SRC], os.environ[ENV_REV] = src, sha
        print(f"deltalog from commit {sha[:12]} (exported to {src})")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.list and args.store:
        for c in args.cases_by_name.values():
            print(f"case {c.name}: {c.title} [{c.op}; issue 16 minimum: {c.minimum_text or 'none'}]")
        return 0
    if args.list:
        _list(args.cases_by_name)
        return 0
    if args.quick:
        print(quick.BANNER, flush=True)
    base = os.path.abspath(args.dir)
    # the quick tables live apart from the real ones, which stay untouched (and are not rebuilt)
    root = os.path.join(base, quick.SUBDIR) if args.quick else base
    os.makedirs(root, exist_ok=True)
    if args.store:
        _use_rev(args.rev, base)
        return run_store(args, argv, root, quick.BANNER)
    if args.data:
        _use_rev(args.rev, base)
        return run_data(args, argv, root, args.quick, quick.BANNER)
    cases = [args.cases_by_name[n] for n in args.case_names]
    tables: dict[str, BuiltTable] = {}
    needed: dict[str, Table] = {}
    for c in cases:
        if isinstance(c, Case) and case_engines(c, args.engine_names):
            needed[c.table.name] = c.table
    for name, table in needed.items():
        tables[name] = build(table, root)
    _use_rev(args.rev, base)
    if args.build_only:
        print(f"tables ready under {root}")
        return 0
    if args.profile:
        _profile(cases, tables, root, args.top)
        return 0

    results: list[EngineResult] = []
    writes: list[WriteResult] = []
    load_start = load_average()
    try:
        for case in cases:
            name = case.name
            print(f"case {name}: {case.title}", flush=True)
            if isinstance(case, WriteCase):
                writes += run_write_case(case, args.write_runs, root)
                continue
            if not case_engines(case, args.engine_names):
                print(f"  case {name}: none of the engines asked for can do it; skipped", flush=True)
                continue
            runs = args.slow_runs if case.slow else args.runs
            results += run_case(case, tables[case.table.name], args.engine_names, runs, args.warmup, root)
    except (BenchError, scratch.ScratchError, RuntimeError) as exc:
        print(f"\nBENCHMARK FAILED: {exc}", file=sys.stderr)
        return 1

    raw = os.path.join(root, "last-run.json")
    with open(raw, "w") as f:
        json.dump(
            [{"case": r.case.name, "engine": r.engine, "error": r.error, "runs": r.runs} for r in results]
            + [{"case": w.case.name, "engine": w.variant.name, "error": None, "runs": w.runs} for w in writes],
            f,
        )
    print()
    print(text_table(results, writes))
    print(f"(every run's numbers: {raw})")
    facts = machine_facts(args.engine_names)
    facts["load average"] = f"{load_start} at start, {load_average()} at end (1 min)"
    print("\n" + "; ".join(f"{k} {v}" for k, v in facts.items()))
    for note in _notes(writes, results):
        print(note)
    if args.quick:
        print(f"\n{quick.BANNER}: every check passed ({len(cases)} cases; {args.markdown} left alone)")
        return 0
    if args.no_write:
        return 0
    if min(args.runs, args.slow_runs) < MIN_RUNS_FOR_MARKDOWN or args.write_runs < MIN_WRITE_RUNS_FOR_MARKDOWN:
        print(
            f"\n--runs/--slow-runs below {MIN_RUNS_FOR_MARKDOWN} or --write-runs below "
            f"{MIN_WRITE_RUNS_FOR_MARKDOWN}: {args.markdown} left alone"
        )
        return 0
    missing = [n for n, c in CASES.items() if c.default and n not in args.case_names]
    if missing:
        print(f"\ndefault cases {', '.join(missing)} were not run: {args.markdown} left alone (it shows full runs)")
        return 0
    command = " ".join([os.environ.get("BENCH_ENTRY", "python -m benchmarks"), *map(shlex.quote, argv)])
    section = markdown_section(command, facts, results, _runs_text(args, cases), writes, _notes(writes, results))
    update_markdown(args.markdown, section, PREAMBLE)
    print(f"\nupdated {args.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
