"""The engines a case is timed with: a registry of small runner classes, used only inside child processes.

Each runner does its imports (and any connection setup) in ``__init__``, which the child times as
"import"; ``load`` is the timed snapshot load and returns the live-file count when that work yields it;
``count_files`` is an untimed, independent count used to check that every engine saw the same table.
Engines that write also have ``checkpoint`` (open + checkpoint), ``open_table`` + ``checkpoint_loaded``
(the checkpoint call alone), ``prepare_append`` + ``append`` (one blind append from a fresh process) and
``prepare_append_loaded`` + ``append_loaded`` (the table loaded and the data file written first, then only
the commit timed); :func:`plan` turns a case's operation into an untimed setup and the one call that is
timed. ``details`` holds what a runner learned on the way (e.g. commit attempts), reported next to the numbers.
Adding an engine is one class and one :data:`ENGINES` entry. Heavy imports stay inside the classes so
that the parent process (and engines not being run) never pays for them.
"""

from __future__ import annotations

import glob
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from benchmarks.shape import ABSENT_PARTITION, PARTITION_COLUMN

#: The partition a one-shot append writes into (an existing one, as an append to a live table would).
APPEND_PARTITION = "00"
#: Operations that only read the table: no scratch copy, no peak-RSS reset, and the live-file count is checked.
#: ``load_stats`` is a load with the adds' stats (deltalog ``files(stats=True)``); ``bound`` is a parsing bound
#: (:mod:`benchmarks.bounds`), timed like a load.
READ_OPS = ("load", "load_stats", "bound")


class Runner(Protocol):
    details: dict[str, Any]

    def load(self, table: str, version: int | None) -> int | None: ...

    def count_files(self, table: str, version: int | None) -> int: ...


def sample_rows(rows: int, partition: str | None) -> Any:
    """The appended data: ``rows`` rows in the synthetic table's schema (``part`` only when partitioned).

    The same rows for every engine and every append, so each append writes an identical file.
    """
    import datetime as dt

    import pyarrow as pa

    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    cols: dict[str, pa.Array] = {
        "id": pa.array(range(rows), pa.int64()),
        "value": pa.array([i * 0.5 for i in range(rows)], pa.float64()),
        "name": pa.array([f"row-{i:04d}" for i in range(rows)], pa.string()),
        "event_time": pa.array([base + dt.timedelta(seconds=i) for i in range(rows)], pa.timestamp("us", tz="UTC")),
    }
    if partition is not None:
        cols[PARTITION_COLUMN] = pa.array([partition] * rows, pa.string())
    return pa.table(cols)


