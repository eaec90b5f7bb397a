"""Crash and clock: writer processes killed at random points, skewed clocks, automatic checkpoints, cleanup.

Several real OS processes append to one local table through long-lived ``DeltaLog`` instances whose clocks
disagree by days, with a checkpoint every 3 versions and a log retention of an hour: a writer whose clock
runs ahead deletes everything below the newest checkpoint right after writing it, while slower writers
still hold transactions on versions it removes. The test kills writers with SIGKILL at seeded random
points and starts new ones; every kill point and every wait is an event a writer reports through a pipe, never
a sleep (see :func:`run_chaos`). Afterwards:

* every commit a writer acknowledged (an ack is recorded only after ``commit()`` returned) is visible in
  the latest snapshot exactly once, at the version it was acknowledged as when that commit is still listed;
* no two acknowledgements name the same version, and every version from the earliest reconstructable one
  to the latest can be read (versions are dense in what readers replay);
* ``deltalake`` and duckdb read the latest version as deltalog does.
"""

from __future__ import annotations

import os
import random
import selectors
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from deltalog import DeltaLog
from deltalog.core.log.paths import commit_name
from tests.integration.datafiles import SCHEMA, assert_peers_agree

SEEDS = [12, 2026]
WRITERS = 4
KILLS = 12  # the run ends after this many kills, once MIN_ACKS commits were acknowledged
MAX_S = 120.0  # a bound, never a schedule: nothing here waits for time to pass
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


@dataclass
class Writer:
    """One writer process and what it told the parent."""

    proc: subprocess.Popen[bytes]
    buffer: bytes = b""
    acks: int = 0
    held: int | None = None  # the total of acks at which to let a held transaction go on


