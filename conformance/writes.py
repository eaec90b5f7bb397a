"""The write runner: maintain and append to a scratch copy of every corpus table, through the public API only.

Per table (``python -m conformance --writes --corpus DIR``), on a copy in a temporary directory (the corpus
is only ever read):

1. ``DeltaLog.checkpoint()``;
2. ``cleanup(retention=0, dry_run=False)`` and ``vacuum(retention=0, dry_run=False, force=True)``, for
   real; then every version still reconstructable must read exactly as it did before any of this (protocol,
   metadata, live files with partition values, DVs and stats, txns, domains), and every data or DV file such
   a version reads that was on disk before must still be;
3. a few rows (:mod:`conformance.sample_rows`) written by the data-file writer and committed as an append.

A step deltalog refuses with :class:`~deltalog.errors.UnsupportedFeatureError` is ``refused`` (its
message is the reason) and the next steps still run: maintenance may be legal where an append is not.
Afterwards the protocol checker (``tests.protocol_checker``) must find no violation the original did not
have, and each peer that opened the original (deltalake, duckdb) must open the result and see the append.
Anything else (a raw exception, another error, a changed version, a deleted file, a peer's refusal, a new
violation) fails the table. Tables the read runner expects to be unreadable are reported and skipped.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from conformance import deviations
from conformance.checker_limits import allowance
from conformance.expectations import table_error_class
from conformance.runner import load_manifest
from conformance.sample_rows import sample_table
from conformance.version_state import VersionState, capture, existing
from conformance.workers import run_all
from conformance.write_result import (
    APPEND_STEP,
    FAILED,
    PASSED,
    REFUSED,
    SKIPPED,
    Step,
    WriteResult,
)
from deltalog import DeltaLog
from deltalog.data.files import WriteTarget, write_files
from deltalog.errors import ConstraintViolationError, DeltaLogError, UnsupportedFeatureError
from tests.peers import PeerView, duckdb_connection, try_deltalake, try_duckdb
from tests.protocol_checker import Violation, check_table

log = logging.getLogger(__name__)

CLUSTERING_DOMAIN = "delta.clustering"
#: how far back the copy's files are dated: log cleanup, as Delta Spark's, expires whole days (the cutoff is
#: truncated to midnight), so a log copied today would have nothing to clean even at retention 0
AGE_S = 30 * 24 * 3600


@dataclass(frozen=True)
class Appended:
    """What the append step added: file paths (relative to the root, decoded) and rows."""

    paths: frozenset[str]
    rows: int


class _Skip(Exception):
    """A step that has nothing to do on this table (not deltalog's refusal, so neither refused nor failed)."""


def unreadable_reason(entry: dict[str, Any]) -> str | None:
    """Why the read runner expects the latest version to be refused, or ``None`` if it expects it to load."""
    if deviations.applies(entry):
        states = deviations.STATES[entry["name"]]
        error = states[max(states)].get("error")
        return None if error is None else f"{error.__name__} (deliberate deviation)"
    if "expected_error" in entry:
        return table_error_class(entry.get("features", [])).__name__
    return None


def clustering_columns(domains: dict[str, Any]) -> list[list[str]]:
    """The clustering columns (physical paths) the ``delta.clustering`` domain lists; none if absent or odd."""
    dm = domains.get(CLUSTERING_DOMAIN)
    if dm is None:
        return []
    try:
        cols = orjson.loads(dm.configuration).get("clusteringColumns", [])
    except (orjson.JSONDecodeError, AttributeError):
        return []
    return [list(c) for c in cols if isinstance(c, list)]


def age(root: str, seconds: float) -> None:
    """Date every file under ``root`` back by ``seconds``, keeping their order (commit timestamps and the
    gaps between them are the log's history; only its distance from now changes)."""
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            st = os.stat(path, follow_symlinks=False)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - int(seconds * 1e9)), follow_symlinks=False)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _violation_key(v: Violation) -> tuple[Any, ...]:
    return (v.rule, v.version, v.file, v.line, v.action, v.key, v.message)