def write_data_file(table: str, rows: Any, partition: str | None) -> tuple[str, int, int]:
    """Write ``rows`` as a new parquet file under ``table`` the way a Delta writer lays it out.

    Returns (path relative to the table, size, modification time ms). The partition column is not stored
    in the file (Delta keeps it in ``partitionValues``).
    """
    import pyarrow.parquet as pq

    rel = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    if partition is not None:
        rel = f"{PARTITION_COLUMN}={partition}/{rel}"
        rows = rows.drop_columns([PARTITION_COLUMN]) if PARTITION_COLUMN in rows.column_names else rows
    full = os.path.join(table, rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    pq.write_table(rows, full, compression="snappy")
    st = os.stat(full)
    return rel, st.st_size, int(st.st_mtime * 1000)


class DeltalogRunner:
    """``DeltaLog.for_table(p).snapshot().files()``: the whole live-file list as a pyarrow Table.

    Checkpoint: ``DeltaLog.for_table(p).checkpoint()``. Append: write the file with pyarrow, then
    ``DeltaLog.for_table(p, auto_checkpoint=False).start_transaction().commit([Add])``.
    """

    def __init__(self) -> None:
        from deltalog import DeltaLog

        self._open = DeltaLog.for_table
        self._last: int | None = None
        self.details: dict[str, Any] = {}
        self._log: Any = None
        self._rows: Any = None
        self._stats: Any = None  # the stats column of the last load_stats, checked by verify()

    def _snapshot(self, table: str, version: int | None) -> Any:
        snapshot = self._open(table).snapshot(version)
        if version is not None and snapshot.version != version:
            raise RuntimeError(f"deltalog loaded version {snapshot.version}, asked for {version}")
        return snapshot

    def load(self, table: str, version: int | None) -> int:
        self._last = self._snapshot(table, version).files().num_rows
        return self._last

    def load_stats(self, table: str, version: int | None) -> int:
        """``files(stats=True)``: the same load with the ``stats`` column (JSON strings) in the table."""
        files = self._snapshot(table, version).files(stats=True)
        self._stats = files.column("stats")
        self._last = files.num_rows
        return self._last

    def verify(self) -> None:
        """Untimed, after the call: every synthetic add has stats, so a null (or non-string) one is a bug."""
        import pyarrow as pa

        stats = self._stats
        if stats is None:
            return
        if not (pa.types.is_string(stats.type) or pa.types.is_large_string(stats.type)):
            raise RuntimeError(f"deltalog's stats column is {stats.type}, not JSON strings")
        if stats.null_count:
            raise RuntimeError(f"deltalog's stats column has {stats.null_count} nulls; every generated add has stats")

    def count_files(self, table: str, version: int | None) -> int:
        return self._last if self._last is not None else self.load(table, version)

    def _checkpointed(self, result: Any) -> int:
        self.details = {"kind": result.kind, "version": result.version, "bytes": result.size_in_bytes}
        if result.already_existed:
            raise RuntimeError(f"deltalog found a checkpoint of version {result.version} already there: nothing timed")
        return int(result.num_add_files)

    def checkpoint(self, table: str) -> int:
        return self._checkpointed(self._open(table).checkpoint())

    def open_table(self, table: str) -> None:
        self._log = self._open(table)
        self._log.snapshot()  # the latest snapshot is cached on the log, which checkpoint() then uses

    def checkpoint_loaded(self) -> int:
        return self._checkpointed(self._log.checkpoint())

    def prepare_append(self, table: str) -> None:
        # The writing API loads on first use (deltalog/__init__.py). Times are taken after the imports, so it
        # is imported here, untimed, and its import time is reported beside the "import s" column instead.
        t0 = time.perf_counter()
        import deltalog
        from deltalog import actions

        assert deltalog.Transaction  # the package's name for it, in every revision --rev may export

        self._writer_import_s = time.perf_counter() - t0
        self._add = actions.Add
        self._rows = sample_rows(10, APPEND_PARTITION)

    def _commit_file(self, log: Any, written: tuple[str, int, int]) -> dict[str, Any]:
        """``log.start_transaction().commit([Add])`` for the written file; its result and the split timings."""
        rel, size, mtime = written
        t0 = time.perf_counter()
        txn = log.start_transaction()
        t1 = time.perf_counter()
        add = self._add(
            path=rel,
            partition_values={PARTITION_COLUMN: APPEND_PARTITION},
            size=size,
            modification_time=mtime,
            data_change=True,
        )
        result = txn.commit([add])
        t2 = time.perf_counter()
        return {
            "version": result.version,
            "attempts": result.attempts,
            "writer_import_s": self._writer_import_s,
            "start_transaction_s": t1 - t0,
            "commit_s": t2 - t1,
        }

    def append(self, table: str) -> None:
        t0 = time.perf_counter()
        written = write_data_file(table, self._rows, APPEND_PARTITION)
        t1 = time.perf_counter()
        log = self._open(table, auto_checkpoint=False)
        opened_s = time.perf_counter() - t1
        details = self._commit_file(log, written)
        details["write_file_s"] = t1 - t0
        details["open_and_start_transaction_s"] = opened_s + details.pop("start_transaction_s")
        self.details = details

    def prepare_append_loaded(self, table: str) -> None:
        """Open the table, load its latest snapshot's file list and write the data file: all untimed."""
        self.prepare_append(table)
        self._log = self._open(table, auto_checkpoint=False)
        self._loaded_files = self._log.snapshot().files().num_rows
        t0 = time.perf_counter()
        self._written = write_data_file(table, self._rows, APPEND_PARTITION)
        self._write_file_s = time.perf_counter() - t0

    def append_loaded(self) -> None:
        details = self._commit_file(self._log, self._written)
        details["loaded_files"] = self._loaded_files
        details["write_file_s"] = self._write_file_s  # untimed, for reference
        self.details = details


class DeltalakeRunner:
    """``DeltaTable(p)`` then ``get_add_actions(flatten=True)`` (deltalake 1.x has no ``files()`` table).

    Checkpoint: ``DeltaTable(p).create_checkpoint()``. Append: ``write_deltalake(p, rows, mode="append")``
    with the post-commit checkpoint and log cleanup turned off (see :func:`append`).
    """

    def __init__(self) -> None:
        from deltalake import DeltaTable

        self._table = DeltaTable
        self._last: int | None = None
        self.details: dict[str, Any] = {}
        self._dt: Any = None

    def load(self, table: str, version: int | None) -> int:
        dt = self._table(table, version=version)
        if version is not None and dt.version() != version:
            raise RuntimeError(f"deltalake loaded version {dt.version()}, asked for {version}")
        self._last = dt.get_add_actions(flatten=True).num_rows
        return self._last

    #: ``get_add_actions(flatten=True)`` already materialises the stats (parsed into ``num_records``,
    #: ``min.<col>``, ``max.<col>``, ``null_count.<col>`` columns): the stats variant is the same call.
    load_stats = load

    def count_files(self, table: str, version: int | None) -> int:
        return self._last if self._last is not None else self.load(table, version)

    def checkpoint(self, table: str) -> None:
        self._table(table).create_checkpoint()  # returns nothing: the parent checks the file it wrote

    def open_table(self, table: str) -> None:
        self._dt = self._table(table)

    def checkpoint_loaded(self) -> None:
        self._dt.create_checkpoint()

    def prepare_append(self, table: str) -> None:
        from deltalake import PostCommitHookProperties, write_deltalake

        self._write = write_deltalake
        # The one-shot append lands on a multiple of both engines' checkpoint interval (version 1,000):
        # by default both would also write a 1M-file checkpoint, which is measured on its own elsewhere.
        self._hooks = PostCommitHookProperties(create_checkpoint=False, cleanup_expired_logs=False)
        self._rows = sample_rows(10, APPEND_PARTITION)

    def append(self, table: str) -> None:
        self._write(table, self._rows, mode="append", post_commithook_properties=self._hooks)

    def prepare_append_loaded(self, table: str) -> None:
        """Open the table and materialise its file list (untimed), so delta-rs holds the loaded state.

        ``write_deltalake`` writes the data file itself, so unlike deltalog's row the timed call here also
        writes the 10-row parquet file (a few ms; deltalog's runner reports its own as ``write_file_s``).
        """
        self.prepare_append(table)
        self._dt = self._table(table)
        self.details = {"loaded_files": self._dt.get_add_actions(flatten=True).num_rows}

    def append_loaded(self) -> None:
        self._write(self._dt, self._rows, mode="append", post_commithook_properties=self._hooks)
        self.details["version"] = self._dt.version()


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def duckdb_extension_path() -> str:
    """The delta extension shipped inside the ``duckdb_extension_delta`` wheel (a network INSTALL fails here)."""
    import duckdb_extension_delta

    root = os.path.dirname(duckdb_extension_delta.__file__)
    found = sorted(glob.glob(os.path.join(root, "**", "delta.duckdb_extension"), recursive=True))
    if not found:
        raise RuntimeError(f"no delta.duckdb_extension under {root}")
    return found[-1]


class DuckdbRunner:
    """``count(*)`` of ``delta_scan`` filtered on a partition value no file has.

    The kernel replays the whole log but prunes every file, so no data file is opened (none exist). That is
    not a materialised file list like the other two produce: read it as "log replay + partition pruning".
    The untimed count uses ``delta_list_files``.
    """

    def __init__(self) -> None:
        import duckdb

        self.details: dict[str, Any] = {}
        self._con = duckdb.connect()
        self._con.execute(f"INSTALL {_sql_text(duckdb_extension_path())}; LOAD delta;")

    def _args(self, table: str, version: int | None) -> str:
        return _sql_text(table) + ("" if version is None else f", version={int(version)}")

    def load(self, table: str, version: int | None) -> int | None:
        sql = (
            f"SELECT count(*) FROM delta_scan({self._args(table, version)}) "
            f"WHERE {PARTITION_COLUMN} = {_sql_text(ABSENT_PARTITION)}"
        )
        row = self._con.execute(sql).fetchone()
        if row is None or row[0] != 0:
            raise RuntimeError(f"duckdb counted {row} rows in a partition no file has")
        return None

    #: The same query: the kernel reads the stats it needs for pruning either way, and returns no file list.
    load_stats = load

    def count_files(self, table: str, version: int | None) -> int:
        row = self._con.execute(f"SELECT count(*) FROM delta_list_files({self._args(table, version)})").fetchone()
        assert row is not None
        return int(row[0])


def plan(runner: Any, op: str, table: str, version: int | None) -> Callable[[], int | None]:
    """Do ``op``'s untimed setup now and return the call to time (it returns a live-file count or None)."""
    if op in ("load", "bound"):  # a bound runner's ``load`` is its parse (benchmarks.bounds)
        return lambda: runner.load(table, version)
    if op == "load_stats":
        return lambda: runner.load_stats(table, version)
    if version is not None:
        raise ValueError(f"{op} works on the latest version only")
    if op == "checkpoint":
        return lambda: runner.checkpoint(table)
    if op == "checkpoint_call":
        runner.open_table(table)
        return runner.checkpoint_loaded  # type: ignore[no-any-return]
    if op == "append":
        runner.prepare_append(table)
        return lambda: runner.append(table)
    if op == "append_loaded":
        runner.prepare_append_loaded(table)
        return runner.append_loaded  # type: ignore[no-any-return]
    raise ValueError(f"unknown op {op!r}")


@dataclass(frozen=True)
class Engine:
    """A registry entry. ``required`` engines fail the run on error; optional ones are reported and left out."""

    name: str
    runner: type[Any]
    packages: tuple[str, ...]  # distributions whose versions the report shows
    required: bool = True
    default: bool = True


ENGINES: dict[str, Engine] = {
    e.name: e
    for e in (
        Engine("deltalog", DeltalogRunner, ("deltalog", "pyarrow", "orjson")),
        Engine("deltalake", DeltalakeRunner, ("deltalake",)),
        Engine("duckdb", DuckdbRunner, ("duckdb", "duckdb-extension-delta"), required=False),
    )
}

#: The engine every ratio is taken against, and the one the ratio is about.
BASELINES = ("deltalake", "duckdb")
SUBJECT = "deltalog"


__all__ = [
    "APPEND_PARTITION",
    "BASELINES",
    "ENGINES",
    "READ_OPS",
    "SUBJECT",
    "Engine",
    "Runner",
    "duckdb_extension_path",
    "plan",
    "sample_rows",
    "write_data_file",
]
