"""The data plane's file reader on the conformance corpus: every deletion vector decoded, every table read.

Deletion vectors: every DV a corpus log names (adds and removes, commits and checkpoints) decodes with its
descriptor's cardinality, and each live DV'd file reads as ``numRecords - cardinality`` rows, the rows the
reference reader recorded as deleted. Three upstream fixtures name DV files that are not where the protocol
puts them (a test prefix, a placeholder path): reading them is a typed error naming the file, and the bytes
on disk still decode.

Tables: every table deltalog can replay is read, file by file with :mod:`deltalog.data.read` and through the
snapshot's parallel scan (``Snapshot.to_arrow()``), and compared with DAT's expected rows where the corpus has
them, otherwise with duckdb's ``delta_scan``, or where duckdb cannot serve (each case below says why) with
``deltalake``'s SQL path or, where neither peer reads the table, with the row counts in the log's stats.

Skipping: on every table, filters built from its own values (equality, ranges, negations, IS NULL) return
through ``to_arrow(filter=...)`` exactly the full scan filtered: the statistics real writers wrote (Spark's
truncated strings and timestamps, deltalake's, DV'd files' wide bounds) never skip a matching row; and
``to_pyarrow_dataset()`` reads as the scan does, or is refused by feature (deletion vectors, column mapping).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder

from deltalog import DeltaLog, Snapshot
from deltalog.actions import DeletionVector
from deltalog.core.codec import decode_dv
from deltalog.core.pathkeys import dv_file_key
from deltalog.data.dv import decode_bitmap, read_deletion_vector, unframe
from deltalog.data.read import DataFile, read_file, read_schema
from deltalog.errors import CorruptDataError, DeltaLogError, UnsupportedFeatureError
from tests.corpus import corpus_dir, corpus_entries
from tests.peers import duckdb_connection

ENTRIES = corpus_entries()


def _names_dvs(entry: dict[str, Any]) -> bool:
    """Whether a table's commits name a deletion vector (no corpus table names one only in a checkpoint)."""
    root = corpus_dir()
    assert root is not None
    commits = (root / entry["path"] / "_delta_log").glob("*.json")
    return any(b'"deletionVector":{' in c.read_bytes().replace(b" ", b"") for c in commits)


DV_ENTRIES = [e for e in ENTRIES if "deletionVectors" in (e.get("reader_features") or []) and _names_dvs(e)]

#: DV files upstream wrote where the protocol does not put them (manifest notes); reads are refused by name
UNRESOLVABLE_DVS = {
    "delta/table-with-dv-large": "test%dv%prefix-",  # the file name carries a prefix the descriptor lacks
    "delta/table-with-dv-small-cm": "test%dv%prefix-",
    "delta/table-with-dv-special-char": "test%dv%prefix-",  # a 'p' path with a {{FOLDER}} placeholder
}
#: logs deltalog refuses to replay (their refusal is the conformance suite's subject, not this one's)
LOG_REFUSED = {
    "delta/deltalog-state-reconstruction-from-checkpoint-missing-metadata": "no metaData action",
    "delta/deltalog-state-reconstruction-without-protocol": "no protocol action",
    "delta/deltalog-invalid-protocol-version": "reader version 99",
    "delta/catalog-owned-preview": "catalogManaged",
    "delta-rs/simple_table_features": "reader version 5",
    "delta-rs/data_err_logs-table_c": "is missing",
    "delta-rs/data_err_logs-table_d": "catalogOwned",
    "delta-rs/data_err_logs-table_f": "catalogOwned",
    "delta-rs/data_err_logs-table_h": "catalogOwned",
}
#: tables whose data this reader refuses, typed
DATA_REFUSED = {"delta/variant-stats-state-reconstruction": (UnsupportedFeatureError, "shredded variant")}
#: where duckdb 1.5.5 is no oracle, the reference instead, and why (docs/delta-write-rules.md section 16)
NOT_DUCKDB = {
    # duckdb reads partition values of column-mapped tables by logical name: every partition value is null
    "delta/data-reader-timestamp_ntz-name-mode": "deltalake",
    "delta-kernel-rs/void-column": "deltalake",  # duckdb refuses the void type
    "delta/spark-variant-checkpoint": "deltalake",  # duckdb: "Unsupported Arrow type VARIANT"
    # neither peer: duckdb has no VARIANT, deltalake refuses variantShredding-preview
    "delta-rs/spark-shredded-variant-preview-delta": "stats",
    # neither peer loads a metaData without schemaString (synthetic logs; no live files remain)
    "delta/canonicalized-paths-normal-a": "stats",
    "delta/canonicalized-paths-special-a": "stats",
}


