"""``doctor``: prove, on the real store, that concurrent writers are safe there, or say what to change.

Why: a store's safety rests on one primitive, an atomic put-if-absent, and on a few listing and visibility
promises. Those cannot be read off a URI. S3-compatible servers that ignore ``If-None-Match`` accept the header
and overwrite anyway, and FUSE or SMB mounts differ in what a create or link means. No other engine checks
this; users find out when a commit is lost (delta-rs#2445, s3fs#973). So doctor runs the primitives for real,
in a scratch prefix under the table (``_delta_log/_doctor/<uuid>/``, deleted afterwards, never a log file):

* declared: the store says it can put-if-absent atomically (or the user opted in to unsafe commits);
* exclusive: a second put-if-absent of a name fails and keeps the first bytes, for 0 bytes too;
* race: ``threads`` writers race for one name, ``rounds`` times: exactly one wins, its bytes intact;
* visibility: a written file reads back and lists at once; an overwrite reads back new bytes; a delete is seen;
* listing: ``list_from`` returns names ``>= start`` in order, and a missing directory lists as empty;
* engines: no commit in the table's recent history comes from a writer that cannot share this store.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from deltalog.core.engine_safety import EngineRisk, engine_risk
from deltalog.errors import DeltaLogError, FileAlreadyExistsError, NotFoundError, StorageError, TableNotFoundError
from deltalog.storage.base import LogStore
from deltalog.storage.options import UNSAFE_OPT_IN, unsafe_commits_allowed

SCRATCH = "_delta_log/_doctor"

_FIX_PUT = (
    "use a store with an atomic put-if-absent: s3:// on AWS S3 (or an S3-compatible server that honours "
    "If-None-Match: *), abfs[s]:// on Azure, or a local file system with hard links; for a mount, use the "
    "cloud URI instead of the mount path"
)


@dataclass(frozen=True)
class Check:
    """One probe's verdict; ``fix`` says what to change when it failed."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None


@dataclass
class DoctorReport:
    location: str
    store: str
    checks: list[Check] = field(default_factory=list)
    engines: list[EngineRisk] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)

    @property
    def safe(self) -> bool:
        return all(c.ok for c in self.checks) and not self.engines

    def document(self) -> dict[str, Any]:
        return {
            "table": self.location,
            "store": self.store,
            "safe": self.safe,
            "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail, "fix": c.fix} for c in self.checks],
            "unsafe_engines": [
                {"version": e.version, "engine_info": e.engine_info, "message": e.message(self.location)}
                for e in self.engines
            ],
            "leftovers": self.leftovers,
        }


def _probe(name: str, run: Callable[[], tuple[bool, str]], fix: str) -> Check:
    """Run one probe; an exception is a failed check that names the error (a probe must never crash doctor)."""
    try:
        ok, detail = run()
    except StorageError as exc:
        # A refusal (no write permission, say) already says what to fix; a transient failure, or a file the probe
        # wrote and cannot find, gets the probe's fix.
        own_fix = exc.retryable or isinstance(exc, NotFoundError)
        return Check(name, False, f"{type(exc).__name__}: {exc}", fix if own_fix else str(exc))
    except DeltaLogError as exc:
        ok, detail = False, f"{type(exc).__name__}: {exc}"
    except (OSError, TimeoutError) as exc:
        ok, detail = False, f"{type(exc).__name__}: {exc}"
    return Check(name, ok, detail, None if ok else fix)


def _exclusive(store: LogStore, base: str) -> tuple[bool, str]:
    for label, first in (("non-empty", b"first\n"), ("0-byte", b"")):
        path = f"{base}/exclusive-{label}"
        store.put_if_absent(path, first)
        try:
            store.put_if_absent(path, b"second\n")
        except FileAlreadyExistsError:
            pass
        else:
            return False, f"a second put-if-absent of a {label} file succeeded: the store overwrote it"
        if store.read(path) != first:
            return False, f"a refused put-if-absent still changed a {label} file's bytes"
    return True, "a second put-if-absent of the same name failed and kept the first bytes (also for 0 bytes)"


def _race_round(store: LogStore, path: str, threads: int) -> tuple[list[bytes], list[str]]:
    """``threads`` writers released together put-if-absent ``path``: (the winners' bytes, the errors)."""
    barrier = threading.Barrier(threads)
    winners: list[bytes] = []
    errors: list[str] = []
    lock = threading.Lock()

    def write(i: int) -> None:
        payload = f"writer {i} {uuid.uuid4().hex}\n".encode()
        try:
            barrier.wait(timeout=60)
            store.put_if_absent(path, payload)
        except FileAlreadyExistsError:
            return
        except Exception as exc:  # reported as a failed check, with what went wrong
            with lock:
                errors.append(f"{type(exc).__name__}: {exc}")
            return
        with lock:
            winners.append(payload)

    pool = [threading.Thread(target=write, args=(i,), daemon=True) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=120)
    return winners, errors