class Writers:
    """The writer processes of one run, with the seeded choices of clock skew, slowness and kill points.

    Every decision is taken on an event a writer reports on its stdout (``commit``, ``ack``, ``hold``; see
    :mod:`tests.integration.crash_writer`), never after a sleep: a kill is aimed at a writer's next ``commit``
    (so it lands inside the commit) or at once after an ack, and a held transaction goes on once other writers
    acknowledged a seeded number of commits after it was taken.
    """

    def __init__(self, root: Path, rng: random.Random) -> None:
        self.root = root
        self.rng = rng
        self.out = root.parent / "writers"
        self.out.mkdir()
        self.live: dict[str, Writer] = {}
        self.killed: list[str] = []
        self.count = 0
        self.total_acks = 0
        self.stopping = False  # set by stop(): from then on, a writer's output ending is expected
        self.selector = selectors.DefaultSelector()

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
        proc = subprocess.Popen(args, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
        stderr.close()
        assert proc.stdout is not None
        os.set_blocking(proc.stdout.fileno(), False)
        self.live[name] = Writer(proc)
        self.selector.register(proc.stdout, selectors.EVENT_READ, name)

    def events(self, deadline: float) -> list[tuple[str, str]]:
        """The next lines writers reported, as (writer, event); waits (bounded by ``deadline``) for one.

        A writer whose output ends while it is still live died on its own: the test fails with its stderr.
        """
        ready = self.selector.select(timeout=max(0.0, deadline - time.monotonic()))
        found: list[tuple[str, str]] = []
        for key, _ in ready:
            name = key.data
            w = self.live[name]
            chunk = os.read(key.fd, 65536)
            if not chunk:
                self.selector.unregister(key.fileobj)
                code = w.proc.wait()
                if not self.stopping:
                    pytest.fail(f"writer {name} died on its own (exit {code}): {self.stderr(name)}")
                continue
            w.buffer += chunk
            *lines, w.buffer = w.buffer.split(b"\n")
            found += [(name, line.decode().split(" ")[0]) for line in lines]
        return found

    def note(self, name: str, event: str) -> None:
        """Count an ack, and give a held transaction the number of acks it waits for."""
        w = self.live[name]
        if event == "ack":
            w.acks += 1
            self.total_acks += 1
        elif event == "hold":
            w.held = self.total_acks + self.rng.randint(2, 6)
        self.release_due()

    def release_due(self) -> None:
        """Let held transactions go on once enough commits came after them, or when no writer is left to
        commit (every live writer holding)."""
        held = [n for n, w in self.live.items() if w.held is not None]
        for name in held:
            if self.total_acks >= (self.live[name].held or 0):
                self.release(name)
        if held and all(w.held is not None for w in self.live.values()):
            self.release(min(held, key=lambda n: self.live[n].held or 0))

    def release(self, name: str) -> None:
        w = self.live[name]
        w.held = None
        assert w.proc.stdin is not None
        w.proc.stdin.write(b"go\n")
        w.proc.stdin.flush()

    def progressing(self) -> list[str]:
        """Writers that acknowledged a commit: killing one is a kill mid-append, never mid-import."""
        return [name for name in sorted(self.live) if self.live[name].acks]

    def kill(self, name: str) -> None:
        w = self.live.pop(name)
        assert w.proc.stdout is not None and w.proc.stdin is not None
        self.selector.unregister(w.proc.stdout)
        w.proc.send_signal(signal.SIGKILL)
        w.proc.wait()
        w.proc.stdout.close()
        w.proc.stdin.close()
        self.killed.append(name)
        self.release_due()

    def stop(self) -> None:
        """Stop every writer through the stop file (held ones are let go), reading their reports until each
        has ended, within the run's bound."""
        self.stopping = True
        (self.out / "stop").touch()
        # end every writer's input: a held one goes on, and so does one whose "hold" is still in the pipe
        for w in self.live.values():
            w.held = None
            assert w.proc.stdin is not None
            w.proc.stdin.close()
        deadline = time.monotonic() + 120
        while self.selector.get_map() and time.monotonic() < deadline:
            self.events(deadline)
        for name, w in sorted(self.live.items()):
            try:
                w.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
                pytest.fail(f"writer {name} did not stop; its stderr: {self.stderr(name)}")
            if w.proc.returncode != 0:
                pytest.fail(f"writer {name} failed (exit {w.proc.returncode}): {self.stderr(name)}")

    def kill_all(self) -> None:
        for w in self.live.values():
            if w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()
            for pipe in (w.proc.stdin, w.proc.stdout):
                if pipe is not None:
                    pipe.close()
        self.selector.close()

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
    """Kill a writer and start another at seeded kill points until ``KILLS`` kills were made and ``MIN_ACKS``
    commits acknowledged (bounded by ``MAX_S``).

    A kill point is chosen when the previous kill is made: after a seeded number (1 to 4) of acknowledged
    commits, a seeded writer among those that made progress is killed, either on its next ``commit`` report
    (inside its commit: the put, the listing that acknowledges it, the checkpoint and cleanup after it) or at
    once (between commits, in the middle of writing its next data file, or holding a transaction).
    """
    rng = random.Random(seed)
    writers = Writers(root, rng)
    deadline = time.monotonic() + MAX_S
    try:
        for _ in range(WRITERS):
            writers.spawn()
        next_kill = writers.total_acks + rng.randint(1, 4)
        victim: str | None = None  # a writer to kill on its next commit report
        while time.monotonic() < deadline:
            if len(writers.killed) >= KILLS and writers.total_acks >= MIN_ACKS:
                break
            for name, event in writers.events(deadline):
                if name not in writers.live:
                    continue  # reported just before it was killed
                writers.note(name, event)
                if name == victim and event == "commit":
                    writers.kill(name)
                    writers.spawn()
                    victim = None
                    next_kill = writers.total_acks + rng.randint(1, 4)
            if victim is None and writers.total_acks >= next_kill and writers.progressing():
                chosen = rng.choice(writers.progressing())
                if rng.random() < 0.5:
                    victim = chosen
                else:
                    writers.kill(chosen)
                    writers.spawn()
                    next_kill = writers.total_acks + rng.randint(1, 4)
            if victim is not None and victim not in writers.live:
                victim = None
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
