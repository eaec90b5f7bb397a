"""``change_column_type`` (issue 29 item 3): exactly the type-widening RFC's changes, recorded in
``delta.typeChanges``, only with ``delta.enableTypeWidening=true`` (set with the feature by
``enable_type_widening=True``); older files are cast when read, new ones are written in the wide type. duckdb reads
the widened table; deltalake 1.6.6 refuses tables with the typeWidening reader feature (its refusal is asserted).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog import DeltaLog
from deltalog.core.features.peer_writers import cannot_write
from deltalog.core.features.type_widening import allowed
from deltalog.errors import InvalidArgumentError, SchemaError
from tests.integration.modern_kit import KINDS, duckdb_ids
from tests.peers import try_deltalake
from tests.protocol_checker import assert_valid

DATA = pa.table(
    {
        "id": pa.array([1, 2], pa.int32()),
        "b": pa.array([1, -2], pa.int8()),
        "f": pa.array([1.5, 2.5], pa.float32()),
        "d": pa.array([Decimal("1.5"), Decimal("-2.5")], pa.decimal128(5, 1)),
        "day": pa.array([0, 1], pa.date32()),
        "region": ["a", "b"],
    }
)


def test_exactly_the_rfc_widenings_are_allowed() -> None:
    integers = ["byte", "short", "integer", "long"]
    for i, old in enumerate(integers):
        assert [allowed(old, new) for new in integers] == [j > i for j in range(4)]
        assert allowed(old, "double") == (old != "long")  # long -> double loses digits: not one
    assert allowed("float", "double") and not allowed("double", "float") and not allowed("float", "long")
    assert (
        allowed("date", "timestamp_ntz") and not allowed("date", "timestamp") and not allowed("timestamp_ntz", "date")
    )
    assert (
        allowed("integer", "decimal(10,0)")
        and allowed("short", "decimal(12,2)")
        and not allowed("integer", "decimal(9,0)")
    )
    assert not allowed("integer", "decimal(11,2)")  # k1=1 < k2=2: a digit of the integer part would be lost
    assert (
        allowed("long", "decimal(20,0)") and not allowed("long", "decimal(19,0)") and allowed("long", "decimal(22,2)")
    )
    assert allowed("decimal(5,1)", "decimal(7,3)") and not allowed("decimal(5,1)", "decimal(6,3)")
    assert not allowed("decimal(5,1)", "decimal(5,0)") and not allowed("decimal(5,1)", "decimal(5,1)")
    assert not allowed("long", "integer") and not allowed("string", "long") and not allowed("integer", "string")


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_widened_columns_read_identically_and_new_files_are_wide(tmp_path: Path, kind: str, partitioned: bool) -> None:
    root = tmp_path / "t"
    deltalog.write(DATA, root, partition_by=["region"] if partitioned else None, configuration=KINDS[kind])
    log = DeltaLog.for_table(root)
    before = log.snapshot()
    plan = log.change_column_type("id", "bigint", enable_type_widening=True, dry_run=True)
    assert plan.dry_run and log.latest_version() == before.version
    assert "typeWidening" in (plan.new_protocol.reader_features or ()) and plan.new_protocol.min_reader_version == 3
    assert "deltalake 1.6.6" in {**plan.writers_lost, **cannot_write(before.protocol)}
    done = log.change_column_type("id", "bigint", enable_type_widening=True)
    assert done.version == before.version + 1 and done.new_protocol == plan.new_protocol
    log.change_column_type("b", "decimal(12,2)")  # the property is set now
    log.change_column_type("f", pa.float64())
    log.change_column_type("d", "decimal(8,3)")
    log.change_column_type("day", "timestamp_ntz")
    snap = log.snapshot()
    fields = {f["name"]: f for f in snap.schema_json["fields"]}
    assert fields["id"]["type"] == "long" and fields["b"]["type"] == "decimal(12,2)"
    assert fields["id"]["metadata"]["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    assert fields["day"]["metadata"]["delta.typeChanges"] == [{"fromType": "date", "toType": "timestamp_ntz"}]
    assert snap.configuration["delta.enableTypeWidening"] == "true"
    big = pa.table(
        {
            "id": pa.array([2**40], pa.int64()),
            "b": pa.array([Decimal("123.45")], pa.decimal128(12, 2)),
            "f": pa.array([0.1], pa.float64()),
            "d": pa.array([Decimal("1.234")], pa.decimal128(8, 3)),
            "day": pa.array([pa.scalar(86400 * 2 * 10**6, pa.timestamp("us")).as_py()], pa.timestamp("us")),
            "region": ["c"],
        }
    )
    deltalog.write(big, root)
    assert_valid(root)
    ours = log.snapshot().to_arrow().sort_by("id")
    assert ours.schema.field("id").type == pa.int64() and ours.column("id").to_pylist() == [1, 2, 2**40]
    assert ours.column("b").to_pylist() == [Decimal("1.00"), Decimal("-2.00"), Decimal("123.45")]
    assert ours.column("f").to_pylist() == [1.5, 2.5, 0.1]
    assert ours.column("day").to_pylist()[:2] == [
        pa.scalar(0, pa.timestamp("us")).as_py(),
        pa.scalar(86400 * 10**6, pa.timestamp("us")).as_py(),
    ]
    assert duckdb_ids(root) == [1, 2, 2**40]
    assert duckdb_ids(root, "b") == [Decimal("-2.00"), Decimal("1.00"), Decimal("123.45")]
    assert duckdb_ids(root, "CAST(day AS VARCHAR)") == [
        "1970-01-01 00:00:00",
        "1970-01-02 00:00:00",
        "1970-01-03 00:00:00",
    ]
    refused = try_deltalake(root)
    assert isinstance(refused, str) and "TypeWidening" in refused  # deltalake 1.6.6 reads no such table
    assert log.snapshot().to_arrow(filter="id > 2").column("id").to_pylist() == [2**40]  # older stats still skip


def test_narrowing_and_unlisted_changes_are_refused_by_name(tmp_path: Path) -> None:
    root = tmp_path / "t"
    deltalog.write(DATA.append_column("big", pa.array([1, 2], pa.int64())), root, partition_by=["day"])
    log = DeltaLog.for_table(root)
    with pytest.raises(InvalidArgumentError, match="enable_type_widening=True"):
        log.change_column_type("id", "long")
    for column, to in [
        ("big", "integer"),
        ("big", "double"),
        ("id", "string"),
        ("f", "decimal(10,2)"),
        ("id", "decimal(9,0)"),
    ]:
        with pytest.raises(SchemaError, match=f"column '{column}'") as refused:
            log.change_column_type(column, to, enable_type_widening=True)
        assert refused.value.field == column
    with pytest.raises(SchemaError, match="partition column 'day'"):
        log.change_column_type("day", "timestamp_ntz", enable_type_widening=True)
    log.add_constraint("small", "b < 100")
    with pytest.raises(SchemaError, match="small"):
        log.change_column_type("b", "short", enable_type_widening=True)
    assert log.latest_version() == 1 and "typeWidening" not in log.snapshot().features
    assert duckdb_ids(root, "big") == [1, 2]
    assert_valid(root)


def test_the_cli_widens_only_with_apply(tmp_path: Path) -> None:
    from tests.unit.cli_runs import as_json, fails

    root = tmp_path / "t"
    deltalog.write(DATA, root)
    plan = as_json("change-column-type", root, "id", "long", "--enable-type-widening")
    assert (
        plan["dry_run"]
        and plan["new_protocol"]["min_reader_version"] == 3
        and "deltalake 1.6.6" in plan["writers_lost"]
    )
    assert DeltaLog.for_table(root).latest_version() == 0
    assert "enable_type_widening" in fails("change-column-type", root, "id", "long", "--apply")
    assert as_json("change-column-type", root, "id", "long", "--enable-type-widening", "--apply")["version"] == 1
    assert duckdb_ids(root) == [1, 2]
