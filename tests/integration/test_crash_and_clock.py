"""Crash and clock: writer processes killed at random points, skewed clocks, automatic checkpoints, cleanup.

Several real OS processes append to one local table through long-lived ``DeltaLog`` instances whose clocks
disagree by days, with a checkpoint every 3 versions and a log retention of an hour: a writer whose clock
runs ahead deletes everything below the newest checkpoint right after writing it, while slower writers
still hold transactions on versions it removes. The test kills writers with SIGKILL at seeded random
moments and starts new ones. Afterwards:

* every commit a writer acknowledged (an ack is recorded only after ``commit()`` returned) is visible in
  the latest snapshot exactly once, at the version it was acknowledged as when that commit is still listed;
* no two acknowledgements name the same version, and every version from the earliest reconstructable one
  to the latest can be read (versions are dense in what readers replay);
* ``deltalake`` and duckdb read the latest version as deltalog does.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest

from deltalog import DeltaLog
from deltalog.core.paths import commit_name
from tests.integration.datafiles import SCHEMA, assert_peers_agree

SEEDS = [12, 2026]
WRITERS = 4
CHAOS_S = 15.0
MAX_S = 90.0
MIN_ACKS = 60
DAY_S = 86_400.0
#: clocks from a day behind to three days ahead; ahead by two days or more, cleanup removes fresh files
SKEWS_S = [-DAY_S, 0.0, 2 * DAY_S, 3 * DAY_S]
REPO = Path(__file__).resolve().parents[2]
CONF = {
    "delta.checkpointInterval": "3",
    "delta.logRetentionDuration": "interval 1 hours",
    "delta.deletedFileRetentionDuration": "interval 1 hours",
}


class Writers:
    """The writer processes of one run, with the seeded choices of clock skew and slowness."""

    def __init__(self, root: Path, rng: random.Random) -> None:
        self.root = root
        self.rng = rng
        self.out = root.parent / "writers"
        self.out.mkdir()
        self.live: dict[str, subprocess.Popen[bytes]] = {}
        self.killed: list[str] = []
        self.count = 0

    def spawn(self) -> None:
        self.count += 1
        name = f"w{self.count:03d}"
        args = [
            sys.executable,
            "-m",
            "tests.integration.crash_writer",
            str(self.root),
            name,
            f"--skew-s={self.rng.choice(SKEWS_S)}",
            f"--slow={self.rng.choice([0.0, 0.3, 0.6])}",
            f"--seed={self.rng.randrange(1 << 30)}",
        ]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        stderr = open(self.out / f"{name}.stderr", "wb")  # noqa: SIM115 - the child owns it until it ends
        self.live[name] = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
        stderr.close()

    def progressing(self) -> list[str]:
        """Writers that acknowledged a commit: killing one is a kill mid-append, never mid-import."""
        return [name for name in sorted(self.live) if self.acked(name)]

    def acked(self, name: str) -> bool:
        path = self.out / f"{name}.acks"
        return path.exists() and path.stat().st_size > 0

    def kill(self, name: str) -> None:
        proc = self.live.pop(name)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        self.killed.append(name)

    def stop(self) -> None:
        (self.out / "stop").touch()
        deadline = time.monotonic() + 120
        for name, proc in sorted(self.live.items()):
            try:
                proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                pytest.fail(f"writer {name} did not stop; its stderr: {self.stderr(name)}")
            if proc.returncode != 0:
                pytest.fail(f"writer {name} failed (exit {proc.returncode}): {self.stderr(name)}")

    def kill_all(self) -> None:
        for proc in self.live.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def stderr(self, name: str) -> str:
        return (self.out / f"{name}.stderr").read_text(errors="replace")[-3000:]

    def acks(self) -> list[tuple[str, int]]:
        """Every complete ack line of every writer: (add path, version)."""
        out = []
        for path in sorted(self.out.glob("*.acks")):
            for line in path.read_bytes().split(b"\n")[:-1]:  # a kill may cut the last line short
                add, version = line.decode().split(" ")
                out.append((add, int(version)))
        return out

    def errors(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for path in self.out.glob("*.errors"):
            total.update(orjson.loads(path.read_bytes()))
        return total


def run_chaos(root: Path, seed: int) -> Writers:
    """Kill a writer and start another at seeded random moments, for ``CHAOS_S`` seconds once writers make
    progress and until ``MIN_ACKS`` commits were acknowledged (at most ``MAX_S`` seconds in all)."""
    rng = random.Random(seed)
    writers = Writers(root, rng)
    started = time.monotonic()
    try:
        for _ in range(WRITERS):
            writers.spawn()
        running_since = None
        while time.monotonic() - started < MAX_S:
            time.sleep(rng.uniform(0.3, 1.5))
            for name, proc in list(writers.live.items()):
                if proc.poll() is not None:
                    pytest.fail(f"writer {name} died on its own (exit {proc.returncode}): {writers.stderr(name)}")
            progressing = writers.progressing()
            if not progressing:
                continue  # still starting (a loaded machine is slow): a kill now would only test start-up
            running_since = running_since or time.monotonic()
            if time.monotonic() - running_since > CHAOS_S and len(writers.acks()) >= MIN_ACKS:
                break
            writers.kill(rng.choice(progressing))
            writers.spawn()
        writers.stop()
    finally:
        writers.kill_all()
    return writers


def added_paths(root: Path, version: int) -> set[str]:
    data = (root / "_delta_log" / commit_name(version)).read_bytes()
    return {obj["add"]["path"] for obj in map(orjson.loads, data.splitlines()) if "add" in obj}


@pytest.mark.parametrize("seed", SEEDS)
def test_acknowledged_commits_survive_kills_skewed_clocks_and_cleanup(tmp_path: Path, seed: int) -> None:
    root = tmp_path / "table"
    root.mkdir()
    DeltaLog.for_table(root).create(SCHEMA, configuration=CONF)

    writers = run_chaos(root, seed)

    acks = writers.acks()
    log = DeltaLog.for_table(root)
    snap = log.snapshot()
    live = Counter(snap.files().column("path").to_pylist())
    versions = Counter(v for _, v in acks)
    summary = f"seed {seed}: {len(acks)} acks, latest {snap.version}, {writers.count} writers, {writers.errors()}"
    assert len(acks) >= 10, summary
    assert writers.killed, summary
    assert [v for v, n in versions.items() if n > 1] == [], f"versions acknowledged twice; {summary}"
    assert max(live.values()) == 1, summary
    lost = [(add, v) for add, v in acks if live[add] != 1]
    assert lost == [], f"acknowledged commits not in the latest snapshot: {lost[:5]}; {summary}"
    listed = {p.version for p in log.list_log(0) if p.kind.value == "commit"}
    misplaced = [(add, v) for add, v in acks if v in listed and add not in added_paths(root, v)]
    assert misplaced == [], f"acknowledged at a version that holds another commit: {misplaced[:5]}; {summary}"

    # Dense: every version from the earliest reconstructable one on can be read, and the segment of the
    # latest runs without a gap from its checkpoint (build_segment refuses gaps).
    earliest = log.earliest_version()
    for version in range(earliest, snap.version + 1):
        assert log.fresh_snapshot(version).version == version
    assert snap.segment.version == snap.version

    assert_peers_agree(root)
