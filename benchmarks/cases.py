"""The case registry: tables (a generator spec), cases (an operation on a table), plus building.

Cases are data so that the next ones are a few lines each: a new table is a :class:`LogSpec`, a new case
names a table, a version and an operation (:data:`OPS`: load a snapshot, write a checkpoint with or
without the table load, append one file from a fresh process). Several cases can share one table (e.g.
latest and a mid version of the same log), which is then built once. A table is rebuilt only when its
marker file (the spec, the generator version, and the live-file count after every version) is missing or
differs: a half-built table has no marker, since the marker is written last.

The concurrent-writer case (:class:`WriteCase`) needs no prebuilt table: every run starts a fresh one.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field

from benchmarks.bounds import BOUNDS
from benchmarks.engines import READ_OPS
from benchmarks.synth import LOG_DIR, LogSpec, write_log

MARKER = ".bench-table.json"
#: Copies of ``_last_checkpoint`` as deltalake wrote it after each checkpoint version (``<v>.json``), kept
#: beside the log so a scratch copy can be put back to "checkpointed at v" after a newer checkpoint exists.
HINTS_DIR = ".bench-hints"

#: What a case does with its table, each timed in a fresh process (see :mod:`benchmarks.engines`):
#: ``load`` a snapshot and its live files; ``load_stats`` the same with the adds' stats (deltalog
#: ``files(stats=True)``); ``bound`` a parsing bound (:mod:`benchmarks.bounds`: its "engines" are bounds);
#: ``checkpoint`` open the table and write a checkpoint of the
#: version ("with the table load"); ``checkpoint_call`` load first (untimed), then time only the
#: checkpoint call; ``append`` open the table and commit one new 10-row file (a blind append);
#: ``append_loaded`` open the table, load its latest snapshot and write the data file (untimed), then time
#: only the commit of that file on the loaded table. The last four write, so they run on a scratch copy of
#: the log (hard links), never on the table itself.
OPS = (*READ_OPS, "checkpoint", "checkpoint_call", "append", "append_loaded")
WRITE_OPS = ("checkpoint", "checkpoint_call", "append", "append_loaded")
APPEND_OPS = ("append", "append_loaded")


@dataclass(frozen=True)
class Table:
    name: str  # directory name under the work dir
    spec: LogSpec


@dataclass(frozen=True)
class Case:
    """One row group of the results: ``op`` on ``table`` at ``version`` (``None``: the latest).

    ``engines`` limits the engines that can do the operation (duckdb cannot write); ``slow`` cases get
    ``--slow-runs`` timed runs instead of ``--runs``. ``target`` is the issue 7 target the row measures,
    quoted in the report so every number is read against the right bar. A ``bound`` case's ``engines``
    are parsing bounds (always all of them, whatever ``--engines`` says), and ``against`` names the
    deltalog cases (``files()``, then ``files(stats=True)``) whose medians the report puts beside them.
    """

    name: str
    title: str
    table: Table
    version: int | None = None
    default: bool = True
    op: str = "load"
    engines: tuple[str, ...] | None = None
    slow: bool = False
    target: str = ""
    against: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"case {self.name}: op {self.op!r} is not one of {OPS}")
        if self.op == "bound" and not all(e in BOUNDS for e in self.engines or ("",)):
            raise ValueError(f"case {self.name}: a bound case runs bounds of {sorted(BOUNDS)}, not {self.engines}")


@dataclass(frozen=True)
class WriteCase:
    """Concurrent blind appends on one fresh local table: ``writers`` processes x ``appends`` each.

    Every variant is an engine plus options (see :data:`benchmarks.writers.VARIANTS`); every run builds a
    fresh table per variant, so nothing is shared between runs.
    """

    name: str
    title: str
    writers: int
    appends: int
    rows: int = 10
    variants: tuple[str, ...] = field(default=())
    default: bool = True
    slow: bool = True
    target: str = ""


@dataclass(frozen=True)
class BuiltTable:
    path: str
    live_counts: list[int]  # live files after each version, from the generator: the expected answer

    def expected_files(self, version: int | None) -> int:
        return self.live_counts[-1 if version is None else version]

    @property
    def latest(self) -> int:
        return len(self.live_counts) - 1


LOG_1K = Table("log-1000x100", LogSpec(commits=1000, adds_per_commit=100))
LOG_1K_CP = Table("log-1011x100-cp1000", LogSpec(commits=1011, adds_per_commit=100, checkpoints=(1000,)))
#: 10,000 small commits, 30% of them also removing 5 files, a checkpoint every 100 commits as Spark would
#: write at interval 100 (at versions 99, 199, ..., 9999: the checkpoint taken after every 100th commit).
LOG_10K = Table(
    "log-10000x10-rm30-cp100",
    LogSpec(
        commits=10_000,
        adds_per_commit=10,
        remove_fraction=0.3,
        removes_per_commit=5,
        checkpoints=tuple(range(99, 10_000, 100)),
    ),
)
#: 1M live files. The checkpoint at 999 (the latest) makes loading fast; the one at 998 is what the
#: checkpoint-write cases start from once 999's is taken away (checkpoint 998 + one commit to replay).
LOG_1M = Table("log-1000x1000-cp998-999", LogSpec(commits=1000, adds_per_commit=1000, checkpoints=(998, 999)))

WRITERS = ("deltalog", "deltalake")
#: What the peers do in the stats variants of the loads: the same as in the load itself.
STATS_PEERS = (
    "peers as in the load (deltalake's get_add_actions(flatten=True) already materialises the stats, "
    "parsed into columns; duckdb's query is the same)"
)

# The targets of issue 7, as its table states them (same tables, same machine, fresh processes).
TARGET_A = "load latest: <= 0.33x deltalake and <= 0.4x duckdb"
TARGET_B = "load latest: <= 0.25x deltalake and <= 0.8x duckdb"
TARGET_C = "load latest and a mid version: <= 0.8x the faster peer, both versions"
TARGET_D = "load latest: <= 0.8x duckdb time, <= 1x duckdb peak RSS"
TARGET_CKPT = "checkpoint write, 1M files: <= 0.5x deltalake, time and peak RSS"
TARGET_CKPT_SMALL = "none of its own: issue 7 sets the checkpoint-write target at 1M files (D-ckpt, D-ckpt-call)"
TARGET_LOADED = (
    "blind append on an already loaded 1M-file table: <= 0.01x deltalake (the cost of the new commit, not of the table)"
)
TARGET_ONE_SHOT = "one-shot blind append from a fresh process, 1M files: <= 0.1x deltalake"
TARGET_W = "8 local writers x 20 blind appends: 0 failed, >= 2x deltalake's commits/s"
TARGET_STATS = "none of its own: issue 7 asks for files(stats=True) to be benchmarked beside the load ({})"
TARGET_BOUNDS = "none: the parsing floor issue 7 asks the A and D loads to be read against (deltalog ÷ bound)"
TARGET_IMPORT = "import deltalog < 0.3 s (reported beside every load, not part of the timed call)"

CASES: dict[str, Case | WriteCase] = {
    c.name: c
    for c in (
        Case("A", "100k files over 1,000 commits, no checkpoint", LOG_1K, target=TARGET_A),
        Case(
            "A-stats",
            f"case A with stats: deltalog files(stats=True), stats as JSON strings; {STATS_PEERS}",
            LOG_1K,
            op="load_stats",
            target=TARGET_STATS.format("A"),
        ),
        Case("B", "checkpoint at 1,000 + 10 commits (101.1k files)", LOG_1K_CP, target=TARGET_B),
        Case("C", "10,000 commits x 10 adds, 30% with removes, checkpoint every 100", LOG_10K, target=TARGET_C),
        Case(
            "C-mid",
            "the same log at version 5,050 (checkpoint 4,999 + 51 commits)",
            LOG_10K,
            version=5050,
            target=TARGET_C,
        ),
        Case("D", "1M files over 1,000 commits, checkpoint at the latest", LOG_1M, slow=True, target=TARGET_D),
        Case(
            "D-stats",
            f"case D with stats: deltalog files(stats=True), stats as JSON strings; {STATS_PEERS}",
            LOG_1M,
            op="load_stats",
            slow=True,
            target=TARGET_STATS.format("D"),
        ),
        Case(
            "A-ckpt",
            "checkpoint write of case A's log (100k files): open + checkpoint",
            LOG_1K,
            op="checkpoint",
            engines=WRITERS,
            target=TARGET_CKPT_SMALL,
        ),
        Case(
            "A-ckpt-call",
            "checkpoint write of case A's log: the checkpoint call only, table loaded first",
            LOG_1K,
            op="checkpoint_call",
            engines=WRITERS,
            target=TARGET_CKPT_SMALL,
        ),
        Case(
            "D-ckpt",
            "checkpoint write of case D (1M files): open (checkpoint 998 + 1 commit) + checkpoint",
            LOG_1M,
            op="checkpoint",
            engines=WRITERS,
            slow=True,
            target=TARGET_CKPT,
        ),
        Case(
            "D-ckpt-call",
            "checkpoint write of case D: the checkpoint call only, table loaded first",
            LOG_1M,
            op="checkpoint_call",
            engines=WRITERS,
            slow=True,
            target=TARGET_CKPT,
        ),
        Case(
            "D-append",
            "one blind append (one 10-row file) from a fresh process to case D (1M files)",
            LOG_1M,
            op="append",
            engines=WRITERS,
            slow=True,
            target=TARGET_ONE_SHOT,
        ),
        Case(
            "D-append-loaded",
            "one blind append (one 10-row file) to case D (1M files) already loaded in the process: "
            "open, load and data-file write untimed, the commit timed",
            LOG_1M,
            op="append_loaded",
            engines=WRITERS,
            slow=True,
            target=TARGET_LOADED,
        ),
        Case(
            "A-bounds",
            "parsing bounds of case A's log (1,000 JSON commits, 100k adds)",
            LOG_1K,
            op="bound",
            engines=("read-bytes", "orjson-lines", "pyarrow-json"),
            target=TARGET_BOUNDS,
            against=("A", "A-stats"),
        ),
        Case(
            "D-bounds",
            "parsing bounds of case D's checkpoint (1M adds, the checkpoint at 999)",
            LOG_1M,
            op="bound",
            engines=("parquet", "parquet+stats"),
            target=TARGET_BOUNDS,
            against=("D", "D-stats"),
        ),
        WriteCase(
            "W",
            "8 local writers x 20 blind appends of one 10-row parquet file each, one fresh table",
            writers=8,
            appends=20,
            variants=("deltalog", "deltalog+autocp", "deltalake"),
            target=TARGET_W,
        ),
    )
}


#: Names that stand for several cases on the command line (``--cases bounds``).
GROUPS: dict[str, tuple[str, ...]] = {"bounds": ("A-bounds", "D-bounds")}


def _read_marker(path: str) -> dict[str, object] | None:
    try:
        with open(os.path.join(path, MARKER)) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _checkpoint(path: str, versions: tuple[int, ...]) -> None:
    """Checkpoint with the ``deltalake`` package and check it really wrote what we asked for.

    ``create_checkpoint`` is silent when it does nothing (e.g. a checkpoint exists already), so the files
    are checked, not trusted. Versions go in ascending order so ``_last_checkpoint`` ends at the newest;
    the hint after each one is kept in :data:`HINTS_DIR`.
    """
    from deltalake import DeltaTable

    log_dir = os.path.join(path, LOG_DIR)
    os.makedirs(os.path.join(path, HINTS_DIR), exist_ok=True)
    for v in sorted(versions):
        DeltaTable(path, version=v).create_checkpoint()
        cp = os.path.join(log_dir, f"{v:020d}.checkpoint.parquet")
        if not os.path.isfile(cp):
            raise RuntimeError(f"deltalake did not write {cp}")
        shutil.copyfile(os.path.join(log_dir, "_last_checkpoint"), os.path.join(path, HINTS_DIR, f"{v}.json"))
    with open(os.path.join(log_dir, "_last_checkpoint")) as f:
        last = json.load(f)
    if last.get("version") != max(versions):
        raise RuntimeError(f"_last_checkpoint names version {last.get('version')}, expected {max(versions)}")


def build(table: Table, root: str, log: bool = True) -> BuiltTable:
    """The table under ``root``, built now unless a matching marker says it is already there."""
    path = os.path.abspath(os.path.join(root, table.name))
    want = table.spec.marker()
    marker = _read_marker(path)
    if marker is not None and marker.get("spec") == want:
        counts = marker.get("live_counts")
        if isinstance(counts, list):
            return BuiltTable(path, [int(c) for c in counts])
    if log:
        print(f"building {table.name} ({table.spec.commits} commits) under {root} ...", flush=True)
    shutil.rmtree(path, ignore_errors=True)
    counts = write_log(table.spec, path)
    if table.spec.checkpoints:
        _checkpoint(path, table.spec.checkpoints)
    with open(os.path.join(path, MARKER), "w") as f:
        json.dump({"spec": want, "live_counts": counts}, f)
    return BuiltTable(path, counts)


__all__ = [
    "APPEND_OPS",
    "CASES",
    "GROUPS",
    "HINTS_DIR",
    "MARKER",
    "OPS",
    "TARGET_IMPORT",
    "WRITE_OPS",
    "BuiltTable",
    "Case",
    "Table",
    "WriteCase",
    "build",
]
