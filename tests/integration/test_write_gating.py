"""Writing is refused, by feature name, on corpus tables that use writer features deltalog does not implement.

Reading those tables stays allowed: the obligations are on new commits only.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from deltalog import DeltaLog, UnsupportedFeatureError
from deltalog import actions as A
from tests.corpus import corpus_entries, table_path

NAMES = {e["name"] for e in corpus_entries()}

REFUSED = {
    "dat/check_constraints": "checkConstraints",
    "dat/generated_columns": "generatedColumns",
    "dat/deletion_vectors": "deletionVectors",
    "delta/table-with-columnmapping-mode-id": "columnMapping",
    "delta-rs/issue-2152": "identityColumns",
    "delta-kernel-rs/crc-full": "clustering",
    "delta/collations-table": "collations",
}
WRITABLE = [
    "dat/basic_append",
    "dat/basic_partitioned",
    "delta-rs/simple_table",
    "delta/checkpoint",
    "delta-kernel-rs/v2-checkpoints-json-with-sidecars",
    "delta/type-widening",
    "dat/cdf",  # an append needs no change files (the gate is per operation since issue 14)
]


def _append_one(root: Path) -> int | None:
    log = DeltaLog.for_table(root)
    txn = log.start_transaction()
    snap = txn.snapshot
    values: dict[str, str | None] = {snap.physical_names[c]: None for c in snap.partition_columns}
    result = txn.commit(
        [A.Add(path="new-file.parquet", partition_values=values, size=1, modification_time=1, data_change=True)]
    )
    return result.version


def _copy(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / "t"
    shutil.copytree(table_path(name), dst)
    return dst


@pytest.mark.corpus
@pytest.mark.parametrize("name", sorted(n for n in REFUSED if n in NAMES))
def test_table_using_unhonoured_writer_feature_is_refused_for_writing(name: str, tmp_path: Path) -> None:
    root = _copy(name, tmp_path)
    before = sorted(p.name for p in (root / "_delta_log").iterdir())
    with pytest.raises(UnsupportedFeatureError) as info:
        _append_one(root)
    assert info.value.feature == REFUSED[name]
    assert REFUSED[name] in str(info.value) and "_delta_log" in str(info.value)
    assert sorted(p.name for p in (root / "_delta_log").iterdir()) == before  # nothing written
    DeltaLog.for_table(root).snapshot().files()  # reading stays allowed


@pytest.mark.corpus
@pytest.mark.parametrize("name", [n for n in WRITABLE if n in NAMES])
def test_table_with_only_honoured_features_accepts_a_commit(name: str, tmp_path: Path) -> None:
    root = _copy(name, tmp_path)
    latest = DeltaLog.for_table(root).snapshot().version
    assert _append_one(root) == latest + 1
    assert "new-file.parquet" in DeltaLog.for_table(root).snapshot().files().column("path").to_pylist()
