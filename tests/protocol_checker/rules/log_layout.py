"""The log as a whole (PROTOCOL.md "Delta Table Specification", "Last Checkpoint File", "Log Compaction
Files", "Metadata Cleanup", "Checkpoints").
"""

from __future__ import annotations

import hashlib
import urllib.parse
from collections.abc import Iterator
from typing import Any

from ..context import LogContext
from ..features import is_int
from ..reading import read_json_actions, read_json_object
from ..report import Finding, rule
from ..values import file_key

HINT = "_last_checkpoint"


@rule("log.reconstructable", scope="log", section="Checkpoints; Metadata Cleanup")
def log_reconstructable(ctx: LogContext) -> Iterator[Finding]:
    """The log has a starting point: commit 0, or a complete checkpoint the later commits continue from
    ("Metadata cleanup MUST provide a checkpoint for the oldest kept table version")."""
    if ctx.replay_start is None:
        what = "no commit files" if not ctx.listing.commits else f"first commit {min(ctx.listing.commits)}"
        yield Finding(f"no version 0 and no complete checkpoint to start from ({what})", file="")


@rule(
    "log.versions-contiguous", scope="log", section="Delta Table Specification (contiguous versions); Metadata Cleanup"
)
def log_versions_contiguous(ctx: LogContext) -> Iterator[Finding]:
    """Commit files are contiguous from the earliest one kept to the latest version ("A table has a single
    serial history of atomic versions, which are named using contiguous, monotonically-increasing integers";
    cleanup only deletes what precedes a checkpoint)."""
    commits = sorted(ctx.listing.commits)
    latest = ctx.listing.latest
    if not commits or latest is None:
        return
    present = set(commits)
    v = commits[0]
    while v <= latest:
        if v not in present:
            end = v
            while end + 1 <= latest and end + 1 not in present:
                end += 1
            if end > ctx.only_after:
                span = f"version {v}" if end == v else f"versions {v}..{end}"
                yield Finding(f"{span} have no commit file (latest version {latest})", version=v, file="")
            v = end
        v += 1