class Peers:
    """deltalake and duckdb, asked about the table before and after; one per worker process, so duckdb's
    connection (with the delta extension loaded) is made once."""

    def __init__(self) -> None:
        self.con = duckdb_connection()

    def views(self, root: str) -> dict[str, PeerView | str]:
        lake = try_deltalake(Path(root))
        if isinstance(lake, str):  # its SQL path may refuse what its log reader accepts: ask for the log only
            lake = try_deltalake(Path(root), rows=False)
        return {"deltalake": lake, "duckdb": try_duckdb(Path(root), self.con)}

    def compare(self, root: str, before: dict[str, PeerView | str], appended: Appended | None) -> Iterable[str]:
        """What a peer that opened the original says wrong about the result."""
        new_files = appended.paths if appended else frozenset()
        new_rows = appended.rows if appended else 0
        lake = before.get("deltalake")
        if isinstance(lake, PeerView):
            now = try_deltalake(Path(root), rows=lake.rows is not None)
            if not isinstance(now, PeerView):
                yield f"deltalake opened the original but not the result: {now}"
            else:
                if lake.version is not None and now.version != lake.version + (1 if appended else 0):
                    yield f"deltalake reads version {now.version}, expected {lake.version} + the append"
                if now.files != lake.files | new_files:
                    yield f"deltalake: live files {sorted(now.files ^ (lake.files | new_files))[:4]} differ"
                if lake.rows is not None and now.rows != lake.rows + new_rows:
                    yield f"deltalake counts {now.rows} rows, expected {lake.rows} + {new_rows}"
        duck = before.get("duckdb")
        if isinstance(duck, PeerView):
            now = try_duckdb(Path(root), self.con)
            if not isinstance(now, PeerView):
                yield f"duckdb opened the original but not the result: {now}"
            elif now.rows != (duck.rows or 0) + new_rows:
                yield f"duckdb counts {now.rows} rows, expected {duck.rows} + {new_rows}"


