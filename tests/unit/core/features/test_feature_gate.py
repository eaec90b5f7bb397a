"""Writer-feature gating per operation (issue 14 Build 1 and 9): an append can be legal where a rewrite is not,
maintenance runs wherever every feature is known, and refusals name the feature and say why."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from deltalog.core.actions import Protocol
from deltalog.core.features import obligations as G
from deltalog.core.features.commit_checks import Declarations
from deltalog.core.features.configuration import TableConfiguration
from deltalog.core.features.obligations import check_writable
from deltalog.core.features.protocol import check_readable
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError

SRC = "/t/_delta_log/00000000000000000007.json"
NO_SCHEMA: dict[str, Any] = {"type": "struct", "fields": []}
#: commit kinds possible on a table without deletion vectors
PLAIN_COMMITS = tuple(op for op in G.COMMITS if op != G.DV_DELETE)
#: the modules a path that calls none of the feature rule modules meets (these tests are about the gate's logic;
#: which modules the commit path wires is tested where it commits)
UNWIRED = frozenset({"append_only", "checkpoint", "checkpoint_protection"})
READER_SIDE = {"deletionVectors", "columnMapping", "v2Checkpoint", "timestampNtz", "vacuumProtocolCheck"}


def proto(*features: str) -> Protocol:
    readers = tuple(f for f in features if f in READER_SIDE)
    return Protocol(3, 7, readers, features) if readers else Protocol(1, 7, None, features)


def col(name: str, **metadata: Any) -> dict[str, Any]:
    return {"name": name, "type": "long", "nullable": True, "metadata": metadata}


def schema(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": list(fields)}


#: no rule module wired: what each duty asks for, whatever today's paths run
NO_MODULES = frozenset({"append_only", "checkpoint"})


def blocked(
    op: str,
    protocol: Protocol,
    conf: Mapping[str, str] | None = None,
    sch: Any = NO_SCHEMA,
    implemented: frozenset[str] = UNWIRED,
) -> list[str]:
    return [b.feature for b in G.blockers(op, protocol, conf or {}, sch, implemented=implemented)]


def allowed(op: str, protocol: Protocol, conf: Mapping[str, str] | None = None, sch: Any = NO_SCHEMA) -> bool:
    return not blocked(op, protocol, conf, sch, G.ALL_MODULES)


# ---------------------------------------------------------------------------------------------- maintenance
NO_LOG_DUTY_FOR_MAINTENANCE = [
    (proto("checkConstraints"), {"delta.constraints.c": "x > 0"}, NO_SCHEMA),
    (proto("invariants"), {}, schema(col("x", **{"delta.invariants": '{"expression":{"expression":"x>0"}}'}))),
    (proto("generatedColumns"), {}, schema(col("x"), col("y", **{"delta.generationExpression": "x + 1"}))),
    (proto("identityColumns"), {}, schema(col("id", **{"delta.identity.start": 1, "delta.identity.step": 1}))),
    (proto("changeDataFeed"), {"delta.enableChangeDataFeed": "true"}, NO_SCHEMA),
    (proto("allowColumnDefaults"), {}, schema(col("x", CURRENT_DEFAULT="1"))),
    (proto("appendOnly"), {"delta.appendOnly": "true"}, NO_SCHEMA),
    (proto("deletionVectors"), {"delta.enableDeletionVectors": "true"}, NO_SCHEMA),
    (proto("columnMapping"), {"delta.columnMapping.mode": "name"}, NO_SCHEMA),
    (proto("rowTracking", "domainMetadata"), {"delta.enableRowTracking": "true"}, NO_SCHEMA),
    (proto("clustering", "domainMetadata"), {}, NO_SCHEMA),
    (proto("inCommitTimestamp"), {"delta.enableInCommitTimestamps": "true"}, NO_SCHEMA),
    (proto("v2Checkpoint", "vacuumProtocolCheck"), {"delta.checkpointPolicy": "v2"}, NO_SCHEMA),
    (proto("materializePartitionColumns"), {}, NO_SCHEMA),
    (Protocol(1, 6), {"delta.enableChangeDataFeed": "true"}, NO_SCHEMA),  # legacy: everything up to identity
]


@pytest.mark.parametrize(("protocol", "conf", "sch"), NO_LOG_DUTY_FOR_MAINTENANCE)
@pytest.mark.parametrize("op", G.MAINTENANCE)
def test_known_features_do_not_block_maintenance_with_todays_paths(
    op: str, protocol: Protocol, conf: dict[str, str], sch: Any
) -> None:
    assert blocked(op, protocol, conf, sch) == []
    G.check_operation(op, protocol, conf, sch, SRC)


def test_those_same_tables_are_refused_for_writing_where_their_duties_are_unmet() -> None:
    protocol, conf, sch = NO_LOG_DUTY_FOR_MAINTENANCE[0]
    assert blocked(G.APPEND, protocol, conf, sch) == ["checkConstraints"]
    with pytest.raises(UnsupportedFeatureError) as info:
        G.check_operation(G.APPEND, protocol, conf, sch, SRC, implemented=UNWIRED)
    assert info.value.feature == "checkConstraints" and SRC in str(info.value)
    # the commit path runs the constraints module (the commit needs an attestation instead)
    check_writable(protocol, conf, sch, SRC)


@pytest.mark.parametrize(
    ("feature", "why"),
    [
        ("someFutureWriterFeature", "unknown"),
        ("liquid", "unknown"),  # Databricks' preview name for clustering: not the protocol's feature
        ("collations", "proposal"),
        ("icebergCompatV3", "proposal"),
        ("icebergWriterCompatV1", "proposal"),
        ("coordinatedCommits-preview", "coordinator"),
    ],
)
@pytest.mark.parametrize("op", [*G.MAINTENANCE, *G.COMMITS])
def test_unknown_and_proposal_features_block_every_operation_by_name(op: str, feature: str, why: str) -> None:
    protocol = proto(feature)
    check_readable(protocol, SRC)  # the table stays readable (history, dry-run plans)
    found = blocked(op, protocol, implemented=G.ALL_MODULES)
    assert found == (["deletionVectors", feature] if op == G.DV_DELETE else [feature])
    with pytest.raises(UnsupportedFeatureError) as info:
        G.check_operation(op, protocol, {}, NO_SCHEMA, SRC, implemented=G.ALL_MODULES)
    assert info.value.feature == found[0] and found[0] in str(info.value)
    if op != G.DV_DELETE:
        assert why in str(info.value)


def test_writer_versions_beyond_seven_block_everything() -> None:
    for op in G.OPERATIONS:
        assert blocked(op, Protocol(1, 8)) == ["writerVersion=8"]


def test_checkpoint_protection_is_met_by_the_checkpoint_and_cleanup_paths() -> None:
    """The cleanup plan keeps protected checkpoints and a checkpoint is gated on its own version's protocol
    (deltalog.maintenance.cleanup), so the module is wired; a path that does not run it is still blocked."""
    protocol = proto("checkpointProtection")
    assert blocked(G.CHECKPOINT, protocol) == blocked(G.CLEANUP, protocol) == []
    assert blocked(G.VACUUM, protocol) == [] and blocked(G.APPEND, protocol) == []
    without = G.DEFAULT_IMPLEMENTED - {"checkpoint_protection"}
    assert blocked(G.CLEANUP, protocol, implemented=without) == ["checkpointProtection"]


def test_uniform_blocks_vacuum_and_commits_but_not_checkpoints() -> None:
    protocol = proto("icebergCompatV2", "columnMapping")
    on = {"delta.enableIcebergCompatV2": "true", "delta.columnMapping.mode": "name"}
    assert blocked(G.CHECKPOINT, protocol, on) == blocked(G.CLEANUP, protocol, on) == []
    assert blocked(G.VACUUM, protocol, on) == ["icebergCompatV2"]
    for op in G.COMMITS:
        assert "icebergCompatV2" in blocked(op, protocol, on, implemented=G.ALL_MODULES)
    assert blocked(G.APPEND, protocol, {"delta.columnMapping.mode": "name"}, implemented=G.ALL_MODULES) == []


def test_catalog_managed_tables_are_refused_before_any_gate() -> None:
    protocol = Protocol(3, 7, ("catalogManaged",), ("catalogManaged", "inCommitTimestamp"))
    for op in (G.CHECKPOINT, G.APPEND):
        with pytest.raises(UnsupportedFeatureError, match="catalog"):
            G.check_operation(op, protocol, {}, NO_SCHEMA, SRC)
    assert (
        "catalog"
        in G.obligation("catalogManaged", G.VACUUM, TableConfiguration.of_parts(protocol, {}, NO_SCHEMA)).reason
    )


# ---------------------------------------------------------------------------------------------- commits by kind
def test_identity_columns_need_the_identity_module_for_new_rows_and_a_declaration_for_copies() -> None:
    protocol = proto("identityColumns")
    sch = schema(col("id", **{"delta.identity.start": 1, "delta.identity.step": 1, "delta.identity.highWaterMark": 4}))
    for op in (G.APPEND, G.OVERWRITE):
        assert blocked(op, protocol, {}, sch, implemented=G.ALL_MODULES) == []
        assert blocked(op, protocol, {}, sch, implemented=G.ALL_MODULES - {"identity"}) == ["identityColumns"]
    # a rewrite's copies keep their values only where the writer declares it did (deltalog's DML does)
    with pytest.raises(UnsupportedFeatureError, match="keep their identity values") as info:
        G.check_operation(G.REWRITE, protocol, {}, sch, SRC, implemented=G.ALL_MODULES)
    assert info.value.feature == "identityColumns"
    declared = Declarations(identity_preserved=True).implemented
    assert blocked(G.REWRITE, protocol, {}, sch, implemented=declared) == []
    for op in (G.DELETE, G.METADATA, G.RESTORE, G.REARRANGE):
        assert blocked(op, protocol, {}, sch, implemented=G.ALL_MODULES) == []
    assert allowed(G.APPEND, protocol)  # supported but no identity column: nothing to generate


def test_change_data_feed_needs_change_files_only_for_rewrites() -> None:
    protocol, on = proto("changeDataFeed"), {"delta.enableChangeDataFeed": "true"}
    for op in (G.APPEND, G.DELETE, G.OVERWRITE, G.REARRANGE, G.METADATA):
        assert blocked(op, protocol, on) == []
    assert blocked(G.REWRITE, protocol, on) == ["changeDataFeed"]
    assert allowed(G.REWRITE, protocol, on)
    assert blocked(G.REWRITE, protocol, {"delta.enableChangeDataCapture": "true"}) == ["changeDataFeed"]
    assert blocked(G.REWRITE, protocol, {}) == []  # supported, not enabled


def test_row_tracking_assigns_while_supported_refuses_unpreserved_copies_when_enabled() -> None:
    protocol = proto("rowTracking", "domainMetadata")
    for op in (G.APPEND, G.DELETE, G.REWRITE, G.REARRANGE, G.RESTORE):
        assert blocked(op, protocol) == ["rowTracking"] and allowed(op, protocol)
    assert blocked(G.METADATA, protocol) == []
    suspended = {"delta.rowTrackingSuspended": "true"}
    assert all(blocked(op, protocol, suspended) == [] for op in PLAIN_COMMITS)
    on = {"delta.enableRowTracking": "true"}
    assert allowed(G.APPEND, protocol, on) and allowed(G.RESTORE, protocol, on)
    with_dvs = proto("rowTracking", "domainMetadata", "deletionVectors")
    assert allowed(G.DV_DELETE, with_dvs, {**on, "delta.enableDeletionVectors": "true"})  # no row is copied
    for op in (G.REWRITE, G.REARRANGE):
        with pytest.raises(UnsupportedFeatureError, match="materialized") as info:
            G.check_operation(op, protocol, on, NO_SCHEMA, SRC, implemented=G.ALL_MODULES)
        assert info.value.feature == "rowTracking"


def test_constraints_concern_new_rows_only() -> None:
    protocol, conf = proto("checkConstraints"), {"delta.constraints.positive": "x > 0"}
    assert blocked(G.APPEND, protocol, conf) == blocked(G.REWRITE, protocol, conf) == ["checkConstraints"]
    for op in (G.DELETE, G.REARRANGE, G.METADATA, G.RESTORE):
        assert blocked(op, protocol, conf) == []
    assert allowed(G.APPEND, protocol, conf)
    assert blocked(G.APPEND, protocol, {}) == []  # the feature without a constraint


def test_append_only_removes_are_the_append_only_checks_business() -> None:
    protocol, on = proto("appendOnly"), {"delta.appendOnly": "true"}
    duty = G.obligation("appendOnly", G.DELETE, TableConfiguration.of_parts(protocol, on, NO_SCHEMA))
    assert duty.module == "append_only" and "appendOnly" in duty.reason
    assert G.obligation("appendOnly", G.APPEND, TableConfiguration.of_parts(protocol, on, NO_SCHEMA)) == G.NONE
    assert blocked(G.DELETE, protocol, on) == []  # the commit rules run on every commit


def test_dv_deletes_need_dvs_supported_and_enabled() -> None:
    assert blocked(G.DV_DELETE, proto("appendOnly"), implemented=G.ALL_MODULES) == ["deletionVectors"]
    off = blocked(G.DV_DELETE, proto("deletionVectors"), implemented=G.ALL_MODULES)
    assert off == ["deletionVectors"]
    with pytest.raises(UnsupportedFeatureError, match="enableDeletionVectors"):
        G.check_operation(G.DV_DELETE, proto("deletionVectors"), {}, NO_SCHEMA, SRC, implemented=G.ALL_MODULES)
    on = {"delta.enableDeletionVectors": "true"}
    assert blocked(G.DV_DELETE, proto("deletionVectors"), on) == ["deletionVectors"]
    assert allowed(G.DV_DELETE, proto("deletionVectors"), on)
    assert blocked(G.APPEND, proto("deletionVectors"), {}) == []  # supported, off: appends owe nothing


@pytest.mark.parametrize(
    ("protocol", "conf", "needs", "free"),
    [
        (proto("inCommitTimestamp"), {"delta.enableInCommitTimestamps": "true"}, PLAIN_COMMITS, G.MAINTENANCE),
        (proto("clustering", "domainMetadata"), {}, (G.APPEND, G.REARRANGE, G.METADATA), (G.DELETE, G.RESTORE)),
        (proto("columnMapping"), {"delta.columnMapping.mode": "id"}, (G.APPEND, G.METADATA), (G.DELETE, G.RESTORE)),
        (proto("deletionVectors"), {"delta.enableDeletionVectors": "true"}, (G.APPEND, G.DELETE), (G.METADATA,)),
    ],
)
def test_module_duties_block_until_the_module_runs(
    protocol: Protocol, conf: dict[str, str], needs: tuple[str, ...], free: tuple[str, ...]
) -> None:
    for op in needs:
        assert blocked(op, protocol, conf) != [] and allowed(op, protocol, conf), op
    for op in free:
        assert blocked(op, protocol, conf) == [], op


def test_write_is_every_commit_kind_at_once() -> None:
    protocol, on = proto("changeDataFeed"), {"delta.enableChangeDataFeed": "true"}
    assert blocked(G.WRITE, protocol, on) == ["changeDataFeed"] and allowed(G.WRITE, protocol, on)
    rt = proto("rowTracking", "domainMetadata")
    assert blocked(G.WRITE, rt, {"delta.enableRowTracking": "true"}, implemented=G.ALL_MODULES) == ["rowTracking"]
    assert allowed(G.WRITE, rt)
    check_writable(rt, {}, NO_SCHEMA, SRC)  # the commit path runs the row-tracking and ICT rules (issue 14)
    check_writable(proto("inCommitTimestamp"), {"delta.enableInCommitTimestamps": "true"}, NO_SCHEMA, SRC)
    with pytest.raises(UnsupportedFeatureError, match="materialized") as info:
        check_writable(rt, {"delta.enableRowTracking": "true"}, NO_SCHEMA, SRC)  # a rewrite would copy rows
    assert info.value.feature == "rowTracking"


def test_features_newly_honoured_for_writing() -> None:
    check_writable(proto("variantType", "variantShredding"), {}, NO_SCHEMA, SRC)
    check_writable(proto("icebergCompatV1", "columnMapping"), {}, NO_SCHEMA, SRC)  # supported, not enabled
    check_writable(proto("allowColumnDefaults"), {}, NO_SCHEMA, SRC)  # no column has a default
    check_writable(proto("rowTracking", "domainMetadata"), {"delta.rowTrackingSuspended": "true"}, NO_SCHEMA, SRC)


def test_reader_gating_knows_todays_variant_shredding_name() -> None:
    names = ("variantType", "variantShredding")
    check_readable(Protocol(3, 7, names, names), SRC)
    check_readable(Protocol(3, 7, ("variantShredding-preview",), ("variantShredding-preview",)), SRC)


def test_blockers_list_every_feature_sorted_and_unknown_operations_are_refused() -> None:
    protocol = proto("rowTracking", "domainMetadata", "inCommitTimestamp", "someFutureWriterFeature")
    found = G.blockers(
        G.APPEND, protocol, {"delta.enableInCommitTimestamps": "true"}, NO_SCHEMA, implemented=NO_MODULES
    )
    assert [b.feature for b in found] == ["inCommitTimestamp", "rowTracking", "someFutureWriterFeature"]
    assert all(b.operation == G.APPEND and b.reason for b in found)
    with pytest.raises(InvalidArgumentError, match="unknown operation"):
        G.blockers("optimize", protocol, {}, NO_SCHEMA)


# ---------------------------------------------------------------------------------------------- the manual's matrix
DOC = Path(__file__).resolve().parents[4] / "docs" / "table-features.md"
#: each row of the manual's matrix, by its first word, and a table that uses that feature
ROW_TABLES: dict[str, tuple[str, dict[str, str], Any]] = {
    "appendOnly": ("appendOnly", {"delta.appendOnly": "true"}, NO_SCHEMA),
    "invariants,": ("checkConstraints", {"delta.constraints.c": "x > 0"}, NO_SCHEMA),
    "identityColumns": ("identityColumns", {}, schema(col("id", **{"delta.identity.start": 1}))),
    "changeDataFeed": ("changeDataFeed", {"delta.enableChangeDataFeed": "true"}, NO_SCHEMA),
    "columnMapping": ("columnMapping", {"delta.columnMapping.mode": "name"}, NO_SCHEMA),
    "deletionVectors": ("deletionVectors", {"delta.enableDeletionVectors": "true"}, NO_SCHEMA),
    "inCommitTimestamp": ("inCommitTimestamp", {"delta.enableInCommitTimestamps": "true"}, NO_SCHEMA),
    "rowTracking (supported": ("rowTracking", {}, NO_SCHEMA),
    "rowTracking (enabled)": ("rowTracking", {"delta.enableRowTracking": "true"}, NO_SCHEMA),
    "clustering": ("clustering", {}, NO_SCHEMA),
    "v2Checkpoint": ("v2Checkpoint", {}, NO_SCHEMA),
    "checkpointProtection": ("checkpointProtection", {}, NO_SCHEMA),
    "icebergCompatV1/V2": ("icebergCompatV2", {"delta.enableIcebergCompatV2": "true"}, NO_SCHEMA),
    "materializePartitionColumns": ("materializePartitionColumns", {}, NO_SCHEMA),
    "collations,": ("someFutureWriterFeature", {}, NO_SCHEMA),
}


def test_the_manuals_matrix_is_the_gates() -> None:
    lines = [line for line in DOC.read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[1:] == [*G.COMMITS, *G.MAINTENANCE]
    rows = 0
    for line in lines[1:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        label = next((k for k in ROW_TABLES if cells[0].startswith(k)), None)
        if label is None or len(cells) != len(header):
            continue
        feature, conf, sch = ROW_TABLES[label]
        table = TableConfiguration.of_parts(proto(feature), conf, sch)
        for op, cell in zip(header[1:], cells[1:], strict=True):
            d = G.obligation(feature, op, table)
            assert cell == ("refused" if d.refused else d.module or "·"), (label, op)
        rows += 1
    assert rows == len(ROW_TABLES)
