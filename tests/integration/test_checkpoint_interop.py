"""Checkpoints deltalog writes, read by two independent readers; checkpoints delta-rs writes, read by deltalog.

A checkpoint only proves itself when the JSON it replaces is gone. So every scenario builds a table with real
parquet data files (hive-style partition folders, adds with true sizes and stats), checkpoints it, commits
more on top, then deletes every commit before the checkpoint version (keeping that version's own JSON) and
asks three readers what the table is: deltalog, the ``deltalake`` package (delta-rs) and duckdb's ``delta``
extension (delta-kernel-rs). They must agree with the state deltalog replayed from JSON before the deletion:
version, live file paths, partition values, per-file record counts, and the rows the data files hold.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

import deltalog.checkpoint.v2 as v2
from deltalog import DeltaLog, Snapshot
from deltalog import actions as A
from deltalog.core.features.obligations import CHECKPOINT, check_operation
from deltalog.core.log.codec import encode_actions
from deltalog.core.log.paths import Kind, parse
from deltalog.errors import DeltaLogError, UnsupportedFeatureError
from deltalog.table.ddl import protocol_for
from tests.corpus import corpus_entries, table_path

pytestmark = pytest.mark.interop

DATA = pa.schema([("id", pa.int64()), ("name", pa.string())])
PARTITIONED = pa.schema([("id", pa.int64()), ("name", pa.string()), ("region", pa.string())])
REGIONS = ("eu", "us", "apac")
V2_CONF = {"delta.feature.v2Checkpoint": "supported", "delta.checkpointPolicy": "v2"}

STATS_MODES: dict[str, dict[str, str]] = {
    "json": {},  # the defaults: writeStatsAsJson true, writeStatsAsStruct false
    "json+struct": {"delta.checkpoint.writeStatsAsStruct": "true"},
    "struct-only": {"delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpoint.writeStatsAsJson": "false"},
}


# ---------------------------------------------------------------------------------------------- building tables


class Builder:
    """A deltalog table whose adds point at real parquet files it writes under ``root``."""

    def __init__(self, root: Path, partitioned: bool, configuration: Mapping[str, str]) -> None:
        self.root = root
        self.partitioned = partitioned
        self.log = DeltaLog.for_table(root, auto_checkpoint=False)
        self.log.create(
            PARTITIONED if partitioned else DATA,
            partition_columns=["region"] if partitioned else [],
            configuration=dict(configuration),
        )
        self.next_id = 0
        self.n = 0

    def data_file(self, rows: int, region: str | None = None) -> A.Add:
        """Write ``rows`` rows to a new parquet file and describe it as an add, stats and all."""
        self.n += 1
        ids = list(range(self.next_id, self.next_id + rows))
        self.next_id += rows
        names = [None if i % 4 == 3 else f"name-{i:05d}" for i in ids]
        folder = f"region={region}/" if self.partitioned else ""
        rel = f"{folder}part-{self.n:05d}.parquet"
        (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(
            pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array(names, pa.string())}), self.root / rel
        )
        present = [s for s in names if s is not None]
        stats = {
            "numRecords": rows,
            "minValues": {"id": ids[0], **({"name": min(present)} if present else {})},
            "maxValues": {"id": ids[-1], **({"name": max(present)} if present else {})},
            "nullCount": {"id": 0, "name": rows - len(present)},
        }
        return A.Add(
            path=rel,
            partition_values={"region": region} if self.partitioned else {},
            size=(self.root / rel).stat().st_size,
            modification_time=self.log.now_ms(),
            data_change=True,
            stats=orjson.dumps(stats).decode(),
        )

    def region(self, i: int) -> str | None:
        return REGIONS[i % len(REGIONS)] if self.partitioned else None

    def append(self, files: int, rows: int = 5, app: tuple[str, int] | None = None) -> None:
        adds = [self.data_file(rows + i, self.region(self.n + i)) for i in range(files)]
        if app is None:
            self.log.start_transaction().commit(adds)
        else:
            self.log.start_transaction(app_id=app[0], app_version=app[1]).commit(adds)

    def remove_some(self, every: int) -> None:
        live = sorted(self.log.snapshot().add_actions(), key=lambda a: a.path)
        removes = [a.remove(deletion_timestamp=self.log.now_ms()) for a in live[::every]]
        self.log.start_transaction().commit(removes, operation="DELETE")

    def history(self) -> None:
        """Ten versions: appends (with app transactions), removes, a mixed commit."""
        for v in range(4):
            self.append(3, app=("ingest", v + 1))
        self.remove_some(every=3)
        self.append(2, app=("backfill", 1))
        self.append(1)
        self.remove_some(every=4)
        live = sorted(self.log.snapshot().add_actions(), key=lambda a: a.path)
        self.log.start_transaction().commit([self.data_file(7, self.region(1)), live[0].remove(self.log.now_ms())])


# ---------------------------------------------------------------------------------------------- three readers


@dataclass(frozen=True)
class View:
    version: int
    files: dict[str, tuple[tuple[str, str | None], ...]]  # path -> partition values
    records: dict[str, int]  # path -> numRecords
    rows: int


def data_rows(root: Path, paths: Iterator[str] | list[str]) -> int:
    return sum(pq.ParquetFile(root / p).metadata.num_rows for p in paths)


def deltalog_view(root: Path) -> View:
    snap = DeltaLog.for_table(root, auto_checkpoint=False).snapshot()
    return view_of(snap, root)


def view_of(snap: Snapshot, root: Path) -> View:
    table = snap.files(stats=True).to_pylist()
    files = {r["path"]: tuple(sorted(dict(r["partition_values"] or []).items())) for r in table}
    records = {r["path"]: orjson.loads(r["stats"])["numRecords"] for r in table}
    return View(snap.version, files, records, data_rows(root, list(files)))


def deltalake_view(root: Path, rows: bool = True) -> View:
    dt = DeltaTable(str(root))
    actions = dt.get_add_actions(flatten=True)
    cols = {name: actions.column(name).to_pylist() for name in actions.schema.names}
    paths = cols["path"]
    part_cols = sorted(n for n in cols if n.startswith("partition."))
    files = {
        p: tuple(sorted((c.removeprefix("partition."), cols[c][i]) for c in part_cols)) for i, p in enumerate(paths)
    }
    records = dict(zip(paths, cols["num_records"], strict=True))
    n = dt.to_pyarrow_table().num_rows if rows else data_rows(root, paths)
    return View(dt.version(), files, records, n)


def duckdb_extension() -> Path:
    spec = importlib.util.find_spec("duckdb_extension_delta")
    assert spec is not None and spec.origin is not None
    found = sorted(Path(spec.origin).parent.rglob("delta.duckdb_extension"))
    assert found, "duckdb_extension_delta ships no delta.duckdb_extension"
    return found[-1]


@pytest.fixture(scope="module")
def duck() -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    con.execute(f"INSTALL '{duckdb_extension()}'; LOAD delta;")
    yield con
    con.close()


def duckdb_files(con: duckdb.DuckDBPyConnection, root: Path) -> tuple[int, set[str]]:
    """(row count, live file paths relative to ``root``) as duckdb's delta_scan sees the table."""
    (count,) = con.execute(f"SELECT count(*) FROM delta_scan('{root}')").fetchone() or (None,)
    names = con.execute(f"SELECT DISTINCT filename FROM delta_scan('{root}', filename=true)").fetchall()
    prefix = str(root.resolve()) + "/"
    return int(count), {str(Path(n).resolve()).removeprefix(prefix) for (n,) in names}


