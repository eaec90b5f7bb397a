"""One writer process of the crash-and-clock test (``python -m tests.integration.crash_writer ...``).

It appends one real parquet file per commit through a long-lived ``DeltaLog`` whose clock is skewed, with
automatic checkpoints and the log cleanup that follows them, until the stop file appears or it is killed.
It records a commit in its own ack file only after ``commit()`` returned, one line ``<path> <version>``,
fsynced, so a kill at any point leaves either a complete line or none.

It tells the parent where it is on stdout, one line per event, so the parent can place its kills at these
points instead of guessing with sleeps: ``commit <seq>`` just before ``commit()`` is called, ``ack <seq>``
once the ack is on disk, ``hold <seq>`` when it holds a transaction open. A slow writer holds its transaction
(read, not yet committed) until the parent writes a line to its stdin, which the parent does once other
writers have committed past the version it read, so that version can be cleaned up under it. Errors deltalog
raises are counted and the writer goes on; any other exception ends the process with a traceback, which the
test reports as a failure.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

import orjson

from deltalog import DeltaLog, DeltaLogError
from tests.integration.datafiles import data_file


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("name")
    parser.add_argument("--skew-s", type=float, default=0.0)
    parser.add_argument("--slow", type=float, default=0.0, help="probability of holding a transaction open")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    root = Path(args.root)
    out = root.parent / "writers"
    logging.basicConfig(filename=out / f"{args.name}.log", level=logging.WARNING)
    rng = random.Random(args.seed)
    log = DeltaLog.for_table(root, clock=lambda: time.time() + args.skew_s)
    errors: Counter[str] = Counter()
    stop = out / "stop"

    def tell(event: str, seq: int) -> None:
        sys.stdout.write(f"{event} {seq}\n")
        sys.stdout.flush()

    with open(out / f"{args.name}.acks", "a") as acks:
        seq = 0
        while not stop.exists():
            seq += 1
            add = data_file(root, f"{args.name}-{seq:04d}")
            try:
                txn = log.start_transaction()
                if rng.random() < args.slow:
                    tell("hold", seq)
                    sys.stdin.readline()  # the parent's go (or end of input when it stops the run)
                tell("commit", seq)
                result = txn.commit([add])
            except DeltaLogError as exc:
                errors[type(exc).__name__] += 1
                logging.getLogger("crash_writer").warning("commit refused: %s: %s", type(exc).__name__, exc)
                continue
            acks.write(f"{add.path} {result.version}\n")
            acks.flush()
            os.fsync(acks.fileno())
            tell("ack", seq)
    (out / f"{args.name}.errors").write_bytes(orjson.dumps(dict(errors)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
