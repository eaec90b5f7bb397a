"""A streaming query killed (SIGKILL of its driver, JVM and workers) at random points and restarted from its
checkpoint: every source row lands in the sink exactly once, each batch reading one source version.

The source table has 20 versions of one file each; the query reads them with ``maxFilesPerTrigger=1`` into a
deltalog sink, so 20 micro-batches. Five runs are killed, each at a point drawn at random from the life of a
batch: once Spark has logged a batch's offsets (nothing written yet), once a batch's files are in the sink's
directory (written, maybe not committed), or once the sink's log has a new commit. A kill is aimed by watching
those files appear (a bounded wait on the process, never a sleep). The sixth run finishes the query. The
draws' seed is printed so a failure can be replayed.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog import DeltaLog
from tests.peers import deltalake_view, duckdb_view
from tests.protocol_checker import assert_valid

#: Spark runs in the driver subprocesses, not through the fixture
pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = 20
ROWS = 5
KILLS = 5
RUN_DEADLINE_S = 600.0


def source(root: Path) -> Path:
    for v in range(VERSIONS):
        ids = pa.array([v * 100 + i for i in range(ROWS)], pa.int64())
        deltalog.write(pa.table({"id": ids, "v": pa.array([v] * ROWS, pa.int64())}), root)
    return root


def start(src: Path, sink: Path, ck: Path, log: Path) -> subprocess.Popen[bytes]:
    """A run of the query's driver in its own process group (driver, JVM and workers die together)."""
    cmd = [sys.executable, "-m", "tests.integration.stream_driver", str(src), str(sink), str(ck)]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    with log.open("wb") as out:  # the child keeps its own descriptor
        return subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True, stdout=out, stderr=out)


def count(directory: Path, pattern: str) -> int:
    return len(list(directory.glob(pattern))) if directory.exists() else 0


def watches(src: Path, sink: Path, ck: Path) -> dict[str, Callable[[], int]]:
    return {
        "offsets logged": lambda: count(ck / "offsets", "[0-9]*"),
        "files written": lambda: count(sink, "*.parquet"),
        "batch committed": lambda: count(sink / "_delta_log", "*.json"),
    }


def kill_when(proc: subprocess.Popen[bytes], seen: Callable[[], int], target: int) -> bool:
    """Wait until ``seen()`` reaches ``target``, then kill the run's process group; False if the run ended
    first (the query finished)."""
    deadline = time.monotonic() + RUN_DEADLINE_S
    while seen() < target:
        try:
            proc.wait(timeout=0.1)
        except subprocess.TimeoutExpired:
            assert time.monotonic() < deadline, "the streaming run made no progress before its deadline"
            continue
        return False
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    return True


def test_a_killed_query_restarted_from_its_checkpoint_commits_every_row_once(tmp_path: Path) -> None:
    src, sink, ck = source(tmp_path / "src"), tmp_path / "sink", tmp_path / "ck"
    seed = random.randrange(1 << 30)
    print(f"kill points drawn with seed {seed}")
    rng = random.Random(seed)
    points = watches(src, sink, ck)
    for run in range(KILLS):
        name = rng.choice(sorted(points))
        target = points[name]() + rng.randint(1, 2)
        proc = start(src, sink, ck, tmp_path / f"run-{run}.log")
        assert kill_when(proc, points[name], target), f"the query finished before the kill at {name} {target}"
    last_log = tmp_path / "run-last.log"
    last = start(src, sink, ck, last_log)
    assert last.wait(timeout=RUN_DEADLINE_S) == 0, last_log.read_text(errors="replace")[-4000:]

    log = DeltaLog.for_table(sink)
    rows = log.snapshot().to_arrow().to_pylist()
    assert sorted(r["id"] for r in rows) == [v * 100 + i for v in range(VERSIONS) for i in range(ROWS)]
    held_by_commit = []
    for version in range(log.latest_version() + 1):
        now = {r["id"]: r["v"] for r in log.snapshot(version=version).to_arrow().to_pylist()}
        before = {r["id"] for r in log.snapshot(version=version - 1).to_arrow().to_pylist()} if version else set()
        held_by_commit.append({v for i, v in now.items() if i not in before})
    # each committed batch read exactly one source version (maxFilesPerTrigger=1), each version once, in order
    assert held_by_commit == [{v} for v in range(VERSIONS)]
    txns = [t.version for t in log.snapshot().txns.values()]
    assert txns == [VERSIONS - 1]  # one query, its last batch id
    assert_valid(sink)
    assert deltalake_view(sink).rows == duckdb_view(sink).rows == VERSIONS * ROWS
