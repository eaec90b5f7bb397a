"""One data-plane measurement in a fresh interpreter (see :mod:`benchmarks.data_cases`): untimed setup, the
timed call, untimed checks, one JSON line after :data:`benchmarks.child.MARK`.

Peak RSS is the timed call's own: ``VmHWM`` is reset right before it (after the setup built the input data or
copied the table), so the input a write is handed is in the baseline for both engines, not in the peak.

Usage: ``python -m benchmarks.data_child '<json spec>'`` with engine, case, table (the built table, or the
directory a write creates), scratch (a directory for the delete's copy) and sizes.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from benchmarks.child import peak_rss_kib, report, reset_peak_rss, status_kib
from benchmarks.source import use_exported_source


def _filter(spec: dict[str, Any]) -> Any:
    import pyarrow.compute as pc

    from benchmarks.data_cases import Sizes, selective_range

    low, high = selective_range(Sizes(**spec["sizes"]))
    return (pc.field("id") >= low) & (pc.field("id") <= high)


#: the modules of the commit path, as revisions since issue 24 name them and as earlier ones did
_COMMIT_MODULES = (
    "deltalog.table.commit.transaction",
    "deltalog.table.commit.prepare",
    "deltalog.table.commit.attempts",
    "deltalog.table.transaction",
    "deltalog.table.prepare",
)

#: the module ``DeltaLog.changes`` imports on first use (since issue 28)
_CHANGES_MODULE = "deltalog.dml.changes"


def _raw_files(snapshots: Any, snap: Any) -> Any:
    """A snapshot's adds with stats: a function of ``deltalog.table.snapshot`` since issue 24, a method before
    (``--rev`` may export either)."""
    raw_files = getattr(snapshots, "raw_files", None)
    return raw_files(snap, stats=True) if raw_files is not None else snap.raw_files(stats=True)


def _deltalog(spec: dict[str, Any]) -> tuple[Callable[[], Any], Callable[[Any], dict[str, Any]]]:
    # the modules the calls import on first use, imported before the clock starts (deltalake's are, by
    # ``from deltalake import ...``): the cases time the operation, not the import. Named as every revision
    # ``--rev`` may export names them (the public API), not by the modules that hold them today.
    from deltalog import DeltaLog
    from deltalog import write as deltalog_write

    case, table = spec["case"], spec["table"]
    if case == "write":
        from benchmarks.data_cases import Sizes, write_data

        sizes = Sizes(**spec["sizes"])
        data = write_data(sizes.write_rows, sizes.partitions)
        write = deltalog_write
        return lambda: write(data, table, partition_by=["part"]), lambda _: {"rows": data.num_rows}
    if case in ("scan-selective", "scan-full"):
        expr = _filter(spec) if case == "scan-selective" else None

        def scan() -> Any:
            return DeltaLog.for_table(table).snapshot().to_arrow(filter=expr)

        def opened(result: Any) -> dict[str, Any]:
            from deltalog.data.scan import TableDescription, plan
            from deltalog.table import snapshot as snapshots

            snap = DeltaLog.for_table(table).snapshot()
            desc = TableDescription(snap.context.store, snap.schema_json, tuple(snap.partition_columns))
            return {"rows": result.num_rows, "files": len(plan(_raw_files(snapshots, snap), desc, expr))}

        return scan, opened
    if case == "delete":
        from deltalog.expr import parse

        parse("1")  # sqlglot, imported by the first Spark SQL text: before the clock, as deltalake's imports are
        return lambda: DeltaLog.for_table(table).delete("k = 7"), lambda _: {"rows": _rows_left(table)}
    if case in ("update-dv", "merge-dv", "merge", "merge-small"):
        # imported before the clock, as deltalake's are: the merge modules, Acero, what a data commit imports
        # after it commits (auto compaction's check, log cleanup) and sqlglot, which the first Spark SQL text imports
        import pyarrow.acero  # noqa: F401

        from deltalog.expr import parse

        for name in _COMMIT_MODULES:  # the commit path, wherever the revision ``--rev`` exports keeps it
            if importlib.util.find_spec(name) is not None:
                importlib.import_module(name)
        parse("1")
    if case == "update-dv":
        return lambda: DeltaLog.for_table(table).update({"value": "value + 1"}, "k = 7"), _merged(spec)
    if case in ("merge-dv", "merge", "merge-small"):
        source = _source(spec)

        def merge() -> Any:
            builder = DeltaLog.for_table(table).merge(source, "t.id = s.id", source_alias="s", target_alias="t")
            return builder.when_matched_update_all().when_not_matched_insert_all().execute()

        return merge, _merged(spec, source)
    if case == "changes":
        # the change reader's modules, which the first call imports: before the clock, as deltalake's are
        if importlib.util.find_spec(_CHANGES_MODULE) is not None:
            importlib.import_module(_CHANGES_MODULE)
        return lambda: DeltaLog.for_table(table).changes(0).read_all(), _change_rows
    if case in ("optimize-compact", "optimize-zorder", "purge"):
        log = DeltaLog.for_table(table)
        if case == "purge":
            return log.purge_deletion_vectors, lambda _: _optimized(table)
        if case == "optimize-compact":
            return log.optimize, lambda _: _optimized(table)
        target = _sizes(spec).zorder_target
        return lambda: log.optimize(z_order_by=["a", "b"], target_size=target), lambda _: _boxed(table)
    raise ValueError(f"unknown case {case!r}")


def _sizes(spec: dict[str, Any]) -> Any:
    from benchmarks.data_cases import Sizes

    return Sizes(**spec["sizes"])


def _optimized(table: str) -> dict[str, Any]:
    """Rows every reader sees after the rewrite, and the live files."""
    from deltalog import DeltaLog

    return {"rows": _rows_left(table), "files_after": DeltaLog.for_table(table).snapshot().num_files}


def _boxed(table: str) -> dict[str, Any]:
    """The box filter planned by deltalog's skipping on the Z-ordered table: files kept, rows in them."""
    import orjson
    import pyarrow.compute as pc

    from benchmarks.data_cases import BOX
    from deltalog import DeltaLog
    from deltalog.data.scan import TableDescription, plan

    snap = DeltaLog.for_table(table).snapshot()
    desc = TableDescription(snap.context.store, snap.schema_json, tuple(snap.partition_columns))
    expr = (pc.field("a") < BOX) & (pc.field("b") < BOX)
    from deltalog.table import snapshot as snapshots

    kept = plan(_raw_files(snapshots, snap), desc, expr)
    rows = sum(orjson.loads(f.stats or "{}").get("numRecords", 0) for f in kept)
    matching = snap.to_arrow(columns=["id"], filter=expr).num_rows
    return {
        "rows": _rows_left(table),
        "files": len(kept),
        "kept_rows": rows,
        "matching": matching,
        "files_after": snap.num_files,
    }


