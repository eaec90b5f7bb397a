"""Reading checkpoints: the metadata-only read agrees with the full one, on our tables and the corpus's.

``read_non_file`` locates the few rows of protocol, metaData, txn and domainMetadata with the footer's
statistics and one leaf column, so it is checked against ``read_base`` (which also reads every add) on
classic, multi-part and V2 checkpoints, on checkpoints whose non-file rows sit after the adds in small
row groups (as delta-rs writes them), and on every readable checkpoint of the conformance corpus.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.checkpoint import rows
from deltalog.checkpoint.reader import CheckpointReader
from deltalog.core.log.paths import LOG_DIR, SIDECAR_DIR
from deltalog.core.log.segment import CheckpointRef, complete_checkpoints
from deltalog.core.state import BaseState
from deltalog.core.state.columns import ADD_SCHEMA, REMOVE_SCHEMA
from deltalog.errors import CorruptLogError
from deltalog.storage.local import LocalLogStore
from tests.corpus import corpus_entries, table_path

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])
V2_CONF = {"delta.feature.v2Checkpoint": "supported", "delta.checkpointPolicy": "v2"}
DOMAIN_CONF = {"delta.feature.domainMetadata": "supported"}


def build(root: Path, files: int, configuration: dict[str, str] | None = None) -> DeltaLog:
    """A table with ``files`` adds (two per commit), two txns, a domain and a removed file."""
    log = DeltaLog(LocalLogStore(str(root)), str(root), auto_checkpoint=False)
    log.create(SCHEMA, partition_columns=["part"], configuration={**DOMAIN_CONF, **(configuration or {})})
    for i in range(0, files, 2):
        adds = [
            A.Add(f"part={j % 3}/f{j:04d}.parquet", {"part": str(j % 3)}, 10 + j, 1, True, stats='{"numRecords":1}')
            for j in (i, i + 1)
        ]
        log.start_transaction().commit([*adds, A.Txn(f"app-{i % 4 // 2}", i, 1_000 + i)])
    log.start_transaction().commit([A.DomainMetadata("team.one", '{"k":1}')])
    log.start_transaction().commit([A.Remove("part=0/f0000.parquet", int(time.time() * 1000), True)])
    return log


def latest_ref(log: DeltaLog) -> CheckpointRef:
    ref = log.segment().checkpoint
    assert ref is not None
    return ref


def assert_same_non_file(meta: BaseState, full: BaseState) -> None:
    assert meta.version == full.version
    assert meta.source == full.source
    assert meta.protocol == full.protocol
    assert meta.metadata == full.metadata
    assert meta.txns == full.txns
    assert meta.domains == full.domains


def assert_no_files(meta: BaseState) -> None:
    assert meta.adds.num_rows == 0 and meta.adds.schema == ADD_SCHEMA
    assert meta.adds_valid is None and meta.adds_stats is None
    removes = meta.removes()
    assert removes.num_rows == 0 and removes.schema == REMOVE_SCHEMA


@pytest.mark.parametrize("kind", ["classic", "multipart", "v2", "v2-sidecars"])
def test_read_non_file_matches_read_base(tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if kind == "v2-sidecars":
        monkeypatch.setattr("deltalog.checkpoint.v2.SIDECAR_ROWS", 7)
    log = build(tmp_path, 20, V2_CONF if kind.startswith("v2") else None)
    log.checkpoint(parts=3 if kind == "multipart" else None)
    ref = latest_ref(log)
    reader = CheckpointReader(log.store)
    full = reader.read_base(ref)
    meta = reader.read_non_file(ref)
    assert_same_non_file(meta, full)
    assert_no_files(meta)
    assert full.protocol is not None and full.metadata is not None
    assert set(full.txns) == {"app-0", "app-1"} and set(full.domains) == {"team.one"}
    assert full.adds.num_rows == 19 and full.adds_valid is None
    if kind == "v2-sidecars":
        shutil.rmtree(tmp_path / LOG_DIR / SIDECAR_DIR)  # sidecars hold file actions only: never opened
        assert_same_non_file(reader.read_non_file(ref), full)


def _reorder(path: Path, row_group_size: int) -> None:
    """Rewrite a checkpoint with its non-file rows after the file rows, in small row groups."""
    table = pq.read_table(path)
    is_file = pc.or_(pc.is_valid(table.column("add")), pc.is_valid(table.column("remove")))
    reordered = pa.concat_tables([table.filter(is_file), table.filter(pc.invert(is_file))])
    pq.write_table(reordered, path, row_group_size=row_group_size)


@pytest.mark.parametrize("row_group_size", [3, 1_000])
def test_non_file_rows_after_the_adds_are_found(tmp_path: Path, row_group_size: int) -> None:
    log = build(tmp_path, 40)
    result = log.checkpoint()
    _reorder(tmp_path / result.files[0], row_group_size)
    reader = CheckpointReader(log.store)
    full = reader.read_base(latest_ref(log))
    assert set(full.txns) == {"app-0", "app-1"} and set(full.domains) == {"team.one"}
    assert_same_non_file(reader.read_non_file(latest_ref(log)), full)
    fresh = DeltaLog.for_table(tmp_path).snapshot()
    assert fresh.num_files == 39
    stats = fresh.files(stats=True)
    assert stats.column("stats").null_count == 0
    assert sorted(stats.column("path").to_pylist()) == sorted(f"part={j % 3}/f{j:04d}.parquet" for j in range(1, 40))


def test_read_base_keeps_only_add_rows_and_aligns_stats(tmp_path: Path) -> None:
    log = build(tmp_path, 10)
    log.checkpoint()
    base = CheckpointReader(log.store).read_base(latest_ref(log))
    assert base.adds.column("path").null_count == 0
    assert base.adds_stats is not None
    stats = base.adds_stats()
    assert len(stats) == base.adds.num_rows == 9
    assert set(stats.to_pylist()) == {'{"numRecords":1}'}
    assert base.removes().column("path").to_pylist() == ["part=0/f0000.parquet"]


def test_unreadable_checkpoint_is_corrupt_for_both_reads(tmp_path: Path) -> None:
    log = build(tmp_path, 4)
    result = log.checkpoint()
    (tmp_path / result.files[0]).write_bytes(b"PAR1 not really")
    reader = CheckpointReader(log.store)
    with pytest.raises(CorruptLogError):
        reader.read_non_file(latest_ref(log))
    with pytest.raises(CorruptLogError):
        reader.read_base(latest_ref(log))


CORPUS = [e["name"] for e in corpus_entries() if e.get("has_checkpoint")]


@pytest.mark.corpus
@pytest.mark.parametrize("name", CORPUS)
def test_read_non_file_matches_read_base_on_corpus_checkpoints(name: str) -> None:
    log = DeltaLog.for_table(table_path(name))
    reader = CheckpointReader(log.store)
    checked = 0
    for ref in complete_checkpoints(log.list_log(0)):
        try:
            full = reader.read_base(ref)
        except CorruptLogError:
            continue  # a deliberately broken checkpoint: what the full read refuses is not compared
        meta = reader.read_non_file(ref)
        assert_same_non_file(meta, full)
        assert_no_files(meta)
        checked += 1
    assert checked, f"{name}: the manifest lists a checkpoint, but none could be read for comparison"


# ---------------------------------------------------------------------------------------------- streamed write


def _recheckpoint(root: Path, stream: bool, monkeypatch: pytest.MonkeyPatch) -> pa.Table:
    """Checkpoint the latest version from a fresh load (base = the older checkpoint), read back the file."""
    used: list[bool] = []

    def spy(snapshot: object, stats: bool) -> object:
        out = rows.streamed_adds(snapshot, stats) if stream else None  # type: ignore[arg-type]
        used.append(out is not None)
        return out

    with monkeypatch.context() as m:
        m.setattr("deltalog.checkpoint.writer.streamed_adds", spy)
        log = DeltaLog.for_table(root)
        result = log.checkpoint()
    assert used == [stream]
    path = root / result.files[0]
    table = pq.read_table(path)
    path.unlink()
    (root / LOG_DIR / "_last_checkpoint").unlink()
    return table


@pytest.mark.parametrize("reorder", [False, True])
def test_streamed_checkpoint_equals_the_in_memory_one(
    tmp_path: Path, reorder: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("deltalog.checkpoint.scan.BATCH_ROWS", 4)  # several batches, masks cut across them
    monkeypatch.setattr("deltalog.checkpoint.rows.BATCH_ROWS", 4)
    log = build(tmp_path, 30)
    result = log.checkpoint()
    if reorder:
        _reorder(tmp_path / result.files[0], 5)
    gone = [A.Remove(f"part={j % 3}/f{j:04d}.parquet", int(time.time() * 1000), True) for j in (3, 4, 5, 17)]
    log.start_transaction().commit([*gone, A.Add("part=1/new.parquet", {"part": "1"}, 7, 2, True, stats="{}")])
    log.start_transaction().commit([A.Add("part=1/f0010.parquet", {"part": "1"}, 99, 3, True)])  # re-added
    streamed = _recheckpoint(tmp_path, True, monkeypatch)
    in_memory = _recheckpoint(tmp_path, False, monkeypatch)
    assert streamed.schema == in_memory.schema
    assert streamed.equals(in_memory)
    adds = streamed.column("add").drop_null()
    assert len(adds) == 29 - 4 + 1
    assert adds[-1]["path"].as_py() == "part=1/f0010.parquet" and adds[-1]["size"].as_py() == 99


def test_checkpoint_encoding_options_name_real_leaves(tmp_path: Path) -> None:
    from deltalog.checkpoint import schema as S

    schema = S.checkpoint_schema(S.add_type(True, None, None), v2=True)
    pq.write_table(schema.empty_table(), tmp_path / "x.parquet")
    md = pq.ParquetFile(tmp_path / "x.parquet").metadata
    leaves = {md.schema.column(i).path for i in range(md.num_columns)}
    options = S.encoding_options(schema)
    assert set(options["use_dictionary"]) == leaves - {"add.path", "add.stats", "remove.path"}
    assert set(options["write_statistics"]) == leaves - {"add.stats"}
