"""The feature duties every commit runs (issue 14 items 2, 5-8), on plain actions: what the writer declares,
when the file list is needed, which adds count as new files, and refusals that name the feature."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from deltalog.core import actions as A
from deltalog.core.features import commit_checks as D
from deltalog.errors import InvalidArgumentError, InvalidCommitError, UnsupportedFeatureError

SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
PLAIN = A.Protocol(1, 2)
DV = A.Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))
STATS = '{"numRecords":3,"minValues":{"id":1},"maxValues":{"id":3},"nullCount":{"id":0}}'


def meta(**conf: str) -> A.Metadata:
    return A.Metadata(id="m", schema_string=orjson.dumps(SCHEMA).decode(), configuration=conf)


def add(path: str = "f.parquet", **kw: Any) -> A.Add:
    return A.Add(path, {}, 1, 1, True, **kw)


def duties(actions: list[A.Action], protocol: A.Protocol = PLAIN, **kw: Any) -> dict[str, Any]:
    m = kw.pop("metadata", meta())
    return D.check_commit(
        actions,
        protocol=protocol,
        metadata=m,
        read_metadata=m,
        domains={},
        operation=kw.pop("operation", "WRITE"),
        **kw,
    )


def test_validation_arguments() -> None:
    assert D.validation(False, "x") is None and D.validation(None, "x") is None
    assert D.validation(True, "x") == "attested" and D.validation("checked", "x") == "checked"
    with pytest.raises(InvalidArgumentError, match="data_validated"):
        D.validation("yes", "data_validated")


def test_the_file_list_is_needed_only_for_removes_on_dv_tables_or_actions_with_vectors() -> None:
    vector = A.DeletionVector("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 40, 1)
    assert not D.needs_known_files([add()], DV)  # a plain append never loads the file list
    assert D.needs_known_files([add().remove(1)], DV)
    assert not D.needs_known_files([add().remove(1)], PLAIN)
    assert D.needs_known_files([add(deletion_vector=vector)], PLAIN)


def test_new_files_leave_out_re_adds_and_restores() -> None:
    f, g = add("f.parquet"), add("g.parquet")
    assert D.new_files([f.remove(1), f, g], "WRITE") == [g]
    assert D.new_files([g], "RESTORE") == []


def test_a_clustering_domain_needs_the_feature() -> None:
    domain = A.DomainMetadata("delta.clustering", '{"clusteringColumns":[["id"]]}')
    with pytest.raises(UnsupportedFeatureError) as info:
        duties([domain])
    assert info.value.feature == "clustering"


def test_a_restore_owes_no_stats_and_no_attestation() -> None:
    clustered = A.Protocol(1, 7, None, ("clustering", "domainMetadata"))
    domains = {"delta.clustering": A.DomainMetadata("delta.clustering", '{"clusteringColumns":[["id"]]}')}
    checked = meta(**{"delta.constraints.c": "id > 0"})
    bare = add()  # no stats: an old file brought back
    kw: dict[str, Any] = {"protocol": clustered, "metadata": checked, "read_metadata": checked, "domains": domains}
    assert D.check_commit([bare], operation="RESTORE", **kw) == {}
    with pytest.raises(InvalidCommitError) as info:
        D.check_commit([bare], operation="WRITE", **kw)
    assert info.value.rule == "clustering-stats"
    with pytest.raises(InvalidCommitError, match="checkConstraints"):
        D.check_commit([add(stats=STATS)], operation="WRITE", **kw)
    declared = D.Declarations(rows_validated="attested")
    record = D.check_commit([add(stats=STATS)], operation="WRITE", declared=declared, **kw)
    assert record == {"deltalogValidation": {"newRows": "attested"}}
