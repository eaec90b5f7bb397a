"""``--quick``: every case on small tables, so a smoke check of the harness and the engines takes seconds.

The full tables take minutes to build and the D cases seconds per process, which is too slow to rerun
after every change to the harness. The quick cases are the registry's cases with each table swapped for
a small one of the same shape (a few dozen commits of tens of adds, built in their own directory so the
real tables are neither touched nor rebuilt) and the concurrent-writer case cut to a few writers. Every
correctness check still runs (live-file counts, checkpoint contents, append commits, the writers' log),
so a quick run that passes means the harness and the engines work; its numbers mean nothing.

The small tables keep what the cases rely on, and :func:`check_shape` asserts it for the quick and the
full registry alike: C-mid sits between two checkpoints, D has checkpoints at its last two versions (the
checkpoint-write cases start from the older one), and the appends to D land on a multiple of both
engines' checkpoint intervals, as the full run's do (their post-commit checkpoints stay off there).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from benchmarks.cases import APPEND_OPS, CASES, LOG_1K, LOG_1K_CP, LOG_1M, LOG_10K, Case, Table, WriteCase

#: Printed at the start and the end of a quick run, so its numbers are never quoted as results.
BANNER = "quick mode: smoke check, numbers are not comparable"
#: The sub-directory of ``--dir`` that holds the small tables, their scratch copies and last-run.json.
SUBDIR = "quick"
#: Checkpoint intervals by default: deltalog's ``delta.checkpointInterval`` default and deltalake's.
CHECKPOINT_INTERVALS = (10, 100)


#: Each full table's small twin, derived from its spec (so the seed, the partitions and the remove fraction
#: follow it) with the same relative checkpoint places: B a checkpoint + 10 commits; C one every 10 commits
#: instead of 100, the last at the latest version; D the last two.
def _twin(table: Table, name: str, **changes: Any) -> tuple[str, Table]:
    return table.name, Table(name, dataclasses.replace(table.spec, **changes))


TABLES: dict[str, Table] = dict(
    (
        _twin(LOG_1K, "log-50x20", commits=50, adds_per_commit=20),
        _twin(LOG_1K_CP, "log-61x20-cp50", commits=61, adds_per_commit=20, checkpoints=(50,)),
        _twin(
            LOG_10K,
            "log-100x5-rm30-cp10",
            commits=100,
            adds_per_commit=5,
            removes_per_commit=2,
            checkpoints=tuple(range(9, 100, 10)),
        ),
        _twin(LOG_1M, "log-100x20-cp98-99", commits=100, adds_per_commit=20, checkpoints=(98, 99)),
    )
)
#: Fixed versions mapped onto the small tables: C-mid's 5,050 (checkpoint 4,999 + 51) becomes 49 + 5.
VERSIONS: dict[str, int] = {"C-mid": 54}
#: 3 writers x 4 appends: 12 commits, so deltalog+autocp crosses its checkpoint interval (10) once.
WRITERS, APPENDS = 3, 4


def _quick_case(case: Case | WriteCase) -> Case | WriteCase:
    if isinstance(case, WriteCase):
        title = f"{case.title} [quick: {WRITERS} writers x {APPENDS} appends]"
        return dataclasses.replace(case, title=title, writers=WRITERS, appends=APPENDS)
    table = TABLES.get(case.table.name)
    if table is None:
        raise ValueError(f"case {case.name}: no quick twin of table {case.table.name} (add one to TABLES)")
    version = VERSIONS.get(case.name, case.version)
    if case.version is not None and case.name not in VERSIONS:
        raise ValueError(f"case {case.name}: version {case.version} has no quick counterpart (add one to VERSIONS)")
    at = "" if version is None else f" @ v{version}"
    return dataclasses.replace(case, title=f"{case.title} [quick: {table.name}{at}]", table=table, version=version)


def quick_cases() -> dict[str, Case | WriteCase]:
    """The registry with every case moved to its small table (same names, so ``--cases`` works as usual)."""
    cases = {name: _quick_case(case) for name, case in CASES.items()}
    check_shape(cases)
    return cases


def check_shape(cases: dict[str, Case | WriteCase]) -> None:
    """Raise if a table no longer has what its cases rely on (see the module docstring)."""
    problems = []
    mid = cases.get("C-mid")
    if isinstance(mid, Case) and mid.version is not None:
        cps = mid.table.spec.checkpoints
        if not any(c < mid.version for c in cps) or not any(c > mid.version for c in cps):
            problems.append(f"C-mid's version {mid.version} is not between two checkpoints of {cps}")
    d = cases.get("D")
    if isinstance(d, Case):
        latest = d.table.spec.commits - 1
        if not {latest - 1, latest} <= set(d.table.spec.checkpoints):
            problems.append(f"D: {d.table.name} lacks checkpoints at {latest - 1} and {latest}")
    for case in cases.values():
        if isinstance(case, Case) and case.op in APPEND_OPS and case.version is None:
            landing = case.table.spec.commits
            if any(landing % i for i in CHECKPOINT_INTERVALS):
                problems.append(f"{case.name}: the append lands on {landing}, not a multiple of {CHECKPOINT_INTERVALS}")
    if problems:
        raise ValueError("; ".join(problems))


check_shape(CASES)

__all__ = ["BANNER", "CHECKPOINT_INTERVALS", "SUBDIR", "TABLES", "check_shape", "quick_cases"]
