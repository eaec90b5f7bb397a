"""The write runner's report: one line per table that did not pass, a per-feature table, then the counts.

The last line is ``N passed, M failed`` (as the read runner's), so CI can grep both the same way; refused
and unreadable tables are counted on the line before it.
"""

from __future__ import annotations

from collections import defaultdict

from conformance.writes import FAILED, PASSED, REFUSED, UNREADABLE, WriteResult

COLUMNS = (PASSED, REFUSED, FAILED)


def feature_table(results: list[WriteResult]) -> list[str]:
    """Tables per writer feature and outcome (a table counts once under each feature its protocol supports)."""
    by_feature: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(COLUMNS, 0))
    for r in results:
        if r.status == UNREADABLE:
            continue
        for feature in r.features:
            by_feature[feature][r.status] += 1
    head = "writer feature"
    width = max([len(head), *(len(f) for f in by_feature)])
    lines = [f"{head:<{width}}  " + "  ".join(f"{c:>7}" for c in COLUMNS)]
    for feature in sorted(by_feature):
        lines.append(f"{feature:<{width}}  " + "  ".join(f"{by_feature[feature][c]:>7}" for c in COLUMNS))
    return lines


def refusal_lines(results: list[WriteResult]) -> list[str]:
    """Refused tables by the feature each refusal names (a table counts once per feature)."""
    tables: dict[str, set[str]] = defaultdict(set)
    for r in results:
        if r.status == REFUSED:
            for step in r.steps:
                if step.status == REFUSED:
                    tables[step.feature or "(unnamed)"].add(r.name)
    if not tables:
        return []
    ranked = sorted(tables.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    width = max(len(f) for f in tables)
    return ["refused tables by the feature a refusal names:", *(f"  {f:<{width}}  {len(n):>3}" for f, n in ranked), ""]


def table_lines(r: WriteResult, verbose: bool) -> list[str]:
    if r.status == FAILED:
        head = [f"FAIL    {r.name} ({r.seconds:.1f}s)"]
        return head + [f"        - {f}" for f in r.failures[:20]]
    if r.status == REFUSED:
        notes = [f"        . {n}" for n in r.notes] if verbose else []
        return [f"refused {r.name}"] + [f"        - {why}" for why in r.refusals] + notes
    if r.status == UNREADABLE:
        return [f"skipped {r.name}: unreadable ({r.unreadable})"] if verbose else []
    return [f"ok      {r.name} ({r.seconds:.1f}s)"] + [f"        . {n}" for n in r.notes] if verbose else []


def report(results: list[WriteResult], verbose: bool = False) -> tuple[list[str], bool]:
    """The report's lines and whether the run passed (no table failed, and there was something to check)."""
    lines = [line for r in results for line in table_lines(r, verbose)]
    lines += ["", *feature_table(results), "", *refusal_lines(results)]
    counts = {s: sum(r.status == s for r in results) for s in (PASSED, REFUSED, FAILED, UNREADABLE)}
    lines.append(
        f"conformance writes: {len(results)} tables: {counts[PASSED]} passed, {counts[REFUSED]} refused, "
        f"{counts[FAILED]} failed, {counts[UNREADABLE]} unreadable (skipped)"
    )
    lines.append(f"{counts[PASSED]} passed, {counts[FAILED]} failed")
    return lines, counts[FAILED] == 0 and counts[PASSED] + counts[REFUSED] > 0
