"""``Transaction.commit(rows_validated=...)``: how a data writer (deltalog's own, Spark's executors) commits to
tables with row rules and to column-mapped tables, and what stays refused.

Without the statement nothing changes: a table with CHECK constraints refuses a plain commit of new rows. With
it the commit lands and records who validated the rows in commitInfo; its adds must key partition values
and statistics by physical names on a column-mapped table; a commit that also changes metadata gets no such
allowance. Tables are created by ``deltalake``, files written by the public data-file writer, and every
result is read by both peers and the protocol checker.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from deltalog import DeltaLog
from deltalog.data.files import WriteTarget, write_files
from deltalog.errors import InvalidCommitError, UnsupportedFeatureError
from tests.peers import deltalake_view, duckdb_view
from tests.protocol_checker import assert_valid


def commit_info(root: Path, version: int) -> dict[str, object]:
    for line in (root / "_delta_log" / f"{version:020d}.json").read_bytes().splitlines():
        doc = orjson.loads(line)
        if "commitInfo" in doc:
            return dict(doc["commitInfo"])
    raise AssertionError("no commitInfo")


def test_a_constrained_table_takes_validated_rows_only(tmp_path: Path) -> None:
    root = tmp_path / "constrained"
    table = DeltaTable.create(str(root), pa.schema([("id", pa.int64()), ("amount", pa.float64())]))
    table.alter.add_constraint({"positive": "amount > 0"})
    log = DeltaLog.for_table(root)
    adds = write_files(log.store, pa.table({"id": [1, 2], "amount": [1.5, 2.0]}), WriteTarget.of(log.snapshot()))

    with pytest.raises(UnsupportedFeatureError, match="checkConstraints"):
        log.start_transaction().commit(adds)
    with pytest.raises(InvalidCommitError, match="nobody validated"):
        log.start_transaction().commit(adds, rows_validated="maybe")
    result = log.start_transaction().commit(adds, rows_validated="checked")
    assert result.version == 2
    assert commit_info(root, 2)["deltalogValidation"] == {"newRows": "checked"}

    assert_valid(root)
    assert deltalake_view(root).rows == 2
    assert duckdb_view(root).rows == 2


def test_a_column_mapped_table_takes_adds_keyed_by_physical_names(tmp_path: Path) -> None:
    root = tmp_path / "mapped"
    schema = pa.schema([("id", pa.int64()), ("Part Col", pa.string())])
    DeltaTable.create(str(root), schema, partition_by=["Part Col"], configuration={"delta.columnMapping.mode": "name"})
    log = DeltaLog.for_table(root)
    snap = log.snapshot()
    (add,) = write_files(log.store, pa.table({"id": [1, 2], "Part Col": ["a", "a"]}), WriteTarget.of(snap))
    physical = snap.physical_names["Part Col"]
    assert dict(add.partition_values) == {physical: "a"}

    logical = replace(add, partition_values={"Part Col": "a"})
    with pytest.raises(InvalidCommitError, match="physical"):
        log.start_transaction().commit([logical], rows_validated="checked")
    with pytest.raises(UnsupportedFeatureError, match="columnMapping"):
        log.start_transaction().commit([add])  # no data writer's statement: refused as before
    metadata = replace(snap.metadata, description="changed")
    with pytest.raises(UnsupportedFeatureError, match="columnMapping"):
        log.start_transaction().commit([add, metadata], rows_validated="checked")
    assert log.start_transaction().commit([add], rows_validated="checked").version == 1

    assert_valid(root)
    assert deltalake_view(root).rows == 2
    assert duckdb_view(root).rows == 2
