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

Issue 27's OPTIMIZE cases, each on a fresh copy of its table per run (made before the clock starts):

* ``optimize-compact``: 10,000 files of 1,000 rows in 10 partitions: ``DeltaLog.optimize()`` against
  ``DeltaTable.optimize.compact()``, time and the call's peak RSS (also its growth over the process's RSS before
  the call: deltalog's interpreter holds pyarrow, about 130 MiB, before it starts, deltalake's about 40);
* ``optimize-zorder``: 10M rows in 20 files, ``a`` and ``b`` independent and uniform over [0, 1e6):
  ``optimize(z_order_by=["a", "b"])`` against ``optimize.z_order(["a", "b"])``, both at a 4 MiB target size (so
  that a box filter has files to skip); then the filter ``a < 250000 AND b < 250000`` (1/16 of the rows)
  planned by deltalog's file skipping on each engine's result: files kept and the rows in them;
* ``purge``: a 2M-row, 20-file table with deletion vectors marking 10% of the rows:
  ``DeltaLog.purge_deletion_vectors()`` against ``optimize.compact()``, deltalake's only way to rewrite files
  without their deleted rows.

Issue 26's MERGE and UPDATE cases, on a 10M-row table of 100 files (sorted ids, written by ``deltalake``, one
append per file), with deletion vectors enabled (``-dv``) or not:

* ``merge-dv`` / ``merge``: an upsert of 100k source rows, half of them matching ids spread over every file and
  half new: ``DeltaLog.merge(...).when_matched_update_all().when_not_matched_insert_all().execute()`` against
  ``DeltaTable.merge(...)`` with the same clauses;
* ``update-dv``: 1% of the rows (``k = 7``) updated: ``DeltaLog.update`` against ``DeltaTable.update``;
* ``merge-small``: a 1k-row upsert into the deletion-vector table; the bytes the call reads (``rchar`` of
  ``/proc/self/io``: files, log and all) against the minimum: the compressed key column of the files a key
  of the source can lie in.

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
    merge_rows: int = 10_000_000
    merge_files: int = 100
    upsert_rows: int = 100_000
    small_upsert_rows: int = 1_000
    changes_commits: int = 100
    changes_rows: int = 20_000  # per append
    compact_files: int = 10_000
    compact_rows: int = 1_000
    zorder_rows: int = 10_000_000
    zorder_files: int = 20
    zorder_target: int = 4 * 1024 * 1024
    purge_rows: int = 2_000_000
    purge_files: int = 20


