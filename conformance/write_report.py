"""The write runner's report: one line per table that did not pass, per-feature and per-step tables, then
the counts.

Each table has two outcomes, maintenance (checkpoint, cleanup, vacuum) and append, since a table deltalog
maintains may still be one it refuses to append to; a table's own status is the worse of the two. The last
line is ``N passed, M failed`` (as the read runner's), so CI can grep both the same way; refused and
unreadable tables and the maintenance and append counts are on the lines before it.
"""

from __future__ import annotations

from collections import defaultdict

from conformance.write_result import (
    APPEND_STEP,
    FAILED,
    MAINTENANCE_STEPS,
    PASSED,
    REFUSED,
    SKIPPED,
    UNREADABLE,
    WriteResult,
)

COLUMNS = (PASSED, REFUSED, FAILED)


def feature_table(results: list[WriteResult]) -> list[str]:
    """Tables per writer feature and outcome, maintenance and append apart (a table counts once under each
    feature its protocol supports)."""
    groups = (("maintenance", lambda r: r.maintenance), ("append", lambda r: r.append))
    by_feature: dict[str, dict[tuple[str, str], int]] = defaultdict(
        lambda: {(g, c): 0 for g, _ in groups for c in COLUMNS}
    )
    for r in results:
        if r.status == UNREADABLE:
            continue
        for feature in r.features:
            for g, of in groups:
                by_feature[feature][(g, of(r))] += 1
    head = "writer feature"
    width = max([len(head), *(len(f) for f in by_feature)])
    cells = [(g, c) for g, _ in groups for c in COLUMNS]
    lines = [
        f"{'':<{width}}  " + "  ".join(f"{g:<{8 * len(COLUMNS) + 2 * (len(COLUMNS) - 1) - 8}}" for g, _ in groups),
        f"{head:<{width}}  " + "  ".join(f"{c:>8}" for _, c in cells),
    ]
    for feature in sorted(by_feature):
        lines.append(f"{feature:<{width}}  " + "  ".join(f"{by_feature[feature][k]:>8}" for k in cells))
    return lines


def step_table(results: list[WriteResult]) -> list[str]:
    """Tables per step and outcome: what checkpoint, cleanup, vacuum and the append each did."""
    names = (*MAINTENANCE_STEPS, APPEND_STEP)
    columns = (*COLUMNS, SKIPPED)
    counts = {n: dict.fromkeys(columns, 0) for n in names}
    for r in results:
        for step in r.steps:
            if step.name in counts and step.status in counts[step.name]:
                counts[step.name][step.status] += 1
    lines = [f"{'step':<10}  " + "  ".join(f"{c:>7}" for c in columns)]
    lines += [f"{n:<10}  " + "  ".join(f"{counts[n][c]:>7}" for c in columns) for n in names]
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


def outcomes(r: WriteResult) -> str:
    return f"maintenance {r.maintenance}, append {r.append}"


def table_lines(r: WriteResult, verbose: bool) -> list[str]:
    if r.status == FAILED:
        head = [f"FAIL    {r.name} ({r.seconds:.1f}s): {outcomes(r)}"]
        return head + [f"        - {f}" for f in r.failures[:20]]
    if r.status == REFUSED:
        notes = [f"        . {n}" for n in r.notes] if verbose else []
        return [f"refused {r.name}: {outcomes(r)}"] + [f"        - refused: {why}" for why in r.refusals] + notes
    if r.status == UNREADABLE:
        return [f"skipped {r.name}: unreadable ({r.unreadable})"] if verbose else []
    return [f"ok      {r.name} ({r.seconds:.1f}s)"] + [f"        . {n}" for n in r.notes] if verbose else []


def report(results: list[WriteResult], verbose: bool = False) -> tuple[list[str], bool]:
    """The report's lines and whether the run passed (no table failed, and there was something to check)."""
    lines = [line for r in results for line in table_lines(r, verbose)]
    lines += ["", *feature_table(results), "", *step_table(results), "", *refusal_lines(results)]
    counts = {s: sum(r.status == s for r in results) for s in (PASSED, REFUSED, FAILED, UNREADABLE)}
    for group in ("maintenance", "append"):
        by = {s: sum(getattr(r, group) == s for r in results) for s in COLUMNS}
        what = " (checkpoint, cleanup, vacuum)" if group == "maintenance" else ""
        lines.append(f"{group}{what}: {by[PASSED]} passed, {by[REFUSED]} refused, {by[FAILED]} failed")
    lines.append(
        f"conformance writes: {len(results)} tables: {counts[PASSED]} passed, {counts[REFUSED]} refused, "
        f"{counts[FAILED]} failed, {counts[UNREADABLE]} unreadable (skipped)"
    )
    lines.append(f"{counts[PASSED]} passed, {counts[FAILED]} failed")
    return lines, counts[FAILED] == 0 and counts[PASSED] + counts[REFUSED] > 0