def _race(store: LogStore, base: str, threads: int, rounds: int) -> tuple[bool, str]:
    for r in range(rounds):
        path = f"{base}/race-{r}"
        winners, errors = _race_round(store, path, threads)
        if errors:
            return False, f"round {r + 1}: {len(errors)} writer(s) failed with an error, e.g. {errors[0]}"
        if len(winners) != 1:
            return False, f"round {r + 1}: {len(winners)} of {threads} concurrent writers all 'won' the same name"
        if store.read(path) != winners[0]:
            return False, f"round {r + 1}: the file does not hold the winner's bytes"
    return True, f"{threads} writers x {rounds} rounds: exactly one winner each round, its bytes intact"


def _visibility(store: LogStore, base: str) -> tuple[bool, str]:
    path = f"{base}/visible/file"
    store.put_if_absent(path, b"v1")
    if store.read(path) != b"v1" or not store.exists(path):
        return False, "a file just written did not read back"
    if [f.name for f in store.list_from(f"{base}/visible/")] != ["file"]:
        return False, "a file just written did not show in a listing"
    store.put(path, b"v2")
    store.put(path, b"v3")
    if store.read(path) != b"v3":
        return False, "an overwrite did not read back its new bytes"
    store.delete(path)
    store.delete(path)  # deleting a missing file is fine
    try:
        store.read(path)
    except NotFoundError:
        pass
    else:
        return False, "a deleted file still reads"
    return True, "read-after-write, list-after-write, overwrite and delete are seen at once"


def _listing(store: LogStore, base: str) -> tuple[bool, str]:
    names = [f"{v:020d}.json" for v in range(12)] + ["00000000000000000010.checkpoint.parquet"]
    shuffled = names[:]
    random.shuffle(shuffled)
    for n in shuffled:
        store.put_if_absent(f"{base}/list/{n}", b"{}\n")
    got = [f.name for f in store.list_from(f"{base}/list/00000000000000000005.")]
    want = sorted((n for n in names if n >= "00000000000000000005."), key=str.encode)
    if got != want:
        return False, f"list_from(version 5) returned {got[:4]}... instead of {len(want)} names in order"
    if list(store.list_from(f"{base}/missing-dir/")):
        return False, "listing a missing directory returned files"
    return True, "list_from returns names >= start, sorted; a missing directory lists as empty"


def _engines(history: Callable[[int], Iterable[Any]], location: str, limit: int) -> list[EngineRisk]:
    found: dict[str, EngineRisk] = {}
    try:
        entries = list(history(limit))
    except TableNotFoundError:
        return []
    for entry in entries:
        risk = engine_risk(entry.commit_info.get("engineInfo"), location, entry.version)
        if risk is not None and risk.engine_info not in found:
            found[risk.engine_info] = risk
    return list(found.values())


def _cleanup(store: LogStore, base: str) -> list[str]:
    """Delete the scratch files (and, on a local disk, their now empty directories); names what is left."""
    files = list(store.walk(base))
    left = []
    for info in files:
        try:
            store.delete(info.name)
        except (DeltaLogError, OSError):
            left.append(info.name)
    if store.capabilities.local:  # object stores have no directories to remove
        shutil.rmtree(os.path.join(store.root, *base.split("/")), ignore_errors=True)
        for rel in (SCRATCH, "_delta_log"):  # ours if empty now; an empty _delta_log holds no table either
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(store.root, *rel.split("/")))
    return left


def diagnose(
    store: LogStore,
    location: str | None = None,
    *,
    history: Callable[[int], Iterable[Any]] | None = None,
    threads: int = 16,
    rounds: int = 3,
    history_limit: int = 200,
) -> DoctorReport:
    """Run every probe against ``store``; ``history(n)`` yields the table's newest ``n`` HistoryEntry items."""
    location = location or store.root
    report = DoctorReport(location, repr(store))
    declared = store.capabilities.atomic_put_if_absent
    opted_in = unsafe_commits_allowed(store)
    report.checks.append(
        Check(
            "declared",
            declared,
            "the store promises an atomic put-if-absent"
            if declared
            else "the store cannot put-if-absent atomically"
            + (f" (commits allowed anyway by {UNSAFE_OPT_IN})" if opted_in else "; deltalog refuses to commit here"),
            None if declared else _FIX_PUT,
        )
    )
    # Reaching the store at all: bad credentials or a missing bucket are raised here, as themselves, not
    # reported as failed probes with the wrong advice.
    list(store.list_from(f"{SCRATCH}/"))
    base = f"{SCRATCH}/{uuid.uuid4().hex}"
    try:
        report.checks.append(_probe("exclusive", lambda: _exclusive(store, base), _FIX_PUT))
        report.checks.append(_probe("race", lambda: _race(store, base, threads, rounds), _FIX_PUT))
        report.checks.append(
            _probe(
                "visibility",
                lambda: _visibility(store, base),
                "use a store with read-after-write and list-after-write consistency (S3, Azure Blob and local "
                "disks have it; some caches and mounts do not)",
            )
        )
        report.checks.append(
            _probe("listing", lambda: _listing(store, base), "use a store whose listings are complete and sorted")
        )
    finally:
        report.leftovers = _cleanup(store, base)
    if history is not None:
        report.engines = _engines(history, location, history_limit)
    return report


__all__ = ["SCRATCH", "Check", "DoctorReport", "diagnose"]
