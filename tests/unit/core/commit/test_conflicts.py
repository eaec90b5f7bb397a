"""The conflict checker as a pure function: one winner, one intent, the typed answer."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltalog import actions as A
from deltalog.core.commit.conflicts import (
    SERIALIZABLE,
    SNAPSHOT_ISOLATION,
    WRITE_SERIALIZABLE,
    HeldTo,
    PartitionSchema,
    ReadPredicate,
    ReadSet,
    TxnSummary,
    Winner,
    check_winner,
    effective_isolation,
    is_blind_append,
)
from deltalog.core.commit.operations import SPARK_OPERATIONS, changes_data
from deltalog.core.features.obligations import REWRITE
from deltalog.core.files.partitions import Condition
from deltalog.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentModificationError,
    ConcurrentTransactionError,
    MetadataChangedError,
    ProtocolChangedError,
    UnsupportedFeatureError,
)

SCHEMA = PartitionSchema(types={"d": "integer"}, physical={"d": "d"})


def add(path: str, d: int | None = 1, data_change: bool = True) -> A.Add:
    return A.Add(path, {"d": None if d is None else str(d)}, 1, 1, data_change)


def remove(path: str, d: int = 1, data_change: bool = True) -> A.Remove:
    return A.Remove(path, 1, data_change, True, {"d": str(d)}, 1)


def intent(**kw: Any) -> TxnSummary:
    base: dict[str, Any] = {"read_set": ReadSet(), "isolation": SERIALIZABLE, "partition_schema": SCHEMA, "root": "/t"}
    base.update(kw)
    return TxnSummary(**base)


def eq(d: int) -> ReadPredicate:
    return ReadPredicate((Condition("d", "=", (d,)),))


def winner(*actions: A.Action, blind: bool = False, version: int = 5) -> Winner:
    return Winner(version, list(actions), {"operation": "WRITE", "isBlindAppend": blind})


def test_append_into_read_partition_conflicts_with_its_details() -> None:
    with pytest.raises(ConcurrentAppendError) as info:
        check_winner(intent(read_set=ReadSet((eq(1),))), winner(add("d=1/a")))
    err = info.value
    assert err.winning_version == 5 and err.conflicting_file == "d=1/a"
    assert err.conflicting_partition == {"d": "1"} and err.winning_commit_info["operation"] == "WRITE"


def test_append_into_other_partition_does_not_conflict() -> None:
    check_winner(intent(read_set=ReadSet((eq(1),))), winner(add("d=2/a", 2)))


def test_write_serializable_ignores_blind_appends_but_not_other_writes() -> None:
    i = intent(read_set=ReadSet((eq(1),)), isolation=WRITE_SERIALIZABLE)
    check_winner(i, winner(add("d=1/a"), blind=True))
    with pytest.raises(ConcurrentAppendError):
        check_winner(i, winner(add("d=1/b", data_change=False), remove("d=1/c", data_change=False)))


def test_write_serializable_with_metadata_change_checks_blind_appends() -> None:
    i = intent(read_set=ReadSet((eq(1),)), isolation=WRITE_SERIALIZABLE, changes_metadata=True)
    with pytest.raises(ConcurrentAppendError):
        check_winner(i, winner(add("d=1/a"), blind=True))


def test_our_blind_append_and_snapshot_isolation_skip_the_append_check() -> None:
    check_winner(intent(is_blind_append=True), winner(add("d=1/a"), remove("d=1/x", data_change=False)))
    check_winner(intent(read_set=ReadSet((eq(1),)), isolation=SNAPSHOT_ISOLATION), winner(add("d=1/a")))


def test_whole_table_read_conflicts_with_any_append_and_any_remove() -> None:
    i = intent(read_set=ReadSet((ReadPredicate(),)))
    with pytest.raises(ConcurrentAppendError):
        check_winner(i, winner(add("d=9/a", 9)))
    with pytest.raises(ConcurrentDeleteReadError):
        check_winner(i, winner(remove("d=9/a", 9, data_change=False)))


def test_unpartitioned_table_any_read_conflicts_with_any_append() -> None:
    i = intent(read_set=ReadSet((eq(1),)), partition_schema=PartitionSchema({}, {}))
    with pytest.raises(ConcurrentAppendError):
        check_winner(i, winner(A.Add("x", {}, 1, 1, True)))


def test_delete_read_and_delete_delete_compare_decoded_paths() -> None:
    with pytest.raises(ConcurrentDeleteReadError):
        check_winner(intent(read_set=ReadSet(files=frozenset({"d=1/a b"}))), winner(remove("d=1/a%20b")))
    with pytest.raises(ConcurrentDeleteDeleteError):
        check_winner(intent(removed=frozenset({"d=1/a"})), winner(remove("file:/t/d=1/a")))


def test_a_winner_of_another_table_id_is_a_replaced_table_before_anything_else() -> None:
    # a table deleted and created again at the path: its metaData carries a new id; Delta Spark fails a
    # metadata change with MetadataChangedException, and the protocol beside it is not judged first
    other = A.Metadata(id="new-table", schema_string='{"type":"struct","fields":[]}')
    with pytest.raises(MetadataChangedError, match="replaced") as info:
        check_winner(intent(table_id="old-table", changes_protocol=True), winner(A.Protocol(1, 3), other))
    assert "new-table" in str(info.value) and "old-table" in str(info.value)
    with pytest.raises(MetadataChangedError) as same:
        check_winner(intent(table_id="new-table"), winner(other))
    assert "replaced" not in str(same.value)


def test_metadata_protocol_domain_and_app_id_conflicts() -> None:
    with pytest.raises(MetadataChangedError):
        check_winner(intent(), winner(A.Metadata(schema_string='{"type":"struct","fields":[]}')))
    with pytest.raises(ProtocolChangedError):
        check_winner(intent(changes_protocol=True), winner(A.Protocol(1, 3)))
    with pytest.raises(ProtocolChangedError):
        check_winner(
            intent(read_protocol=A.Protocol(1, 7, None, ("appendOnly", "domainMetadata"))),
            winner(A.Protocol(1, 7, None, ("appendOnly",))),
        )
    with pytest.raises(ConcurrentTransactionError):
        check_winner(intent(domains=frozenset({"app.x"})), winner(A.DomainMetadata("app.x", "{}")))
    with pytest.raises(ConcurrentTransactionError):
        check_winner(intent(read_set=ReadSet(app_ids=frozenset({"job"}))), winner(A.Txn("job", 3)))
    check_winner(intent(), winner(A.Txn("job", 3)))  # writing without reading the app id does not register it


def test_protocol_upgrade_alone_is_adopted() -> None:
    check_winner(intent(read_protocol=A.Protocol(1, 2)), winner(A.Protocol(1, 3)))


def test_effective_isolation_downgrades_only_pure_rearrangements() -> None:
    rearrange = [add("a", data_change=False), remove("b", data_change=False)]
    assert effective_isolation(SERIALIZABLE, rearrange) == SNAPSHOT_ISOLATION
    assert effective_isolation(SERIALIZABLE, [*rearrange, add("c")]) == SERIALIZABLE
    assert effective_isolation(SERIALIZABLE, [*rearrange, A.Txn("j", 1)]) == SERIALIZABLE


@settings(max_examples=200, deadline=None)
@given(
    read=st.sets(st.integers(0, 20), min_size=1, max_size=5),
    written=st.sets(st.integers(0, 20), min_size=1, max_size=5),
    level=st.sampled_from([SERIALIZABLE, WRITE_SERIALIZABLE]),
)
def test_appends_conflict_exactly_when_partitions_overlap(read: set[int], written: set[int], level: str) -> None:
    i = intent(read_set=ReadSet(tuple(eq(d) for d in read)), isolation=level)
    w = winner(*(add(f"d={d}/f", d) for d in written), remove("d=99/z", 99, data_change=False))
    if read & written:
        with pytest.raises(ConcurrentAppendError):
            check_winner(i, w)
    else:
        check_winner(i, w)


@settings(max_examples=100, deadline=None)
@given(paths=st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=6))
def test_blind_append_never_conflicts_with_file_actions(paths: list[str]) -> None:
    actions: list[A.Action] = [add(p) for p in paths] + [remove(p + "-old", data_change=False) for p in paths]
    check_winner(intent(is_blind_append=True), winner(*actions))


# ---------------------------------------------------------------------------------------------- Spark alignment
# References: ../shared/docs/delta-write-rules.md section 4 (CC = ConflictChecker.scala, TH =
# util/TransactionHelper.scala, OT = OptimisticTransaction.scala) and table-features.md section 3.
UNPARTITIONED = PartitionSchema({}, {})


def unpartitioned_add(path: str) -> A.Add:
    return A.Add(path, {}, 1, 1, True)


def cdc(path: str, d: int = 1) -> A.Cdc:
    return A.Cdc(path, {"d": str(d)}, 1)


@pytest.mark.parametrize(
    ("isolation", "blind_winner", "conflicts"),
    [
        (SERIALIZABLE, False, True),
        (SERIALIZABLE, True, True),
        (WRITE_SERIALIZABLE, False, True),
        (WRITE_SERIALIZABLE, True, False),  # CC checkForAddedFiles...: WriteSerializable skips blind appends
    ],
)
def test_unpartitioned_table_non_blind_txn_without_predicate_conflicts_with_a_winners_add(
    isolation: str, blind_winner: bool, conflicts: bool
) -> None:
    # CC:1004-1016: an unpartitioned table (as read) makes a non-blind transaction conflict with the winner's
    # first added file, whether or not it recorded a predicate.
    for read_set, removed in ((ReadSet(files=frozenset({"f0"})), frozenset()), (ReadSet(), frozenset({"f0"}))):
        i = intent(read_set=read_set, removed=removed, isolation=isolation, partition_schema=UNPARTITIONED)
        w = winner(unpartitioned_add("b"), unpartitioned_add("c"), blind=blind_winner)
        if conflicts:
            with pytest.raises(ConcurrentAppendError) as info:
                check_winner(i, w)
            assert info.value.conflicting_file == "b" and info.value.conflicting_partition is None
        else:
            check_winner(i, w)


def test_partitioned_table_files_without_predicate_match_no_append() -> None:
    # CC getFirstFileMatchingPartitionPredicates: on a partitioned table only recorded predicates match.
    check_winner(intent(read_set=ReadSet(files=frozenset({"d=1/f0"}))), winner(add("d=1/b")))


def test_effective_isolation_follows_sparks_downgrade_rule() -> None:
    # TH:111-145 canDowngradeToSnapshotIsolation
    rearrange = [add("a", data_change=False), remove("b", data_change=False)]
    cases: list[tuple[list[A.Action], str, str | None, str]] = [
        ([], SERIALIZABLE, "WRITE", SNAPSHOT_ISOLATION),  # empty: no data changed
        ([], WRITE_SERIALIZABLE, "WRITE", WRITE_SERIALIZABLE),  # ... but WRITE changes data
        ([], WRITE_SERIALIZABLE, "Empty Commit", SNAPSHOT_ISOLATION),
        (rearrange, WRITE_SERIALIZABLE, "OPTIMIZE", SNAPSHOT_ISOLATION),
        (rearrange, WRITE_SERIALIZABLE, "WRITE", WRITE_SERIALIZABLE),
        (rearrange, WRITE_SERIALIZABLE, "MY COMPACTOR", WRITE_SERIALIZABLE),  # unknown: changes data
        (rearrange, WRITE_SERIALIZABLE, None, WRITE_SERIALIZABLE),
        (rearrange, SERIALIZABLE, "WRITE", SNAPSHOT_ISOLATION),  # Serializable ignores the operation
        ([*rearrange, cdc("c")], SERIALIZABLE, "OPTIMIZE", SNAPSHOT_ISOLATION),  # cdc is a file action
        ([*rearrange, A.DomainMetadata("delta.rowTracking", "{}")], SERIALIZABLE, "OPTIMIZE", SNAPSHOT_ISOLATION),
        ([*rearrange, A.DomainMetadata("app.x", "{}")], SERIALIZABLE, "OPTIMIZE", SERIALIZABLE),
        ([A.Metadata(schema_string='{"type":"struct","fields":[]}')], SERIALIZABLE, "OPTIMIZE", SERIALIZABLE),
        ([A.Protocol(1, 3)], SERIALIZABLE, "UPGRADE PROTOCOL", SERIALIZABLE),
    ]
    for actions, level, operation, expected in cases:
        assert effective_isolation(level, actions, operation) == expected, (actions, level, operation)


def test_cdc_is_a_file_action_so_a_commit_with_one_is_not_blind() -> None:
    # OT:1882-1887 isBlindAppend; actions.scala:704, 1263: AddCDCFile is a FileAction
    assert is_blind_append([add("a")], ReadSet()) is True
    assert is_blind_append([], ReadSet()) is True
    assert is_blind_append([add("a"), cdc("_change_data/c")], ReadSet()) is False
    assert is_blind_append([add("a")], ReadSet(files=frozenset({"x"}))) is False
    assert is_blind_append([add("a")], ReadSet((eq(1),))) is False


def test_a_winners_cdc_files_are_not_appends() -> None:
    # CC WinningCommitSummary: addedFiles are AddFile only
    check_winner(intent(read_set=ReadSet((eq(1),))), winner(cdc("_change_data/c", 1)))


def test_operation_names_follow_spark() -> None:
    assert changes_data("WRITE") and changes_data("MERGE") and changes_data("RESTORE")
    assert not changes_data("OPTIMIZE") and not changes_data("SET TBLPROPERTIES") and not changes_data("Empty Commit")
    assert changes_data("my own job") and changes_data("optimize") and changes_data(None)
    assert SPARK_OPERATIONS["CREATE TABLE"] is False and SPARK_OPERATIONS["CREATE TABLE AS SELECT"] is True


#: a rewrite of a table with row tracking enabled: what a winner that adds the feature refuses
REWRITING_TRACKED_ROWS = HeldTo(REWRITE, {"delta.enableRowTracking": "true"}, {"type": "struct", "fields": []}, "/t")


@pytest.mark.parametrize("changes_protocol", [False, True])
def test_a_winner_protocol_we_cannot_write_is_unsupported_not_protocol_changed(changes_protocol: bool) -> None:
    # CC checkProtocolCompatibility: protocolRead/protocolWrite run first, before the "both changed" check
    w = winner(A.Protocol(1, 7, None, ("rowTracking",)), version=7)
    with pytest.raises(UnsupportedFeatureError) as info:
        check_winner(intent(changes_protocol=changes_protocol, held_to=REWRITING_TRACKED_ROWS), w)
    assert not isinstance(info.value, ConcurrentModificationError)
    assert (info.value.feature, info.value.version) == ("rowTracking", 7)
    assert "version 7" in str(info.value) and "rowTracking" in str(info.value)


LEGACY_4 = ("appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns")


def test_feature_removal_counts_features_implied_by_legacy_versions() -> None:
    # TableFeature.isProtocolRemovingFeatures compares implicitlyAndExplicitlySupportedFeatures
    i = intent(read_protocol=A.Protocol(1, 4))
    without_cdf = tuple(f for f in LEGACY_4 if f != "changeDataFeed")
    with pytest.raises(ProtocolChangedError, match="changeDataFeed"):
        check_winner(i, winner(A.Protocol(3, 7, (), without_cdf)))
    check_winner(i, winner(A.Protocol(3, 7, (), LEGACY_4)))
    check_winner(intent(read_protocol=A.Protocol(1, 7, None, ("appendOnly",))), winner(A.Protocol(1, 2)))
