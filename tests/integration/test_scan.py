"""Scanning through a snapshot: which files a filter opens, what comes back, and handing files to other engines.

The table of :func:`events` is built so that each predicate below has exactly one right set of files to open
(partition pruning, stats skipping, Spark's truncated strings and timestamps, a DV'd file with wide bounds, a
file without stats, an all-null column). The files a scan opens are counted by recording the store's ``open``
calls (a :class:`FaultyStore` without faults over an fsspec store, so the reader opens every file through the
store), and the rows are checked against the full scan filtered. Both peers read the table.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder, write_deltalake

from deltalog import DeltaLog
from deltalog.data.scan import TableDescription, file_uris, scan
from deltalog.errors import CorruptDataError, InvalidArgumentError, UnsupportedFeatureError
from deltalog.storage.faults import FaultyStore
from deltalog.storage.fsspec_store import FsspecLogStore
from tests.integration.scan_kit import FileSpec, exact_stats, make_table, peer_rows
from tests.peers import duckdb_connection

UTC = dt.timezone.utc
T0 = dt.datetime(2024, 1, 1, tzinfo=UTC)
T1 = T0 + dt.timedelta(hours=2)
US = dt.timedelta(microseconds=1)
LONG = "x" * 40
SCHEMA = pa.schema(
    [
        ("region", pa.string()),
        ("id", pa.int64()),
        ("name", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("score", pa.float64()),
    ]
)
DATA_SCHEMA = pa.schema([f for f in SCHEMA if f.name != "region"])


def _rows(ids: range, names: list[str], ts: list[dt.datetime], scores: list[float | None]) -> pa.Table:
    return pa.table({"id": list(ids), "name": names, "ts": ts, "score": scores}, schema=DATA_SCHEMA)


def _files() -> list[FileSpec]:
    seconds = [T0 + dt.timedelta(seconds=i) for i in range(5)]
    a = _rows(range(0, 5), [f"a{i}" for i in range(5)], seconds, [1.0, 2.0, 3.0, 4.0, 5.0])
    b = _rows(range(10, 15), [f"b{i}" for i in range(5)], seconds, [None, 2.0, 2.5, 3.0, 3.5])
    c = _rows(range(20, 25), [f"c{i}" for i in range(5)], seconds, [10.0, 11.0, 12.0, 13.0, 14.0])
    d = _rows(range(30, 35), [f"d{i}" for i in range(5)], seconds, [0.1, 0.2, 0.3, 0.4, 0.5])
    e = _rows(range(40, 45), [f"e{i}" for i in range(5)], seconds, [0.0] * 5)
    f = _rows(range(50, 55), [LONG + str(i) for i in range(5)], seconds, [-5.0, -4.0, -3.0, -2.0, -1.0])
    sub_ms = [T1 + n * US for n in (0, 1500, 3000, 4500, 6500)]
    g = _rows(range(60, 65), [f"g{i}" for i in range(5)], sub_ms, [6.0, 7.0, 8.0, 9.0, 10.0])
    h = _rows(range(70, 75), [f"h{i}" for i in range(5)], [T0 - dt.timedelta(days=1)] * 5, [None] * 5)
    # Spark's stats: strings cut to 32 characters (max + U+10FFFF), timestamps truncated down to milliseconds
    f_stats = exact_stats(f)
    f_stats["minValues"]["name"], f_stats["maxValues"]["name"] = "x" * 32, "x" * 32 + "\U0010ffff"
    g_stats = exact_stats(g)
    g_stats["maxValues"]["ts"] = "2024-01-01T02:00:00.006Z"
    return [
        FileSpec("region=us", {"region": "us"}, a, exact_stats(a), name="A"),
        FileSpec("region=eu", {"region": "eu"}, b, exact_stats(b), name="B"),
        FileSpec("region=us", {"region": "us"}, c, exact_stats(c, tight=False), deleted=[0, 1], name="C"),
        FileSpec("region=us%2Feast", {"region": "us/east"}, d, exact_stats(d), name="D"),
        FileSpec("region=__HIVE_DEFAULT_PARTITION__", {"region": None}, e, None, name="E"),
        FileSpec("region=eu", {"region": "eu"}, f, f_stats, name="F"),
        FileSpec("region=eu", {"region": "eu"}, g, g_stats, name="G"),
        FileSpec("region=a b", {"region": "a b"}, h, exact_stats(h), name="H"),
    ]


Events = tuple[Path, dict[str, str]]


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> Events:
    root = tmp_path_factory.mktemp("scan") / "events"
    labels = make_table(root, SCHEMA, ["region"], _files(), dvs=True)
    return root, labels


def _ts(value: dt.datetime) -> pa.Scalar:
    return pa.scalar(value, pa.timestamp("us", tz="UTC"))


#: predicate -> the files a scan must open (E has no stats: only its partition value can rule it out)
OPENED = [
    (pc.field("id") == 12, {"B", "E"}),
    (pc.field("id") >= 30, {"D", "E", "F", "G", "H"}),
    (pc.field("region") == "us", {"A", "C"}),
    (pc.field("region").is_null(), {"E"}),
    (pc.field("region") == "us/east", {"D"}),
    (pc.field("region") == "a b", {"H"}),
    (pc.field("name") == LONG + "3", {"E", "F"}),  # F's max is a 32-character prefix
    (pc.field("ts") > _ts(T1 + 6100 * US), {"E", "G"}),  # G's max was truncated to 6 ms; 6.5 ms matches
    (pc.field("score").is_null(), {"B", "E", "H"}),  # C's nullCount 0 counts even with wide bounds
    ((pc.field("region") == "eu") & (pc.field("id") < 12), {"B"}),  # E's null region rules it out
    (~(pc.field("id") < 60), {"E", "G", "H"}),
    (pc.field("score") > 4.5, {"A", "C", "E", "G"}),
    (pc.field("id").isin([3, 31]), {"A", "D", "E"}),
    (pc.field("id") < 0, {"E"}),
]


def _recording(root: Path) -> tuple[DeltaLog, FaultyStore]:
    store = FaultyStore(FsspecLogStore(fsspec.filesystem("file"), str(root)))
    return DeltaLog(store, str(root)), store


@pytest.mark.parametrize(("predicate", "expected"), OPENED, ids=[str(p) for p, _ in OPENED])
def test_a_scan_opens_exactly_the_files_its_filter_can_match(
    events: Events, predicate: pc.Expression, expected: set[str]
) -> None:
    root, labels = events
    log, store = _recording(root)
    snap = log.snapshot()
    store.clear_calls()
    result = snap.to_arrow(filter=predicate)
    opened = {labels[c.path] for c in store.calls_to("open", "*.parquet")}
    assert opened == expected
    assert result.to_pylist() == snap.to_arrow().filter(predicate).to_pylist()


def test_without_a_filter_every_file_is_read_once_and_rows_equal_both_peers(
    events: Events,
) -> None:
    root, labels = events
    log, store = _recording(root)
    snap = log.snapshot()
    store.clear_calls()
    table = snap.to_arrow()
    assert sorted(labels[c.path] for c in store.calls_to("open", "*.parquet")) == sorted(labels.values())
    assert table.schema == SCHEMA
    assert table.num_rows == 8 * 5 - 2  # C's DV deletes two rows
    assert 20 not in table.column("id").to_pylist() and 22 in table.column("id").to_pylist()
    assert table.filter(pc.field("id") == 32).column("region").to_pylist() == ["us/east"]
    assert peer_rows(root) == (table.num_rows, table.num_rows)


def test_columns_project_and_the_filter_may_read_other_columns(events: Events) -> None:
    snap = DeltaLog.for_table(events[0]).snapshot()
    table = snap.to_arrow(columns=["name", "id"], filter=pc.field("score") > 13.5)
    assert table.schema.names == ["name", "id"]
    assert table.to_pylist() == [{"name": "c4", "id": 24}]
    batches = list(snap.scan(columns=["id"], filter=pc.field("region") == "eu"))
    assert sorted(v for b in batches for v in b.column(0).to_pylist()) == [
        *range(10, 15),
        *range(50, 55),
        *range(60, 65),
    ]


def test_unknown_columns_in_the_projection_or_the_filter_are_named(events: Events) -> None:
    snap = DeltaLog.for_table(events[0]).snapshot()
    with pytest.raises(InvalidArgumentError, match="'nope'"):
        snap.scan(filter=pc.field("nope") > 1)
    with pytest.raises(InvalidArgumentError, match="'nope'"):
        snap.to_arrow(columns=["id", "nope"])
    with pytest.raises(InvalidArgumentError, match="boolean"):
        snap.to_arrow(filter=pc.field("id") + 1)
    with pytest.raises(InvalidArgumentError, match="DNF tuples"):
        snap.to_arrow(filter=42)
    with pytest.raises(InvalidArgumentError, match="nope"):
        snap.to_arrow(filter="nope > 1")


def test_a_missing_or_corrupt_dv_file_fails_the_scan_naming_it(tmp_path: Path) -> None:
    labels = make_table(tmp_path / "t", SCHEMA, ["region"], _files()[:3], dvs=True)
    assert labels
    (dv_file,) = (tmp_path / "t").glob("deletion_vector_*.bin")
    data = bytearray(dv_file.read_bytes())
    data[-1] ^= 0xFF  # the checksum no longer matches
    dv_file.write_bytes(bytes(data))
    snap = DeltaLog.for_table(tmp_path / "t").snapshot()
    with pytest.raises(CorruptDataError, match=dv_file.name) as corrupt:
        snap.to_arrow()
    assert corrupt.value.path
    dv_file.unlink()
    with pytest.raises(CorruptDataError, match=dv_file.name):
        snap.to_arrow(filter=pc.field("id") >= 20)
    assert snap.to_arrow(filter=pc.field("id") < 20).num_rows == 10  # the DV'd file is skipped, never read


def test_a_deletion_vector_on_a_file_with_string_view_columns_applies(tmp_path: Path) -> None:
    """deltalake's update writes strings as Arrow's string_view, which pyarrow cannot filter: the reader drops
    deleted rows once the file's columns have the table's types."""
    root = tmp_path / "t"
    names = pa.table({"id": pa.array(range(10), pa.int64()), "name": [f"n{i}" for i in range(10)]})
    write_deltalake(str(root), names, configuration={"delta.enableDeletionVectors": "true"})
    DeltaTable(str(root)).update({"name": "'x'"}, predicate="id = 1")
    views = [p for p in root.glob("*.parquet") if pq.ParquetFile(p).schema_arrow.field("name").type == pa.string_view()]
    assert views  # the rewritten file
    DeltaLog.for_table(root).delete("id IN (3, 7)")  # a deletion vector on it
    rows = DeltaLog.for_table(root).snapshot().to_arrow().sort_by("id").to_pylist()
    assert [r["id"] for r in rows] == [0, 1, 2, 4, 5, 6, 8, 9] and rows[1]["name"] == "x"
    assert peer_rows(root) == (8, 8)


# ---------------------------------------------------------------------------------------------- other engines
def _encoded_table(root: Path) -> list[FileSpec]:
    specs = [s for s in _files() if s.name in ("A", "D", "H")]
    make_table(root, SCHEMA, ["region"], specs)
    return specs


def test_file_uris_are_decoded_paths_that_pyarrow_and_duckdb_open(tmp_path: Path) -> None:
    root = tmp_path / "t"
    specs = _encoded_table(root)
    snap = DeltaLog.for_table(root).snapshot()
    uris = snap.file_uris()
    assert [u.rsplit("/", 2)[1] for u in uris] == [s.directory for s in specs]  # region=us%2Feast on disk
    assert all(Path(u).is_file() and Path(u).is_absolute() for u in uris)
    for uri, spec in zip(uris, specs, strict=True):
        assert pq.read_table(uri).to_pylist() == spec.data.to_pylist()
    con = duckdb.connect()
    try:
        (count,) = con.execute("SELECT count(*) FROM read_parquet(?)", [uris]).fetchone() or (0,)
    finally:
        con.close()
    assert count == sum(s.data.num_rows for s in specs)


def test_file_uris_of_a_table_opened_by_uri_join_the_root_and_stay_paths_when_local(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _encoded_table(root)
    local = DeltaLog.for_table(root).snapshot().file_uris()
    through_uri = DeltaLog(FsspecLogStore(fsspec.filesystem("file"), str(root), display_root=f"file://{root}"), "x")
    assert through_uri.snapshot().file_uris() == local
    name = f"scan-uris-{tmp_path.name}"
    memory = FsspecLogStore(fsspec.filesystem("memory"), f"/{name}", display_root=f"memory://{name}")
    for path in sorted(root.rglob("*")):
        if path.is_file():
            memory.put_if_absent(str(path.relative_to(root)), path.read_bytes())
    uris = DeltaLog(memory, f"memory://{name}").snapshot().file_uris()
    assert uris == [f"memory://{name}/" + u.removeprefix(f"{root}/") for u in local]
    assert uris[1].startswith(f"memory://{name}/region=us%2Feast/part-")


def test_to_pyarrow_dataset_carries_partitions_and_stats_for_pyarrow_and_duckdb(tmp_path: Path) -> None:
    root = tmp_path / "t"
    specs = [s for s in _files() if s.name not in ("C",)]
    make_table(root, SCHEMA, ["region"], specs)
    snap = DeltaLog.for_table(root).snapshot()
    dataset = snap.to_pyarrow_dataset()
    assert dataset.schema == SCHEMA
    assert sorted(dataset.to_table().to_pylist(), key=str) == sorted(snap.to_arrow().to_pylist(), key=str)
    for predicate in (pc.field("id") == 12, pc.field("region") == "us/east", pc.field("score").is_null()):
        assert dataset.to_table(filter=predicate).to_pylist() == snap.to_arrow(filter=predicate).to_pylist()
    kept = [f.path.rsplit("/", 2)[-2] for f in dataset.get_fragments(filter=pc.field("id") == 12)]
    assert kept == ["region=eu", "region=__HIVE_DEFAULT_PARTITION__"]  # B by stats, E for lack of them
    con = duckdb.connect()
    try:
        (count,) = con.execute("SELECT count(*) FROM dataset WHERE id >= 30").fetchone() or (0,)
    finally:
        con.close()
    assert count == snap.to_arrow(filter=pc.field("id") >= 30).num_rows


def test_to_pyarrow_dataset_reads_through_a_non_local_store(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _encoded_table(root)
    snap = DeltaLog(FsspecLogStore(fsspec.filesystem("file"), str(root)), str(root)).snapshot()
    dataset = snap.to_pyarrow_dataset()
    assert not isinstance(dataset.filesystem, pa.fs.LocalFileSystem)
    assert dataset.to_table(filter=pc.field("region") == "a b").num_rows == 5


def test_to_pyarrow_dataset_refuses_deletion_vectors_and_column_mapping(events: Events, tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFeatureError, match="deletion vectors") as refused:
        DeltaLog.for_table(events[0]).snapshot().to_pyarrow_dataset()
    assert refused.value.feature == "deletionVectors"
    make_table(tmp_path / "cm", SCHEMA, ["region"], _files()[:2], mapped=True)
    with pytest.raises(UnsupportedFeatureError, match="maps columns") as refused:
        DeltaLog.for_table(tmp_path / "cm").snapshot().to_pyarrow_dataset()
    assert refused.value.feature == "columnMapping"


def test_a_column_mapped_table_is_filtered_by_logical_names_and_skipped_by_physical_stats(tmp_path: Path) -> None:
    root = tmp_path / "cm"
    specs = [s for s in _files() if s.name != "C"]
    labels = make_table(root, SCHEMA, ["region"], specs, mapped=True)
    log, store = _recording(root)
    snap = log.snapshot()
    assert snap.column_mapping_mode == "name"
    for predicate, expected in OPENED:
        store.clear_calls()
        result = snap.to_arrow(filter=predicate)
        assert {labels[c.path] for c in store.calls_to("open", "*.parquet")} == expected - {"C"}, str(predicate)
        assert result.to_pylist() == snap.to_arrow().filter(predicate).to_pylist()
    assert snap.to_arrow().schema == SCHEMA
    assert snap.to_arrow(filter=pc.field("region") == "us/east").column("id").to_pylist() == [*range(30, 35)]
    ours = sorted((r["id"], r["region"]) for r in snap.to_arrow(columns=["id", "region"]).to_pylist())
    lake = pa.table(QueryBuilder().register("t", DeltaTable(str(root))).execute("select id, region from t").read_all())
    con = duckdb_connection()
    try:
        duck = con.execute(f"select id, region from delta_scan('{root}')").fetchall()
    finally:
        con.close()
    assert sorted((r["id"], r["region"]) for r in lake.to_pylist()) == sorted(duck) == ours


def test_an_empty_table_scans_and_hands_out_nothing_with_its_schema(tmp_path: Path) -> None:
    root = tmp_path / "t"
    make_table(root, SCHEMA, ["region"], [])
    snap = DeltaLog.for_table(root).snapshot()
    assert snap.to_arrow().schema == SCHEMA and snap.to_arrow().num_rows == 0
    assert snap.to_arrow(filter=pc.field("id") > 1).num_rows == 0
    assert snap.to_pyarrow_dataset().to_table().schema == SCHEMA and snap.file_uris() == []
    assert peer_rows(root) == (0, 0)


def test_the_data_plane_scans_any_listing_of_the_live_files(events: Events, tmp_path: Path) -> None:
    """``Snapshot.files()`` (logical partition keys), raw adds (physical keys) and add actions scan alike."""
    make_table(tmp_path / "cm", SCHEMA, ["region"], _files(), dvs=True, mapped=True)
    for root in (events[0], tmp_path / "cm"):
        snap = DeltaLog.for_table(root).snapshot()
        table = TableDescription(
            snap.context.store, snap.schema_json, tuple(snap.partition_columns), snap.column_mapping_mode
        )
        predicate = (pc.field("region") == "us") & (pc.field("id") > 21)
        expected = snap.to_arrow(filter=predicate).to_pylist()
        assert [r["id"] for r in expected] == [22, 23, 24]
        for listing in (snap.files(stats=True), snap.files(), snap.raw_files(stats=True), list(snap.add_actions())):
            assert scan(listing, table, filter=predicate).read_all().to_pylist() == expected
        assert file_uris(snap.files(), table) == snap.file_uris()
