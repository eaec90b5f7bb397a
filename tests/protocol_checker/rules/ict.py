"""In-commit timestamps (PROTOCOL.md "In-Commit Timestamps", "Commit Provenance Information").

ICT is *enabled* at a version when that version's protocol and metadata enable it (writer 7, the
``inCommitTimestamp`` feature, ``delta.enableInCommitTimestamps=true``): the enabling commit itself
carries an ICT.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..context import CommitContext
from ..report import Finding, rule
from ..state import ict_enabled

VERSION_KEY = "delta.inCommitTimestampEnablementVersion"
TIMESTAMP_KEY = "delta.inCommitTimestampEnablementTimestamp"


def _enabled(ctx: CommitContext) -> tuple[bool, bool]:
    before = ict_enabled(ctx.before.protocol, ctx.before.configuration)
    return before, ict_enabled(ctx.after.protocol, ctx.after.configuration)


@rule("ict.commit-info-first", scope="commit", section="In-Commit Timestamps > Writer Requirements 1-3")
def ict_commit_info_first(ctx: CommitContext) -> Iterator[Finding]:
    """With ICT enabled, the commit's first action is a commitInfo with an integer inCommitTimestamp."""
    if not _enabled(ctx)[1]:
        return
    first = ctx.actions[0] if ctx.actions else None
    if first is None or first.kind != "commitInfo":
        where = f"the first action is {first.kind}" if first else "the commit is empty"
        yield Finding(f"ICT is enabled but {where}, not commitInfo", first.line if first else None)
    elif ctx.after.ict is None:
        yield Finding("ICT is enabled but commitInfo has no integer inCommitTimestamp", first.line, "commitInfo")


@rule("ict.increasing", scope="commit", section="In-Commit Timestamps > Writer Requirements 3")
def ict_increasing(ctx: CommitContext) -> Iterator[Finding]:
    """Each ICT is larger than the previous commit's ("One millisecond later than the previous commit's
    inCommitTimestamp" at least)."""
    before, after = ctx.before.ict, ctx.after.ict
    if _enabled(ctx)[1] and before is not None and after is not None and after <= before:
        line = ctx.commit_info.line if ctx.commit_info else None
        yield Finding(f"inCommitTimestamp {after} is not above the previous one ({before})", line, "commitInfo")


@rule("ict.enablement-properties", scope="commit", section="In-Commit Timestamps > Writer Requirements 4")
def ict_enablement_properties(ctx: CommitContext) -> Iterator[Finding]:
    """Enabling ICT on a table with earlier commits records delta.inCommitTimestampEnablementVersion/Timestamp
    = that commit's version and ICT; at version 0 neither is needed; once set they never change while ICT is on."""
    was, now = _enabled(ctx)
    if not now:
        return
    conf, old_conf = ctx.configuration, ctx.before.configuration
    pair = (conf.get(VERSION_KEY), conf.get(TIMESTAMP_KEY))
    if not was:
        wanted = (str(ctx.version), str(ctx.after.ict))
        if ctx.version == 0 and pair == (None, None):
            return
        if pair != wanted:
            yield Finding(f"enabling ICT at version {ctx.version} records {pair}, not {wanted}", action="metaData")
    elif pair != (old_conf.get(VERSION_KEY), old_conf.get(TIMESTAMP_KEY)):
        yield Finding(f"the ICT enablement properties changed while ICT stays enabled: now {pair}", action="metaData")


@rule(
    "ict.enablement-after-previous-mtime",
    scope="commit",
    section="In-Commit Timestamps > Writer Requirements 5",
    strict_only=True,
)
def ict_enablement_after_mtime(ctx: CommitContext) -> Iterator[Finding]:
    """The ICT of the commit that enables ICT exceeds the previous commit file's modification time.

    Strict only: it reads file mtimes, which a copy of a table (the corpus, scratch copies) does not keep.
    """
    was, now = _enabled(ctx)
    if now and not was and ctx.version > 0 and ctx.after.ict is not None:
        mtime = ctx.before.commit_mtime
        if mtime is not None and ctx.after.ict <= mtime:
            yield Finding(f"enabling ICT {ctx.after.ict} is not above commit {ctx.version - 1}'s mtime {mtime}")
