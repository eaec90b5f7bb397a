"""The pure RESTORE decisions (``deltalog.core.plans.restore``), each against the Delta Spark rule it follows.

Most of these cases cannot reach a commit yet (deltalog refuses to write tables that use identity columns,
column mapping, in-commit timestamps or clustering), so they are pinned here, where the planner decides.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from deltalog.core import actions as A
from deltalog.core.plans import restore as plan
from deltalog.errors import CorruptLogError, InvalidArgumentError

HWM = "delta.identity.highWaterMark"


def identity(name: str, step: int, mark: int | None, physical: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"delta.identity.start": 1, "delta.identity.step": step}
    if mark is not None:
        meta[HWM] = mark
    if physical is not None:
        meta["delta.columnMapping.physicalName"] = physical
    return {"name": name, "type": "long", "nullable": True, "metadata": meta}


def meta(fields: list[dict[str, Any]], conf: dict[str, str] | None = None, **kw: Any) -> A.Metadata:
    schema = {"type": "struct", "fields": fields}
    return A.Metadata(id=kw.pop("id", "t"), schema_string=json.dumps(schema), configuration=conf or {}, **kw)


def marks(m: A.Metadata) -> dict[str, Any]:
    return {f["name"]: f["metadata"].get(HWM) for f in json.loads(m.schema_string or "")["fields"]}


# ---------------------------------------------------------------------------------------------- metadata
def test_identity_high_water_marks_keep_the_further_value_by_physical_name() -> None:
    """``IdentityColumn.copySchemaWithMergedHighWaterMarks``: max for a positive step, min for a negative one;
    a column without a mark at the target takes today's."""
    target = meta([identity("up", 1, 10), identity("down", -1, -5), identity("fresh", 1, None), identity("x", 1, 50)])
    current = meta([identity("up", 1, 30), identity("down", -1, -2), identity("fresh", 1, 7), identity("x", 1, 40)])
    out = plan.restored_metadata(target, current, 3)
    assert marks(out) == {"up": 30, "down": -5, "fresh": 7, "x": 50}


def test_identity_columns_are_matched_by_physical_name_not_display_name() -> None:
    conf = {"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "1"}
    target = meta([identity("old_name", 1, 5, physical="col-1")], conf)
    current = meta([identity("new_name", 1, 9, physical="col-1"), identity("old_name", 1, 99, physical="col-2")], conf)
    assert marks(plan.restored_metadata(target, current, 0)) == {"old_name": 9}


def test_a_schema_without_identity_changes_is_kept_verbatim() -> None:
    target = A.Metadata(id="t", schema_string='{"type":"struct","fields":[ ]}')
    out = plan.restored_metadata(target, meta([]), 0)
    assert out.schema_string == target.schema_string


def test_max_column_id_is_never_lowered() -> None:
    """``DeltaColumnMapping``: max(target, current, the highest id in the schema)."""
    col = {"name": "a", "type": {"type": "struct", "fields": [
        {"name": "b", "type": "long", "nullable": True, "metadata": {"delta.columnMapping.id": 12}}
    ]}, "nullable": True, "metadata": {"delta.columnMapping.id": 3}}  # fmt: skip
    conf = {"delta.columnMapping.mode": "name"}
    target = meta([col], {**conf, "delta.columnMapping.maxColumnId": "5"})
    assert (
        plan.restored_metadata(target, meta([], {**conf, "delta.columnMapping.maxColumnId": "9"}), 0).configuration[
            plan.MAX_COLUMN_ID
        ]
        == "12"
    )
    target = meta([], {**conf, "delta.columnMapping.maxColumnId": "5"})
    current = meta([], {**conf, "delta.columnMapping.maxColumnId": "9"})
    assert plan.restored_metadata(target, current, 0).configuration[plan.MAX_COLUMN_ID] == "9"
    assert plan.MAX_COLUMN_ID not in plan.restored_metadata(meta([]), meta([]), 0).configuration


def test_a_max_column_id_that_is_not_a_number_is_a_corrupt_log() -> None:
    conf = {"delta.columnMapping.mode": "name"}
    with pytest.raises(CorruptLogError, match=r"maxColumnId='x'"):
        plan.restored_metadata(meta([], {**conf, plan.MAX_COLUMN_ID: "x"}), meta([], conf), 0)


def test_a_column_mapping_mode_change_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match=r"'id'.*'name'"):
        plan.restored_metadata(
            meta([], {"delta.columnMapping.mode": "id"}), meta([], {"delta.columnMapping.mode": "name"}), 4
        )
    # spelling is not a change
    same = plan.restored_metadata(
        meta([], {"delta.columnMapping.mode": "Name"}), meta([], {"delta.columnMapping.mode": "name"}), 4
    )
    assert same.configuration["delta.columnMapping.mode"] == "Name"


