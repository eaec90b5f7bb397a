"""``python -m conformance --compaction``: every version of every corpus table reads the same with and without log
compaction files, those the corpus holds and those another engine would have written.

Two passes, each comparing, version by version, what deltalog reads from a scratch copy of the table's log
with the files against a copy without them (:func:`conformance.version_state.capture`, or the error class):

1. **As found**: every table whose ``_delta_log`` holds ``*.compacted.json`` files.
2. **Foreign**: every table with at least three consecutive commits gets delta-kernel-rs-shaped files
   (:mod:`tests.foreign_compaction`: newest commit first, superseded adds and removes kept, ``cdc`` lines)
   over pairs of commits and the two halves of its commit run, and one file that is never usable (two
   ``metaData`` actions, the older last) over the widest range below the latest version, the range a load of
   the latest version reads. Every version must read as without them, and the latest version's load must
   pass over the invalid file with a warning naming it. Reconciled files among the kernel-rs ones are read
   (the count of loads that used one is reported), the others read around.

Only ``_delta_log`` is copied: replay and :func:`capture` never open a data file.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from conformance.runner import load_manifest
from conformance.version_state import VersionState, capture
from deltalog import DeltaLog
from deltalog.errors import DeltaLogError
from tests import foreign_compaction as fc

LOG = "_delta_log"
_COMPACTED = ".compacted.json"


@dataclass
class CompactionResult:
    """One table's comparison: versions compared, loads that read a compaction file, and what differed."""

    name: str
    mode: str  # "as found" or "foreign"
    versions: int = 0
    loads_using: int = 0
    written: int = 0
    unusable: int = 0
    invalid_checked: bool = False
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def _log_copy(src: Path, dest: Path, compactions: bool) -> Path:
    """A writable copy of ``src``'s log, with or without its compaction files."""
    shutil.copytree(src / LOG, dest / LOG, ignore=None if compactions else shutil.ignore_patterns(f"*{_COMPACTED}"))
    for p in [dest, *dest.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return dest


@dataclass(frozen=True)
class _Read:
    """One version as a fresh handle read it: its state (or error class), the compaction files the load read,
    and the first commit it replayed (after its checkpoint)."""

    state: VersionState | str
    used: int = 0
    start: int = 0


def _read(root: Path, version: int) -> _Read:
    try:
        log = DeltaLog.for_table(root, auto_checkpoint=False)
        state = capture(log, version)
        segment = log.snapshot(version=version).segment
        start = segment.checkpoint.version + 1 if segment.checkpoint is not None else 0
        return _Read(state, len(segment.compactions), start)
    except DeltaLogError as exc:
        return _Read(type(exc).__name__)


class _Warnings(logging.Handler):
    """The warnings deltalog logs while it is installed (installed, it also keeps them off stderr)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def _warnings() -> Iterator[_Warnings]:
    handler = _Warnings()
    logger = logging.getLogger("deltalog")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def _compare(result: CompactionResult, plain: dict[int, _Read], compacted: Path, versions: Iterable[int]) -> None:
    for v in versions:
        want, got = plain[v].state, _read(compacted, v)
        result.versions += 1
        result.loads_using += got.used
        if got.state == want:
            continue
        detail = (
            want.differences(got.state)
            if isinstance(want, VersionState) and isinstance(got.state, VersionState)
            else []
        )
        result.failures.append(f"v{v}: without the files {_brief(want)}, with them {_brief(got.state)} {detail}")


def _brief(state: VersionState | str) -> str:
    return state if isinstance(state, str) else f"{len(state.files)} files"


def as_found(name: str, src: Path, scratch: Path) -> CompactionResult:
    result = CompactionResult(name, "as found")
    plain = _log_copy(src, scratch / "plain", compactions=False)
    compacted = _log_copy(src, scratch / "compacted", compactions=True)
    versions = fc.commit_versions(plain)
    every = range(versions[0], versions[-1] + 1) if versions else range(0)
    _compare(result, {v: _read(plain, v) for v in every}, compacted, every)
    return result


def _ranges(run: list[int]) -> list[tuple[int, int]]:
    """Pairs over the run, then its two halves (each at least two commits), all below the latest version."""
    first, last = run[0], run[-1] - 1
    pairs = [(v, v + 1) for v in range(first, last, 2)]
    mid = (first + last) // 2
    halves = [(a, b) for a, b in ((first, mid), (mid + 1, last)) if b > a]
    return list(dict.fromkeys(pairs + halves))


def _invalid_at(run: list[int], plain: dict[int, _Read]) -> tuple[int, int, int] | None:
    """Where the invalid file goes: the newest version ``t`` whose load replays at least two commits before
    its own (``start..t-1``, all in the run), so that load chooses a file over exactly that range."""
    for t in reversed(run):
        read = plain[t]
        if not isinstance(read.state, str) and read.start >= run[0] and t - 1 - read.start >= 1:
            return read.start, t - 1, t
    return None


def foreign(name: str, src: Path, scratch: Path) -> CompactionResult | None:
    """The foreign pass on one table; ``None`` for a table with fewer than three consecutive commits."""
    run = fc.contiguous_tail(fc.commit_versions(src)) if (src / LOG).is_dir() else []
    if len(run) < 3:
        return None
    result = CompactionResult(name, "foreign")
    plain_root = _log_copy(src, scratch / "plain", compactions=False)
    plain = {v: _read(plain_root, v) for v in run}
    compacted = _log_copy(src, scratch / "compacted", compactions=False)
    invalid = _invalid_at(run, plain)
    for start, end in _ranges(run):
        if invalid is not None and (start, end) == invalid[:2]:
            continue
        commits = fc.commit_bytes(compacted, start, end)
        try:
            data = fc.kernel_rs_shaped(commits)
        except orjson.JSONDecodeError:
            continue  # no writer compacts commits it cannot read
        fc.write(compacted, start, end, data)
        result.written += 1
        result.unusable += fc.has_superseded(commits)
    if invalid is None:
        _compare(result, plain, compacted, run)
        return result
    start, end, at = invalid
    bad = fc.write(compacted, start, end, fc.not_reconciled_metadata(fc.commit_bytes(compacted, start, end)))
    _compare(result, plain, compacted, [v for v in run if v != at])
    with _warnings() as seen:
        _compare(result, plain, compacted, [at])
    if not any(bad.name in m and "is not used" in m for m in seen.messages):
        result.failures.append(f"v{at}: {bad.name} (two metaData actions) was not passed over with a warning")
    result.invalid_checked = True
    return result


def has_compactions(src: Path) -> bool:
    return (src / LOG).is_dir() and any(p.name.endswith(_COMPACTED) for p in (src / LOG).iterdir())


def run_compaction(corpus: str, only: Iterable[str] | None = None) -> tuple[list[CompactionResult], int]:
    """Both passes over the corpus: the results, and how many tables hold compaction files as found."""
    wanted = set(only) if only else None
    entries = [e for e in load_manifest(corpus)["tables"] if wanted is None or e["name"] in wanted]
    results: list[CompactionResult] = []
    found = 0
    # deltalog's warnings (files passed over, as intended) are collected, not printed: the report says what matters
    with tempfile.TemporaryDirectory(prefix="deltalog-compaction-") as tmp, _warnings():
        for i, entry in enumerate(entries):
            src = Path(corpus) / entry["path"]
            if has_compactions(src):
                found += 1
                results.append(as_found(entry["name"], src, Path(tmp) / f"found-{i}"))
            done = foreign(entry["name"], src, Path(tmp) / f"foreign-{i}")
            if done is not None:
                results.append(done)
    return results, found


def report(results: list[CompactionResult], found: int, tables: int, verbose: bool = False) -> tuple[list[str], bool]:
    lines: list[str] = []
    for r in results:
        if r.failures or verbose:
            lines.append(f"{'FAIL' if r.failures else 'ok  '} {r.name} ({r.mode}: {r.versions} versions)")
            lines += [f"     - {f}" for f in r.failures[:10]]
    if not found:
        lines.append(f"as found: none of the {tables} corpus tables has log compaction files; nothing to compare")
    else:
        mine = [r for r in results if r.mode == "as found"]
        lines.append(
            f"as found: {found} tables with compaction files, {sum(r.versions for r in mine)} versions compared, "
            f"{sum(not r.ok for r in mine)} differ"
        )
    theirs = [r for r in results if r.mode == "foreign"]
    lines.append(
        f"foreign: {len(theirs)} tables with kernel-rs-shaped files ({sum(r.written for r in theirs)} written, "
        f"{sum(r.unusable for r in theirs)} not reconciled), an invalid file passed over with a warning on "
        f"{sum(r.invalid_checked for r in theirs)}; "
        f"{sum(r.versions for r in theirs)} versions compared, {sum(r.loads_using for r in theirs)} loads read "
        f"a compaction file; {sum(not r.ok for r in theirs)} tables differ"
    )
    ok = bool(theirs) and all(r.ok for r in results)
    lines.append(f"compaction: {sum(r.ok for r in results)} passed, {sum(not r.ok for r in results)} failed")
    return lines, ok


__all__ = ["CompactionResult", "as_found", "foreign", "has_compactions", "report", "run_compaction"]
