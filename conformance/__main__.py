"""``python -m conformance --corpus DIR``: check every table, print a per-feature summary and ``N passed, M failed``.

With ``--writes``, run the write checks instead (:mod:`conformance.writes`): checkpoint, cleanup and vacuum
for real, then an append, on a scratch copy of each table; the summary counts refusals apart.

With ``--compaction``, compare every version with and without log compaction files (:mod:`conformance.compaction`):
the corpus's own, and delta-kernel-rs-shaped ones plus an invalid one written on a scratch copy of each table.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from typing import TextIO

from conformance.runner import TableResult, run_corpus


def summarize(results: list[TableResult]) -> list[str]:
    by_tag: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in results:
        for tag in r.features or ["(untagged)"]:
            by_tag[tag][0 if r.ok else 1] += 1
    width = max((len(t) for t in by_tag), default=10)
    lines = [f"{'feature':<{width}}  passed  failed"]
    for tag in sorted(by_tag):
        ok, bad = by_tag[tag]
        lines.append(f"{tag:<{width}}  {ok:>6}  {bad:>6}")
    return lines


def run_reads(args: argparse.Namespace, out: TextIO) -> int:
    results = run_corpus(args.corpus, args.table)
    for r in results:
        if r.failures or args.verbose:
            out.write(f"{'FAIL' if r.failures else 'ok  '} {r.name} ({r.checks} checks)\n")
            for f in r.failures[:20]:
                out.write(f"     - {f}\n")
            if len(r.failures) > 20:
                out.write(f"     ... {len(r.failures) - 20} more\n")
    out.write("\n".join(summarize(results)) + "\n\n")
    passed = sum(r.ok for r in results)
    failed = len(results) - passed
    checks = sum(r.checks for r in results)
    out.write(f"conformance: {len(results)} tables, {checks} checks\n")
    out.write(f"{passed} passed, {failed} failed\n")
    return 0 if failed == 0 and results else 1


def run_writes_cli(args: argparse.Namespace, out: TextIO) -> int:
    from conformance.write_report import report
    from conformance.writes import run_writes

    results = run_writes(args.corpus, args.table, jobs=args.jobs, timeout=args.timeout)
    lines, ok = report(results, verbose=args.verbose)
    out.write("\n".join(lines) + "\n")
    return 0 if ok else 1


def run_compaction_cli(args: argparse.Namespace, out: TextIO) -> int:
    from conformance.compaction import report, run_compaction
    from conformance.runner import load_manifest

    results, found = run_compaction(args.corpus, args.table)
    tables = len(args.table) if args.table else len(load_manifest(args.corpus)["tables"])
    lines, ok = report(results, found, tables, verbose=args.verbose)
    out.write("\n".join(lines) + "\n")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance", description=__doc__)
    parser.add_argument("--corpus", required=True, help="directory with manifest.json and tables/")
    parser.add_argument("--table", action="append", help="check only this table (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every table, not only failures")
    parser.add_argument("--writes", action="store_true", help="checkpoint, clean up, vacuum and append to copies")
    parser.add_argument("--compaction", action="store_true", help="every version with and without log compaction files")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes (--writes)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per table before it fails (--writes)")
    args = parser.parse_args(argv)
    if args.compaction:
        return run_compaction_cli(args, sys.stdout)
    return run_writes_cli(args, sys.stdout) if args.writes else run_reads(args, sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
