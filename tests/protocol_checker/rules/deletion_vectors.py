"""Deletion vectors (PROTOCOL.md "Deletion Vectors", "Add File and Remove File", "Per-file Statistics")."""

from __future__ import annotations

from collections.abc import Iterator

from ..context import CommitContext
from ..features import is_int, is_true
from ..report import Finding, rule
from ..values import descriptor_problems, file_key, num_records


def _with_dv(ctx: CommitContext) -> list:
    return [a for a in ctx.adds + ctx.removes if a.body.get("deletionVector") is not None]


@rule("dv.descriptor", scope="commit", section="Deletion Vectors > Deletion Vector Descriptor Schema")
def dv_descriptor(ctx: CommitContext) -> Iterator[Finding]:
    """A DV descriptor has storageType u/i/p, pathOrInlineDv (a Z85 UUID suffix for 'u'), offset (absent
    for inline DVs), sizeInBytes and cardinality."""
    for a in _with_dv(ctx):
        for problem in descriptor_problems(a.body["deletionVector"]):
            yield Finding(problem, a.line, a.kind, a.body.get("path"))


@rule("dv.feature", scope="commit", section="Deletion Vectors (To support this feature)")
def dv_feature(ctx: CommitContext) -> Iterator[Finding]:
    """File actions carry DVs only where the protocol supports deletionVectors (reader 3, writer 7, both lists)."""
    proto = ctx.protocol
    if proto is not None and not proto.supports("deletionVectors"):
        for a in _with_dv(ctx):
            yield Finding(
                "a deletion vector on a table without deletionVectors support", a.line, a.kind, a.body.get("path")
            )


@rule("dv.num-records", scope="commit", section="Deletion Vectors > Writer Requirement; Per-file Statistics")
def dv_num_records(ctx: CommitContext) -> Iterator[Finding]:
    """An add with a DV has stats.numRecords (the physical row count), at least the DV's cardinality.

    "When adding a logical file with a deletion vector, then that logical file must have correct numRecords
    information for the data file in the stats field."
    """
    for a in ctx.adds:
        dv = a.body.get("deletionVector")
        if not isinstance(dv, dict):
            continue
        n = num_records(a.body)
        if n is None:
            yield Finding(
                "an add with a deletion vector has no numRecords in its stats", a.line, "add", a.body.get("path")
            )
        elif is_int(dv.get("cardinality")) and dv["cardinality"] > n:
            yield Finding(
                f"the DV deletes {dv['cardinality']} rows of a file of {n}", a.line, "add", a.body.get("path")
            )


@rule("dv.new-while-disabled", scope="commit", section="Deletion Vectors (When supported)")
def dv_new_while_disabled(ctx: CommitContext) -> Iterator[Finding]:
    """No new DV unless delta.enableDeletionVectors is true ("Writers must only write new Deletion Vectors
    (DVs) when this property is set to true"). Re-committing a (path, DV) the table had before is not new."""
    if is_true(ctx.configuration, "delta.enableDeletionVectors"):
        return
    live_paths = ctx.before.live_paths
    for a in ctx.adds:
        key = file_key(a.body)
        if key[1] is None or key in ctx.before.seen_files:
            continue
        if ctx.before.complete_history or key[0] in live_paths:
            yield Finding("a new deletion vector while delta.enableDeletionVectors is not true", a.line, "add", key[0])


@rule("dv.remove-carries-live-dv", scope="commit", section="Add File and Remove File; Action Reconciliation")
def dv_remove_carries_live_dv(ctx: CommitContext) -> Iterator[Finding]:
    """A remove of a live path names its live DV: the logical file is (path, dvId), so a remove with another
    DV (or none) removes nothing and leaves the live file in the table."""
    live_paths = ctx.before.live_paths
    for a in ctx.removes:
        key = file_key(a.body)
        live = live_paths.get(key[0])
        if live is not None and live != key:
            yield Finding(f"removes DV {key[1]!r} but the live file has DV {live[1]!r}", a.line, "remove", key[0])


@rule(
    "dv.cardinality-never-shrinks",
    scope="commit",
    section="Deletion Vectors; Delta Spark AddFile.removeRows (DVs are merged, never replaced)",
    strict_only=True,
)
def dv_cardinality_never_shrinks(ctx: CommitContext) -> Iterator[Finding]:
    """A DV update (remove (p, dv1) + add (p, dv2)) deletes at least the rows dv1 deleted.

    A smaller DV would resurrect deleted rows; only RESTORE may bring rows back. PROTOCOL.md does not
    say it in words (Delta Spark merges DVs and asserts the cardinality never drops), hence strict only.
    """
    if ctx.operation == "RESTORE":
        return
    live = ctx.before.live
    removed = {file_key(a.body) for a in ctx.removes}
    for a in ctx.adds:
        key = file_key(a.body)
        old = next((k for k in removed if k[0] == key[0] and k != key and k in live), None)
        if old is None or old[1] is None:
            continue
        old_card = live[old]["deletionVector"].get("cardinality")
        new_dv = a.body.get("deletionVector")
        new_card = new_dv.get("cardinality") if isinstance(new_dv, dict) else 0
        if is_int(old_card) and is_int(new_card) and new_card < old_card:
            yield Finding(f"DV cardinality drops from {old_card} to {new_card}", a.line, "add", key[0])