def _source(spec: dict[str, Any]) -> Any:
    from benchmarks.data_cases import Sizes, upsert_source

    sizes = Sizes(**spec["sizes"])
    return upsert_source(sizes, sizes.small_upsert_rows if spec["case"] == "merge-small" else sizes.upsert_rows)


def _merged(spec: dict[str, Any], source: Any = None) -> Callable[[Any], dict[str, Any]]:
    """The check of a merge or update: the rows the table holds after it, and for the small upsert the least
    a merge must read: the compressed key column of the files one of the source's keys can lie in."""
    table = spec["table"]

    def check(_: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"rows": _rows_left(table)}
        if spec["case"] == "merge-small":
            out["min_bytes"] = _key_bytes(spec["original"], source)
        return out

    return check


def _key_bytes(table: str, source: Any) -> int:
    import numpy as np
    import pyarrow.parquet as pq

    keys = np.sort(np.asarray(source.column("id").to_numpy()))
    total = 0
    for here, _, names in os.walk(table):
        for name in names:
            if not name.endswith(".parquet") or "_delta_log" in here:
                continue
            meta = pq.ParquetFile(os.path.join(here, name)).metadata
            column = meta.schema.names.index("id")
            for g in range(meta.num_row_groups):
                chunk = meta.row_group(g).column(column)
                stats = chunk.statistics
                i = int(np.searchsorted(keys, stats.min))
                if i < len(keys) and keys[i] <= stats.max:
                    total += chunk.total_compressed_size
    return total