@pytest.fixture(scope="module")
def duck() -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb_connection()
    yield con
    con.close()


def _root(entry: dict[str, Any]) -> Path:
    base = corpus_dir()
    assert base is not None
    return base / entry["path"]


def _num_records(stats: str | None) -> int:
    value = orjson.loads(stats or "{}").get("numRecords")
    assert isinstance(value, int), stats
    return value


# ---------------------------------------------------------------------------------------------- deletion vectors
def _descriptors(root: Path, snap: Snapshot) -> dict[str, tuple[DeletionVector, int | None]]:
    """Every DV the log names (commit adds and removes, the latest state's adds and tombstones), with the
    ``numRecords`` of its file where the action carries stats."""
    found: dict[str, tuple[DeletionVector, int | None]] = {}

    def note(raw: Any, stats: str | None) -> None:
        dv = decode_dv(raw)
        if dv is not None:
            records = orjson.loads(stats).get("numRecords") if stats else None
            found.setdefault(dv.unique_id, (dv, records))

    for commit in sorted((root / "_delta_log").glob("*.json")):
        for line in commit.read_bytes().splitlines():
            action = orjson.loads(line) if line.strip() else {}
            for kind in ("add", "remove"):
                if kind in action:
                    note(action[kind].get("deletionVector"), action[kind].get("stats"))
    for row in snap.raw_files(stats=True).to_pylist() + snap.tombstones().to_pylist():
        note(row["deletionVector"], row.get("stats"))
    return found


def _on_disk(root: Path, dv: DeletionVector, prefix: str) -> bytes:
    """The bytes of a DV file an upstream test named with ``prefix`` first, found under the root by name."""
    key = dv_file_key(dv.storage_type, dv.path_or_inline_dv, str(root))
    assert key is not None
    name = Path(key).name
    (path,) = root.rglob(name if name.startswith(prefix) else prefix + name)
    return path.read_bytes()


@pytest.mark.corpus
@pytest.mark.parametrize("entry", DV_ENTRIES, ids=[e["name"] for e in DV_ENTRIES])
def test_every_deletion_vector_decodes_and_live_files_lose_exactly_its_rows(entry: dict[str, Any]) -> None:
    root = _root(entry)
    log = DeltaLog.for_table(root)
    snap = log.snapshot()
    prefix = UNRESOLVABLE_DVS.get(entry["name"])
    descriptors = _descriptors(root, snap)
    assert descriptors
    for dv, records in descriptors.values():
        if prefix is None:
            rows = read_deletion_vector(log.store, dv, num_records=records)
        else:
            with pytest.raises(CorruptDataError, match="deletion_vector_") as exc:
                read_deletion_vector(log.store, dv)
            assert exc.value.path
            offset = dv.offset or 0
            rows = decode_bitmap(unframe(_on_disk(root, dv, prefix)[offset:], dv.size_in_bytes, "x"), "x")
        assert len(rows) == dv.cardinality
        assert list(rows) == sorted(set(rows.tolist()))
        assert records is None or (len(rows) == 0 or int(rows[-1]) < records)

    spec = read_schema(snap.schema_json, snap.partition_columns, snap.column_mapping_mode)
    expected = (entry.get("expected", {}).get("latest") or {}).get("deletion_vectors") or {}
    for add in snap.add_actions():
        if add.deletion_vector is None:
            continue
        file = DataFile.of(add)
        if prefix is not None:
            with pytest.raises(CorruptDataError):
                read_file(log.store, spec, file)
            continue
        assert read_file(log.store, spec, file).num_rows == _num_records(add.stats) - add.deletion_vector.cardinality
        recorded = expected.get(urllib.parse.unquote(add.path))
        if recorded is not None:  # what deltalake's deletion_vectors() read from the same DV
            assert recorded["deleted_rows"] == add.deletion_vector.cardinality


