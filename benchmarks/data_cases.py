"""Issue 15's data-plane cases: writing Arrow data, scanning with and without a selective filter, deleting rows.

Each case runs one operation on the same data with deltalog and with ``deltalake`` (its Python API, as a
user calls it), in fresh processes (:mod:`benchmarks.data_child`):

* ``write``: 5M rows (five columns: ids, a random partition of ten, floats, strings, timestamps) into ten
  partitions: ``deltalog.write`` against ``deltalake.write_deltalake``, time and the call's peak RSS;
* ``scan-selective``: rows whose ``id`` lies in a 1,000-wide range on a table of 10,000 files of 100 sorted
  ids each: ``Snapshot.to_arrow(filter=...)`` against ``DeltaTable.to_pyarrow_dataset()`` + the same filter,
  time and files opened (deltalog: the files its scan plans; deltalake: the dataset's fragments left after
  pyarrow pruned them with deltalake's guarantees);
* ``scan-full``: every row of that table, the same two calls without a filter;
* ``delete``: 1% of the rows (``k = 7``, spread over every file) of a 2M-row, 20-file table with deletion
  vectors enabled: ``DeltaLog.delete`` (deletion vectors) against ``DeltaTable.delete`` (rewrites the files);
* ``changes``: the change data feed of a 100-commit table (appends, deletes with and without deletion vectors,
  updates) from version 0: ``DeltaLog.changes`` against ``DeltaTable.load_cdf``, both read whole into memory,
  the rows compared as a multiset (every column but ``_commit_timestamp``, which the two define differently).

Tables are built once per size (a marker file holds the parameters) under ``<dir>/data/``; the delete case
works on a fresh copy per run, made before the clock starts. ``--quick`` uses small sizes.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa

ENGINES = ("deltalog", "deltalake")
MARKER = ".bench-data-table.json"


@dataclass(frozen=True)
class Sizes:
    write_rows: int = 5_000_000
    partitions: int = 10
    scan_files: int = 10_000
    rows_per_file: int = 100
    delete_rows: int = 2_000_000
    delete_files: int = 20
    changes_commits: int = 100
    changes_rows: int = 20_000  # per append


FULL = Sizes()
QUICK = Sizes(
    write_rows=200_000, scan_files=300, delete_rows=100_000, delete_files=5, changes_commits=20, changes_rows=2_000
)


@dataclass(frozen=True)
class DataCase:
    name: str
    title: str
    table: str | None  # the built table it reads ("scan", "delete"), None when it writes its own
    target: str  # issue 15's target, as the report shows it


CASES = {
    "write": DataCase("write", "write 5M rows into 10 partitions", None, "time <= 1.0x write_deltalake"),
    "scan-selective": DataCase(
        "scan-selective",
        "selective scan (id range) over a 10k-file table",
        "scan",
        "files opened <= deltalake's; time <= 1.0x to_pyarrow_dataset + filter",
    ),
    "scan-full": DataCase("scan-full", "full scan of the 10k-file table", "scan", "reported"),
    "delete": DataCase("delete", "delete 1% of rows (deletion vectors) vs deltalake's delete", "delete", "reported"),
    "changes": DataCase(
        "changes",
        "change data feed of 100 commits (appends, deletes with and without DVs, updates) vs load_cdf",
        "changes",
        "time <= 0.5x load_cdf, same rows",
    ),
}


def write_data(rows: int, partitions: int, seed: int = 15) -> pa.Table:
    """The write case's rows: sorted ids, a random partition per row (every batch holds every partition)."""
    rng = np.random.default_rng(seed)
    words = pa.array([f"customer-{i:05d}" for i in range(5000)])
    return pa.table(
        {
            "id": pa.array(np.arange(rows, dtype=np.int64)),
            "part": pa.array([f"p{i:02d}" for i in range(partitions)]).take(
                pa.array(rng.integers(0, partitions, rows))
            ),
            "value": pa.array(rng.random(rows)),
            "name": words.take(pa.array(rng.integers(0, len(words), rows))),
            "ts": pa.array(1_700_000_000_000_000 + rng.integers(0, 10**12, rows), pa.timestamp("us", tz="UTC")),
        }
    )


