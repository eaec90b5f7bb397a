"""The pure intent core: JSON round trip, overlap, liveness by store time, priority, and the early error."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest

from deltalog.core.commit import declared_intents as core
from deltalog.core.commit.conflicts import ReadPredicate
from deltalog.core.commit.declared_intents import IntentRecord, ObservedIntent
from deltalog.core.files.partitions import Condition
from deltalog.errors import ConcurrentAppendError, ConcurrentDeleteReadError, ConcurrentModificationError

TYPES: dict[str, Any] = {"day": "date", "n": "integer", "city": "string"}


def record(txn: str, *preds: dict[str, Any], declared_at: int = 1000, **kw: Any) -> IntentRecord:
    specs = tuple(
        tuple(
            (col, "in" if isinstance(v, list) else "=", tuple(v) if isinstance(v, list) else (v,))
            for col, v in p.items()
        )
        for p in preds
    )
    return IntentRecord(txn, 3, specs, (), "WRITE", "host:1", declared_at, **kw)


def observed(rec: IntentRecord, mtime: int = 90_000) -> ObservedIntent:
    return ObservedIntent(f"_delta_log/_intents/{rec.txn_id}.json", rec.txn_id, mtime, rec)


def test_record_round_trips_through_json_with_typed_values_as_strings() -> None:
    preds = (
        ReadPredicate((Condition("day", "=", (dt.date(2026, 1, 2),)), Condition("n", "in", (1, 2, None)))),
        ReadPredicate(),
    )
    rec = IntentRecord("t1", 7, core.predicate_specs(preds), ("a.parquet",), "DELETE", "h:2", 5, True, 90_000, 9_000)
    back = core.decode(core.encode(rec))
    assert back == rec
    assert back.predicates[0] == (("day", "=", ("2026-01-02",)), ("n", "in", ("1", "2", None)))
    assert back.typed_predicates(TYPES)[0] == preds[0]
    assert back.reads_whole_table and back.predicate_text() == "<whole table>"


@pytest.mark.parametrize(
    "data",
    [b"", b"{", b"[]", b'{"formatVersion": 2}', core.encode(record("x", {"day": "2026-01-01"}))[:-9]],
)
def test_torn_or_foreign_files_do_not_decode(data: bytes) -> None:
    with pytest.raises(core.IntentDecodeError):
        core.decode(data)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ({"day": "2026-01-01"}, {"day": "2026-01-01"}, True),
        ({"day": "2026-01-01"}, {"day": "2026-01-02"}, False),  # disjoint equalities
        ({"day": ["2026-01-01", "2026-01-02"]}, {"day": ["2026-01-03"]}, False),  # disjoint IN sets
        ({"day": ["2026-01-01", "2026-01-02"]}, {"day": "2026-01-02"}, True),
        ({"day": "2026-01-01"}, {"city": "Oslo"}, True),  # different columns can both hold
        ({"day": "2026-01-01", "city": "Lima"}, {"day": "2026-01-01", "city": "Oslo"}, False),
        ({"n": "1"}, {"n": "01"}, True),  # typed: the integer 1 both times
    ],
)
def test_overlap_of_equality_and_in(a: dict[str, Any], b: dict[str, Any], expected: bool) -> None:
    ra, rb = record("a", a), record("b", b)
    assert core.overlaps(ra, rb, TYPES) is expected
    assert core.overlaps(rb, ra, TYPES) is expected


def test_whole_table_overlaps_everything_and_ranges_are_judged_against_finite_sets() -> None:
    whole = IntentRecord("w", 0, ((),), (), "WRITE", "h:1", 1)
    assert core.overlaps(whole, record("b", {"day": "2026-01-01"}), TYPES)
    after = IntentRecord("r", 0, ((("day", ">", ("2026-06-01",)),),), (), "WRITE", "h:1", 1)
    assert not core.overlaps(after, record("b", {"day": "2026-01-01"}), TYPES)
    assert core.overlaps(after, record("b", {"day": "2026-07-01"}), TYPES)
    before = IntentRecord("s", 0, ((("day", "<", ("2026-01-01",)),),), (), "WRITE", "h:1", 1)
    assert core.overlaps(after, before, TYPES)  # two ranges: not judged, assumed to overlap
    unknown_column = record("u", {"gone": "x"})
    assert core.overlaps(unknown_column, record("b", {"day": "2026-01-01"}), TYPES)  # cannot judge: overlap


def test_a_common_file_overlaps_even_with_disjoint_predicates() -> None:
    a = dataclasses.replace(record("a", {"day": "2026-01-01"}), files=("p/x.parquet",))
    b = dataclasses.replace(record("b", {"day": "2026-01-02"}), files=("p/x.parquet",))
    assert core.overlaps(a, b, TYPES)


def test_liveness_is_store_mtime_against_store_now() -> None:
    assert core.is_live(mtime_ms=50_001, store_now_ms=110_000, timeout_ms=60_000)
    assert not core.is_live(mtime_ms=50_000, store_now_ms=110_000, timeout_ms=60_000)
    torn = ObservedIntent("_delta_log/_intents/z.json", "z", 50_001, None, "not JSON")
    assert torn.live(110_000, 60_000) and not torn.live(110_001, 60_000)


def test_priority_is_a_strict_order_both_writers_agree_on() -> None:
    early, late = record("b", declared_at=1), record("a", declared_at=2)
    assert core.has_priority(early, late) and not core.has_priority(late, early)
    tie_a, tie_b = record("a", declared_at=5), record("b", declared_at=5)
    assert core.has_priority(tie_a, tie_b) and not core.has_priority(tie_b, tie_a)
    compaction = record("c", declared_at=0, is_compaction=True)
    assert core.has_priority(late, compaction) and not core.has_priority(compaction, late)  # prefer writer


def test_blocking_intent_needs_live_overlap_and_priority() -> None:
    mine = record("me", {"day": "2026-01-01"}, declared_at=10)
    first = record("first", {"day": "2026-01-01"}, declared_at=5)
    later = record("later", {"day": "2026-01-01"}, declared_at=20)
    other_day = record("other", {"day": "2026-01-02"}, declared_at=1)
    now = 100_000
    assert core.blocking_intent(mine, [observed(later), observed(other_day)], TYPES, now) is None
    assert core.blocking_intent(mine, [observed(mine), observed(first)], TYPES, now) == observed(first)
    stale = observed(first, mtime=now - mine.timeout_ms)
    assert core.blocking_intent(mine, [stale], TYPES, now) is None
    torn = ObservedIntent("_delta_log/_intents/t.json", "t", now - 1, None, "not JSON")
    assert core.blocking_intent(mine, [torn], TYPES, now) == torn
    assert core.blocking_intent(mine, [dataclasses.replace(torn, mtime_ms=now - 60_000)], TYPES, now) is None


def test_early_errors_are_typed_like_the_commit_would_be() -> None:
    mine = record("me", {"day": "2026-01-01"})
    append = core.early_error(mine, observed(record("w", {"day": "2026-01-01"})))
    assert type(append) is ConcurrentAppendError and append.winning_version is None
    assert "transaction w" in str(append) and "host:1" in str(append)
    delete = core.early_error(mine, observed(dataclasses.replace(record("d"), operation="DELETE")))
    assert type(delete) is ConcurrentDeleteReadError
    torn = core.early_error(mine, ObservedIntent("_delta_log/_intents/t.json", "t", 1, None, "not JSON"))
    assert type(torn) is ConcurrentModificationError and "cannot be read" in str(torn)