def drop_commits_before(root: Path, version: int) -> list[int]:
    """Delete ``<v>.json`` for every v < version; what is left must be enough for every reader."""
    gone = []
    for f in sorted((root / "_delta_log").iterdir()):
        p = parse(f.name)
        if p is not None and p.kind is Kind.COMMIT and p.version < version:
            f.unlink()
            gone.append(p.version)
    assert gone == list(range(version))
    return gone


def assert_all_readers_agree(con: duckdb.DuckDBPyConnection, root: Path, expected: View, lake_rows: bool) -> None:
    ours = deltalog_view(root)
    assert ours == expected
    lake = deltalake_view(root, rows=lake_rows)
    assert lake.version == expected.version
    assert lake.files == expected.files
    assert lake.records == expected.records
    assert lake.rows == expected.rows
    count, files = duckdb_files(con, root)
    assert files == set(expected.files)
    assert count == expected.rows


# ---------------------------------------------------------------------------------------------- V1 checkpoints


@pytest.mark.parametrize("parts", [None, 3], ids=["single", "multipart3"])
@pytest.mark.parametrize("stats", list(STATS_MODES), ids=list(STATS_MODES))
@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "partitioned"])
def test_v1_checkpoint_read_by_deltalake_and_duckdb(
    tmp_path: Path, duck: duckdb.DuckDBPyConnection, partitioned: bool, stats: str, parts: int | None
) -> None:
    b = Builder(tmp_path / "t", partitioned, STATS_MODES[stats])
    b.history()
    result = b.log.checkpoint(parts=parts)
    assert result.version == 9
    assert result.kind == ("multipart" if parts else "classic")
    assert len(result.files) == (parts or 1)
    b.append(2, app=("ingest", 5))  # versions after the checkpoint are replayed on top of it
    b.remove_some(every=5)
    expected = deltalog_view(b.root)
    assert expected.version == 11
    assert len(expected.files) == 8
    assert set(expected.records.values()) != {None}

    columns = pq.ParquetFile(b.root / result.files[0]).schema_arrow.field("add").type
    assert (columns.get_field_index("stats") >= 0) == (stats != "struct-only")
    assert (columns.get_field_index("stats_parsed") >= 0) == (stats != "json")
    assert (columns.get_field_index("partitionValues_parsed") >= 0) == (stats != "json" and partitioned)

    drop_commits_before(b.root, result.version)
    snap = DeltaLog.for_table(b.root, auto_checkpoint=False).snapshot()
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 9
    assert snap.txns.keys() == {"ingest", "backfill"} and snap.app_version("ingest") == 5
    assert_all_readers_agree(duck, b.root, expected, lake_rows=True)
    # The tombstones the checkpoint carries are the live ones (fresh removes), with dataChange false.
    removes = [
        r for f in result.files for r in pq.read_table(b.root / f, columns=["remove"]).column("remove").to_pylist() if r
    ]
    assert removes and all(r["dataChange"] is False and r["deletionTimestamp"] > 0 for r in removes)
    assert len({r["path"] for r in removes}) == len(removes)


