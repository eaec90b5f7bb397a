"""The protocol checker on logs ``deltalake`` writes: every operation it offers leaves a log that passes.

Each scenario checks after every operation (incrementally, strict mode) and once more from scratch at the
end; the final table is read by deltalake and duckdb, which must agree on the rows. One known deltalake bug
(``add_feature(RowTracking)`` without ``domainMetadata``, ``../shared/docs/table-features.md`` section 6) is
shown to be caught.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.table import TableFeatures

from tests.peers import deltalake_view, duckdb_view
from tests.protocol_checker import CheckState, assert_valid, check_table

Step = Callable[[str], object]


def _data(start: int = 0, n: int = 6) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": [f"p{i % 2}" for i in ids],
            "value": pa.array([float(i) for i in ids], pa.float64()),
        }
    )


def _merge(table: str) -> None:
    (
        DeltaTable(table)
        .merge(_data(3, 6), "s.id = t.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )


def _vacuum(table: str) -> None:
    DeltaTable(table).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)


SCENARIOS: dict[str, list[Step]] = {
    "writes-deletes-optimize-checkpoint-vacuum": [
        lambda t: write_deltalake(t, _data()),
        lambda t: write_deltalake(t, _data(10), mode="append"),
        lambda t: write_deltalake(t, _data(20), mode="overwrite"),
        lambda t: DeltaTable(t).delete("id = 21"),
        lambda t: DeltaTable(t).optimize.compact(),
        lambda t: DeltaTable(t).optimize.z_order(["id"]),
        lambda t: DeltaTable(t).create_checkpoint(),
        _vacuum,
        lambda t: write_deltalake(t, _data(30), mode="append"),
    ],
    "partitioned-merge-update-constraint-restore": [
        lambda t: write_deltalake(t, _data(), partition_by=["part"]),
        lambda t: write_deltalake(t, _data(10), mode="append", partition_by=["part"]),
        lambda t: DeltaTable(t).delete("part = 'p0'"),
        _merge,
        lambda t: DeltaTable(t).update({"value": "value + 1"}, predicate="id > 4"),
        lambda t: DeltaTable(t).alter.add_constraint({"id_not_negative": "id >= 0"}),
        lambda t: write_deltalake(t, _data(40), mode="append"),
        lambda t: DeltaTable(t).create_checkpoint(),
        lambda t: DeltaTable(t).restore(2),
    ],
    "column-mapping-name-mode": [
        lambda t: write_deltalake(
            t, _data(), partition_by=["part"], configuration={"delta.columnMapping.mode": "name"}
        ),
        lambda t: write_deltalake(t, _data(10), mode="append"),
        lambda t: DeltaTable(t).delete("id = 2"),
        _merge,
        lambda t: DeltaTable(t).create_checkpoint(),
        lambda t: write_deltalake(t, _data(20), mode="append"),
    ],
    "change-data-feed": [
        lambda t: write_deltalake(t, _data(), configuration={"delta.enableChangeDataFeed": "true"}),
        lambda t: DeltaTable(t).delete("id = 2"),
        lambda t: DeltaTable(t).update({"value": "value + 1"}, predicate="id = 3"),
        _merge,
        lambda t: write_deltalake(t, _data(10), mode="overwrite"),
    ],
    "deletion-vectors-enabled-append-only-writer": [
        lambda t: write_deltalake(t, _data(), configuration={"delta.enableDeletionVectors": "true"}),
        lambda t: write_deltalake(t, _data(10), mode="append"),
        lambda t: DeltaTable(t).delete("id = 1"),
        lambda t: DeltaTable(t).create_checkpoint(),
    ],
    "append-only": [
        lambda t: write_deltalake(t, _data(), configuration={"delta.appendOnly": "true"}),
        lambda t: write_deltalake(t, _data(10), mode="append"),
        lambda t: DeltaTable(t).optimize.compact(),
    ],
}


@pytest.mark.interop
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_deltalake_logs_pass_the_checker_after_every_operation(tmp_path: Path, name: str) -> None:
    table = str(tmp_path / "t")
    state: CheckState | None = None
    for step in SCENARIOS[name]:
        step(table)
        state = assert_valid(table, since=state)
    assert state is not None and state.version == DeltaTable(table).version()
    assert check_table(table) == []
    seen_by_deltalake = deltalake_view(Path(table))
    assert duckdb_view(Path(table)).rows == seen_by_deltalake.rows


@pytest.mark.interop
def test_the_checker_catches_deltalakes_row_tracking_without_domain_metadata(tmp_path: Path) -> None:
    table = str(tmp_path / "t")
    write_deltalake(table, _data())
    DeltaTable(table).alter.add_feature(TableFeatures.RowTracking, allow_protocol_versions_increase=True)
    found = [(v.rule, v.version) for v in check_table(table)]
    assert found == [("protocol.feature-dependency", 1)]
