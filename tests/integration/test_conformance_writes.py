"""The write runner (``python -m conformance --writes``): over the corpus no table fails, and on small tables
made here it catches what it exists to catch (a deleted live file, a checkpoint that changes a version, a
raw exception) and reports a refusal by the feature's name."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conformance.__main__ import main
from conformance.runner import load_manifest
from conformance.write_result import FAILED, PASSED, REFUSED, UNREADABLE
from conformance.writes import Peers, TableWrites, run_writes, unreadable_reason
from deltalog import DeltaLog
from deltalog.data.files import WriteTarget, write_files
from tests.corpus import corpus_dir

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string()), ("amount", pa.decimal128(10, 2))])


def _append(log: DeltaLog, ids: list[int]) -> None:
    snap = log.snapshot()
    data = pa.table({"id": ids, "part": ["a" if i % 2 else "b" for i in ids], "amount": [None] * len(ids)}, SCHEMA)
    log.start_transaction().commit(write_files(log.store, data, WriteTarget.of(snap)))


def _partitioned(root: Path) -> None:
    """Three versions of appends, then one that removes a file: a tombstone for vacuum, history for cleanup."""
    log = DeltaLog.for_table(root)
    log.create(SCHEMA, partition_columns=["part"])
    _append(log, [1, 2])
    _append(log, [3, 4])
    txn = log.start_transaction()
    txn.remove_files([sorted(log.snapshot().files().column("path").to_pylist())[0]])
    txn.commit()


def _future_feature(root: Path) -> None:
    """A table whose protocol lists a writer feature no engine knows."""
    (root / "_delta_log").mkdir(parents=True)
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["futureFeature"]}},
        {
            "metaData": {
                "id": "f",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": {},
                "createdTime": 1,
            }
        },
    ]
    (root / "_delta_log" / f"{0:020d}.json").write_bytes(b"\n".join(orjson.dumps(a) for a in actions) + b"\n")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A corpus of three tables in the manifest's shape: one deltalog maintains, one it must refuse, one the
    read runner expects to be unreadable."""
    root = tmp_path / "corpus"
    _partitioned(root / "tables" / "mini" / "partitioned")
    _future_feature(root / "tables" / "mini" / "future")
    (root / "tables" / "mini" / "broken" / "_delta_log").mkdir(parents=True)
    tables = [
        {"name": "mini/partitioned", "path": "tables/mini/partitioned", "features": ["partitioned"]},
        {"name": "mini/future", "path": "tables/mini/future", "features": []},
        {"name": "mini/broken", "path": "tables/mini/broken", "features": ["invalid-table"], "expected_error": "x"},
    ]
    (root / "manifest.json").write_bytes(orjson.dumps({"tables": tables}))
    return root