def test_checkpoint_at_an_older_version_serves_time_travel(tmp_path: Path, duck: duckdb.DuckDBPyConnection) -> None:
    b = Builder(tmp_path / "t", True, {})
    b.history()
    at5 = deltalog_view(b.root)  # version 9 here; now checkpoint 5 and check 5 through deltalake
    before = DeltaLog.for_table(b.root).snapshot(version=5)
    expected5 = view_of(before, b.root)
    result = b.log.checkpoint(version=5)
    assert result.version == 5
    drop_commits_before(b.root, 5)
    assert deltalog_view(b.root) == at5
    assert view_of(DeltaLog.for_table(b.root).snapshot(version=5), b.root) == expected5
    lake = DeltaTable(str(b.root), version=5)
    assert sorted(lake.get_add_actions(flatten=True).column("path").to_pylist()) == sorted(expected5.files)
    assert_all_readers_agree(duck, b.root, at5, lake_rows=True)


# ---------------------------------------------------------------------------------------------- V2 checkpoints


def test_create_turns_the_v2_request_into_protocol_features(tmp_path: Path) -> None:
    protocol, conf = protocol_for(V2_CONF)
    assert (protocol.min_reader_version, protocol.min_writer_version) == (3, 7)
    assert "v2Checkpoint" in (protocol.reader_features or ()) and "v2Checkpoint" in (protocol.writer_features or ())
    assert conf == {"delta.checkpointPolicy": "v2"}
    log = DeltaLog.for_table(tmp_path / "t", auto_checkpoint=False)
    log.create(DATA, configuration=V2_CONF)
    snap = log.snapshot()
    assert snap.protocol == protocol
    assert "v2Checkpoint" in snap.features
    assert dict(snap.configuration) == {"delta.checkpointPolicy": "v2"}


