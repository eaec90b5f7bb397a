"""What one commit may hold (PROTOCOL.md "Requirements for Writers > Delta Log Entries", "Add File and Remove
File", "Change Metadata", "Domain Metadata").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from ..context import CommitContext
from ..report import Finding, rule
from ..values import file_key


@rule("commit.first-version", scope="commit", section="Actions > Change Metadata; Action Reconciliation")
def first_version(ctx: CommitContext) -> Iterator[Finding]:
    """Version 0 holds a metaData and a protocol action: every snapshot has exactly one of each."""
    if ctx.version == 0:
        for kind in ("metaData", "protocol"):
            if not ctx.of_kind(kind):
                yield Finding(f"version 0 has no {kind} action", action=kind)


@rule("commit.one-metadata", scope="commit", section="Requirements for Writers > Delta Log Entries")
def one_metadata(ctx: CommitContext) -> Iterator[Finding]:
    """A commit holds at most one metaData action ("There can be at most one metadata action")."""
    found = [a for a in ctx.actions if a.kind == "metaData"]
    for a in found[1:]:
        yield Finding(f"{len(found)} metaData actions in one commit", a.line, a.kind)


@rule("commit.one-protocol", scope="commit", section="Requirements for Writers > Delta Log Entries")
def one_protocol(ctx: CommitContext) -> Iterator[Finding]:
    """A commit holds at most one protocol action."""
    found = [a for a in ctx.actions if a.kind == "protocol"]
    for a in found[1:]:
        yield Finding(f"{len(found)} protocol actions in one commit", a.line, a.kind)


def _seconds(ctx: CommitContext, kind: str, field: str, message: str) -> Iterator[Finding]:
    """A finding for each ``kind`` action whose ``field`` value an earlier action of the commit already had."""
    seen: set[str] = set()
    for a in ctx.of_kind(kind):
        value = a.body.get(field)
        if isinstance(value, str):
            if value in seen:
                yield Finding(message, a.line, a.kind, value)
            seen.add(value)


@rule("commit.one-txn-per-app", scope="commit", section="Requirements for Writers > Delta Log Entries")
def one_txn_per_app(ctx: CommitContext) -> Iterator[Finding]:
    """A commit holds at most one txn action per appId."""
    yield from _seconds(ctx, "txn", "appId", "a second txn for this appId in one commit")


@rule("commit.one-action-per-domain", scope="commit", section="Actions > Domain Metadata; Delta Log Entries")
def one_action_per_domain(ctx: CommitContext) -> Iterator[Finding]:
    """A commit holds at most one domainMetadata action per domain (two would reconcile with each other)."""
    yield from _seconds(ctx, "domainMetadata", "domain", "a second domainMetadata for this domain in one commit")


@rule("commit.one-file-action-per-path", scope="commit", section="Actions > Add File and Remove File")
def one_file_action_per_path(ctx: CommitContext) -> Iterator[Finding]:
    """At most one add and at most one remove per path in a commit, whatever their DVs.

    "A valid version is restricted to contain at most one file action of the same type for any one
    combination of path and dvId ... at most one file action of the same type for any path."
    """
    for kind in ("add", "remove"):
        actions = ctx.of_kind(kind)
        counts = Counter(file_key(a.body)[0] for a in actions)
        reported: set[str] = set()
        for a in actions:
            path = file_key(a.body)[0]
            if counts[path] > 1 and path not in reported:
                reported.add(path)
                yield Finding(f"{counts[path]} {kind} actions for this path in one commit", a.line, kind, path)


@rule("commit.add-and-remove-same-file", scope="commit", section="Requirements for Writers > Delta Log Entries")
def add_and_remove_same_file(ctx: CommitContext) -> Iterator[Finding]:
    """A commit never adds and removes the same logical file (path, DV): the two would reconcile.

    Updating a file's DV (remove (p, dv1), add (p, dv2)) touches two logical files and is legal.
    """
    removed = {file_key(a.body) for a in ctx.removes}
    for a in ctx.adds:
        if file_key(a.body) in removed:
            yield Finding("the commit adds and removes the same (path, DV)", a.line, "add", file_key(a.body)[0])


@rule("commit.add-keeps-old-dv-live", scope="commit", section="Actions > Add File and Remove File")
def add_keeps_old_dv_live(ctx: CommitContext) -> Iterator[Finding]:
    """Adding a live path with another DV needs a remove of the live (path, DV) in the same commit.

    "It is illegal for a path to occur in an add action that already occurs with a different dvId in the
    list of add actions from the snapshot of the version immediately preceding the commit, unless the
    commit also contains a remove for the later combination."
    """
    before = ctx.before.live_paths
    removed = {file_key(a.body) for a in ctx.removes}
    for a in ctx.adds:
        key = file_key(a.body)
        live = before.get(key[0])
        if live is not None and live != key and live not in removed:
            yield Finding(
                f"adds DV {key[1]!r} while (path, {live[1]!r}) stays live: the commit must remove it",
                a.line,
                "add",
                key[0],
            )