def _files(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            st = os.stat(os.path.join(folder, name))
            out[os.path.relpath(os.path.join(folder, name), root)] = (st.st_size, st.st_mtime_ns)
    return out


def _run(corpus: Path, name: str, scratch: Path, peers: Peers | None = None) -> Any:
    entry = next(e for e in load_manifest(str(corpus))["tables"] if e["name"] == name)
    scratch.mkdir()
    return TableWrites(str(corpus), entry, str(scratch), peers).run()


# ---------------------------------------------------------------------------------------------- what passes
def test_a_table_deltalog_maintains_passes_and_was_really_maintained(corpus: Path, tmp_path: Path) -> None:
    before = _files(corpus)
    result = _run(corpus, "mini/partitioned", tmp_path / "s", Peers())
    assert result.failures == []
    assert result.status == PASSED
    assert [(s.name, s.status) for s in result.steps] == [
        ("checkpoint", PASSED),
        ("cleanup", PASSED),
        ("vacuum", PASSED),
        ("append", PASSED),
    ]
    assert "peers that open the original: deltalake, duckdb" in result.notes
    assert _files(corpus) == before  # the corpus is only read
    copy = tmp_path / "s" / "table"
    log_names = os.listdir(copy / "_delta_log")
    assert f"{0:020d}.json" not in log_names  # cleanup deleted the commits below the new checkpoint
    assert f"{3:020d}.checkpoint.parquet" in log_names
    snap = DeltaLog.for_table(copy).snapshot()
    assert snap.version == 4  # the append
    live = set(snap.files().column("path").to_pylist())
    on_disk = {str(p.relative_to(copy)) for p in copy.rglob("*.parquet") if "_delta_log" not in p.parts}
    assert on_disk == live  # vacuum deleted the removed file, and only it
    assert sum(pq.ParquetFile(copy / p).metadata.num_rows for p in live) == 3 + 3  # 3 kept + 3 appended


def test_an_unknown_writer_feature_is_refused_by_name(corpus: Path, tmp_path: Path) -> None:
    result = _run(corpus, "mini/future", tmp_path / "s")
    assert result.failures == []
    assert result.status == REFUSED
    assert result.features == ["futureFeature"]
    assert {s.name for s in result.steps if s.status == REFUSED} >= {"checkpoint", "append"}
    assert all("futureFeature" in why for why in result.refusals)


def test_a_table_the_read_runner_expects_unreadable_is_reported_not_run(corpus: Path, tmp_path: Path) -> None:
    result = _run(corpus, "mini/broken", tmp_path / "s")
    assert result.status == UNREADABLE
    assert result.unreadable == "CorruptLogError"
    assert result.steps == []
    assert not (tmp_path / "s" / "table").exists()


# ---------------------------------------------------------------------------------------------- what fails
def _wrap(monkeypatch: pytest.MonkeyPatch, name: str, after: Callable[[DeltaLog, Any], None]) -> None:
    """Make ``DeltaLog.<name>`` do its real work, then ``after(log, result)``: a bug planted for the runner."""
    real = getattr(DeltaLog, name)

    def planted(self: DeltaLog, *args: Any, **kwargs: Any) -> Any:
        out = real(self, *args, **kwargs)
        after(self, out)
        return out

    monkeypatch.setattr(DeltaLog, name, planted)


def test_a_vacuum_that_deletes_a_live_file_fails_the_table(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def delete_one(log: DeltaLog, _: Any) -> None:
        victim = sorted(log.snapshot().files().column("path").to_pylist())[0]
        os.remove(os.path.join(log.location.removeprefix("file://"), victim))

    _wrap(monkeypatch, "vacuum", delete_one)
    result = _run(corpus, "mini/partitioned", tmp_path / "s", Peers())
    assert result.status == FAILED
    assert any("(latest): 1 live file(s) deleted" in f for f in result.failures)
    assert any(f.startswith("duckdb opened the original but not the result") for f in result.failures)


def test_a_checkpoint_that_loses_a_file_fails_the_table(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def drop_an_add(log: DeltaLog, result: Any) -> None:
        path = os.path.join(log.location.removeprefix("file://"), result.files[0])
        table = pq.read_table(path)
        adds = [i for i, a in enumerate(table.column("add").to_pylist()) if a is not None]
        pq.write_table(table.filter(pa.array([i != adds[0] for i in range(table.num_rows)])), path)

    _wrap(monkeypatch, "checkpoint", drop_an_add)
    result = _run(corpus, "mini/partitioned", tmp_path / "s")
    assert result.status == FAILED
    assert any(f.startswith("v3 changed: files: 1 gone or changed") for f in result.failures)
    assert any("ckpt.matches-replay" in f for f in result.failures if f.startswith("protocol violation introduced"))


def test_a_raw_exception_fails_the_table_with_its_class(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def raw(*_: Any, **__: Any) -> None:
        raise KeyError("planted")

    monkeypatch.setattr(DeltaLog, "start_transaction", raw)
    result = _run(corpus, "mini/partitioned", tmp_path / "s")
    assert result.status == FAILED
    assert result.failures == ["append: KeyError: 'planted'"]


# ---------------------------------------------------------------------------------------------- the command
def test_the_command_runs_tables_in_workers_and_ends_with_the_grep_line(
    corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--writes", "--corpus", str(corpus), "--jobs", "2", "-v"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "1 passed, 0 failed"
    assert out[-2] == "conformance writes: 3 tables: 1 passed, 1 refused, 0 failed, 1 unreadable (skipped)"
    assert "refused mini/future: maintenance refused, append refused" in out
    assert "maintenance (checkpoint, cleanup, vacuum): 1 passed, 1 refused, 0 failed" in out
    assert "skipped mini/broken: unreadable (CorruptLogError)" in out
    assert main(["--writes", "--corpus", str(corpus), "--table", "no/such-table"]) == 1


# ---------------------------------------------------------------------------------------------- the corpus
CORPUS = [corpus_dir()] if corpus_dir() is not None else []


@pytest.mark.corpus
@pytest.mark.parametrize("root", CORPUS, ids=["corpus"] * len(CORPUS))
def test_no_corpus_table_fails_the_write_checks(root: Path) -> None:
    before = _files(root)
    results = run_writes(str(root), jobs=2, timeout=120)
    failed = {r.name: r.failures for r in results if r.status == FAILED}
    assert failed == {}
    assert sum(r.status == PASSED for r in results) > 0
    unreadable = {r.name for r in results if r.status == UNREADABLE}
    assert unreadable == {e["name"] for e in load_manifest(str(root))["tables"] if unreadable_reason(e) is not None}
    for r in results:
        if r.status == REFUSED:
            assert r.refusals and all(why.split(": ", 1)[1] for why in r.refusals), r.name
    assert _files(root) == before  # the corpus is only read
    # maintenance is refused only for writer features deltalog does not know (or proposals) and for VACUUM
    # under UniForm: deletion vectors, CDF, column mapping, constraints, clustering... are maintained
    refused = {
        (r.name, s.name, s.feature) for r in results for s in r.steps if s.status == REFUSED and s.name != "append"
    }
    assert {feature for _, _, feature in refused} <= {"collations", "liquid", "icebergCompatV2"}, refused
    assert {(n, step) for n, step, f in refused if f == "icebergCompatV2"} <= {(n, "vacuum") for n, _, _ in refused}
    maintained = [r for r in results if r.status != UNREADABLE and r.maintenance == PASSED]
    for feature in ("deletionVectors", "changeDataFeed", "columnMapping", "checkConstraints", "v2Checkpoint"):
        assert any(feature in r.features for r in maintained), feature
