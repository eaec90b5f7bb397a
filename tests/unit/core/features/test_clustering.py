"""Clustered tables at the log level (issue 14 Build 5): the delta.clustering domain, stats for clustering columns,
and the domain's update on clustering changes."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from deltalog.core import actions as A
from deltalog.core.features import clustering as C
from deltalog.errors import CorruptLogError, InvalidCommitError, UnsupportedFeatureError

CLUSTERED = A.Protocol(1, 7, None, ("clustering", "domainMetadata"))


def field(name: str, t: Any, physical: str | None = None) -> dict[str, Any]:
    meta = {"delta.columnMapping.physicalName": physical, "delta.columnMapping.id": 1} if physical else {}
    return {"name": name, "type": t, "nullable": True, "metadata": meta}


SCHEMA = {
    "type": "struct",
    "fields": [
        field("id", "long", "col-id"),
        field("user", {"type": "struct", "fields": [field("city", "string", "col-city")]}, "col-user"),
        field("flag", "boolean", "col-flag"),
        field("tags", {"type": "array", "elementType": "string", "containsNull": True}, "col-tags"),
    ],
}


def add(path: str, stats: dict[str, Any] | None, **fields: Any) -> A.Add:
    return A.Add(path, {}, 1, 1, True, stats=orjson.dumps(stats).decode() if stats is not None else None, **fields)


def test_domain_round_trip_in_sparks_form_and_protocols_example() -> None:
    spark = '{"clusteringColumns":[["col1"],["user","address","city"]]}'  # as the corpus has it
    assert C.parse(spark) == (("col1",), ("user", "address", "city"))
    assert C.serialize(C.parse(spark)) == spark
    assert C.parse('{"clusteringColumns":["col-a", "col-b"]}') == (("col-a",), ("col-b",))  # PROTOCOL's example
    assert C.parse('{"clusteringColumns":[]}') == ()
    assert C.domain_action([("a",)]) == A.DomainMetadata(C.DOMAIN, '{"clusteringColumns":[["a"]]}')
    assert C.columns_of({C.DOMAIN: spark}) == C.parse(spark)
    assert C.columns_of([A.DomainMetadata(C.DOMAIN, spark, removed=True)]) == ()
    assert C.columns_of([C.domain_action([("x",)])]) == (("x",),) and C.columns_of({}) == ()
    for bad in (
        "{",
        "[]",
        "{}",
        '{"clusteringColumns":[1]}',
        '{"clusteringColumns":[[]]}',
        '{"clusteringColumns":[[""]]}',
    ):
        with pytest.raises(CorruptLogError, match=C.DOMAIN):
            C.parse(bad)


def test_logical_and_physical_names() -> None:
    assert C.physical_columns(SCHEMA, ["id", "user.city"], "name") == (("col-id",), ("col-user", "col-city"))
    assert C.physical_columns(SCHEMA, [("user", "city")], "none") == (("user", "city"),)
    assert C.logical_columns(SCHEMA, [("col-user", "col-city")], "name") == ("user.city",)
    for columns, message in [
        (["nope"], "not in the schema"),
        (["user.nope"], "not in the schema"),
        (["id.x"], "not in the schema"),
        (["user"], "type struct"),
        (["flag"], "type boolean"),
        (["tags"], "type array"),
        (["id", "id"], "twice"),
    ]:
        with pytest.raises(InvalidCommitError, match=message):
            C.physical_columns(SCHEMA, columns, "name")


def test_appended_files_need_stats_for_the_clustering_columns() -> None:
    columns = (("col-id",), ("col-user", "col-city"))
    good = {
        "numRecords": 2,
        "minValues": {"col-id": 1, "col-user": {"col-city": "a"}},
        "maxValues": {"col-id": 9, "col-user": {"col-city": "z"}},
        "nullCount": {"col-id": 0, "col-user": {"col-city": 0}},
    }
    all_null = {
        "numRecords": 2,
        "minValues": {"col-id": 1},
        "maxValues": {"col-id": 2},
        "nullCount": {"col-id": 0, "col-user": {"col-city": 2}},
    }
    C.check_stats([add("a", good), add("b", all_null)], columns)
    missing_max = {**good, "maxValues": {"col-id": 9}}
    for stats, message in [
        (None, "numRecords"),
        ({"numRecords": 2}, "nullCount"),
        ({**good, "nullCount": {"col-id": 0, "col-user": {"city": 0}}}, "nullCount"),  # logical key
        (missing_max, "minValues/maxValues"),
    ]:
        with pytest.raises(InvalidCommitError, match=message) as info:
            C.check_stats([add("a", good), add("bad", stats)], columns)
        assert "bad" in str(info.value)


def test_clustering_provider_only_on_clustered_tables() -> None:
    C.check_stats([add("a", None)], ())
    with pytest.raises(InvalidCommitError, match="clusteringProvider"):
        C.check_stats([add("a", None, clustering_provider="liquid")], ())


def test_clustering_changes() -> None:
    current = (("col-id",),)
    assert C.new_clustering(CLUSTERED, (), SCHEMA, "name", ["id"], current) is None
    live = [
        add("f", {"numRecords": 1, "minValues": {"col-id": 1}, "maxValues": {"col-id": 1}, "nullCount": {"col-id": 0}})
    ]
    with pytest.raises(InvalidCommitError, match=r"col-user\.col-city"):  # a new column needs stats in every file
        C.new_clustering(CLUSTERED, (), SCHEMA, "name", ["id", "user.city"], current, live)
    changed = C.new_clustering(CLUSTERED, (), SCHEMA, "name", ["user.city"], current, [])
    assert changed == A.DomainMetadata(C.DOMAIN, '{"clusteringColumns":[["col-user","col-city"]]}')
    assert C.new_clustering(CLUSTERED, (), SCHEMA, "name", [], current) == C.domain_action([])  # CLUSTER BY NONE
    with pytest.raises(UnsupportedFeatureError, match="domainMetadata"):
        C.new_clustering(A.Protocol(1, 7, None, ("clustering",)), (), SCHEMA, "name", ["id"], ())
    with pytest.raises(InvalidCommitError, match="partitioned"):
        C.new_clustering(CLUSTERED, ("id",), SCHEMA, "name", ["id"], ())


def test_schema_changes_keep_clustering_columns() -> None:
    C.check_change(CLUSTERED, (), SCHEMA, (("col-id",),), "name")
    renamed = {**SCHEMA, "fields": [{**SCHEMA["fields"][0], "name": "ident"}, *SCHEMA["fields"][1:]]}
    C.check_change(CLUSTERED, (), renamed, (("col-id",),), "name")  # a rename keeps the physical name
    dropped = {**SCHEMA, "fields": SCHEMA["fields"][1:]}
    with pytest.raises(InvalidCommitError, match="cannot be dropped"):
        C.check_change(CLUSTERED, (), dropped, (("col-id",),), "name")
    assert C.clustered(CLUSTERED) and not C.clustered(A.Protocol(1, 2))
