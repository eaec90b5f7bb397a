"""Running the rules over a log: replay version by version, checkpoints against the replay, then the log.

Replay starts at commit 0 when it exists, else at the earliest complete checkpoint the later commits
continue from; a missing commit resumes at the next complete checkpoint, if any. Each commit is checked
with the state before and after it; each checkpoint against the state replayed at its version.

Incremental mode: a :class:`CheckState` from an earlier check lets the next check read only the commits
after its version (and checkpoints it has not seen), so a test can check after every commit it makes.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from . import rules as _rules  # noqa: F401  (registers every rule)
from .checkpoint_files import CheckpointRead, read_layout
from .context import CheckpointContext, CheckpointSummary, CommitContext, LogContext
from .logfiles import CheckpointLayout, LogListing, list_log
from .reading import read_json_actions
from .report import Finding, ProtocolViolationError, Rule, Violation, rules_for
from .state import TableState, apply_version

LAYOUT_PREFERENCE = {"classic": 0, "uuid": 1, "multi-part": 2}
UNUSABLE_CHECKPOINT_RULES = (
    "ckpt.readable",
    "ckpt.multi-part-complete",
    "ckpt.multi-part-numbering",
    "ckpt.no-multi-part-on-v2",
)


@dataclass(frozen=True)
class CheckState:
    """Where a check ended: pass it as ``since`` to check only what was committed after it."""

    root: str
    strict: bool
    state: TableState
    summaries: dict[str, CheckpointSummary] = field(default_factory=dict)
    compactions: frozenset[str] = frozenset()

    @property
    def version(self) -> int:
        return self.state.version


@dataclass(frozen=True)
class CheckResult:
    violations: list[Violation]
    state: CheckState | None  # None when the log could not be replayed to its latest version


class _Run:
    def __init__(self, listing: LogListing, strict: bool) -> None:
        self.listing = listing
        self.strict = strict
        self.violations: list[Violation] = []
        self.summaries: dict[str, CheckpointSummary] = {}
        self.commit_rules = rules_for("commit", strict)
        self.checkpoint_rules = rules_for("checkpoint", strict)

    def report(self, r: Rule, findings: Iterable[Finding], version: int | None, file: str | None) -> None:
        for f in findings:
            v = f.version if f.version is not None else version
            where = f.file if f.file is not None else file
            self.violations.append(Violation(r.id, v, where or None, f.message, f.line, f.action, f.key))

    # ---- commits

    def commit(self, before: TableState, version: int) -> TableState:
        name = self.listing.commits[version]
        actions, problems = read_json_actions(self.listing.path(name), name)
        after = before.copy()
        apply_version(after, version, actions, self.listing.mtime_ms(name))
        ctx = CommitContext(version, name, actions, before, after, self.listing, problems)
        for r in self.commit_rules:
            self.report(r, r.check(ctx), version, name)
        return after

    # ---- checkpoints

    def checkpoint(self, layout: CheckpointLayout, read: CheckpointRead, reference: TableState | None) -> TableState:
        loaded = read.state(layout.version)
        ctx = CheckpointContext(
            layout,
            self.listing,
            read.actions,
            read.sidecar_actions,
            read.sidecar_files,
            read.problems,
            read.schemas,
            reference,
            loaded,
        )
        # an unreadable or incomplete checkpoint has no content to judge: only say that it is one
        usable = layout.complete and read.readable
        for r in self.checkpoint_rules:
            if usable or r.id in UNUSABLE_CHECKPOINT_RULES:
                self.report(r, r.check(ctx), layout.version, layout.files[0])
        rows = read.actions + read.sidecar_actions
        self.summaries[layout.files[0]] = CheckpointSummary(
            layout,
            read.readable,
            len(rows),
            sum(1 for a in rows if a.kind == "add"),
            any(a.kind == "checkpointMetadata" for a in read.actions),
        )
        return loaded

    def checkpoints_at(self, version: int, reference: TableState | None, skip: Collection[str] = ()) -> None:
        for layout in self.listing.checkpoints.get(version, []):
            if layout.files[0] not in skip:
                self.checkpoint(layout, read_layout(self.listing, layout), reference)

    def load(self, version: int) -> TableState | None:
        """The state of the first readable complete checkpoint at ``version``; the others are checked against it."""
        layouts = sorted(
            (lay for lay in self.listing.checkpoints.get(version, []) if lay.complete),
            key=lambda lay: LAYOUT_PREFERENCE[lay.kind],
        )
        for layout in layouts:
            read = read_layout(self.listing, layout)
            if read.readable:
                state = self.checkpoint(layout, read, None)
                self.checkpoints_at(version, state, skip={layout.files[0]})
                self._seed_commit_info(state, version)
                return state
        return None

    def _seed_commit_info(self, state: TableState, version: int) -> None:
        # a checkpoint keeps no commitInfo: the commit at its version (when kept) gives its ICT and mtime
        name = self.listing.commits.get(version)
        if name is not None:
            actions, _ = read_json_actions(self.listing.path(name), name)
            apply_version(state, version, [a for a in actions if a.kind == "commitInfo"], self.listing.mtime_ms(name))

    def complete_checkpoint_at_or_after(self, version: int) -> int | None:
        found = [v for v, lays in self.listing.checkpoints.items() if v >= version and any(x.complete for x in lays)]
        return min(found) if found else None


def _start(run: _Run) -> tuple[TableState | None, int]:
    """The state replay starts from and the first version to replay; ``None`` when the log has no start."""
    listing = run.listing
    if 0 in listing.commits:
        return TableState(), 0
    first_commit = min(listing.commits) if listing.commits else None
    candidates = sorted(v for v, lays in listing.checkpoints.items() if any(x.complete for x in lays))
    for v in candidates:
        if first_commit is None or v + 1 >= first_commit:
            state = run.load(v)
            if state is not None:
                return state, v + 1
    return None, 0


def _usable(since: CheckState | None, root: Path, strict: bool, listing: LogListing) -> bool:
    if since is None or since.root != str(root) or since.strict != strict:
        return False
    version = since.state.version
    if version not in listing.commits and version not in listing.checkpoints:
        return False
    new = [lay for lays in listing.checkpoints.values() for lay in lays if lay.files[0] not in since.summaries]
    return all(lay.version >= version for lay in new)


def check_log(root: str | Path, *, since: CheckState | None = None, strict: bool = True) -> CheckResult:
    """Check the log at ``root`` (a local table directory); with ``since``, only what came after it."""
    root = Path(root)
    listing = list_log(root)
    run = _Run(listing, strict)
    state: TableState | None
    if _usable(since, root, strict, listing):
        assert since is not None
        state, next_version, only_after = since.state, since.state.version + 1, since.state.version
        run.summaries.update(since.summaries)
        run.checkpoints_at(state.version, state, skip=set(since.summaries))
        start: int | None = -1
    else:
        state, next_version = _start(run)
        only_after = -1
        start = None if state is None else next_version - 1
    visited: set[int] = set()
    latest = listing.latest if listing.latest is not None else -1
    while state is not None and next_version <= latest:
        if next_version in listing.commits:
            state = run.commit(state, next_version)
            run.checkpoints_at(next_version, state, skip=set(run.summaries))
            visited.add(next_version)
            next_version += 1
            continue
        resume = run.complete_checkpoint_at_or_after(next_version)
        state = run.load(resume) if resume is not None else None
        next_version = (resume or 0) + 1
    for version in listing.checkpoints:  # checkpoints replay never reached
        if version > only_after:
            run.checkpoints_at(version, None, skip=set(run.summaries))
    checked = since.compactions if since is not None and only_after >= 0 else frozenset()
    log_ctx = LogContext(listing, dict(run.summaries), only_after, start, checked)
    for r in rules_for("log", strict):
        run.report(r, r.check(log_ctx), None, None)
    end = None
    if state is not None and state.version == latest:
        compactions = frozenset(name for _, _, name in listing.compactions)
        end = CheckState(str(root), strict, state, dict(run.summaries), compactions)
    return CheckResult(run.violations, end)


def check_table(root: str | Path, *, strict: bool = True) -> list[Violation]:
    """Every violation in the table's log, version by version (see the package docstring for the rules)."""
    return check_log(root, strict=strict).violations


def assert_valid(
    root: str | Path, *, since: CheckState | None = None, strict: bool = True, allow: Collection[str] = ()
) -> CheckState:
    """Fail (``ProtocolViolationError``, an ``AssertionError``) on any violation whose rule is not in ``allow``.

    Returns the state to pass as ``since`` next time, so that a test checking after every commit reads
    only the new commits.
    """
    result = check_log(root, since=since, strict=strict)
    bad = [v for v in result.violations if v.rule not in allow]
    if bad:
        raise ProtocolViolationError(str(root), bad)
    if result.state is None:
        raise ProtocolViolationError(str(root), [Violation("log.reconstructable", None, None, "nothing to replay")])
    return result.state
