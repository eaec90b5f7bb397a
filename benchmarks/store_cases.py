"""The object-store cases of issue 16's table, with the issue's minimum requests and serial round trips.

Cases are data, built by :func:`registry` from a handful of sizes, so the full run (1,000 commits, as the
issue measured) and ``--quick`` (a few dozen) are the same cases on smaller tables, and each minimum is
derived from its table the way the issue derives it:

- load latest without a checkpoint: ``_last_checkpoint`` (absent) + one LIST + every commit = commits + 2,
  in 2 serial round trips (the hint and the listing together, then every commit at once);
- load from a checkpoint + k commits: hint + LIST + checkpoint + k commits = k + 3, in 3;
- time travel to version v below the checkpoint: LIST + commits 0..v = v + 2, in 2;
- time travel by timestamp: about the latest load's (~commits + 2): the listing gives every commit's time;
- ``history(limit)``: LIST + ``limit`` commitInfos = limit + 1;
- a warm blind append: one conditional PUT, in 1.

The tables hold log files only (10 adds per commit, no data files): request counts do not depend on the
adds, and small commits keep the upload of three 1,000-commit logs to a few seconds per store.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.cases import Table
from benchmarks.synth import LogSpec

#: ``op``: ``load`` (latest, or ``version``), ``timestamp`` (time travel by timestamp to ``version``),
#: ``history`` (``history(limit=history_limit)``), ``append`` (warm blind appends, ``appends`` per run,
#: reported per append) and ``writers`` (``writers`` processes x ``appends`` each on one fresh table).
STORE_OPS = ("load", "timestamp", "history", "append", "writers")


@dataclass(frozen=True)
class StoreCase:
    name: str
    title: str
    op: str
    table: Table | None = None
    version: int | None = None
    appends: int = 1
    writers: int = 1
    history_limit: int = 10
    min_requests: int | None = None
    min_serial: int | None = None
    approximate: bool = False  # the issue gives the minimum as "~N": shown so, and not gated
    #: the commit the table's upload pauses after: the target of time travel by timestamp
    pause_after: int | None = None

    def __post_init__(self) -> None:
        if self.op not in STORE_OPS:
            raise ValueError(f"case {self.name}: op {self.op!r} is not one of {STORE_OPS}")
        if (self.table is None) != (self.op in ("append", "writers")):
            raise ValueError(f"case {self.name}: a {self.op} case {'takes no' if self.table else 'needs a'} table")

    @property
    def minimum_text(self) -> str:
        if self.min_requests is None:
            return ""
        text = f"{'~' if self.approximate else ''}{self.min_requests:,}"
        return text + (f" ({self.min_serial})" if self.min_serial is not None else "")

    def gate(self, requests: float, depth: float) -> bool | None:
        """Issue 16's gate: requests <= minimum + 2 and dependent round trips <= minimum chain + 1 (None: no
        gate)."""
        if self.min_requests is None or self.approximate:
            return None
        ok = requests <= self.min_requests + 2
        return ok and (self.min_serial is None or depth <= self.min_serial + 1)


def _mins(requests: int, serial: int) -> dict[str, int]:
    return {"min_requests": requests, "min_serial": serial}


def registry(
    commits: int = 1000,
    near: int = 10,
    far: int = 200,
    travel: int = 500,
    appends: int = 5,
    writers: int = 8,
    writer_appends: int = 25,
    adds: int = 10,
) -> dict[str, StoreCase]:
    """The cases on a log of ``commits`` commits, and on checkpoint ``commits`` + ``near`` / + ``far`` commits."""
    plain = Table(f"store-{commits}x{adds}", LogSpec(commits=commits, adds_per_commit=adds))
    cp_near = Table(
        f"store-{commits + near + 1}x{adds}-cp{commits}",
        LogSpec(commits=commits + near + 1, adds_per_commit=adds, checkpoints=(commits,)),
    )
    cp_far = Table(
        f"store-{commits + far + 1}x{adds}-cp{commits}",
        LogSpec(commits=commits + far + 1, adds_per_commit=adds, checkpoints=(commits,)),
    )
    cases = (
        StoreCase(
            "load",
            f"load latest, {commits:,} commits, no checkpoint",
            "load",
            plain,
            min_requests=commits + 2,
            min_serial=2,
        ),
        StoreCase("load-cp-near", f"load, checkpoint + {near} commits", "load", cp_near, **_mins(near + 3, 3)),
        StoreCase("load-cp-far", f"load, checkpoint + {far} commits", "load", cp_far, **_mins(far + 3, 3)),
        StoreCase(
            "travel-version",
            f"time travel to v{travel} (below the checkpoint)",
            "load",
            cp_near,
            version=travel,
            min_requests=travel + 2,
            min_serial=2,
        ),
        StoreCase(
            "travel-timestamp",
            f"time travel by timestamp (to v{travel} of {commits:,} commits)",
            "timestamp",
            plain,
            version=travel,
            min_requests=commits + 2,
            approximate=True,
            pause_after=travel,
        ),
        StoreCase("history", f"history(limit=10), {commits:,} commits", "history", plain, min_requests=11),
        StoreCase("append", "blind append, warm (per append)", "append", appends=appends, min_requests=1, min_serial=1),
        StoreCase(
            "writers",
            f"{writers} writers x {writer_appends} appends",
            "writers",
            writers=writers,
            appends=writer_appends,
        ),
    )
    return {c.name: c for c in cases}


CASES = registry()
#: ``--quick``: the same cases on small tables; the numbers only show that the harness works.
QUICK_CASES = registry(commits=30, near=4, far=12, travel=15, appends=2, writers=2, writer_appends=3, adds=5)

__all__ = ["CASES", "QUICK_CASES", "STORE_OPS", "StoreCase", "registry"]
