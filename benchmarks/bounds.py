"""Parsing bounds: the plain reads a snapshot load cannot beat, timed like an engine's load.

Issue 7 asks where deltalog's remaining load time goes "against the parsing bounds (orjson per line,
pyarrow JSON, pyarrow parquet read of the checkpoint)". Each bound here is a runner with the same shape as
the engines' (:mod:`benchmarks.engines`): ``__init__`` does the imports, ``load`` is the timed call in a
fresh child process (:mod:`benchmarks.child`, op ``bound``), ``count_files`` an untimed count. So a bound
gets the same fresh process, warm-up, interleaving and medians as the loads it is read against, and the
report can put "deltalog ÷ bound" beside it.

What each bound leaves out is what makes it a floor: no log listing beyond one directory scan, no
protocol or metadata handling, no reconciliation of adds against removes, no output table. The counts
they return are the add actions they saw, which is the live-file count only on logs without removes (the
A and D tables), so the usual live-file check still catches a bound that read the wrong thing.

Imported by the child before the clock starts: nothing beyond the standard library at the top.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

LOG_DIR = "_delta_log"
_COMMIT = re.compile(r"^\d{20}\.json$")


def commit_paths(table: str, version: int | None) -> list[str]:
    """The commit files ``0..version`` (all of them when ``version`` is None), in version order."""
    log_dir = os.path.join(table, LOG_DIR)
    names = sorted(e.name for e in os.scandir(log_dir) if _COMMIT.match(e.name))
    if version is not None:
        names = [n for n in names if int(n[:20]) <= version]
    return [os.path.join(log_dir, n) for n in names]


def read_commits(table: str, version: int | None) -> list[bytes]:
    out = []
    for path in commit_paths(table, version):
        with open(path, "rb") as f:
            out.append(f.read())
    return out


def count_adds(blobs: list[bytes]) -> int:
    """Add actions in the commits, parsed line by line (the untimed check of the bounds that do not count)."""
    import orjson

    return sum(1 for data in blobs for line in data.splitlines() if line.strip() and "add" in orjson.loads(line))


class ReadBytes:
    """Read every commit file's bytes (scan ``_delta_log``, open, read): the I/O floor of a JSON replay."""

    def __init__(self) -> None:
        self.details: dict[str, Any] = {}
        self._blobs: list[bytes] = []

    def load(self, table: str, version: int | None) -> None:
        self._blobs = read_commits(table, version)
        self.details = {"bytes": sum(map(len, self._blobs)), "commits": len(self._blobs)}

    def count_files(self, table: str, version: int | None) -> int:
        return count_adds(self._blobs or read_commits(table, version))


class OrjsonLines:
    """Read every commit and ``orjson.loads`` each line into Python objects; counts the ``add`` actions.

    The objects are dropped as they are counted: keeping them would add memory, not parsing.
    """

    def __init__(self) -> None:
        import orjson

        self._loads = orjson.loads
        self.details: dict[str, Any] = {}

    def load(self, table: str, version: int | None) -> int:
        loads = self._loads
        adds = size = 0
        for data in read_commits(table, version):
            size += len(data)
            for line in data.splitlines():
                if line and "add" in loads(line):
                    adds += 1
        self.details = {"bytes": size}
        return adds

    def count_files(self, table: str, version: int | None) -> int:
        return self.load(table, version)


class ArrowJson:
    """Read every commit and run one ``pyarrow.json.read_json`` over the bytes joined by newlines.

    The explicit schema is the add struct (path, partitionValues as ``struct<part string>``, size,
    modificationTime, dataChange, stats) and every other field is ignored
    (``unexpected_field_behavior="ignore"``), so the reader builds only the add columns: the columnar
    parse deltalog's bulk replay is built on, with pyarrow's default read options (1 MiB blocks, threads).
    """

    def __init__(self) -> None:
        import pyarrow as pa
        import pyarrow.json as pj

        from benchmarks.shape import PARTITION_COLUMN

        add = pa.struct(
            [
                pa.field("path", pa.string()),
                pa.field("partitionValues", pa.struct([pa.field(PARTITION_COLUMN, pa.string())])),
                pa.field("size", pa.int64()),
                pa.field("modificationTime", pa.int64()),
                pa.field("dataChange", pa.bool_()),
                pa.field("stats", pa.string()),
            ]
        )
        self._pa, self._pj = pa, pj
        self._options = pj.ParseOptions(
            explicit_schema=pa.schema([pa.field("add", add)]), unexpected_field_behavior="ignore"
        )
        self.details: dict[str, Any] = {}

    def load(self, table: str, version: int | None) -> int:
        buf = b"\n".join(read_commits(table, version))
        parsed = self._pj.read_json(self._pa.BufferReader(buf), parse_options=self._options)
        adds = parsed.column("add")
        self.details = {"bytes": len(buf), "rows": parsed.num_rows}
        return len(adds) - adds.null_count

    def count_files(self, table: str, version: int | None) -> int:
        return self.load(table, version)