def selective_range(sizes: Sizes) -> tuple[int, int]:
    """The ids the selective scan asks for: 1,000 (ten files' worth at full size) from the middle."""
    total = sizes.scan_files * sizes.rows_per_file
    width = min(1000, total // 10)
    low = total // 2
    return low, low + width - 1


def _built(path: str, params: dict[str, object]) -> bool:
    try:
        with open(os.path.join(path, MARKER)) as f:
            return bool(json.load(f) == params)
    except (OSError, ValueError):
        return False


def _mark(path: str, params: dict[str, object]) -> None:
    with open(os.path.join(path, MARKER), "w") as f:
        json.dump(params, f)


def build_scan_table(root: str, sizes: Sizes) -> str:
    """``scan_files`` parquet files of ``rows_per_file`` sorted ids each, one commit (deltalog's file writer,
    which rolls a file at a row count; both engines read the same table)."""
    from deltalog import DeltaLog
    from deltalog.data.files import WriteTarget, write_files

    path = os.path.join(root, f"scan-{sizes.scan_files}x{sizes.rows_per_file}")
    params = {"kind": "scan", **asdict(sizes)}
    if _built(path, params):
        return path
    shutil.rmtree(path, ignore_errors=True)
    total = sizes.scan_files * sizes.rows_per_file
    ids = np.arange(total, dtype=np.int64)
    data = pa.table({"id": ids, "k": ids % 100, "value": ids * 0.5, "name": pa.array([f"n{i % 997}" for i in ids])})
    log = DeltaLog.for_table(path)
    log.create(data.schema)
    adds = write_files(log.store, data, WriteTarget.of(log.snapshot()), max_rows_per_file=sizes.rows_per_file)
    log.start_transaction().commit(adds, operation="WRITE")
    assert len(adds) == sizes.scan_files, len(adds)
    _mark(path, params)
    return path


def build_delete_table(root: str, sizes: Sizes) -> str:
    """``delete_rows`` rows in ``delete_files`` files, deletion vectors enabled (created by deltalake with
    ``delta.enableDeletionVectors=true``, one append per file)."""
    from deltalake import write_deltalake

    path = os.path.join(root, f"delete-{sizes.delete_rows}x{sizes.delete_files}")
    params = {"kind": "delete", **asdict(sizes)}
    if _built(path, params):
        return path
    shutil.rmtree(path, ignore_errors=True)
    per_file = sizes.delete_rows // sizes.delete_files
    for f in range(sizes.delete_files):
        ids = np.arange(f * per_file, (f + 1) * per_file, dtype=np.int64)
        data = pa.table({"id": ids, "k": ids % 100, "value": ids * 0.5})
        write_deltalake(path, data, mode="append", configuration={"delta.enableDeletionVectors": "true"})
    _mark(path, params)
    return path


def _change_rows(i: int, rows: int) -> pa.Table:
    ids = np.arange(i * rows, (i + 1) * rows, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "k": ids % 100,
            "part": pa.array([f"p{j}" for j in range(4)]).take(pa.array(ids % 4)),
            "value": ids * 0.5,
            "name": pa.array([f"n{j}" for j in range(997)]).take(pa.array(ids % 997)),
        }
    )


def build_changes_table(root: str, sizes: Sizes) -> str:
    """``changes_commits`` commits on a table with change data feed and deletion vectors on, four partitions:
    appends of ``changes_rows`` rows (deltalake), and in every ten commits a delete that rewrites files with
    change files (deltalake), a delete with deletion vectors (deltalog: deltalake's rewrites) and an update
    (deltalake: pre- and post-images)."""
    from deltalake import DeltaTable, write_deltalake

    from deltalog import DeltaLog

    path = os.path.join(root, f"changes-{sizes.changes_commits}x{sizes.changes_rows}")
    params = {"kind": "changes", "commits": sizes.changes_commits, "rows": sizes.changes_rows}
    if _built(path, params):
        return path
    shutil.rmtree(path, ignore_errors=True)
    conf = {"delta.enableChangeDataFeed": "true", "delta.enableDeletionVectors": "true"}
    write_deltalake(path, _change_rows(0, sizes.changes_rows), partition_by=["part"], configuration=conf)
    for i in range(1, sizes.changes_commits):
        if i % 10 == 3:
            DeltaTable(path).delete(f"k = {i % 100}")
        elif i % 10 == 6:
            DeltaLog.for_table(path).delete(f"k = {(i + 1) % 100}")
        elif i % 10 == 9:
            DeltaTable(path).update({"value": "value + 1"}, predicate=f"k = {(i + 2) % 100}")
        else:
            write_deltalake(path, _change_rows(i, sizes.changes_rows), mode="append")
    assert DeltaTable(path).version() == sizes.changes_commits - 1
    _mark(path, params)
    return path


def build(case: DataCase, root: str, sizes: Sizes) -> str | None:
    if case.table == "scan":
        return build_scan_table(root, sizes)
    if case.table == "delete":
        return build_delete_table(root, sizes)
    if case.table == "changes":
        return build_changes_table(root, sizes)
    return None


__all__ = [
    "CASES",
    "ENGINES",
    "FULL",
    "QUICK",
    "DataCase",
    "Sizes",
    "build",
    "build_changes_table",
    "build_delete_table",
    "build_scan_table",
    "selective_range",
    "write_data",
]
