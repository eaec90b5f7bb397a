"""``rename_column`` and ``drop_columns`` through column mapping (issue 29 item 2): one metadata commit, no file
rewritten, on plain, partitioned, deletion-vector, change-data-feed and row-tracking tables; both peers read the
renamed columns and stop reading the dropped ones, the protocol checker passes; the protocol upgrade is shown
(dry run) before it is applied, with the peers that will no longer write the table; bad requests are refused by
name with nothing committed."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog import DeltaLog
from deltalog.actions import Protocol
from deltalog.errors import IncompatibleSchemaChangeError, InvalidArgumentError, SchemaError
from tests.integration.modern_kit import KINDS as ALL_KINDS
from tests.integration.modern_kit import checked, deltalake_ids, duckdb_ids
from tests.peers import duckdb_connection, try_duckdb_insert

DATA = pa.table(
    {
        "id": pa.array([1, 2, 3], pa.int64()),
        "region": ["a", "b", "a"],
        "n": pa.array([10, 20, 30], pa.int32()),
        "s": pa.array(
            [{"x": 1, "y": "p"}, {"x": 2, "y": "q"}, None], pa.struct([("x", pa.int64()), ("y", pa.string())])
        ),
    }
)
KINDS = {k: c for k, c in ALL_KINDS.items() if k != "column mapping"}  # rename and drop turn it on


def names(root: Path) -> list[str]:
    return [f["name"] for f in DeltaLog.for_table(root).snapshot().schema_json["fields"]]


def files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*.parquet")}


def duckdb_columns(root: Path) -> list[str]:
    con = duckdb_connection()
    try:
        return [d[0] for d in con.execute(f"SELECT * FROM delta_scan('{root}') LIMIT 0").description]
    finally:
        con.close()


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_rename_and_drop_enable_name_mode_and_rewrite_nothing(tmp_path: Path, kind: str, partitioned: bool) -> None:
    root = tmp_path / "t"
    deltalog.write(DATA, root, partition_by=["region"] if partitioned else None, configuration=KINDS[kind])
    log = DeltaLog.for_table(root)
    if kind == "deletion vectors":
        log.delete("id = 3")
    before, written = log.snapshot(), files(root)
    plan = log.rename_column("n", "amount", enable_column_mapping=True, dry_run=True)
    assert plan.dry_run and plan.version is None and log.latest_version() == before.version  # nothing committed
    assert plan.old_protocol == before.protocol and "columnMapping" not in log.snapshot().features
    legacy = before.protocol.min_writer_version < 7
    if legacy:  # a legacy table goes to (2,5), which duckdb no longer writes (it wrote (1,2))
        assert (plan.new_protocol.min_reader_version, plan.new_protocol.min_writer_version) == (2, 5)
        lost = {"duckdb 1.5.5": "refuses inserts into writer version 5 tables"}
        assert plan.writers_lost == (lost if before.protocol.min_writer_version < 3 else {})
    else:  # a table-features table lists columnMapping
        assert "columnMapping" in (plan.new_protocol.reader_features or ()) and plan.writers_lost == {}
    done = log.rename_column("n", "amount", enable_column_mapping=True)
    assert done.version == before.version + 1 and done.new_protocol == plan.new_protocol
    if partitioned:
        log.rename_column("region", "area")
    log.rename_column("s.x", "ex")
    log.drop_columns(["s.y"])
    snap = log.snapshot()
    assert snap.column_mapping_mode == "name" and files(root) == written  # no data file rewritten
    want = ["id", "area" if partitioned else "region", "amount", "s"]
    assert names(root) == want and snap.partition_columns == (["area"] if partitioned else [])
    live = [1, 2] if kind == "deletion vectors" else [1, 2, 3]
    checked(root, live)
    checked(root, [10 * i for i in live], column="amount")
    assert (
        duckdb_ids(root, "s.ex")
        == deltalake_ids(root, "s.ex")
        == [i for i in [1, 2] if i in live] + ([None] if 3 in live else [])
    )
    log.drop_columns(["amount"])
    assert names(root) == [w for w in want if w != "amount"] and duckdb_columns(root) == names(root)
    assert int(log.snapshot().configuration["delta.columnMapping.maxColumnId"]) == 6  # ids never given again
    deltalog.write(
        pa.table({"id": pa.array([9], pa.int64()), want[1]: ["z"], "amount": pa.array([5], pa.int32())}),
        root,
        schema_mode="merge",
    )
    ids = {f["name"]: f["metadata"]["delta.columnMapping.id"] for f in log.snapshot().schema_json["fields"]}
    assert ids["amount"] == 7  # a new column of a dropped one's name gets a new id: the old files are not its
    checked(root, sorted([*live, 9]))
    assert deltalake_ids(root, "amount") == duckdb_ids(root, "amount") == [5] + [None] * len(live)
    if legacy:  # what the preview said: duckdb refuses to insert
        assert "checkConstraints" in (try_duckdb_insert(root, "(1, 'a', NULL, 1)") or "")
    if kind == "change data feed":  # reading changes across a rename or drop is refused (Delta Spark too)
        with pytest.raises(IncompatibleSchemaChangeError):
            log.changes(0).read_all()


def test_bad_renames_and_drops_are_refused_by_name(tmp_path: Path) -> None:
    root = tmp_path / "t"
    deltalog.write(DATA, root, partition_by=["region"])
    log = DeltaLog.for_table(root)
    with pytest.raises(InvalidArgumentError, match="enable_column_mapping=True"):
        log.rename_column("n", "m")
    with pytest.raises(InvalidArgumentError, match="enable_column_mapping=True"):
        log.drop_columns(["n"])
    with pytest.raises(SchemaError, match="column 'id' exists") as existing:
        log.rename_column("n", "ID", enable_column_mapping=True)
    assert existing.value.field == "n"
    with pytest.raises(SchemaError, match="no column 'nope'"):
        log.rename_column("nope", "m", enable_column_mapping=True)
    with pytest.raises(SchemaError, match="partition column 'region'"):
        log.drop_columns(["region"], enable_column_mapping=True)
    with pytest.raises(SchemaError, match="last column of struct 's'"):
        log.drop_columns(["s.x", "s.y"], enable_column_mapping=True)
    log.add_constraint("positive", "n > 0")
    with pytest.raises(SchemaError, match="positive"):
        log.rename_column("n", "m", enable_column_mapping=True)
    with pytest.raises(SchemaError, match="positive"):
        log.drop_columns(["n"], enable_column_mapping=True)
    assert log.latest_version() == 1 and log.snapshot().column_mapping_mode == "none"
    one = tmp_path / "one"
    deltalog.write(pa.table({"id": [1]}), one)
    with pytest.raises(SchemaError, match="last column of the table"):
        DeltaLog.for_table(one).drop_columns(["id"], enable_column_mapping=True)
    assert DeltaLog.for_table(one).latest_version() == 0
    checked(root, [1, 2, 3])


def test_a_clustering_column_cannot_be_dropped_but_can_be_renamed(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(DATA.schema, clustering_columns=["n"], configuration={"delta.columnMapping.mode": "name"})
    deltalog.write(DATA, root)
    with pytest.raises(SchemaError, match="clustering column 'n'"):
        log.drop_columns(["n"])
    plan = log.rename_column("n", "amount")
    assert not plan.protocol_upgraded and plan.writers_lost == {}
    checked(root, [10, 20, 30], column="amount")


def test_a_table_features_table_lists_column_mapping_and_names_no_new_loser(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog.for_table(root)
    log.create(DATA.schema, configuration={"delta.enableDeletionVectors": "true"})
    writer = ("appendOnly", "deletionVectors", "invariants")  # (1,2)'s features stay listed
    assert log.snapshot().protocol == Protocol(3, 7, ("deletionVectors",), writer)
    plan = log.drop_columns(["region"], enable_column_mapping=True)
    both = ("columnMapping", "deletionVectors")
    assert plan.new_protocol == Protocol(3, 7, both, ("appendOnly", *both, "invariants"))
    assert plan.writers_lost == {}
    deltalog.write(DATA.drop_columns(["region"]), root)
    checked(root, [1, 2, 3])


def test_the_cli_shows_the_upgrade_and_commits_only_with_apply(tmp_path: Path) -> None:
    from tests.unit.cli_runs import as_json, fails, ok

    root = tmp_path / "t"
    deltalog.write(DATA, root)
    plan = as_json("rename-column", root, "n", "amount", "--enable-column-mapping")
    assert plan["dry_run"] and plan["version"] is None and plan["protocol_upgraded"]
    assert plan["new_protocol"]["min_writer_version"] == 5 and "duckdb 1.5.5" in plan["writers_lost"]
    assert DeltaLog.for_table(root).latest_version() == 0
    shown = ok("rename-column", root, "n", "amount", "--enable-column-mapping")
    assert "(2,5)" in shown and "duckdb 1.5.5" in shown and "--apply" in shown
    done = as_json("rename-column", root, "n", "amount", "--enable-column-mapping", "--apply")
    assert done["version"] == 1 and "amount" in done["columns"]
    assert "last column" in fails("drop-columns", root, "id", "region", "amount", "s", "--apply")
    assert as_json("drop-columns", root, "s", "--apply")["columns"] == ["id", "region", "amount"]
    checked(root, [10, 20, 30], column="amount")
