"""The write rules on real tables: schemas and the protocol they need, partition values, table properties.

Every table written here is opened by ``deltalake`` and duckdb (tests/peers.py), which must agree with
deltalog on the live files and rows; every refusal is typed and leaves ``_delta_log`` as it was.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from deltalog import (
    DeltaLog,
    InvalidArgumentError,
    InvalidCommitError,
    PropertyError,
    SchemaError,
    UnsupportedFeatureError,
)
from deltalog import actions as A
from deltalog.arrow.stats import stats_json
from deltalog.cli.main import cli
from deltalog.core.log.codec import encode_actions
from tests.peers import deltalake_view, duckdb_view

pytestmark = pytest.mark.interop


# ---------------------------------------------------------------------------------------------- helpers
def log_files(root: Path) -> dict[str, bytes]:
    log_dir = root / "_delta_log"
    return {p.name: p.read_bytes() for p in sorted(log_dir.iterdir()) if p.is_file()} if log_dir.exists() else {}


def append(root: Path, data: pa.Table, partition_values: dict[str, str | None] | None = None) -> int:
    """Write ``data`` (data columns only) as a parquet file and commit it; the new version."""
    name = f"part-{len(list(root.glob('*.parquet'))):05d}.parquet"
    pq.write_table(data, root / name)
    add = A.Add(name, partition_values or {}, (root / name).stat().st_size, 1, True, stats=stats_json(data))
    version = DeltaLog.for_table(root).start_transaction().commit([add]).version
    assert version is not None
    return version


def peers_agree(root: Path) -> None:
    """deltalake and duckdb open the latest version and see deltalog's live files and their rows."""
    snap = DeltaLog.for_table(root).snapshot()
    files = frozenset(a.path for a in snap.add_actions())
    rows = sum(pq.read_metadata(root / f).num_rows for f in files)
    lake, duck = deltalake_view(root), duckdb_view(root)
    assert lake.version == snap.version
    assert lake.files == duck.files == files
    assert lake.rows == duck.rows == rows


def refused_before_writing(root: Path, error: type[Exception], call: Any, *args: Any, **kwargs: Any) -> Any:
    before = log_files(root)
    with pytest.raises(error) as info:
        call(*args, **kwargs)
    assert log_files(root) == before, "refused after writing to the log"
    return info.value


def foreign_commit(root: Path, configuration: dict[str, str]) -> None:
    """Another engine sets properties deltalog would refuse (a commit deltalog did not check)."""
    snap = DeltaLog.for_table(root).snapshot()
    meta = replace(snap.metadata, configuration={**snap.configuration, **configuration})
    info = A.CommitInfo(timestamp=1, operation="SET TBLPROPERTIES", engine_info="other-engine/1.0")
    (root / "_delta_log" / f"{snap.version + 1:020d}.json").write_bytes(encode_actions([info, meta]))


def protocol_of(root: Path, version: int) -> dict[str, Any]:
    lines = [orjson.loads(x) for x in (root / "_delta_log" / f"{version:020d}.json").read_bytes().splitlines()]
    return next(line["protocol"] for line in lines if "protocol" in line)


IDS = pa.schema([("id", pa.int64())])
LEGACY = ["appendOnly", "invariants"]


def ids_table(tmp_path: Path) -> tuple[Path, DeltaLog]:
    """A (1,2) table of one long column holding one file: version 1."""
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(IDS)
    append(root, pa.table({"id": [1]}))
    return root, log