@pytest.mark.parametrize("sidecar_rows", [None, 4], ids=["inline", "sidecars"])
@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "partitioned"])
def test_v2_checkpoint_read_by_deltalog_deltalake_and_duckdb(
    tmp_path: Path,
    duck: duckdb.DuckDBPyConnection,
    monkeypatch: pytest.MonkeyPatch,
    partitioned: bool,
    sidecar_rows: int | None,
) -> None:
    if sidecar_rows is not None:
        monkeypatch.setattr(v2, "SIDECAR_ROWS", sidecar_rows)
    b = Builder(tmp_path / "t", partitioned, {**V2_CONF, "delta.checkpoint.writeStatsAsStruct": "true"})
    b.history()
    result = b.log.checkpoint()
    assert result.kind == "v2" and result.version == 9
    manifest = b.root / result.files[0]
    assert parse(manifest.name) is not None and parse(manifest.name).kind is Kind.UUID_CHECKPOINT  # type: ignore[union-attr]
    sidecars = [b.root / f for f in result.files[1:]]
    live_and_tombstones = b.log.snapshot().num_files + b.log.snapshot().tombstones().num_rows
    if sidecar_rows is None:
        assert sidecars == []
    else:
        assert len(sidecars) == -(-live_and_tombstones // sidecar_rows)
        assert all(s.parent == b.root / "_delta_log" / "_sidecars" for s in sidecars)
        for s in sidecars:
            assert pq.ParquetFile(s).schema_arrow.names == ["add", "remove"]
    rows = pq.read_table(manifest).to_pylist()
    kinds = [next(k for k, v in r.items() if v is not None) for r in rows]
    assert kinds.count("checkpointMetadata") == 1
    assert rows[kinds.index("checkpointMetadata")]["checkpointMetadata"]["version"] == 9
    if sidecar_rows is None:
        assert "sidecar" not in kinds and kinds.count("add") == b.log.snapshot().num_files
    else:
        assert kinds.count("sidecar") == len(sidecars) and "add" not in kinds and "remove" not in kinds
        assert sorted(r["sidecar"]["path"] for r in rows if r["sidecar"]) == sorted(s.name for s in sidecars)
        assert all(
            r["sidecar"]["sizeInBytes"] == (b.root / "_delta_log/_sidecars" / r["sidecar"]["path"]).stat().st_size
            for r in rows
            if r["sidecar"]
        )
    hint = orjson.loads((b.root / "_delta_log" / "_last_checkpoint").read_bytes())
    assert hint["version"] == 9 and "parts" not in hint
    assert hint["sizeInBytes"] == sum(f.stat().st_size for f in [manifest, *sidecars])

    b.append(1)
    expected = deltalog_view(b.root)
    drop_commits_before(b.root, 9)
    snap = DeltaLog.for_table(b.root, auto_checkpoint=False).snapshot()
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.kind is Kind.UUID_CHECKPOINT
    # deltalake 1.6.6 lists V2 checkpoints but refuses to scan data of a table with the v2Checkpoint reader
    # feature: its rows are counted from the files it lists.
    assert_all_readers_agree(duck, b.root, expected, lake_rows=False)


def test_v2_table_refuses_multipart(tmp_path: Path) -> None:
    b = Builder(tmp_path / "t", False, V2_CONF)
    b.append(2)
    from deltalog.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="multi-part"):
        b.log.checkpoint(parts=3)
    assert not [p for p in (b.root / "_delta_log").iterdir() if "checkpoint" in p.name]


# ---------------------------------------------------------------------------------------------- delta-rs writes


def _state(snap: Snapshot) -> dict[str, Any]:
    files = {
        r["path"]: (
            r["size"],
            tuple(sorted(dict(r["partition_values"] or []).items())),
            orjson.loads(r["stats"] or "null"),
        )
        for r in snap.files(stats=True).to_pylist()
    }
    tombstones = sorted(snap.tombstones().column("path").to_pylist())
    return {
        "version": snap.version,
        "protocol": snap.protocol,
        "metadata": snap.metadata,
        "files": files,
        "txns": {k: t.version for k, t in snap.txns.items()},
        "tombstones": tombstones,
    }


def _json_only_copy(root: Path, dest: Path) -> Path:
    shutil.copytree(root, dest)
    for f in (dest / "_delta_log").iterdir():
        p = parse(f.name)
        if f.name == "_last_checkpoint" or (p is not None and p.is_checkpoint):
            f.unlink()
    return dest


