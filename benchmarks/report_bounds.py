"""The "Parsing bounds" table: each bound's numbers with deltalog's load medians beside it.

A bound on its own says little; the point is the ratio "deltalog ÷ bound" (how far the load is above
plain parsing), so each bound row carries the deltalog medians of the cases its case is read against
(:attr:`benchmarks.cases.Case.against`: ``files()`` and ``files(stats=True)``), taken from the same run.
Kept apart from :mod:`benchmarks.report` because its columns need every result, not only the row's case.
"""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.bounds import BOUNDS
from benchmarks.engines import SUBJECT
from benchmarks.measure import EngineResult

TITLE = "Parsing bounds (deltalog's load medians from the same run beside them)"
Column = tuple[str, Callable[[EngineResult, dict[str, EngineResult]], str]]


def _mib(r: EngineResult) -> str:
    size = r.detail_median("bytes")
    return "—" if size is None else f"{size / 2**20:.1f}"


def bound_columns(results: list[EngineResult]) -> list[Column]:
    """The table's columns; the deltalog ones look up ``results`` by case name."""
    subject = {r.case.name: r for r in results if r.engine == SUBJECT and r.error is None and r.runs}

    def deltalog(r: EngineResult, i: int) -> EngineResult | None:
        names = r.case.against
        return subject.get(names[i]) if i < len(names) else None

    def seconds(r: EngineResult, i: int) -> str:
        d = deltalog(r, i)
        name = r.case.against[i] if i < len(r.case.against) else "?"
        return f"{name} —" if d is None else f"{name} {d.median:.3f}"

    def ratio(r: EngineResult, i: int) -> str:
        d = deltalog(r, i)
        return "—" if d is None or r.median <= 0 else f"{d.median / r.median:.2f}"

    return [
        ("case", lambda r, _: r.case.name),
        ("bound", lambda r, _: r.engine),
        ("median s", lambda r, _: f"{r.median:.3f}"),
        ("min s", lambda r, _: f"{r.minimum:.3f}"),
        ("CPU s", lambda r, _: f"{r.cpu_median:.3f}"),
        ("import s", lambda r, _: f"{r.import_median:.3f}"),
        ("peak RSS MiB", lambda r, _: f"{r.peak_rss_mib:.0f}"),
        ("input MiB", lambda r, _: _mib(r)),
        ("adds", lambda r, _: f"{r.expected_files:,}"),
        ("deltalog files() s", lambda r, _: seconds(r, 0)),
        ("÷ bound", lambda r, _: ratio(r, 0)),
        ("deltalog files(stats=True) s", lambda r, _: seconds(r, 1)),
        ("(stats) ÷ bound", lambda r, _: ratio(r, 1)),
    ]


def bound_notes(group: list[EngineResult]) -> list[str]:
    """One line per bound in the table: what it times; and a pandas import inside a bound, if any."""
    lines = []
    seen = set()
    for r in group:
        if r.engine not in seen and r.engine in BOUNDS:
            seen.add(r.engine)
            lines.append(f"- `{r.engine}`: {BOUNDS[r.engine].what}")
    lines.append(
        "- deltalog columns: the deltalog median of the named case in this run (— when it was not run); "
        "÷ bound is that median over the bound's"
    )
    pandas = sorted(
        {f"{r.case.name}/{r.engine}" for r in group if any(x.get("pandas_imported_in_call") for x in r.runs)}
    )
    if pandas:
        lines.append(f"- pandas was imported inside the timed call of {', '.join(pandas)}: that bound includes it")
    return lines


__all__ = ["TITLE", "bound_columns", "bound_notes"]
