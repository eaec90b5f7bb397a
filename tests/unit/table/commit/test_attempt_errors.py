"""The typed errors an attempt raises name the commit file (they once raised ``TypeError``: mypy found
``CorruptLogError`` called with a ``version`` keyword it does not take)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from deltalog.core import actions as A
from deltalog.core.commit.conflicts import PartitionSchema, ReadSet, TxnSummary, Winner
from deltalog.core.features import ict, row_tracking
from deltalog.core.features.commit_checks import NOTHING_DECLARED
from deltalog.core.log.reachability import Tip
from deltalog.errors import CorruptLogError
from deltalog.storage.local import LocalLogStore
from deltalog.table.commit.attempts import Attempts
from deltalog.table.commit.loop import Won
from deltalog.table.commit.prepare import CommitRequest, Prepared
from deltalog.table.commit.read_state import listed_mtime
from deltalog.table.context import TableContext

STATS = '{"numRecords": 3}'
ROW_TRACKING = A.Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "domainMetadata", "rowTracking"))


@dataclass(frozen=True)
class ReadVersion:
    """A read version as the attempts stage asks about it (:class:`~deltalog.table.commit.read_state.ReadState`),
    without a log behind it: version 4 of a row-tracking table whose high-water mark is ``mark``."""

    mark: int
    version: int = 4
    protocol: A.Protocol = ROW_TRACKING
    metadata: A.Metadata | None = None
    schema: Mapping[str, Any] | None = None
    configuration: Mapping[str, str] = field(default_factory=dict)
    tip: Tip = field(default_factory=lambda: Tip(4, ()))
    partition_schema: PartitionSchema = field(default_factory=lambda: PartitionSchema({}, {}))

    @property
    def domains(self) -> Mapping[str, A.DomainMetadata]:
        return {row_tracking.DOMAIN: row_tracking.domain_action(self.mark)}

    def live_adds(self, keys: Collection[str], root: str) -> list[A.Add]:
        return []

    def num_files(self) -> int:
        return 0

    def commit_time(self, ctx: TableContext) -> ict.CommitTime | None:
        return None


def _attempts(tmp_path: Path, mark: int) -> Attempts:
    add = A.Add(path="part-1.parquet", partition_values={}, size=10, modification_time=1, data_change=True, stats=STATS)
    summary = TxnSummary(ReadSet(), "Serializable", PartitionSchema({}, {}), None)
    request = CommitRequest("txn", "WRITE", "append", NOTHING_DECLARED, "Serializable")
    prepared = Prepared(ReadVersion(mark), (add,), A.CommitInfo(operation="WRITE"), summary, request)
    return Attempts(TableContext.of(LocalLogStore(str(tmp_path))), prepared)


def test_a_winner_lowering_the_row_id_high_water_mark_is_a_corrupt_log_naming_its_commit(tmp_path: Path) -> None:
    lower = Winner(5, [row_tracking.domain_action(7)])
    with pytest.raises(CorruptLogError, match="high-water mark 7 is below 100") as caught:
        _attempts(tmp_path, 100).attempt(6, [Won(lower, 1_700_000_000_000)])
    assert caught.value.path == "_delta_log/00000000000000000005.json"


def test_a_winner_raising_the_mark_moves_the_attempts_row_ids_above_it(tmp_path: Path) -> None:
    higher = Winner(5, [row_tracking.domain_action(250)])
    actions = _attempts(tmp_path, 100).attempt(6, [Won(higher, 1_700_000_000_000)])
    (add,) = [a for a in actions if isinstance(a, A.Add)]
    assert add.base_row_id == 251


def test_a_commit_missing_from_the_listing_it_was_read_from_is_a_corrupt_log_naming_it(tmp_path: Path) -> None:
    (tmp_path / "_delta_log").mkdir()
    (tmp_path / "_delta_log" / "00000000000000000000.json").write_text("{}\n")
    ctx = TableContext.of(LocalLogStore(str(tmp_path)))
    assert listed_mtime(ctx, 0) > 0
    with pytest.raises(CorruptLogError, match="is not listed") as caught:
        listed_mtime(ctx, 1)
    assert caught.value.path == "_delta_log/00000000000000000001.json"