def test_the_ict_enablement_pair_is_today_s_while_ict_stays_on() -> None:
    """``InCommitTimestampUtils``: the enablement of ICT is history; restoring does not move it."""
    on = {plan.ICT_ENABLED: "true"}
    then = {**on, plan.ICT_ENABLEMENT_KEYS[0]: "3", plan.ICT_ENABLEMENT_KEYS[1]: "1000"}
    now = {**on, plan.ICT_ENABLEMENT_KEYS[0]: "8", plan.ICT_ENABLEMENT_KEYS[1]: "5000"}
    assert plan.restored_metadata(meta([], then), meta([], now), 5).configuration == now
    # on since creation: no pair today, so none restored
    assert plan.restored_metadata(meta([], then), meta([], on), 5).configuration == on
    # off today: the restore enables it anew, and the target's old pair must not claim the enablement
    assert plan.restored_metadata(meta([], then), meta([], {}), 5).configuration == on
    # off at the target: its configuration as it was
    assert plan.restored_metadata(meta([], {"x.k": "v"}), meta([], now), 5).configuration == {"x.k": "v"}


def test_the_target_metadata_keeps_today_s_table_id() -> None:
    target = meta([], {"a": "1"}, id="old", name="n", description="d", partition_columns=("p",), created_time=5)
    out = plan.restored_metadata(target, meta([], id="now"), 0)
    assert (out.id, out.name, out.description, out.partition_columns, out.created_time) == ("now", "n", "d", ("p",), 5)


def test_same_metadata_ignores_schema_formatting_only() -> None:
    a = A.Metadata(id="t", schema_string='{"type":"struct","fields":[]}')
    assert plan.same_metadata(a, A.Metadata(id="t", schema_string='{"type": "struct", "fields": []}'))
    assert not plan.same_metadata(a, A.Metadata(id="t", schema_string='{"type":"struct","fields":[]}', name="x"))


# ---------------------------------------------------------------------------------------------- protocol
@pytest.mark.parametrize(
    ("target", "current", "expected"),
    [
        (A.Protocol(1, 2), A.Protocol(1, 4), A.Protocol(1, 4)),
        (A.Protocol(2, 5), A.Protocol(1, 2), A.Protocol(2, 5)),
        # features listed: the legacy side's implied features join the list
        (
            A.Protocol(3, 7, ("deletionVectors",), ("deletionVectors",)),
            A.Protocol(1, 2),
            A.Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "appendOnly", "invariants")),
        ),
        # reader 2 implies column mapping; at reader 3 it must be listed for readers too
        (
            A.Protocol(2, 5),
            A.Protocol(3, 7, ("timestampNtz",), ("timestampNtz",)),
            A.Protocol(
                3,
                7,
                ("timestampNtz", "columnMapping"),
                (
                    "timestampNtz",
                    "appendOnly",
                    "changeDataFeed",
                    "checkConstraints",
                    "columnMapping",
                    "generatedColumns",
                    "invariants",
                ),
            ),
        ),
        (
            A.Protocol(1, 7, None, ("appendOnly",)),
            A.Protocol(1, 3),
            A.Protocol(1, 7, None, ("appendOnly", "checkConstraints", "invariants")),
        ),
    ],
)
def test_the_protocol_is_the_union_of_target_and_current(
    target: A.Protocol, current: A.Protocol, expected: A.Protocol
) -> None:
    """``Protocol.merge``: highest versions, every explicit and implied feature."""
    out = plan.merged_protocol(target, current)
    assert plan.same_protocol(out, expected), out
    assert out.min_reader_version >= current.min_reader_version and out.min_writer_version >= current.min_writer_version


