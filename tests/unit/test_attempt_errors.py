"""The typed errors an attempt raises name the commit file (they once raised ``TypeError``: mypy found
``CorruptLogError`` called with a ``version`` keyword it does not take)."""

from __future__ import annotations

import pytest

from deltalog.core import actions as A
from deltalog.core import row_tracking
from deltalog.core.conflicts import Winner
from deltalog.core.file_facts import NO_FILES
from deltalog.errors import CorruptLogError
from deltalog.storage.local import LocalLogStore
from deltalog.table.attempts import Attempts, ReadFacts, listed_mtime
from deltalog.table.commit_loop import Won
from deltalog.table.context import TableContext

STATS = '{"numRecords": 3}'
ROW_TRACKING = A.Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "domainMetadata", "rowTracking"))


def _attempts(read: ReadFacts) -> Attempts:
    add = A.Add(path="part-1.parquet", partition_values={}, size=10, modification_time=1, data_change=True, stats=STATS)
    return Attempts(
        [add],
        A.CommitInfo(operation="WRITE"),
        read,
        known=lambda: NO_FILES,
        now_ms=lambda: 1_700_000_000_000,
        mtime_of=lambda version: 1_700_000_000_000,
    )


def test_a_winner_lowering_the_row_id_high_water_mark_is_a_corrupt_log_naming_its_commit() -> None:
    read = ReadFacts(4, ROW_TRACKING, {}, mark=100)
    lower = Winner(5, [row_tracking.domain_action(7)])
    with pytest.raises(CorruptLogError, match="high-water mark 7 is below 100") as caught:
        _attempts(read).attempt(6, [Won(lower, 1_700_000_000_000)])
    assert caught.value.path == "_delta_log/00000000000000000005.json"


def test_a_winner_raising_the_mark_moves_the_attempts_row_ids_above_it() -> None:
    read = ReadFacts(4, ROW_TRACKING, {}, mark=100)
    higher = Winner(5, [row_tracking.domain_action(250)])
    actions = _attempts(read).attempt(6, [Won(higher, 1_700_000_000_000)])
    (add,) = [a for a in actions if isinstance(a, A.Add)]
    assert add.base_row_id == 251


def test_a_commit_missing_from_the_listing_it_was_read_from_is_a_corrupt_log_naming_it(tmp_path) -> None:
    (tmp_path / "_delta_log").mkdir()
    (tmp_path / "_delta_log" / "00000000000000000000.json").write_text("{}\n")
    ctx = TableContext.of(LocalLogStore(str(tmp_path)))
    assert listed_mtime(ctx, 0) > 0
    with pytest.raises(CorruptLogError, match="is not listed") as caught:
        listed_mtime(ctx, 1)
    assert caught.value.path == "_delta_log/00000000000000000001.json"
