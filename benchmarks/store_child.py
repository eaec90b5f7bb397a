"""One object-store measurement in a fresh interpreter: import an engine, do one operation, print one JSON line.

As in :mod:`benchmarks.child`: a fresh process per run, so nothing is cached from an earlier one, and the
parent reads the last stdout line starting with :data:`benchmarks.child.MARK`. What is new is the timed
window: the child reports it on ``time.monotonic()`` (CLOCK_MONOTONIC, shared by every process of the
machine), and the parent counts the proxy's requests that arrived inside it, so the untimed setup (creating
the table an append goes to, loading it first) is never counted. An append case times each append on its
own and reports one window per append.

Usage: ``python -m benchmarks.store_child '<json spec>'`` with engine, op, location, options, env (variables
set before the engine is imported), version, timestamp_ms, limit, appends and server_pid
(:func:`benchmarks.store_bench.child_spec`).
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import time
import traceback
import uuid
from typing import Any

from benchmarks.child import MARK
from benchmarks.source import use_exported_source


class DeltalogOps:
    """``DeltaLog.for_table(location, options)``: ``snapshot(version | timestamp).files()``, ``history``, appends."""

    def __init__(self, options: dict[str, Any]) -> None:
        import contextlib
        import importlib

        from deltalog import DeltaLog

        # Untimed, as ``import deltalake`` is: the object-store clients deltalog imports on first use (s3fs,
        # aiobotocore, adlfs: about 0.4 s of CPU), so the timed window holds the operation, not module imports.
        for backend in ("deltalog.storage.s3", "deltalog.storage.azure", "deltalog.storage.obstore_store"):
            with contextlib.suppress(ImportError):
                importlib.import_module(backend)
        self._options = options
        self._table = DeltaLog.for_table
        self._log: Any = None

    def _open(self, location: str, **kwargs: Any) -> Any:
        return self._table(location, self._options, **kwargs)

    def load(self, location: str, version: int | None) -> dict[str, Any]:
        snap = self._open(location).snapshot(version)
        return {"version": snap.version, "files": snap.files().num_rows}

    def timestamp(self, location: str, timestamp_ms: int) -> dict[str, Any]:
        snap = self._open(location).snapshot(timestamp=timestamp_ms)
        return {"version": snap.version, "files": snap.files().num_rows}

    def history(self, location: str, limit: int) -> dict[str, Any]:
        return {"versions": [e.version for e in self._open(location).history(limit=limit)]}

    def create(self, location: str) -> None:
        from benchmarks.engines import sample_rows

        self._open(location).create(sample_rows(1, None).schema)

    def attach(self, location: str) -> None:
        """Open the table and load it (untimed): what a warm writer holds before its next append."""
        from deltalog import actions

        self._add = actions.Add
        self._log = self._open(location, auto_checkpoint=False)
        self._log.snapshot()

    def append(self) -> dict[str, Any]:
        add = self._add(
            path=f"part-00000-{uuid.uuid4()}-c000.snappy.parquet",
            partition_values={},
            size=1000,
            modification_time=int(time.time() * 1000),
            data_change=True,
        )
        result = self._log.start_transaction().commit([add])
        return {"version": result.version, "attempts": result.attempts}


class DeltalakeOps:
    """``DeltaTable(location, version=v, storage_options=...)`` + ``get_add_actions(flatten=True)``; history via
    ``DeltaTable(...).history(limit)``; timestamp travel via ``load_as_version(datetime)`` (deltalake opens the
    latest first: it has no other way); appends via ``write_deltalake`` on the loaded table (it writes the
    10-row data file too), post-commit checkpoint and log cleanup off."""

    def __init__(self, options: dict[str, Any]) -> None:
        from deltalake import DeltaTable, PostCommitHookProperties, write_deltalake

        self._options = options
        self._table = DeltaTable
        self._write = write_deltalake
        self._hooks = PostCommitHookProperties(create_checkpoint=False, cleanup_expired_logs=False)
        self._dt: Any = None

    def _open(self, location: str, version: int | None = None) -> Any:
        return self._table(location, version=version, storage_options=self._options)

    def load(self, location: str, version: int | None) -> dict[str, Any]:
        table = self._open(location, version)
        return {"version": table.version(), "files": table.get_add_actions(flatten=True).num_rows}

    def timestamp(self, location: str, timestamp_ms: int) -> dict[str, Any]:
        table = self._open(location)
        table.load_as_version(dt.datetime.fromtimestamp(timestamp_ms / 1000, tz=dt.timezone.utc))
        return {"version": table.version(), "files": table.get_add_actions(flatten=True).num_rows}

    def history(self, location: str, limit: int) -> dict[str, Any]:
        return {"versions": [int(e["version"]) for e in self._open(location).history(limit)]}

    def create(self, location: str) -> None:
        from benchmarks.engines import sample_rows

        self._table.create(location, schema=sample_rows(1, None).schema, storage_options=self._options)

    def attach(self, location: str) -> None:
        from benchmarks.engines import sample_rows

        self._rows = sample_rows(10, None)
        self._dt = self._open(location)

    def append(self) -> dict[str, Any]:
        self._write(self._dt, self._rows, mode="append", post_commithook_properties=self._hooks)
        return {"version": self._dt.version()}


#: the deltalog engines differ only in their options (benchmarks.stores.PINNED): the same operations
OPS: dict[str, type[DeltalogOps] | type[DeltalakeOps]] = {
    "deltalog": DeltalogOps,
    "deltalog-fsspec": DeltalogOps,
    "deltalake": DeltalakeOps,
}


def process_cpu_s(pid: int | None) -> float | None:
    """CPU seconds (user + system) process ``pid`` has used, from ``/proc`` (None where that cannot be read).

    Taken around each timed call for the server, so the report can tell a call bounded by round trips from
    one bounded by the server's own work.
    """
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    t0 = time.monotonic()
    ops = OPS[spec["engine"]](spec["options"])
    import_s = time.monotonic() - t0
    location, op = spec["location"], spec["op"]
    calls: list[Any]
    if op == "append":
        ops.create(location)
        ops.attach(location)
        calls = [ops.append] * int(spec["appends"])
    elif op == "load":
        calls = [lambda: ops.load(location, spec.get("version"))]
    elif op == "timestamp":
        calls = [lambda: ops.timestamp(location, int(spec["timestamp_ms"]))]
    elif op == "history":
        calls = [lambda: ops.history(location, int(spec["limit"]))]
    else:
        raise ValueError(f"unknown op {op!r}")
    windows, results, cpu, server_cpu = [], [], 0.0, 0.0
    server = spec.get("server_pid")
    for call in calls:
        s0, c0, w0 = process_cpu_s(server), time.process_time(), time.monotonic()
        results.append(call())
        w1, c1, s1 = time.monotonic(), time.process_time(), process_cpu_s(server)
        windows.append([w0, w1])
        cpu += c1 - c0
        server_cpu += (s1 - s0) if s0 is not None and s1 is not None else float("nan")
    return {
        "engine": spec["engine"],
        "import_s": import_s,
        "windows": windows,
        "cpu_s": cpu,
        "server_cpu_s": None if server_cpu != server_cpu else server_cpu,  # NaN: not readable
        "results": results,
    }


def main(argv: list[str] | None = None) -> int:
    import json

    args = sys.argv[1:] if argv is None else argv
    use_exported_source()
    spec = json.loads(args[0])
    os.environ.update(spec.get("env") or {})
    try:
        out, code = measure(spec), 0
    except Exception as exc:  # reported to the parent, which stops the run with it
        out, code = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}, 3
    sys.stdout.write(MARK + json.dumps(out) + "\n")
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