class CheckpointParquet:
    """``pyarrow.parquet.read_table`` of the checkpoint with the add columns deltalog reads (no stats).

    The columns are ``add.<name>`` for deltalog's ``ADD_COLUMNS_NO_STATS`` (imported from deltalog, so the
    bound follows its projection). ``read_table`` goes through ``pyarrow.dataset``, whose import pulls in
    pandas when it is installed: imported here, so that cost lands in "import s", not in the bound. The
    checkpoint is the one ``_last_checkpoint`` names (a single-part classic one), or ``version``'s.
    """

    stats = False

    def __init__(self) -> None:
        import json

        import pyarrow.dataset  # noqa: F401  (read_table's first call would import it, and pandas with it)
        import pyarrow.parquet as pq

        from deltalog.core.state.columns import ADD_COLUMNS_NO_STATS

        self._json, self._pq = json, pq
        self._columns = [f"add.{c}" for c in ADD_COLUMNS_NO_STATS] + (["add.stats"] if self.stats else [])
        self.details: dict[str, Any] = {}

    def _checkpoint(self, table: str, version: int | None) -> str:
        log_dir = os.path.join(table, LOG_DIR)
        if version is None:
            with open(os.path.join(log_dir, "_last_checkpoint"), "rb") as f:
                hint = self._json.loads(f.read())
            if hint.get("parts"):
                raise RuntimeError(f"{table}: a multi-part checkpoint; the bound reads a single file")
            version = int(hint["version"])
        return os.path.join(log_dir, f"{version:020d}.checkpoint.parquet")

    def load(self, table: str, version: int | None) -> int:
        path = self._checkpoint(table, version)
        parsed = self._pq.read_table(path, columns=self._columns)
        # read_table returns the leaves as top-level columns (path, partitionValues, ...); the rows of the
        # checkpoint's other actions (protocol, metaData) have a null path.
        paths = parsed.column("path")
        self.details = {"bytes": os.path.getsize(path), "rows": parsed.num_rows}
        return len(paths) - paths.null_count

    def count_files(self, table: str, version: int | None) -> int:
        return self.load(table, version)


class CheckpointParquetStats(CheckpointParquet):
    """The same ``read_table`` with ``add.stats`` too (the JSON strings ``files(stats=True)`` returns)."""

    stats = True


@dataclass(frozen=True)
class Bound:
    """A registry entry: ``runner`` has the engines' runner shape; ``what`` is its line in the report."""

    name: str
    runner: type[Any]
    what: str
    required: bool = True


BOUNDS: dict[str, Bound] = {
    b.name: b
    for b in (
        Bound("read-bytes", ReadBytes, "scan `_delta_log` and read every commit file's bytes"),
        Bound("orjson-lines", OrjsonLines, "read + `orjson.loads` of every line"),
        Bound(
            "pyarrow-json",
            ArrowJson,
            "read + one `pyarrow.json.read_json` over the joined bytes, explicit add-struct schema, "
            'other fields ignored (`unexpected_field_behavior="ignore"`)',
        ),
        Bound(
            "parquet",
            CheckpointParquet,
            "`pyarrow.parquet.read_table` of the checkpoint, deltalog's add columns without `add.stats`",
        ),
        Bound("parquet+stats", CheckpointParquetStats, "the same `read_table` with `add.stats`"),
    )
}


__all__ = ["BOUNDS", "Bound", "commit_paths", "count_adds", "read_commits"]
