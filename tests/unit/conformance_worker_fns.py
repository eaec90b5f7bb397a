"""Functions the worker-pool tests run in spawned processes: importable without pyarrow or duckdb, so a worker
starts in a fraction of a second."""

from __future__ import annotations

import os
import time


def nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def die(code: int) -> None:
    os._exit(code)


def boom(_: object) -> None:
    raise KeyError("boom")