@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "partitioned"])
def test_deltalog_reads_checkpoints_written_by_deltalake(tmp_path: Path, partitioned: bool) -> None:
    root = tmp_path / "t"
    part = ["region"] if partitioned else None
    for i in range(4):
        batch = pa.table(
            {
                "id": pa.array(range(i * 10, i * 10 + 10), pa.int64()),
                "name": [None if j % 3 == 0 else f"n{j}" for j in range(10)],
                "ts": pa.array([1_700_000_000_000_000 + j for j in range(10)], pa.timestamp("us", tz="UTC")),
                "region": [REGIONS[(i + j) % 3] for j in range(10)],
            }
        )
        props = CommitProperties(app_transactions=[Transaction("rs-app", i + 1)])
        write_deltalake(str(root), batch, partition_by=part, mode="append", commit_properties=props)
    DeltaTable(str(root)).delete("id >= 15 AND id < 25")
    DeltaTable(str(root)).create_checkpoint()
    cps = [f.name for f in (root / "_delta_log").iterdir() if "checkpoint." in f.name]
    assert cps == ["00000000000000000004.checkpoint.parquet"]
    write_deltalake(
        str(root),
        pa.table(
            {
                "id": pa.array([99], pa.int64()),
                "name": ["z"],
                "ts": pa.array([0], pa.timestamp("us", tz="UTC")),
                "region": ["eu"],
            }
        ),
        partition_by=part,
        mode="append",
    )

    from_checkpoint = DeltaLog.for_table(root, auto_checkpoint=False).snapshot()
    assert from_checkpoint.segment.checkpoint is not None and from_checkpoint.segment.checkpoint.version == 4
    from_json = DeltaLog.for_table(_json_only_copy(root, tmp_path / "json"), auto_checkpoint=False).snapshot()
    assert from_json.segment.checkpoint is None
    assert _state(from_checkpoint) == _state(from_json)
    assert from_checkpoint.app_version("rs-app") == 4
    assert _state(from_checkpoint)["tombstones"]  # the delete's removes survive in the checkpoint
    # and deltalog's own checkpoint over delta-rs's one says the same thing again
    DeltaLog.for_table(root, auto_checkpoint=False).checkpoint()
    again = DeltaLog.for_table(root, auto_checkpoint=False).snapshot()
    assert again.segment.checkpoint is not None and again.segment.checkpoint.version == 5
    assert _state(again) == _state(from_json)
    assert sorted(DeltaTable(str(root)).get_add_actions(flatten=True).column("path").to_pylist()) == sorted(
        _state(again)["files"]
    )


# ---------------------------------------------------------------------------------------------- automatic checkpoints


def test_automatic_checkpoints_every_interval(tmp_path: Path, duck: duckdb.DuckDBPyConnection) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root, auto_checkpoint=True)
    b = Builder.__new__(Builder)  # reuse the data-file writer on an auto-checkpointing log
    b.root, b.partitioned, b.log, b.next_id, b.n = root, False, log, 0, 0
    log.create(DATA, configuration={"delta.checkpointInterval": "5"})
    for _ in range(12):
        b.append(1, rows=3)
    names = sorted(p.name for p in (root / "_delta_log").iterdir())
    checkpoints = [n for n in names if parse(n) is not None and parse(n).is_checkpoint]  # type: ignore[union-attr]
    assert checkpoints == ["00000000000000000005.checkpoint.parquet", "00000000000000000010.checkpoint.parquet"]
    assert [n for n in names if n.endswith(".json")] == [f"{v:020d}.json" for v in range(13)]
    hint = orjson.loads((root / "_delta_log" / "_last_checkpoint").read_bytes())
    assert (hint["version"], hint["size"], hint["numOfAddFiles"]) == (10, 12, 10)
    expected = deltalog_view(root)
    drop_commits_before(root, 10)
    assert_all_readers_agree(duck, root, expected, lake_rows=True)


