"""``_last_checkpoint.size`` of a V2 checkpoint counts every action it stores: the manifest's
checkpointMetadata and sidecar rows too, as Delta Spark and the corpus's V2 tables count them."""

from __future__ import annotations

from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog.checkpoint.v2 as v2
from deltalog import DeltaLog
from deltalog import actions as A


@pytest.mark.parametrize("sidecar_rows", [None, 2], ids=["manifest-only", "with-sidecars"])
def test_v2_hint_size_counts_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sidecar_rows: int | None
) -> None:
    if sidecar_rows is not None:
        monkeypatch.setattr(v2, "SIDECAR_ROWS", sidecar_rows)
    log = DeltaLog.for_table(tmp_path, auto_checkpoint=False)
    log.create(
        pa.schema([("id", pa.int64())]),
        configuration={"delta.feature.v2Checkpoint": "supported", "delta.checkpointPolicy": "v2"},
    )
    for i in range(5):
        log.start_transaction().commit(
            [A.Add(path=f"f{i}.parquet", partition_values={}, size=1, modification_time=1, data_change=True)]
        )
    result = log.checkpoint()
    hint = orjson.loads((tmp_path / "_delta_log" / "_last_checkpoint").read_bytes())
    rows = sum(pq.ParquetFile(tmp_path / f).metadata.num_rows for f in result.files)
    assert result.kind == "v2"
    assert hint["size"] == result.num_actions == rows
