"""Row tracking (PROTOCOL.md "Row Tracking", "Row IDs", "Row Commit Versions", "Writer Requirements for Row
Tracking").

Writers assign ids whenever ``rowTracking`` is *supported* (listed) and not suspended, not only when it
is enabled. A *fresh* add is one whose path the table never had with ids before: it takes ids above the
previous high-water mark and ``defaultRowCommitVersion`` = its version. A *re-committed* add (same path
as an earlier add that had ids) and every remove copy both fields from the path's last add.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..context import CommitContext
from ..features import is_int, is_true
from ..reading import Action
from ..report import Finding, rule
from ..state import ROW_TRACKING_DOMAIN, high_water_mark, row_tracking_assigning
from ..values import file_key, num_records

FIELDS = ("baseRowId", "defaultRowCommitVersion")


def _assigning(ctx: CommitContext) -> bool:
    return row_tracking_assigning(ctx.protocol, ctx.configuration)


def _recommitted_from(ctx: CommitContext, action: Action) -> dict | None:
    """The earlier add this add re-commits (its path's last add, when that one had a baseRowId)."""
    path = action.body.get("path")
    last = ctx.before.last_add.get(path) if isinstance(path, str) else None
    return last if last is not None and is_int(last.get("baseRowId")) else None


def _fresh_adds(ctx: CommitContext) -> list[Action]:
    return [a for a in ctx.adds if _recommitted_from(ctx, a) is None]


def _range(body: dict) -> tuple[int, int] | None:
    base, n = body.get("baseRowId"), num_records(body)
    return (base, base + n - 1) if is_int(base) and n is not None and n > 0 else None


def _previous_mark(ctx: CommitContext) -> int:
    mark, _ = high_water_mark(ctx.before.domains)
    return -1 if mark is None else mark


@rule("rt.fresh-ids", scope="commit", section="Row Tracking > Writer Requirements (baseRowId, defaultRowCommitVersion)")
def rt_fresh_ids(ctx: CommitContext) -> Iterator[Finding]:
    """A fresh add has a baseRowId, numRecords to size its id range, and defaultRowCommitVersion = its version.

    "Writers must set the baseRowId field in all add actions that they commit"; "Writers must set the
    defaultRowCommitVersion field in new add actions to the version number of the log entry containing
    the add action". Checked while row tracking is supported and not suspended.
    """
    if not _assigning(ctx):
        return
    for a in _fresh_adds(ctx):
        path = a.body.get("path")
        if not is_int(a.body.get("baseRowId")):
            yield Finding("a new add has no baseRowId", a.line, "add", path)
        elif num_records(a.body) is None:
            yield Finding("a new add with a baseRowId has no numRecords to size its row ids", a.line, "add", path)
        version = a.body.get("defaultRowCommitVersion")
        if version != ctx.version:
            yield Finding(f"defaultRowCommitVersion is {version!r}, not {ctx.version}", a.line, "add", path)


@rule("rt.fresh-above-mark", scope="commit", section="Row Tracking > Writer Requirements (high water mark)")
def rt_fresh_above_mark(ctx: CommitContext) -> Iterator[Finding]:
    """Fresh baseRowIds are above the previous version's high-water mark ("Writers must set the baseRowId
    field to a value that is higher than the row id high water mark")."""
    mark = _previous_mark(ctx)
    for a in _fresh_adds(ctx):
        base = a.body.get("baseRowId")
        if is_int(base) and base <= mark:
            yield Finding(f"baseRowId {base} is not above the previous high-water mark {mark}", a.line, "add")


@rule("rt.high-water-mark", scope="commit", section="Row Tracking > Writer Requirements (high water mark)")
def rt_high_water_mark(ctx: CommitContext) -> Iterator[Finding]:
    """Every row id committed is at or below the version's delta.rowTracking rowIdHighWaterMark.

    "The rowIdHighWaterMark value ... must always be equal to or greater than the highest fresh Row ID
    committed so far"; the domain's configuration holds the integer ``rowIdHighWaterMark``. The commit's
    adds are checked, and every live file when the commit moves the mark.
    """
    mark, problem = high_water_mark(ctx.after.domains)
    moves_mark = any(a.body.get("domain") == ROW_TRACKING_DOMAIN for a in ctx.of_kind("domainMetadata"))
    if problem and moves_mark:
        yield Finding(problem, action="domainMetadata", key=ROW_TRACKING_DOMAIN)
        return
    lines = {id(a.body): a.line for a in ctx.adds}
    checked = list(ctx.after.live.values()) if moves_mark else [a.body for a in ctx.adds]
    for body in checked:
        r = _range(body)
        if r is not None and (mark is None or r[1] > mark):
            line = lines.get(id(body))
            yield Finding(f"row ids {r[0]}..{r[1]} exceed the high-water mark {mark}", line, "add", body.get("path"))


@rule("rt.mark-never-decreases", scope="commit", section="Row Tracking > Writer Requirements (high water mark)")
def rt_mark_never_decreases(ctx: CommitContext) -> Iterator[Finding]:
    """The high-water mark never goes down (nor is its domain removed): ids below it may still be in use."""
    before, _ = high_water_mark(ctx.before.domains)
    after, _ = high_water_mark(ctx.after.domains)
    if before is not None and ROW_TRACKING_DOMAIN not in ctx.after.domains:
        yield Finding("the delta.rowTracking domain is removed", action="domainMetadata", key=ROW_TRACKING_DOMAIN)
    elif before is not None and after is not None and after < before:
        yield Finding(f"the high-water mark drops from {before} to {after}", action="domainMetadata")


@rule("rt.disjoint", scope="commit", section="Row Tracking > Writer Requirements (unique fresh Row IDs)")
def rt_disjoint(ctx: CommitContext) -> Iterator[Finding]:
    """The live files' row-id ranges [baseRowId, baseRowId + numRecords - 1] do not overlap ("Writers must
    never commit duplicate Row IDs in the table in any version")."""
    touched = {file_key(a.body)[0] for a in ctx.adds if is_int(a.body.get("baseRowId"))}
    if not touched:
        return
    ranges = sorted((r, k[0]) for k, body in ctx.after.live.items() if (r := _range(body)) is not None)
    end, owner = None, None
    for (lo, hi), path in ranges:
        if end is not None and lo <= end and (path in touched or owner in touched):
            yield Finding(f"row ids {lo}..{hi} overlap those of {owner!r} (up to {end})", action="add", key=path)
        if end is None or hi > end:
            end, owner = hi, path


@rule("rt.recommit-copies-ids", scope="commit", section="Row Tracking > Writer Requirements (recommitted actions)")
def rt_recommit_copies_ids(ctx: CommitContext) -> Iterator[Finding]:
    """A re-committed add and every remove carry baseRowId and defaultRowCommitVersion of the path's last add.

    "Writers must set the baseRowId field in recommitted and checkpointed add actions and remove actions to
    the baseRowId value (if present) of the last committed add action with the same path" (and likewise
    defaultRowCommitVersion).
    """
    if not _assigning(ctx):
        return
    for a in ctx.adds + ctx.removes:
        last = _recommitted_from(ctx, a)
        if last is None:
            continue
        for name in FIELDS:
            if last.get(name) is not None and a.body.get(name) != last.get(name):
                yield Finding(
                    f"{name} is {a.body.get(name)!r}, the path's last add has {last.get(name)!r}",
                    a.line,
                    a.kind,
                    a.body.get("path"),
                )


@rule("rt.enablement", scope="commit", section="Row Tracking > Writer Requirements (enabling Row Tracking)")
def rt_enablement(ctx: CommitContext) -> Iterator[Finding]:
    """Setting delta.enableRowTracking=true needs ids on every live add and distinct materialized column names.

    "The baseRowId and defaultRowCommitVersion fields are set for all active add actions in the version
    ... in which delta.enableRowTracking is set to true"; the materialized Row ID / Row Commit Version
    column names are in the configuration, unique, and no column's (or physical column's) name.
    """
    if not is_true(ctx.configuration, "delta.enableRowTracking") or is_true(
        ctx.before.configuration, "delta.enableRowTracking"
    ):
        return
    conf = ctx.configuration
    names = [conf.get("delta.rowTracking.materializedRowIdColumnName")]
    names.append(conf.get("delta.rowTracking.materializedRowCommitVersionColumnName"))
    if not all(isinstance(n, str) and n for n in names) or names[0] == names[1]:
        yield Finding(f"materialized row-tracking column names missing or equal: {names}", action="metaData")
    else:
        taken = {f.path[-1] for f in ctx.schema.fields} | {f.physical_path[-1] for f in ctx.schema.fields}
        for n in names:
            if n in taken:
                yield Finding(f"materialized column name {n!r} is a column of the table", action="metaData")
    for (path, _), body in ctx.after.live.items():
        if not all(is_int(body.get(name)) for name in FIELDS):
            yield Finding("row tracking is enabled while this live file has no row ids", action="add", key=path)