# ---------------------------------------------------------------------------------------------- tables
def _canon(value: Any) -> Any:
    """One spelling per value across Arrow, duckdb and deltalake: floats (NaN), instants in UTC, bytes as hex."""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.timezone.utc).isoformat() if value.tzinfo else value.isoformat()
    if isinstance(value, dict):
        return {k: _canon(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_canon(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value)  # Decimal, date, time


def _rows(table: pa.Table) -> list[Any]:
    return sorted((_canon(r) for r in table.to_pylist()), key=lambda r: json.dumps(r, sort_keys=True))


def _missing(root: Path, snap: Snapshot) -> list[str]:
    return [a.path for a in snap.add_actions() if not (root / urllib.parse.unquote(a.path)).exists()]


def _reference(entry: dict[str, Any], root: Path, duck: duckdb.DuckDBPyConnection) -> pa.Table | None:
    if "dat_expected" in entry:
        base = corpus_dir()
        assert base is not None
        return pq.read_table(base / entry["dat_expected"]["files_dir"] / "expected" / "latest" / "table_content")
    oracle = NOT_DUCKDB.get(entry["name"], "duckdb")
    if oracle == "duckdb":
        return duck.execute(f"SELECT * FROM delta_scan('{root}')").to_arrow_table()
    if oracle == "deltalake":
        return pa.table(QueryBuilder().register("t", DeltaTable(str(root))).execute("select * from t").read_all())
    return None


def _snapshot_or_refusal(entry: dict[str, Any]) -> Snapshot | None:
    """The latest snapshot, or None for the logs deltalog refuses (with the refusal checked)."""
    try:
        snap = DeltaLog.for_table(_root(entry)).snapshot()
    except DeltaLogError as exc:
        assert LOG_REFUSED.get(entry["name"], "<not expected>") in str(exc)
        return None
    assert entry["name"] not in LOG_REFUSED
    return snap


def _file_by_file(snap: Snapshot) -> pa.Table:
    """Every live file read on its own with :mod:`deltalog.data.read`, concatenated."""
    spec = read_schema(snap.schema_json, snap.partition_columns, snap.column_mapping_mode)
    tables = [read_file(snap.context.store, spec, DataFile.of(a)) for a in snap.add_actions()]
    return pa.concat_tables(tables) if tables else spec.schema.empty_table()


#: the two ways to read a whole table: the single-file reader, and the snapshot's parallel scan
READERS = {"file-by-file": _file_by_file, "to_arrow": lambda snap: snap.to_arrow()}


@pytest.mark.corpus
@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_each_table_read_equals_the_reference(
    entry: dict[str, Any], reader: str, duck: duckdb.DuckDBPyConnection
) -> None:
    name, root = entry["name"], _root(entry)
    snap = _snapshot_or_refusal(entry)
    if snap is None:
        return
    if _missing(root, snap) or name in UNRESOLVABLE_DVS or name in DATA_REFUSED:
        # fixtures without their data files (synthetic logs) or with unreachable DVs: typed, named refusals
        error, message = DATA_REFUSED.get(name, (CorruptDataError, "does not exist|deletion vector"))
        with pytest.raises(error, match=message) as exc:
            READERS[reader](snap)
        assert exc.value.path
        return
    ours = READERS[reader](snap)
    assert ours.schema == read_schema(snap.schema_json, snap.partition_columns, snap.column_mapping_mode).schema
    reference = _reference(entry, root, duck)
    if reference is None:  # neither peer reads it: the live rows the log's stats count
        dv_rows = sum(a.deletion_vector.cardinality for a in snap.add_actions() if a.deletion_vector)
        assert ours.num_rows == sum(_num_records(a.stats) for a in snap.add_actions()) - dv_rows
        return
    assert ours.column_names == reference.column_names
    assert _rows(ours) == _rows(reference)


def _probes(table: pa.Table) -> list[Any]:
    """Filters over a table's primitive top-level columns, with literals taken from its own values."""
    out: list[Any] = []
    for field in list(table.schema)[:8]:
        if not (
            pa.types.is_integer(field.type)
            or pa.types.is_floating(field.type)
            or pa.types.is_decimal(field.type)
            or pa.types.is_string(field.type)
            or pa.types.is_temporal(field.type)
        ):
            continue
        ref = pc.field(field.name)
        values = [v for v in table.column(field.name).unique().to_pylist() if v is not None]
        out.append(ref.is_null())
        for value in sorted(values, key=str)[:: max(1, len(values) // 3)][:3]:
            literal = pa.scalar(value, field.type)
            out += [ref == literal, ref > literal, ~(ref <= literal)]
    return out


def _readable(entry: dict[str, Any]) -> Snapshot | None:
    """The snapshot of a table whose data deltalog reads (None for refused logs and unreadable fixtures)."""
    snap = _snapshot_or_refusal(entry)
    unreadable = entry["name"] in UNRESOLVABLE_DVS or entry["name"] in DATA_REFUSED
    return None if snap is None or unreadable or _missing(_root(entry), snap) else snap


#: fixtures whose statistics contradict their data files: skipping trusts statistics, as the protocol lets it
STATS_CONTRADICT_DATA = {
    # kernel's stats-parsing fixture: every file's stats give ts_col values, no data file has the column, so
    # `ts_col IS NULL` skips them all (deltalake's SQL path also answers 0 rows; duckdb, not skipping, 600)
    "delta-kernel-rs/parsed-stats": "ts_col",
}


@pytest.mark.corpus
@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_each_table_scanned_with_a_filter_is_its_full_scan_filtered(entry: dict[str, Any]) -> None:
    """Skipping on the statistics real writers wrote (Spark's truncations, deltalake's, DV'd files)."""
    snap = _readable(entry)
    if snap is None:
        return
    full = snap.to_arrow()
    lying = STATS_CONTRADICT_DATA.get(entry["name"])
    for probe in _probes(full.drop_columns([lying]) if lying else full):
        assert _rows(snap.to_arrow(filter=probe)) == _rows(full.filter(probe)), str(probe)


@pytest.mark.corpus
@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_each_table_as_a_pyarrow_dataset_reads_as_the_scan_or_is_refused_by_feature(entry: dict[str, Any]) -> None:
    """pyarrow reads the files itself (type widening casts, partition values from the guarantees); tables it
    would read wrongly are refused, typed, naming deletion vectors or column mapping."""
    snap = _readable(entry)
    if snap is None:
        return
    has_dvs = any(a.deletion_vector is not None for a in snap.add_actions())
    if has_dvs or snap.column_mapping_mode != "none":
        with pytest.raises(UnsupportedFeatureError) as refused:
            snap.to_pyarrow_dataset()
        assert refused.value.feature == ("columnMapping" if snap.column_mapping_mode != "none" else "deletionVectors")
        return
    dataset = snap.to_pyarrow_dataset()
    assert dataset.schema == snap.to_arrow().schema
    assert _rows(dataset.to_table()) == _rows(snap.to_arrow())
