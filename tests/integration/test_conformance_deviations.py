"""The two deliberate deviations from the reference reader, each with why (see conformance/deviations.py)."""

from __future__ import annotations

import pytest

from conformance import deviations
from deltalog import DeltaLog
from deltalog.errors import CorruptLogError
from tests.corpus import corpus_entries, table_path

NAMES = {e["name"] for e in corpus_entries()}
SCHEMALESS = sorted(n for n in deviations.STATES if n in NAMES)
TXN_TABLE = [n for n in ("delta-kernel-rs/app-txn-with-last-updated",) if n in NAMES]
CANONICAL = [n for n in ("delta/canonicalized-paths-normal-a", "delta/canonicalized-paths-special-a") if n in NAMES]


@pytest.mark.corpus
@pytest.mark.parametrize("name", SCHEMALESS)
def test_metadata_without_schema_string_reads_as_delta_spark_does(name: str) -> None:
    # Why: Delta Spark reads a metaData without schemaString as an empty schema; the reference refuses.
    # The log replays correctly without the data schema, so refusing would only lock users out.
    log = DeltaLog.for_table(table_path(name))
    for version, state in deviations.STATES[name].items():
        if "error" in state:
            with pytest.raises(state["error"]) as info:
                log.snapshot(version=version)
            assert "_delta_log" in str(info.value)
            continue
        snap = log.snapshot(version=version)
        assert snap.metadata.schema_string is None
        assert snap.schema_json == {"type": "struct", "fields": []}
        assert len(snap.schema) == 0
        assert sorted(snap.files().column("path").to_pylist()) == state["paths"]


@pytest.mark.corpus
@pytest.mark.parametrize("name", CANONICAL)
def test_remove_spelled_as_file_uri_cancels_the_absolute_add(name: str) -> None:
    # Why: Delta Spark canonicalises paths before reconciling; `/p` and `file:/p` are one file.
    log = DeltaLog.for_table(table_path(name))
    assert log.snapshot(version=0).num_files == 1
    assert log.snapshot(version=1).num_files == 0
    assert log.snapshot(version=1).tombstones().num_rows == 1


@pytest.mark.corpus
@pytest.mark.parametrize("name", TXN_TABLE)
def test_txn_without_last_updated_expires_under_retention(name: str) -> None:
    # Why: Delta Spark drops a txn whose lastUpdated is missing once a retention is set (the reference
    # keeps it forever). Pin the clock just after old_app's lastUpdated: only old_app is still fresh.
    old_app_updated_ms = 1747935650
    pinned = DeltaLog.for_table(table_path(name), clock=lambda: (old_app_updated_ms + 1000) / 1000)
    snap = pinned.snapshot()
    assert snap.configuration["delta.setTransactionRetentionDuration"] == "interval 1 days"
    assert snap.app_version("old_app") == 1
    assert snap.app_version("new_app_0") is None  # no lastUpdated: expired, unlike the reference
    assert snap.app_version("new_app_1") is None  # lastUpdated 1000 ms: older than a day before the clock
    today = DeltaLog.for_table(table_path(name)).snapshot()
    assert today.txns == {}


def test_missing_metadata_in_checkpoint_is_still_refused(tmp_path: object) -> None:
    # The schemaString deviation does not extend to a checkpoint with no metaData at all.
    name = "delta/deltalog-state-reconstruction-from-checkpoint-missing-metadata"
    if name not in NAMES:
        return
    with pytest.raises(CorruptLogError, match=r"00000000000000000010\.checkpoint\.parquet"):
        DeltaLog.for_table(table_path(name)).snapshot()