FULL = Sizes()
QUICK = Sizes(
    write_rows=200_000,
    scan_files=300,
    delete_rows=100_000,
    delete_files=5,
    merge_rows=200_000,
    merge_files=10,
    upsert_rows=2_000,
    small_upsert_rows=100,
    changes_commits=20,
    changes_rows=2_000,
    compact_files=200,
    compact_rows=100,
    zorder_rows=200_000,
    zorder_files=4,
    zorder_target=256 * 1024,
    purge_rows=100_000,
    purge_files=5,
)
#: the box filter of the Z-order case, and the cases that change their table (a fresh copy per run)
BOX = 250_000
CHANGES_TABLE = frozenset(
    {"delete", "merge-dv", "merge", "update-dv", "merge-small", "optimize-compact", "optimize-zorder", "purge"}
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
    "merge-dv": DataCase(
        "merge-dv",
        "upsert 100k rows (half matching) into a 10M-row, 100-file table with deletion vectors",
        "merge-dv",
        "time <= 0.25x and peak RSS <= 0.5x DeltaTable.merge(...) with update_all and insert_all",
    ),
    "merge": DataCase(
        "merge", "the same upsert without deletion vectors (both rewrite)", "merge", "time <= 1.0x DeltaTable.merge"
    ),
    "update-dv": DataCase(
        "update-dv", "update 1% of the rows of the deletion-vector table", "merge-dv", "time <= 0.25x DeltaTable.update"
    ),
    "merge-small": DataCase(
        "merge-small",
        "a 1k-row upsert into the deletion-vector table",
        "merge-dv",
        "bytes read vs the minimum (the key column of the candidate files): reported",
    ),
    "changes": DataCase(
        "changes",
        "change data feed of 100 commits (appends, deletes with and without DVs, updates) vs load_cdf",
        "changes",
        "time <= 0.5x load_cdf, same rows",
    ),
    "optimize-compact": DataCase(
        "optimize-compact",
        "compact 10,000 files of 1,000 rows in 10 partitions",
        "compact",
        "time <= 0.7x optimize.compact(); peak RSS <= 0.5x",
    ),
    "optimize-zorder": DataCase(
        "optimize-zorder",
        "Z-order 10M rows on 2 columns, then the box filter a < 250000 AND b < 250000",
        "zorder",
        "time <= 1.0x optimize.z_order; files kept <= deltalake's, rows in them <= 0.5x deltalake's and <= 4x matching",
    ),
    "purge": DataCase(
        "purge",
        "purge deletion vectors (10% of rows deleted) of a 20-file table",
        "purge",
        "reported (deltalake: optimize.compact)",
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


def build_merge_table(root: str, sizes: Sizes, dvs: bool) -> str:
    """``merge_rows`` sorted ids in ``merge_files`` files (one ``write_deltalake`` append each), with
    ``delta.enableDeletionVectors=true`` or not."""
    from deltalake import write_deltalake

    path = os.path.join(root, f"merge-{sizes.merge_rows}x{sizes.merge_files}{'-dv' if dvs else ''}")
    params = {"kind": "merge", "dvs": dvs, **asdict(sizes)}
    if _built(path, params):
        return path
    shutil.rmtree(path, ignore_errors=True)
    per_file = sizes.merge_rows // sizes.merge_files
    configuration = {"delta.enableDeletionVectors": "true"} if dvs else None
    for f in range(sizes.merge_files):
        ids = np.arange(f * per_file, (f + 1) * per_file, dtype=np.int64)
        data = merge_rows(ids)
        write_deltalake(path, data, mode="append", configuration=configuration)
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


def merge_rows(ids: np.ndarray) -> pa.Table:
    """The merge table's columns for ``ids``: a key, a 1%-selective k, a float and a short string."""
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "k": pa.array(ids % 100, pa.int64()),
            "value": pa.array(ids * 0.5, pa.float64()),
            "name": pa.array(np.char.add("n-", (ids % 9973).astype(str)).astype(object), pa.string()),
        }
    )


