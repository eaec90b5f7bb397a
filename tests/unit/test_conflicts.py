"""The conflict checker as a pure function: one winner, one intent, the typed answer."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltalog import actions as A
from deltalog.core.conflicts import (
    SERIALIZABLE,
    SNAPSHOT_ISOLATION,
    WRITE_SERIALIZABLE,
    Intent,
    PartitionSchema,
    ReadPredicate,
    ReadSet,
    Winner,
    check_winner,
    effective_isolation,
)
from deltalog.core.partitions import Condition
from deltalog.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    MetadataChangedError,
    ProtocolChangedError,
)

SCHEMA = PartitionSchema(types={"d": "integer"}, physical={"d": "d"})


def add(path: str, d: int | None = 1, data_change: bool = True) -> A.Add:
    return A.Add(path, {"d": None if d is None else str(d)}, 1, 1, data_change)


def remove(path: str, d: int = 1, data_change: bool = True) -> A.Remove:
    return A.Remove(path, 1, data_change, True, {"d": str(d)}, 1)


def intent(**kw: Any) -> Intent:
    base: dict[str, Any] = {"read_set": ReadSet(), "isolation": SERIALIZABLE, "partition_schema": SCHEMA, "root": "/t"}
    base.update(kw)
    return Intent(**base)


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