def _deltalake(spec: dict[str, Any]) -> tuple[Callable[[], Any], Callable[[Any], dict[str, Any]]]:
    from deltalake import DeltaTable, write_deltalake

    case, table = spec["case"], spec["table"]
    if case == "write":
        from benchmarks.data_cases import Sizes, write_data

        sizes = Sizes(**spec["sizes"])
        data = write_data(sizes.write_rows, sizes.partitions)
        return lambda: write_deltalake(table, data, partition_by=["part"]), lambda _: {"rows": data.num_rows}
    if case in ("scan-selective", "scan-full"):
        expr = _filter(spec) if case == "scan-selective" else None

        def scan() -> Any:
            return DeltaTable(table).to_pyarrow_dataset().to_table(filter=expr)

        def opened(result: Any) -> dict[str, Any]:
            fragments = DeltaTable(table).to_pyarrow_dataset().get_fragments(filter=expr)
            return {"rows": result.num_rows, "files": sum(1 for _ in fragments)}

        return scan, opened
    if case == "delete":
        return lambda: DeltaTable(table).delete("k = 7"), lambda _: {"rows": _rows_left(table)}
    if case == "update-dv":
        return lambda: DeltaTable(table).update(updates={"value": "value + 1"}, predicate="k = 7"), _merged(spec)
    if case in ("merge-dv", "merge", "merge-small"):
        source = _source(spec)

        def merge() -> Any:
            merger = DeltaTable(table).merge(source, predicate="t.id = s.id", source_alias="s", target_alias="t")
            return merger.when_matched_update_all().when_not_matched_insert_all().execute()

        return merge, _merged(spec, source)
    if case == "changes":
        return lambda: DeltaTable(table).load_cdf(starting_version=0).read_all(), _change_rows
    if case in ("optimize-compact", "purge"):
        dt = DeltaTable(table)
        return dt.optimize.compact, lambda _: _optimized(table)
    if case == "optimize-zorder":
        dt, target = DeltaTable(table), _sizes(spec).zorder_target
        return lambda: dt.optimize.z_order(["a", "b"], target_size=target), lambda _: _boxed(table)
    raise ValueError(f"unknown case {case!r}")


def _change_rows(result: Any) -> dict[str, Any]:
    """How many change rows, and a digest of them as a multiset: every column but ``_commit_timestamp`` (the
    engines define it differently), in one canonical type each, sorted, hashed."""
    import hashlib

    import pyarrow as pa
    import pyarrow.compute as pc

    table = pa.table(result)
    names = sorted(n for n in table.column_names if n != "_commit_timestamp")
    canonical = {pa.string_view(): pa.string(), pa.uint64(): pa.int64()}
    columns = [
        pc.cast(table.column(n), canonical.get(table.schema.field(n).type, table.schema.field(n).type)) for n in names
    ]
    plain = pa.table(columns, names=names).sort_by([(n, "ascending") for n in names])
    digest = hashlib.sha256()
    for name in names:
        digest.update(repr(plain.column(name).to_pylist()).encode())
    return {"rows": table.num_rows, "digest": digest.hexdigest()}


def _read_chars() -> int | None:
    """Bytes this process has read through read syscalls so far (``rchar``), page cache hits included."""
    try:
        with open("/proc/self/io") as f:
            for line in f:
                if line.startswith("rchar:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def _rows_left(table: str) -> int:
    """Rows a peer reads after the delete (deltalake's SQL path applies deletion vectors)."""
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    result = QueryBuilder().register("t", DeltaTable(table)).execute("select count(*) as n from t").read_all()
    return int(pa.table(result).column("n")[0].as_py())


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    from benchmarks.data_cases import CHANGES_TABLE, fresh_copy

    if spec["case"] in CHANGES_TABLE:  # a fresh copy per run: the case changes the table
        fresh_copy(spec["table"], spec["scratch"])
        spec = {**spec, "table": spec["scratch"], "original": spec["table"]}
    call, check = (_deltalog if spec["engine"] == "deltalog" else _deltalake)(spec)
    rss_before = status_kib("VmRSS") or 0
    reset = reset_peak_rss()
    read0 = _read_chars()
    c0, t0 = time.process_time(), time.perf_counter()
    result = call()
    t1, c1 = time.perf_counter(), time.process_time()
    read1 = _read_chars()
    peak = peak_rss_kib()
    return {
        "engine": spec["engine"],
        "case": spec["case"],
        "seconds": t1 - t0,
        "cpu_s": c1 - c0,
        "rss_before_kib": rss_before,
        "call_peak_rss_kib": peak if reset else None,
        "call_rss_growth_kib": peak - rss_before if reset else None,
        "read_bytes": read1 - read0 if read0 is not None and read1 is not None else None,
        **check(result),
    }


def main(argv: list[str] | None = None) -> int:
    spec = json.loads((argv if argv is not None else sys.argv[1:])[0])
    use_exported_source()
    return report(spec.get("engine"), lambda: measure(spec))


if __name__ == "__main__":
    sys.exit(main())