def upsert_source(sizes: Sizes, rows: int, seed: int = 26) -> pa.Table:
    """``rows`` source rows: half of them ids of the table spread over every file, half new ids."""
    rng = np.random.default_rng(seed)
    matching = rng.choice(sizes.merge_rows, rows // 2, replace=False)
    new = np.arange(sizes.merge_rows, sizes.merge_rows + rows - rows // 2, dtype=np.int64)
    ids = np.concatenate([matching, new]).astype(np.int64)
    rng.shuffle(ids)
    source = merge_rows(ids)
    return source.set_column(2, "value", pa.array(-ids.astype(np.float64)))


def build_compact_table(root: str, sizes: Sizes) -> str:
    """``compact_files`` files of ``compact_rows`` rows in ten partitions, one commit (deltalog's file writer,
    rolling a file at a row count)."""
    from deltalog import DeltaLog
    from deltalog.data.files import WriteTarget, write_files

    path = os.path.join(root, f"compact-{sizes.compact_files}x{sizes.compact_rows}")
    params = {"kind": "compact", **asdict(sizes)}
    if _built(path, params):
        return path
    shutil.rmtree(path, ignore_errors=True)
    total = sizes.compact_files * sizes.compact_rows
    ids = np.arange(total, dtype=np.int64)
    part = (ids // sizes.compact_rows) % sizes.partitions
    rng = np.random.default_rng(27)
    data = pa.table(
        {
            "id": ids,
            "part": pa.array([f"p{i:02d}" for i in range(sizes.partitions)]).take(pa.array(part)),
            "value": pa.array(rng.random(total)),
            "name": pa.array([f"n{i % 997}" for i in range(total)]),
        }
    )
    log = DeltaLog.for_table(path)
    log.create(data.schema, partition_columns=["part"])
    adds = write_files(log.store, data, WriteTarget.of(log.snapshot()), max_rows_per_file=sizes.compact_rows)
    log.start_transaction().commit(adds, operation="WRITE")
    _mark(path, params)
    return path


def zorder_data(rows: int, seed: int = 27) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": np.arange(rows, dtype=np.int64),
            "a": rng.integers(0, 1_000_000, rows),
            "b": rng.integers(0, 1_000_000, rows),
        }
    )


def build_zorder_table(root: str, sizes: Sizes) -> str:
    """``zorder_rows`` rows of independent uniform ``a`` and ``b`` in ``zorder_files`` files (deltalake's appends)."""
    from deltalake import write_deltalake

    path = os.path.join(root, f"zorder-{sizes.zorder_rows}x{sizes.zorder_files}")
    params = {"kind": "zorder", **asdict(sizes)}
    if _built(path, params):
        return path
    shutil.rmtree(path, ignore_errors=True)
    data = zorder_data(sizes.zorder_rows)
    per_file = sizes.zorder_rows // sizes.zorder_files
    for f in range(sizes.zorder_files):
        write_deltalake(path, data.slice(f * per_file, per_file), mode="append")
    _mark(path, params)
    return path


def build_purge_table(root: str, sizes: Sizes) -> str:
    """``purge_rows`` rows in ``purge_files`` files with deletion vectors enabled (deltalake's appends), then
    every tenth row deleted with deletion vectors (deltalog's delete)."""
    from deltalake import write_deltalake

    from deltalog import DeltaLog

    path = os.path.join(root, f"purge-{sizes.purge_rows}x{sizes.purge_files}")
    params = {"kind": "purge", **asdict(sizes)}
    if _built(path, params):
        return path
    shutil.rmtree(path, ignore_errors=True)
    per_file = sizes.purge_rows // sizes.purge_files
    for f in range(sizes.purge_files):
        ids = np.arange(f * per_file, (f + 1) * per_file, dtype=np.int64)
        data = pa.table({"id": ids, "k": ids % 10, "value": ids * 0.5})
        write_deltalake(path, data, mode="append", configuration={"delta.enableDeletionVectors": "true"})
    DeltaLog.for_table(path).delete("k = 3")
    _mark(path, params)
    return path


def build(case: DataCase, root: str, sizes: Sizes) -> str | None:
    builders = {
        "scan": build_scan_table,
        "delete": build_delete_table,
        "changes": build_changes_table,
        "compact": build_compact_table,
        "zorder": build_zorder_table,
        "purge": build_purge_table,
        "merge-dv": lambda root, sizes: build_merge_table(root, sizes, dvs=True),
        "merge": lambda root, sizes: build_merge_table(root, sizes, dvs=False),
    }
    return builders[case.table](root, sizes) if case.table is not None else None


def fresh_copy(table: str, scratch: str) -> None:
    """A copy a run may change: data files hard-linked (no engine writes into an existing data file), the log
    copied (a checkpoint hint is rewritten in place by some writers)."""
    for here, _, names in os.walk(table):
        rel = os.path.relpath(here, table)
        target = os.path.join(scratch, rel)
        os.makedirs(target, exist_ok=True)
        in_log = rel.split(os.sep)[0] == "_delta_log"
        for name in names:
            (shutil.copy2 if in_log else os.link)(os.path.join(here, name), os.path.join(target, name))


__all__ = [
    "BOX",
    "CASES",
    "CHANGES_TABLE",
    "ENGINES",
    "FULL",
    "QUICK",
    "DataCase",
    "Sizes",
    "build",
    "build_changes_table",
    "build_compact_table",
    "build_delete_table",
    "build_merge_table",
    "build_purge_table",
    "build_scan_table",
    "build_zorder_table",
    "fresh_copy",
    "merge_rows",
    "selective_range",
    "upsert_source",
    "write_data",
    "zorder_data",
]
