"""A MERGE is one transaction that read what Delta Spark records as read: racing writers get the conflicts Delta
Spark raises, and the loser's files are deleted.

Each race lets the other writer commit at the moment the merge sends its commit (a fault-injecting wrapper
around the real local store runs it then). The merge's read predicate is its condition's target-only part: a
condition with ``t.day = '...'`` commits while appends land in other days; one on ``t.id = s.id`` alone read the
whole table, so any append conflicts under Serializable (``ConcurrentAppendError``) and a blind one does not
under WriteSerializable. A file it read and another writer removed is ``ConcurrentDeleteReadError`` naming the
file; re-added with a deletion vector, the winner's add is what conflicts first (``ConcurrentAppendError``), as
in Delta Spark's checker, whose append check comes before its delete checks.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog import ConcurrentAppendError, ConcurrentDeleteReadError, DeltaLog
from deltalog.storage.faults import FaultyStore, slow
from deltalog.storage.local import LocalLogStore
from tests.integration.dml_kit import assert_everyone_reads, files_on_disk

DAYS = ("2024-01-01", "2024-01-02")


def rows(ids: range, day: str) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "v": pa.array(list(ids), pa.int64()),
            "day": pa.array([day] * len(ids), pa.string()),
        }
    )


def table(root: Path, configuration: dict[str, str] | None = None) -> int:
    log = DeltaLog.for_table(root)
    log.create(rows(range(0), DAYS[0]).schema, partition_columns=["day"], configuration=configuration or {})
    deltalog.write(rows(range(0, 10), DAYS[0]), root)
    deltalog.write(rows(range(10, 20), DAYS[1]), root)
    return log.latest_version()


def racing(root: Path, version: int, other: Callable[[], object]) -> DeltaLog:
    """A log whose commit of ``version`` first lets ``other`` commit that version."""
    rule = slow("put_if_absent", f"_delta_log/{version:020d}.json", delay_s=0, nth=1, on_fire=lambda op, path: other())
    return DeltaLog(FaultyStore(LocalLogStore(str(root)), rule), str(root))


def upsert(day: str) -> pa.Table:
    return rows(range(5, 7), day).set_column(1, "v", pa.array([-5, -6], pa.int64()))


def test_a_merge_bounded_to_one_day_commits_while_appends_land_in_another(tmp_path: Path) -> None:
    root = tmp_path / "t"
    version = table(root)
    log = racing(root, version + 1, lambda: deltalog.write(rows(range(100, 102), DAYS[1]), root))
    result = (
        log.merge(upsert(DAYS[0]), f"t.id = s.id AND t.day = '{DAYS[0]}'").when_matched_update({"v": "s.v"}).execute()
    )
    assert result.version == version + 2 and result.winners == (version + 1,)
    expected = [*rows(range(0, 10), DAYS[0]).to_pylist(), *rows(range(10, 20), DAYS[1]).to_pylist()]
    expected = [{**r, "v": -r["id"]} if r["id"] in (5, 6) else r for r in expected]
    assert_everyone_reads(root, [*expected, *rows(range(100, 102), DAYS[1]).to_pylist()])


def test_a_merge_on_the_key_alone_read_the_whole_table(tmp_path: Path) -> None:
    root = tmp_path / "t"
    version = table(root)
    before = files_on_disk(root)
    appended: list[str] = []

    def append() -> None:
        result = deltalog.write(rows(range(100, 102), DAYS[1]), root)
        appended.extend(a.path for a in result.actions if hasattr(a, "size") and a.path.endswith(".parquet"))

    log = racing(root, version + 1, append)
    with pytest.raises(ConcurrentAppendError) as info:
        log.merge(upsert(DAYS[0]), "t.id = s.id").when_matched_update({"v": "s.v"}).execute()
    assert info.value.winning_version == version + 1
    assert files_on_disk(root) - before == set(appended)  # the loser's files are gone


def test_under_write_serializable_a_blind_append_does_not_conflict(tmp_path: Path) -> None:
    root = tmp_path / "t"
    version = table(root, {"delta.isolationLevel": "WriteSerializable"})
    log = racing(root, version + 1, lambda: deltalog.write(rows(range(100, 102), DAYS[1]), root))
    result = log.merge(upsert(DAYS[0]), "t.id = s.id").when_matched_update({"v": "s.v"}).execute()
    assert result.winners == (version + 1,) and result.isolation_level == "WriteSerializable"


def test_a_file_it_read_removed_by_another_writer_is_a_delete_read_conflict_naming_it(tmp_path: Path) -> None:
    root = tmp_path / "t"
    version = table(root)
    before = files_on_disk(root)
    removed: list[str] = []

    def delete_day() -> None:
        result = DeltaLog.for_table(root).delete(f"day = '{DAYS[1]}'")  # whole files: removes only
        removed.extend(a.path for a in result.actions)

    log = racing(root, version + 1, delete_day)
    with pytest.raises(ConcurrentDeleteReadError) as info:
        log.merge(upsert(DAYS[0]), "t.id = s.id").when_matched_update({"v": "s.v"}).execute()
    assert info.value.conflicting_file in removed
    assert files_on_disk(root) == before  # the merge's new file is gone; the winner wrote none


def test_a_file_it_read_given_a_deletion_vector_by_another_writer_conflicts_as_an_append(tmp_path: Path) -> None:
    root = tmp_path / "t"
    version = table(root, {"delta.enableDeletionVectors": "true"})
    before = files_on_disk(root)
    log = racing(root, version + 1, lambda: DeltaLog.for_table(root).delete("id = 2"))
    with pytest.raises(ConcurrentAppendError) as info:
        log.merge(upsert(DAYS[0]), "t.id = s.id").when_matched_update({"v": "s.v"}).execute()
    assert info.value.conflicting_file is not None and info.value.conflicting_file.startswith(f"day={DAYS[0]}")
    left = files_on_disk(root) - before
    assert len(left) == 1 and next(iter(left)).startswith("deletion_vector_")  # the winner's DV file only
