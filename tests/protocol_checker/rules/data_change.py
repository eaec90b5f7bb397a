"""Change data files and append-only tables (PROTOCOL.md "Add CDC File", "Change Data Files", "Append-only
Tables")."""

from __future__ import annotations

from collections.abc import Iterator

from ..context import CommitContext
from ..features import is_true
from ..report import Finding, rule


@rule("cdf.cdc-data-change", scope="commit", section="Actions > Add CDC File")
def cdc_data_change(ctx: CommitContext) -> Iterator[Finding]:
    """A cdc action has dataChange=false: change files "do not change the underlying data of the table"."""
    for a in ctx.of_kind("cdc"):
        if a.body.get("dataChange") is not False:
            yield Finding(f"dataChange is {a.body.get('dataChange')!r}, not false", a.line, "cdc", a.body.get("path"))


@rule("cdf.cdc-location", scope="commit", section="File Types > Change Data Files", strict_only=True)
def cdc_location(ctx: CommitContext) -> Iterator[Finding]:
    """A cdc path is relative and lies under _change_data/ ("Change data files are stored in a directory at
    the root of the table named _change_data"); the action allows absolute paths, hence strict only."""
    for a in ctx.of_kind("cdc"):
        path = a.body.get("path")
        if isinstance(path, str) and (":" in path.split("/")[0] or not path.startswith("_change_data/")):
            yield Finding(f"{path!r} is not a relative path under _change_data/", a.line, "cdc", path)


@rule("append-only.no-data-removal", scope="commit", section="Requirements for Writers > Append-only Tables")
def append_only(ctx: CommitContext) -> Iterator[Finding]:
    """With delta.appendOnly=true (and appendOnly supported), no remove has dataChange=true ("New log entries
    MUST NOT change or remove data from the table")."""
    proto = ctx.protocol
    if proto is None or not proto.writer_supports("appendOnly"):
        return
    if not is_true(ctx.configuration, "delta.appendOnly"):
        return
    for a in ctx.removes:
        if a.body.get("dataChange") is not False:
            yield Finding("removes data from an append-only table", a.line, "remove", a.body.get("path"))