def test_a_protocol_covering_the_target_merges_to_itself() -> None:
    current = A.Protocol(3, 7, ("timestampNtz",), ("appendOnly", "invariants", "timestampNtz"))
    assert plan.same_protocol(plan.merged_protocol(A.Protocol(1, 2), current), current)
    assert not plan.same_protocol(current, A.Protocol(3, 7, ("timestampNtz",), ("timestampNtz",)))


# ---------------------------------------------------------------------------------------------- domains
CLUSTERED = A.Protocol(1, 7, None, ("domainMetadata", "clustering"))
PLAIN = A.Protocol(1, 7, None, ("domainMetadata",))


def cluster(*cols: str) -> A.DomainMetadata:
    return A.DomainMetadata(plan.CLUSTERING_DOMAIN, json.dumps({"clusteringColumns": [[c] for c in cols]}))


def test_clustering_comes_back_from_a_clustered_target() -> None:
    assert plan.restored_domains({"delta.clustering": cluster("a")}, CLUSTERED, {"delta.clustering": cluster("b")}) == [
        cluster("a")
    ]
    assert plan.restored_domains({"delta.clustering": cluster("a")}, CLUSTERED, {}) == [cluster("a")]
    assert (
        plan.restored_domains({"delta.clustering": cluster("a")}, CLUSTERED, {"delta.clustering": cluster("a")}) == []
    )


def test_an_unclustered_target_leaves_the_domain_with_no_columns() -> None:
    """Spark writes ``{"clusteringColumns":[]}``, not a tombstone: a table supporting clustering keeps the domain."""
    (out,) = plan.restored_domains({}, CLUSTERED, {"delta.clustering": cluster("b")})
    assert (out.domain, json.loads(out.configuration), out.removed) == (
        "delta.clustering",
        {"clusteringColumns": []},
        False,
    )
    assert plan.restored_domains({}, CLUSTERED, {"delta.clustering": cluster()}) == []
    assert plan.restored_domains({}, CLUSTERED, {}) == []
    # a clustering domain on a target whose protocol does not support clustering does not make it clustered
    (out,) = plan.restored_domains({"delta.clustering": cluster("a")}, PLAIN, {"delta.clustering": cluster("b")})
    assert json.loads(out.configuration) == {"clusteringColumns": []}


def test_every_other_domain_is_left_as_it_is_now() -> None:
    target = {"delta.rowTracking": A.DomainMetadata("delta.rowTracking", '{"rowIdHighWaterMark":3}')}
    target["app"] = A.DomainMetadata("app", "{}")
    assert plan.restored_domains(target, CLUSTERED, {"delta.rowTracking": target["delta.rowTracking"]}) == []


# ---------------------------------------------------------------------------------------------- files
def test_files_are_compared_by_path_and_deletion_vector() -> None:
    dv1 = A.DeletionVector("u", "a" * 20, 10, 1, offset=1)
    dv2 = A.DeletionVector("u", "b" * 20, 10, 2, offset=1)
    f1 = A.Add("f.parquet", {}, 10, 0, False, deletion_vector=dv1)
    f2 = A.Add("f.parquet", {}, 10, 0, False, deletion_vector=dv2)
    g = A.Add("g%20x.parquet", {}, 5, 0, False)
    g_abs = A.Add("file:///root/t/g%20x.parquet", {}, 5, 0, False)
    changes = plan.file_changes([f2, g_abs], [f1, g], "/root/t")
    assert (changes.to_remove, changes.to_add) == ((f2,), (f1,))
    actions = plan.restore_actions(changes, 123)
    assert actions[0] == A.Add("f.parquet", {}, 10, 0, True, deletion_vector=dv1)
    removed = actions[1]
    assert isinstance(removed, A.Remove)
    assert (
        removed.deletion_timestamp,
        removed.data_change,
        removed.deletion_vector,
        removed.extended_file_metadata,
    ) == (
        123,
        True,
        dv2,
        True,
    )
    assert plan.operation_metrics(changes, 2, 15) == {
        "numRestoredFiles": "1",
        "restoredFilesSize": "10",
        "numRemovedFiles": "1",
        "removedFilesSize": "10",
        "numOfFilesAfterRestore": "2",
        "tableSizeAfterRestore": "15",
    }
