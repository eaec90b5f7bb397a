"""Column-mapped tables written by deltalog (issue 14 item 7): new columns (at creation, ``add_columns``, any
metaData) get unique ``col-<uuid>`` physical names and ids with ``delta.columnMapping.maxColumnId`` only
growing; enabling name mode keeps the current names as physical names; id mode only at creation; adds keyed by
anything but the current schema's physical names are refused. duckdb and deltalake read the rows back (appends
are deltalog's: duckdb's own inserts into column-mapped partitioned tables are known to corrupt them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest

from deltalog import DeltaLog, InvalidCommitError, UnsupportedFeatureError
from deltalog.errors import MetadataChangedError
from tests.integration.modern_kit import IDS, append, checked, deltalake_ids, duckdb_ids, files_for, log_files, rows

MAPPING_ID = "delta.columnMapping.id"
PHYSICAL = "delta.columnMapping.physicalName"


def mapping(log: DeltaLog) -> dict[str, tuple[int, str]]:
    return {
        f["name"]: (f["metadata"][MAPPING_ID], f["metadata"][PHYSICAL]) for f in log.snapshot().schema_json["fields"]
    }


def max_id(log: DeltaLog) -> int:
    return int(log.snapshot().configuration["delta.columnMapping.maxColumnId"])


@pytest.mark.parametrize("mode", ["name", "id"])
def test_a_new_table_and_its_new_columns_get_ids_and_physical_names(tmp_path: Path, mode: str) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(IDS, configuration={"delta.columnMapping.mode": mode})
    assert "columnMapping" in log.snapshot().features
    first = mapping(log)
    assert [i for i, _ in first.values()] == [1, 2] and max_id(log) == 2
    assert all(p.startswith("col-") for _, p in first.values())
    append(log, rows(1, 2))
    checked(root, [1, 2])
    log.add_columns([pa.field("x", pa.int32())])
    second = mapping(log)
    assert {k: second[k] for k in first} == first  # existing pairs never change
    assert second["x"][0] == 3 and second["x"][1].startswith("col-") and max_id(log) == 3
    assert len({p for _, p in second.values()}) == 3
    append(log, pa.table({"id": pa.array([3], pa.int64()), "s": ["c"], "x": pa.array([30], pa.int32())}))
    checked(root, [1, 2, 3])
    assert duckdb_ids(root, "x") == deltalake_ids(root, "x") == [30, None, None]  # older files read x as null


def test_racing_schema_changes_never_share_an_id(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(IDS, configuration={"delta.columnMapping.mode": "name"})
    a, b = DeltaLog.for_table(root).start_transaction(), DeltaLog.for_table(root).start_transaction()

    def with_column(txn: Any, name: str) -> Any:
        schema = dict(txn.snapshot.schema_json)
        schema["fields"] = [*schema["fields"], {"name": name, "type": "long", "nullable": True, "metadata": {}}]
        return dataclasses.replace(txn.snapshot.metadata, schema_string=orjson.dumps(schema).decode())

    a.commit([with_column(a, "a")], operation="ADD COLUMNS")
    with pytest.raises(MetadataChangedError):
        b.commit([with_column(b, "b")], operation="ADD COLUMNS")  # it would have taken id 3 again
    log.add_columns([pa.field("b", pa.int64())])
    assert mapping(log)["a"][0] == 3 and mapping(log)["b"][0] == 4 and max_id(log) == 4
    checked(root)


def test_enabling_name_mode_keeps_the_names_the_files_use(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(IDS)
    append(log, rows(1, 2))
    log.set_properties({"delta.columnMapping.mode": "name"})
    assert mapping(log) == {"id": (1, "id"), "s": (2, "s")} and max_id(log) == 2
    log.add_columns([pa.field("x", pa.int64())])
    assert mapping(log)["x"][1].startswith("col-")
    append(log, pa.table({"id": pa.array([3], pa.int64()), "s": ["c"], "x": pa.array([9], pa.int64())}))
    checked(root, [1, 2, 3])
    before = log_files(root)
    with pytest.raises(UnsupportedFeatureError, match="id mode can only be chosen when a table is created") as info:
        fresh = DeltaLog.for_table(tmp_path / "u")
        fresh.create(IDS)
        fresh.set_properties({"delta.columnMapping.mode": "id"})
    assert info.value.feature == "columnMapping"
    with pytest.raises(UnsupportedFeatureError, match="leaving column mapping"):
        log.set_properties({"delta.columnMapping.mode": "none"})
    assert log_files(root) == before


def test_adds_keyed_by_logical_names_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    log.create(schema, ["p"], configuration={"delta.columnMapping.mode": "name"})
    physical = mapping(log)
    good = files_for(log, pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["a", "b"]}))
    assert {k for a in good for k in a.partition_values} == {physical["p"][1]}
    before = log_files(root)
    logical_partition = dataclasses.replace(good[0], partition_values={"p": "a"})
    with pytest.raises(InvalidCommitError, match="partition"):
        log.start_transaction().commit([logical_partition])
    stats = orjson.loads(good[0].stats or "{}")
    stats["minValues"] = {"id": 1}
    logical_stats = dataclasses.replace(good[0], stats=orjson.dumps(stats).decode())
    with pytest.raises(InvalidCommitError, match="not a physical column name") as info:
        log.start_transaction().commit([logical_stats])
    assert info.value.rule == "physical-names"
    assert log_files(root) == before
    log.start_transaction().commit(good)
    checked(root, [1, 2])