def _canonical(value: Any, path: str, out: list[tuple[bytes, str]]) -> None:
    def enc(s: str) -> str:
        return urllib.parse.quote(s, safe="-._~")

    if isinstance(value, dict):
        for k, v in value.items():
            _canonical(v, f'{path}+"{enc(k)}"' if path else f'"{enc(k)}"', out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _canonical(v, f"{path}+{i}" if path else str(i), out)
    elif isinstance(value, str):
        out.append((path.encode(), f'{path}="{enc(value)}"'))
    elif value is None or isinstance(value, bool):
        out.append((path.encode(), f"{path}={'null' if value is None else str(value).lower()}"))
    else:
        out.append((path.encode(), f"{path}={value}"))


def hint_checksum(hint: dict[str, Any]) -> str:
    """The MD5 of a _last_checkpoint's canonical form (PROTOCOL.md "JSON checksum")."""
    pairs: list[tuple[bytes, str]] = []
    _canonical({k: v for k, v in hint.items() if k != "checksum"}, "", pairs)
    return hashlib.md5(",".join(p for _, p in sorted(pairs)).encode()).hexdigest()


def _read_hint(ctx: LogContext) -> tuple[dict[str, Any] | None, str | None]:
    if not ctx.listing.has_last_checkpoint:
        return None, None
    hint, problem = read_json_object(ctx.listing.path(HINT))
    if problem:
        return None, problem
    if not isinstance(hint, dict):
        return None, "not a JSON object"
    return hint, None


@rule("log.last-checkpoint", scope="log", section="Last Checkpoint File; Last Checkpoint File Schema")
def log_last_checkpoint(ctx: LogContext) -> Iterator[Finding]:
    """_last_checkpoint names a checkpoint that exists and is complete, in the layout it describes (``parts``:
    that multi-part checkpoint; otherwise a single-file one), at a version the log has."""
    hint, problem = _read_hint(ctx)
    if problem:
        yield Finding(problem, file=HINT)
    if hint is None:
        return
    version, parts = hint.get("version"), hint.get("parts")
    if not is_int(version) or not is_int(hint.get("size")):
        yield Finding(f"version {version!r} / size {hint.get('size')!r} are not integers", file=HINT)
        return
    layouts = [c.layout for c in ctx.checkpoints.values() if c.layout.version == version]
    if parts is not None:
        ok = any(lay.kind == "multi-part" and lay.parts == parts and lay.complete for lay in layouts)
        want = f"a complete {parts}-part checkpoint"
    else:
        ok = any(lay.kind in ("classic", "uuid") for lay in layouts)
        want = "a single-file checkpoint"
    if not ok:
        yield Finding(f"points at {want} at version {version}, which the log does not have", version=version, file=HINT)


@rule("log.last-checkpoint-fields", scope="log", section="Last Checkpoint File Schema; JSON checksum", strict_only=True)
def log_last_checkpoint_fields(ctx: LogContext) -> Iterator[Finding]:
    """_last_checkpoint's size and numOfAddFiles count its checkpoint's actions and adds, and its checksum is
    the MD5 of its canonical JSON. Optional fields other readers trust, so strict only."""
    hint, _ = _read_hint(ctx)
    if hint is None or not is_int(hint.get("version")):
        return
    summaries = [
        c
        for c in ctx.checkpoints.values()
        if c.layout.version == hint["version"] and c.readable and (c.layout.parts == hint.get("parts"))
    ]
    if summaries:
        # a V2 table may hold a classic-named compatibility copy beside its UUID-named checkpoint: the hint
        # describes one of them, whichever it matches
        s = next((c for c in summaries if c.num_actions == hint.get("size")), summaries[0])
        if is_int(hint.get("size")) and hint["size"] != s.num_actions:
            yield Finding(f"size {hint['size']} but the checkpoint holds {s.num_actions} actions", file=HINT)
        if is_int(hint.get("numOfAddFiles")) and hint["numOfAddFiles"] != s.num_adds:
            yield Finding(f"numOfAddFiles {hint['numOfAddFiles']} but the checkpoint has {s.num_adds}", file=HINT)
    if isinstance(hint.get("checksum"), str) and hint["checksum"] != hint_checksum(hint):
        yield Finding(f"checksum {hint['checksum']} is not the MD5 of its canonical form", file=HINT)


@rule("log.checkpoint-layouts", scope="log", section="Checkpoints; Last Checkpoint File", strict_only=True)
def log_checkpoint_layouts(ctx: LogContext) -> Iterator[Finding]:
    """A version with two checkpoint layouts is not the one _last_checkpoint names.

    Racing writers may leave two layouts of one version ("a client can choose which checkpoint to use"),
    but a hint describing only one of them makes hint-following and listing readers read different files,
    so a divergence between them would depend on the reader: strict only. Not counted: a classic-named V2-spec
    checkpoint beside a UUID-named one, the compatibility checkpoint V2 writers add so that readers knowing
    only classic names find the protocol and refuse the table (Delta Spark's metadata cleanup, kernel-rs's
    "classic-named V2 checkpoint"); both are checked against the replay like any checkpoint.
    """
    hint, _ = _read_hint(ctx)
    if hint is None or not is_int(hint.get("version")):
        return
    at = [c for c in ctx.checkpoints.values() if c.layout.version == hint["version"] and c.layout.complete]
    if any(c.layout.kind == "uuid" for c in at):
        at = [c for c in at if not (c.layout.kind == "classic" and c.v2_spec)]
    layouts = {c.layout for c in at}
    if len(layouts) > 1:
        names = sorted(lay.name for lay in layouts)
        yield Finding(f"version {hint['version']} has {len(layouts)} checkpoints {names} and a hint for one", file=HINT)


def _reconcile(actions: list[Any]) -> dict[tuple[str, Any], Any]:
    out: dict[tuple[str, Any], Any] = {}
    for a in actions:
        body = a.body if isinstance(a.body, dict) else {}
        if a.kind in ("add", "remove"):
            key = file_key(body)
            out.pop(("add", key), None)
            out.pop(("remove", key), None)
            out[(a.kind, key)] = body
        elif a.kind in ("protocol", "metaData"):
            out[(a.kind, None)] = body
        elif a.kind == "txn":
            out[("txn", body.get("appId"))] = body
        elif a.kind == "domainMetadata":
            out[("domainMetadata", body.get("domain"))] = body
    return out


@rule("log.compaction-matches-commits", scope="log", section="Log Compaction Files")
def log_compaction(ctx: LogContext) -> Iterator[Finding]:
    """A compaction file x.y.compacted.json (y > x) holds the reconciled actions of commits x..y and no
    commitInfo ("The commit files for a given range are created by doing Action Reconciliation")."""
    for start, end, name in ctx.listing.compactions:
        if name in ctx.checked_compactions:
            continue
        if end <= start:
            yield Finding(f"end version {end} is not above start {start}", version=start, file=name)
            continue
        actions, problems = read_json_actions(ctx.listing.path(name), name)
        for p in problems:
            yield Finding(p.message, p.line, version=start, file=name)
        if any(a.kind == "commitInfo" for a in actions):
            yield Finding("a compaction file holds a commitInfo", version=start, file=name)
        if not all(v in ctx.listing.commits for v in range(start, end + 1)):
            continue
        commits: list[Any] = []
        for v in range(start, end + 1):
            commits += read_json_actions(ctx.listing.path(ctx.listing.commits[v]), ctx.listing.commits[v])[0]
        want, got = _reconcile(commits), _reconcile(actions)
        if set(want) != set(got):
            diff = sorted(map(str, set(want) ^ set(got)))[:3]
            yield Finding(f"differs from reconciling commits {start}..{end}: {diff}", version=start, file=name)