class TableWrites:
    """Runs the write checks of one manifest entry on a copy under ``scratch``; every problem is recorded."""

    def __init__(self, corpus: str, entry: dict[str, Any], scratch: str, peers: Peers | None = None) -> None:
        self.entry = entry
        self.source = os.path.join(corpus, entry["path"])
        self.root = os.path.join(scratch, "table")
        self.peers = peers
        self.result = WriteResult(entry["name"], [])
        self.clock_s = time.time()
        self.on_disk: dict[int, frozenset[str]] = {}
        self.reported: set[tuple[Any, ...]] = set()  # violations already reported, by key

    def fail(self, what: str) -> None:
        self.result.failures.append(what)

    def reader(self) -> DeltaLog:
        """A fresh log (nothing cached) with a pinned clock, so txn expiry judges before and after alike."""
        return DeltaLog.for_table(self.root, clock=lambda: self.clock_s)

    # ------------------------------------------------------------------------------------------ run
    def run(self) -> WriteResult:
        started = time.monotonic()
        try:
            reason = unreadable_reason(self.entry)
            if reason is not None:
                self.result.unreadable = reason
                self.result.features = ["(unreadable)"]
            else:
                self._run()
        except Exception as exc:  # a crash of the runner itself is this table's failure, not the run's
            log.exception("write checks of %s crashed", self.entry["name"])
            self.fail(f"runner crashed: {_describe(exc)}")
        self.result.seconds = time.monotonic() - started
        return self.result

    def _run(self) -> None:
        shutil.copytree(self.source, self.root, symlinks=True)
        age(self.root, AGE_S)
        before = self._capture_all()
        if before is None:
            return
        violations = self._violations()
        peers = self.peers.views(self.root) if self.peers is not None else {}
        opened = [
            name + ("" if view.rows is not None else " (log only)")
            for name, view in peers.items()
            if isinstance(view, PeerView)
        ]
        self.result.notes.append(f"peers that open the original: {', '.join(opened) or 'none'}")
        latest = max(before)
        maintainer = DeltaLog.for_table(self.root)
        self._step("checkpoint", maintainer.checkpoint)
        # cleanup deletes the commits a checkpoint is checked against: check it while they are there
        self._check_violations(violations, "after the checkpoint")
        self._step("cleanup", lambda: maintainer.cleanup(retention=0, dry_run=False))
        self._step("vacuum", lambda: maintainer.vacuum(retention=0, dry_run=False, force=True))
        self._check_retained(before)
        appended = self._step(APPEND_STEP, lambda: self._append(maintainer, latest, before[latest]))
        self._check_violations(violations, "at the end")
        if self.peers is not None:
            for failure in self.peers.compare(self.root, peers, appended):
                self.fail(failure)

    def _step(self, name: str, call: Callable[[], Any]) -> Any:
        try:
            out = call()
        except UnsupportedFeatureError as exc:
            message = str(exc).replace(self.root, "<copy>")  # the scratch path says nothing
            self.result.steps.append(Step(name, REFUSED, message, exc.feature))
            return None
        except _Skip as why:
            self.result.steps.append(Step(name, SKIPPED, str(why)))
            self.result.notes.append(f"{name} skipped: {why}")
            return None
        except Exception as exc:
            self.result.steps.append(Step(name, FAILED, _describe(exc)))
            self.fail(f"{name}: {_describe(exc)}")
            return None
        self.result.steps.append(Step(name, PASSED))
        return out

    # ------------------------------------------------------------------------------------------ before
    def _capture_all(self) -> dict[int, VersionState | str] | None:
        """Every reconstructable version of the untouched copy (a version that does not load is kept as its
        error), with the files each one reads that are on disk."""
        reader = self.reader()
        try:
            latest_snap = reader.snapshot()
            earliest, latest = reader.earliest_version(), latest_snap.version
        except Exception as exc:
            self.fail(f"the original does not load: {_describe(exc)}")
            return None
        self.result.features = sorted(latest_snap.features) or ["(none)"]
        states: dict[int, VersionState | str] = {}
        for v in range(earliest, latest + 1):
            try:
                state = capture(reader, v)
            except Exception as exc:
                states[v] = _describe(exc)
                continue
            states[v] = state
            self.on_disk[v] = existing(self.root, state.references)
        return states

    def _violations(self) -> set[tuple[Any, ...]] | None:
        try:
            return {_violation_key(v) for v in check_table(self.root)}
        except Exception as exc:
            self.fail(f"protocol checker crashed on the original: {_describe(exc)}")
            return None

    # ------------------------------------------------------------------------------------------ after
    def _check_retained(self, before: dict[int, VersionState | str]) -> None:
        reader = self.reader()
        try:
            earliest, latest = reader.earliest_version(), reader.latest_version()
        except Exception as exc:
            self.fail(f"after maintenance: {_describe(exc)}")
            return
        if latest != max(before):
            self.fail(f"after maintenance: latest version is {latest}, was {max(before)}")
        if earliest < min(before):
            self.fail(f"after maintenance: earliest version {earliest} is older than before ({min(before)})")
        dropped = earliest - 1
        if dropped in before:
            try:
                reader.snapshot(version=dropped)
                self.fail(f"v{dropped} still loads, yet the earliest version is {earliest}")
            except DeltaLogError:
                pass
            except Exception as exc:
                self.fail(f"v{dropped} (cleaned up) raises untyped {_describe(exc)}")
        for v in range(max(earliest, min(before)), latest + 1):
            was = before.get(v)
            if not isinstance(was, VersionState):
                continue
            try:
                now = capture(reader, v)
            except Exception as exc:
                self.fail(f"v{v} no longer loads: {_describe(exc)}")
                continue
            for diff in was.differences(now):
                self.fail(f"v{v} changed: {diff}")
            gone = self.on_disk[v] - existing(self.root, was.references)
            if not gone:
                continue
            if v == latest:
                self.fail(f"v{v} (latest): {len(gone)} live file(s) deleted: {sorted(gone)[:3]}")
            else:
                # older than the zero retention: VACUUM may expire what only this version reads (Delta
                # Spark's RETAIN 0 HOURS does), though cleanup kept its log for want of a newer checkpoint
                self.result.notes.append(f"v{v}: {len(gone)} file(s) expired by vacuum, the log still has it")

    def _append(self, log_: DeltaLog, latest: int, was: VersionState | str) -> Appended:
        snap = log_.snapshot()
        if not snap.schema_json.get("fields"):
            raise _Skip("the schema has no columns, so there are no rows to write")
        target = WriteTarget.of(snap, clustering_columns(snap.domain_metadata))
        data = sample_table(snap.schema_json, snap.schema)
        try:
            adds = write_files(log_.store, data, target)
        except ConstraintViolationError:
            # a CHECK constraint may refuse the null row: the rows without nulls must pass
            data = sample_table(snap.schema_json, snap.schema, nulls=False)
            adds = write_files(log_.store, data, target)
        # the data-file writer evaluated the table's row rules on every row: the commit records that it did
        result = log_.start_transaction().commit(adds, data_validated="checked")
        if result.version != latest + 1:
            self.fail(f"append: committed version {result.version}, expected {latest + 1}")
        paths = frozenset(urllib.parse.unquote(a.path) for a in adds)
        after = capture(self.reader(), latest + 1)
        live = {urllib.parse.unquote(row[0]) for row in after.files}
        if isinstance(was, VersionState):
            expected = {urllib.parse.unquote(row[0]) for row in was.files} | paths
            if live != expected:
                self.fail(f"append: live files {sorted(live ^ expected)[:4]} are not the old ones plus the new")
        missing = sorted(p for p in paths if not os.path.isfile(os.path.join(self.root, p)))
        if missing:
            self.fail(f"append: written files are not on disk: {missing}")
        records = sum(orjson.loads(a.stats).get("numRecords", 0) for a in adds if a.stats)
        if records != data.num_rows:
            self.fail(f"append: stats count {records} records, {data.num_rows} rows were written")
        return Appended(paths, data.num_rows)

    def _check_violations(self, before: set[tuple[Any, ...]] | None, when: str) -> None:
        if before is None:
            return
        try:
            after = check_table(self.root)
        except Exception as exc:
            self.fail(f"protocol checker crashed {when}: {_describe(exc)}")
            return
        for v in after:
            key = _violation_key(v)
            if key in before or key in self.reported:
                continue
            self.reported.add(key)
            why = allowance(self.entry["name"], v.rule)
            if why is None:
                self.fail(f"protocol violation introduced ({when}): {v}")
            else:
                self.result.notes.append(f"not counted ({why}): {v}")