def test_interval_zero_or_unset_default(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root, auto_checkpoint=True)
    log.create(DATA)
    for i in range(11):
        log.start_transaction().commit([A.Add(f"f{i}.parquet", {}, 1, 1, True)])
    cps = sorted(p.name for p in (root / "_delta_log").iterdir() if "checkpoint." in p.name)
    assert cps == ["00000000000000000010.checkpoint.parquet"]  # default interval 10
    off = DeltaLog.for_table(tmp_path / "u", auto_checkpoint=False)
    off.create(DATA, configuration={"delta.checkpointInterval": "5"})
    for i in range(6):
        off.start_transaction().commit([A.Add(f"f{i}.parquet", {}, 1, 1, True)])
    assert not [p for p in (tmp_path / "u" / "_delta_log").iterdir() if "checkpoint" in p.name]


# ---------------------------------------------------------------------------------------------- the corpus

CORPUS = [e for e in corpus_entries() if not e.get("expected_error")]


@pytest.mark.corpus
@pytest.mark.parametrize("entry", CORPUS, ids=[e["name"] for e in CORPUS])
def test_recheckpointing_a_corpus_table_keeps_what_every_reader_sees(
    tmp_path: Path, duck: duckdb.DuckDBPyConnection, entry: dict[str, Any]
) -> None:
    """Every corpus table deltalog may checkpoint, re-checkpointed by deltalog (struct stats on; two parts
    unless V2) with all older JSON deleted, reads the same in deltalog and deltalake (and duckdb when its data
    is all there); a table whose writer features refuse a checkpoint is refused with nothing written. Tables
    with deletion vectors, change data feed, column mapping or constraints are checkpointed even though
    deltalog may not commit to them (the struct-stats property is then set by a hand-written commit)."""
    root = tmp_path / "t"
    shutil.copytree(table_path(entry["name"]), root)
    for f in (root / "_delta_log").iterdir():
        p = parse(f.name)
        if f.name == "_last_checkpoint" or (p is not None and p.is_checkpoint):
            f.unlink()
    log = DeltaLog.for_table(root, auto_checkpoint=False)
    if not (root / "_delta_log" / "00000000000000000000.json").is_file():
        with pytest.raises(DeltaLogError):  # its history starts at a checkpoint we just removed
            log.snapshot()
        return
    snap = log.snapshot()
    try:
        check_operation(CHECKPOINT, snap.protocol, snap.configuration, snap.schema_json, str(root))
    except UnsupportedFeatureError:
        with pytest.raises(UnsupportedFeatureError):
            log.checkpoint()
        written = [f.name for f in (root / "_delta_log").iterdir() if (q := parse(f.name)) and q.is_checkpoint]
        assert written == [] and not (root / "_delta_log" / "_last_checkpoint").exists()
        return
    struct_stats = {"delta.checkpoint.writeStatsAsStruct": "true"}
    try:
        log.set_properties(struct_stats)
    except UnsupportedFeatureError:  # deltalog does not commit here: the fixture writes the commit itself
        conf = {**snap.metadata.configuration, **struct_stats}
        commit = root / "_delta_log" / f"{snap.version + 1:020d}.json"
        commit.write_bytes(encode_actions([dataclasses.replace(snap.metadata, configuration=conf)]))
        log = DeltaLog.for_table(root, auto_checkpoint=False)
    before = deltalog_files(root)
    lake_before = deltalake_files(root)
    duck_before = duckdb_outcome(duck, root)
    result = log.checkpoint(parts=None if "v2Checkpoint" in snap.features else 2)
    drop_commits_before(root, result.version)
    assert deltalog_files(root) == before
    assert deltalake_files(root) == lake_before
    assert duckdb_outcome(duck, root) == duck_before


def deltalog_files(root: Path) -> tuple[int, list[str], dict[str, int]]:
    snap = DeltaLog.for_table(root, auto_checkpoint=False).snapshot()
    files = snap.files()
    return snap.version, sorted(files.column("path").to_pylist()), {k: t.version for k, t in snap.txns.items()}


def duckdb_outcome(con: duckdb.DuckDBPyConnection, root: Path) -> tuple[int, set[str]] | str:
    """duckdb's view, or the class of its error (tables whose data files upstream never shipped, types it
    cannot read): a checkpoint must change neither."""
    try:
        return duckdb_files(con, root)
    except duckdb.Error as exc:
        return type(exc).__name__


def deltalake_files(root: Path) -> tuple[int, list[str]]:
    dt = DeltaTable(str(root))
    return dt.version(), sorted(dt.get_add_actions(flatten=True).column("path").to_pylist())