# ---------------------------------------------------------------------------------------------- 1. schema and protocol
def test_a_timestamp_without_zone_makes_the_protocol_list_timestamp_ntz(tmp_path: Path) -> None:
    root = tmp_path / "t"
    DeltaLog.for_table(root).create(pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us"))]))
    assert protocol_of(root, 0) == {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["timestampNtz"],
        "writerFeatures": [*LEGACY, "timestampNtz"],
    }
    append(root, pa.table({"id": [1, 2], "ts": pa.array([0, None], pa.timestamp("us"))}))
    peers_agree(root)


def test_add_columns_upgrades_the_protocol_in_the_same_commit(tmp_path: Path) -> None:
    root, log = ids_table(tmp_path)
    result = log.add_columns([pa.field("ts", pa.timestamp("us"))])
    assert result.version == 2
    assert protocol_of(root, 2)["readerFeatures"] == ["timestampNtz"]
    append(root, pa.table({"id": [2], "ts": pa.array([5], pa.timestamp("us"))}))
    peers_agree(root)


def test_a_metadata_commit_with_a_variant_column_adds_variant_type(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(IDS)
    snap = log.snapshot()
    schema = {
        **snap.schema_json,
        "fields": [*snap.schema_json["fields"], {"name": "v", "type": "variant", "nullable": True, "metadata": {}}],
    }
    log.start_transaction().commit([replace(snap.metadata, schema_string=orjson.dumps(schema).decode())])
    assert "variantType" in protocol_of(root, 1)["readerFeatures"]
    variant = pa.struct([pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary(), False)])
    data = pa.table({"id": [1], "v": pa.array([None], variant)})
    name = "v.parquet"
    pq.write_table(data, root / name)
    log.start_transaction().commit([A.Add(name, {}, (root / name).stat().st_size, 1, True, stats='{"numRecords":1}')])
    peers_agree(root)


@pytest.mark.parametrize(
    ("fields", "partition_columns", "field"),
    [
        ([("id", "long"), ("amount", "decimal(40,2)")], [], "amount"),
        (
            [
                ("id", "long"),
                (
                    "s",
                    {
                        "type": "struct",
                        "fields": [
                            {"name": "a", "type": "long", "nullable": True, "metadata": {}},
                            {"name": "A", "type": "long", "nullable": True, "metadata": {}},
                        ],
                    },
                ),
            ],
            [],
            "s.A",
        ),
        ([("id", "long"), ("with space", "long")], [], "with space"),
        ([("id", "long"), ("v", "void")], [], "v"),
        ([("id", "long"), ("p", "string")], ["id", "p"], None),
        (
            [
                ("id", "long"),
                ("m", {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": True}),
            ],
            ["m"],
            "m",
        ),
    ],
)
def test_schemas_breaking_a_rule_are_refused_before_anything_is_written(
    tmp_path: Path, fields: list[tuple[str, Any]], partition_columns: list[str], field: str | None
) -> None:
    root = tmp_path / "t"
    schema = {"type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields]}
    err = refused_before_writing(
        root, SchemaError, DeltaLog.for_table(root).create, orjson.dumps(schema).decode(), partition_columns
    )
    assert isinstance(err, InvalidCommitError)
    assert err.field == field
    assert not (root / "_delta_log").exists()


def test_a_void_column_cannot_be_added_and_a_metadata_commit_is_checked(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(pa.schema([("id", pa.int64()), ("name", pa.string())]))
    append(root, pa.table({"id": [1], "name": ["a"]}))
    refused_before_writing(root, SchemaError, log.add_columns, [pa.field("nothing", pa.null())])
    snap = log.snapshot()
    dup = {
        **snap.schema_json,
        "fields": [*snap.schema_json["fields"], {"name": "NAME", "type": "string", "nullable": True, "metadata": {}}],
    }
    txn = log.start_transaction()
    refused_before_writing(
        root, SchemaError, txn.commit, [replace(snap.metadata, schema_string=orjson.dumps(dup).decode())]
    )
    peers_agree(root)


def test_asking_for_writer_version_7_keeps_what_the_legacy_versions_implied(tmp_path: Path) -> None:
    root, log = ids_table(tmp_path)
    log.set_properties({"delta.minWriterVersion": "7"})
    assert log.snapshot().protocol == A.Protocol(1, 7, None, tuple(LEGACY))
    log.set_properties({"delta.feature.timestampNtz": "supported"})
    assert log.snapshot().protocol == A.Protocol(3, 7, ("timestampNtz",), (*LEGACY, "timestampNtz"))
    peers_agree(root)


def test_a_protocol_upgrade_that_drops_what_legacy_versions_implied_is_refused(tmp_path: Path) -> None:
    root, log = ids_table(tmp_path)
    txn = log.start_transaction()
    err = refused_before_writing(root, InvalidCommitError, txn.commit, [A.Protocol(1, 7, None, ("domainMetadata",))])
    assert err.rule == "no-feature-drop" and "appendOnly" in str(err)
    log.start_transaction().commit([A.Protocol(1, 7, None, (*LEGACY, "domainMetadata"))])
    peers_agree(root)


# ---------------------------------------------------------------------------------------------- 2. partition values
SALES = pa.schema([("id", pa.int64()), ("n", pa.int32()), pa.field("day", pa.date32(), nullable=False)])


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"n": "abc", "day": "2024-01-01"}, "n='abc'"),
        ({"n": "1", "day": "not-a-date"}, "day='not-a-date'"),
        ({"n": "1", "day": None}, "'day' is not nullable"),
        ({"n": "1", "day": ""}, "'day' is not nullable"),
        ({"n": "2147483648", "day": "2024-01-01"}, "n='2147483648'"),
    ],
)
def test_partition_values_that_do_not_fit_their_column_are_refused(
    tmp_path: Path, values: dict[str, str | None], match: str
) -> None:
    root = tmp_path / "t"
    DeltaLog.for_table(root).create(SALES, partition_columns=["n", "day"])
    append(root, pa.table({"id": [1]}), {"n": "-7", "day": "2024-02-29"})
    append(root, pa.table({"id": [2]}), {"n": None, "day": "2024-03-01"})
    err = refused_before_writing(root, InvalidCommitError, append, root, pa.table({"id": [3]}), values)
    assert err.rule == "partition-values" and match in str(err)
    peers_agree(root)


def test_the_cli_refuses_a_bad_partition_value_in_one_line(tmp_path: Path) -> None:
    root = tmp_path / "t"
    DeltaLog.for_table(root).create(SALES, partition_columns=["n", "day"])
    append(root, pa.table({"id": [1]}), {"n": "1", "day": "2024-02-29"})
    pq.write_table(pa.table({"id": [2]}), root / "x.parquet")
    bad = {"path": "x.parquet", "partitionValues": {"n": "1", "day": "not-a-date"}, "size": 1}
    actions = tmp_path / "actions.jsonl"
    actions.write_bytes(orjson.dumps({"add": {**bad, "modificationTime": 1, "dataChange": True}}) + b"\n")
    before = log_files(root)
    result = CliRunner().invoke(cli, ["commit", str(root), "--actions", str(actions), "--operation", "WRITE"])
    assert result.exit_code == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ") and "day='not-a-date'" in line
    assert log_files(root) == before
    peers_agree(root)


# ---------------------------------------------------------------------------------------------- 3. properties
def test_properties_are_stored_in_canonical_spelling_and_take_effect(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(IDS, configuration={"DELTA.CHECKPOINTINTERVAL": "3", "owner": "team"})
    append(root, pa.table({"id": [1]}))
    log.set_properties({"DELTA.APPENDONLY": "TRUE"})
    assert log.snapshot().configuration == {
        "delta.checkpointInterval": "3",
        "owner": "team",
        "delta.appendOnly": "true",
    }
    txn = log.start_transaction()
    txn.remove_where()
    refused_before_writing(root, InvalidCommitError, txn.commit)  # append-only is enforced
    peers_agree(root)


@pytest.mark.parametrize(
    ("props", "error", "key"),
    [
        ({"delta.isolationLevel": "snapshot"}, PropertyError, "delta.isolationLevel"),
        (
            {"delta.deletedFileRetentionDuration": "interval 1 month"},
            PropertyError,
            "delta.deletedFileRetentionDuration",
        ),
        ({"delta.logRetentionDuration": "interval 2 days"}, PropertyError, "delta.logRetentionDuration"),
        ({"delta.checkpointInterval": "0"}, PropertyError, "delta.checkpointInterval"),
        ({"delta.columnMapping.maxColumnId": "9"}, PropertyError, "delta.columnMapping.maxColumnId"),
        ({"delta.constraints.positive": "id > 0"}, PropertyError, "delta.constraints.positive"),
        ({"delta.targetFileSize": "100mb"}, PropertyError, "delta.targetFileSize"),
        ({"delta.enableIcebergCompatV2": "true"}, UnsupportedFeatureError, "icebergCompatV2"),
    ],
)
def test_bad_properties_are_refused_by_name_on_create_and_set(
    tmp_path: Path, props: dict[str, str], error: type[Exception], key: str
) -> None:
    fresh = tmp_path / "new"
    err = refused_before_writing(fresh, error, DeltaLog.for_table(fresh).create, IDS, configuration=props)
    assert key in str(err)
    root = tmp_path / "t"
    DeltaLog.for_table(root).create(IDS)
    append(root, pa.table({"id": [1]}))
    err = refused_before_writing(root, error, DeltaLog.for_table(root).set_properties, props)
    assert key in str(err)
    peers_agree(root)


def test_unknown_delta_keys_need_the_opt_in(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(IDS, configuration={"delta.targetFileSize": "100mb"}, allow_unknown_properties=True)
    log.set_properties({"delta.tuneFileSizesForRewrites": "true"}, allow_unknown_properties=True)
    assert log.snapshot().configuration == {"delta.targetFileSize": "100mb", "delta.tuneFileSizesForRewrites": "true"}
    append(root, pa.table({"id": [1]}))
    peers_agree(root)


def test_properties_switching_on_implemented_features_add_them_in_the_same_commit(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(IDS, configuration={"delta.minWriterVersion": "1"})
    assert log.snapshot().protocol == A.Protocol(1, 1)
    append(root, pa.table({"id": [1]}))
    log.set_properties({"delta.appendOnly": "true"})
    assert protocol_of(root, 2) == {"minReaderVersion": 1, "minWriterVersion": 2}
    log.set_properties({"delta.checkpointPolicy": "v2"})
    assert protocol_of(root, 3)["readerFeatures"] == ["v2Checkpoint"]
    assert log.checkpoint().kind == "v2"
    append(root, pa.table({"id": [2]}))
    peers_agree(root)


def test_a_table_holding_a_bad_isolation_level_stays_writable_and_repairable(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "t"
    DeltaLog.for_table(root).create(IDS)
    foreign_commit(root, {"delta.isolationLevel": "snapshot"})
    with caplog.at_level(logging.WARNING, logger="deltalog.table.commit.transaction"):
        append(root, pa.table({"id": [1]}))  # committed as Serializable, the strictest level
    assert any("delta.isolationLevel='snapshot'" in r.getMessage() for r in caplog.records)
    log = DeltaLog.for_table(root)
    log.set_properties({"delta.isolationLevel": "WriteSerializable"})
    assert log.snapshot().configuration["delta.isolationLevel"] == "WriteSerializable"
    foreign_commit(root, {"delta.isolationLevel": "snapshot"})
    log.unset_properties(["delta.isolationLevel"])
    assert "delta.isolationLevel" not in log.snapshot().configuration
    peers_agree(root)


def test_maintenance_reports_a_bad_retention_by_name_until_it_is_repaired(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(IDS, configuration={"delta.checkpointInterval": "3"})
    append(root, pa.table({"id": [1]}))
    foreign_commit(root, {"delta.deletedFileRetentionDuration": "interval 1 month"})  # version 2
    key = "delta.deletedFileRetentionDuration"
    with caplog.at_level(logging.WARNING, logger="deltalog.maintenance.checkpoint_job"):
        assert append(root, pa.table({"id": [2]})) == 3  # the commit lands; its automatic checkpoint cannot
    warned = [r for r in caplog.records if r.levelno == logging.WARNING and key in r.getMessage()]
    assert warned and "interval 1 month" in warned[0].getMessage() and "set_properties" in warned[0].getMessage()
    assert not list((root / "_delta_log").glob("*.checkpoint*"))
    err = refused_before_writing(root, PropertyError, log.checkpoint)
    assert (err.key, err.value) == (key, "interval 1 month")
    with pytest.raises(InvalidArgumentError, match=key):
        log.vacuum(dry_run=False)
    log.set_properties({key: "interval 2 days"})
    assert log.checkpoint().version == 4
    foreign_commit(root, {"delta.logRetentionDuration": "interval 1 year"})  # version 5
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="deltalog.maintenance.checkpoint_job"):
        assert append(root, pa.table({"id": [3]})) == 6  # checkpointed; the cleanup after it cannot run
    assert (root / "_delta_log" / f"{6:020d}.checkpoint.parquet").exists()
    assert any("delta.logRetentionDuration='interval 1 year'" in r.getMessage() for r in caplog.records)
    with pytest.raises(InvalidArgumentError, match=r"delta\.logRetentionDuration='interval 1 year'"):
        log.cleanup(dry_run=False)
    log.unset_properties(["delta.logRetentionDuration"])
    assert log.cleanup(dry_run=False).dry_run is False
    peers_agree(root)