_PEERS: Peers | None = None


def check_one(job: tuple[str, dict[str, Any], str, bool]) -> WriteResult:
    """One table, in a worker process (the module-level function :mod:`conformance.workers` pickles)."""
    global _PEERS
    corpus, entry, scratch_root, with_peers = job
    if with_peers and _PEERS is None:
        _PEERS = Peers()
    scratch = os.path.join(scratch_root, entry["name"].replace("/", "__"))
    os.makedirs(scratch)
    try:
        return TableWrites(corpus, entry, scratch, _PEERS if with_peers else None).run()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_writes(
    corpus: str,
    only: Iterable[str] | None = None,
    *,
    jobs: int = 2,
    timeout: float = 120.0,
    peers: bool = True,
    on_result: Callable[[WriteResult], None] | None = None,
) -> list[WriteResult]:
    """Every selected table of the corpus through :class:`TableWrites`, ``jobs`` at a time in worker
    processes; a table that takes longer than ``timeout`` seconds fails as ``timeout``."""
    corpus = os.path.abspath(corpus)
    wanted = set(only) if only else None
    entries = [e for e in load_manifest(corpus)["tables"] if wanted is None or e["name"] in wanted]
    scratch = tempfile.mkdtemp(prefix="deltalog-conformance-writes-")

    def as_result(index: int, out: Any) -> WriteResult:
        if isinstance(out, WriteResult):
            return out
        return WriteResult(entries[index]["name"], ["(unknown)"], failures=[str(out)])  # timeout, dead worker

    def arrived(index: int, out: Any) -> None:
        if on_result is not None:
            on_result(as_result(index, out))

    try:
        work = [(corpus, e, scratch, peers) for e in entries]
        outs = run_all(check_one, work, workers=jobs, timeout=timeout, on_result=arrived)
        return [as_result(i, out) for i, out in enumerate(outs)]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


__all__ = [
    "Appended",
    "Peers",
    "TableWrites",
    "check_one",
    "clustering_columns",
    "run_writes",
    "unreadable_reason",
]
