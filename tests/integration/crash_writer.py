"""One writer process of the crash-and-clock test (``python -m tests.integration.crash_writer ...``).

It appends one real parquet file per commit through a long-lived ``DeltaLog`` whose clock is skewed, with
automatic checkpoints and the log cleanup that follows them, until the stop file appears or it is killed.
It records a commit in its own ack file only after ``commit()`` returned, one line ``<path> <version>``,
fsynced, so a kill at any point leaves either a complete line or none. A slow writer holds each
transaction open for a while first, so the version it read can be cleaned up under it. Errors deltalog
raises are counted and the writer goes on; any other exception ends the process with a traceback, which
the test reports as a failure.
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
    with open(out / f"{args.name}.acks", "a") as acks:
        seq = 0
        while not stop.exists():
            seq += 1
            add = data_file(root, f"{args.name}-{seq:04d}")
            try:
                txn = log.start_transaction()
                if rng.random() < args.slow:
                    time.sleep(rng.uniform(0.2, 1.0))
                result = txn.commit([add])
            except DeltaLogError as exc:
                errors[type(exc).__name__] += 1
                logging.getLogger("crash_writer").warning("commit refused: %s: %s", type(exc).__name__, exc)
                continue
            acks.write(f"{add.path} {result.version}\n")
            acks.flush()
            os.fsync(acks.fileno())
    (out / f"{args.name}.errors").write_bytes(orjson.dumps(dict(errors)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
