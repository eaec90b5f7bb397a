"""Time travel behind ``_last_checkpoint`` lists the log near the target, and answers as a full listing would."""

from __future__ import annotations

from pathlib import Path

import pytest

from deltalog import DeltaLog
from deltalog.core.log.paths import LOG_DIR, multipart_name
from deltalog.core.log.segment import LogSegment, build_segment
from deltalog.errors import CorruptLogError, VersionNotFoundError
from deltalog.storage.base import FileInfo
from deltalog.storage.local import LocalLogStore
from deltalog.table import listing as log_listing
from deltalog.table.listing import list_log, listing_near
from tests.unit.logwriter import basic_table, log_dir, paths_of


class Recording(LocalLogStore):
    """Remembers the version range of every ranged listing and every name it returned."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.ranges: list[tuple[str, str | None]] = []
        self.names: list[str] = []

    def list_range(self, path: str, stop: str | None) -> list[FileInfo]:
        out = super().list_range(path, stop)
        self.ranges.append((path.rpartition("/")[2], stop))
        self.names += [f.name for f in out]
        return out


def table(root: Path, last: int, checkpoints: list[int]) -> Path:
    """Versions 0..``last`` (one add each) with deltalog checkpoints at ``checkpoints`` (the hint ends at the max)."""
    basic_table(root, extra_commits=last)
    log = DeltaLog.for_table(root, auto_checkpoint=False)
    for v in checkpoints:
        log.checkpoint(version=v)
    return root


def recorded(root: Path) -> tuple[Recording, DeltaLog]:
    store = Recording(str(root))
    return store, DeltaLog(store, str(root), auto_checkpoint=False)


def full_segment(root: Path, version: int) -> LogSegment:
    paths = list_log(LocalLogStore(str(root)), 0)
    return build_segment(paths, version, where=f"{root}/{LOG_DIR}")


def versions_listed(store: Recording) -> set[int]:
    return {int(n[:20]) for n in store.names if n[:1].isdigit()}


@pytest.fixture(scope="module")
def long_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return table(tmp_path_factory.mktemp("long"), 400, [30, 200, 250, 300, 390])


def test_a_hint_far_ahead_lists_only_near_the_target(long_log: Path) -> None:
    store, log = recorded(long_log)
    snap = log.snapshot(version=340)
    assert snap.segment == full_segment(long_log, 340)
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 300
    assert [c.version for c in snap.segment.commits] == list(range(301, 341))
    listed = versions_listed(store)
    assert max(listed) == 340 and min(listed) == 340 - 128  # nothing past the target, nothing from 0
    assert sorted(paths_of(snap.files())) == sorted(f"part-{v}.parquet" for v in range(341))


def test_a_checkpoint_exactly_at_the_version(long_log: Path) -> None:
    store, log = recorded(long_log)
    snap = log.snapshot(version=300)
    assert snap.segment == full_segment(long_log, 300)
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 300
    assert snap.segment.commits == ()
    assert max(versions_listed(store)) == 300 and min(versions_listed(store)) == 300 - 128
    assert len(paths_of(snap.files())) == 301


def test_no_checkpoint_in_the_first_window_doubles_it(long_log: Path) -> None:
    store = Recording(str(long_log))
    paths = listing_near(store, 120, first_window=8)
    # 112.., 104.., 88.. hold no checkpoint; 120 - 64 = 56 would leave less than the window below: from 0
    starts = [int(start[:20]) for start, _ in store.ranges]
    assert starts == [112, 104, 88, 0]
    assert all(stop == f"{121:020d}." for _, stop in store.ranges)
    assert build_segment(paths, 120) == full_segment(long_log, 120)

    store = Recording(str(long_log))
    paths = listing_near(store, 190, first_window=8)
    assert [int(start[:20]) for start, _ in store.ranges] == [182, 174, 158, 126, 0]
    segment = build_segment(paths, 190)
    assert segment == full_segment(long_log, 190) and segment.checkpoint is not None
    assert segment.checkpoint.version == 30

    store = Recording(str(long_log))
    paths = listing_near(store, 215, first_window=4)
    assert [int(start[:20]) for start, _ in store.ranges] == [211, 207, 199]  # 200 found in the third
    assert build_segment(paths, 215) == full_segment(long_log, 215)


def test_an_incomplete_multipart_checkpoint_in_the_window_is_passed_over(tmp_path: Path) -> None:
    root = table(tmp_path, 300, [150, 280])
    part = log_dir(root) / multipart_name(240, 1, 2)  # part 2 of 2 never landed
    part.write_bytes((log_dir(root) / f"{150:020d}.checkpoint.parquet").read_bytes())
    store, log = recorded(root)
    snap = log.snapshot(version=270)
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 150
    assert snap.segment == full_segment(root, 270)
    assert min(versions_listed(store)) == 270 - 128
    assert len(paths_of(snap.files())) == 271


def test_every_version_behind_the_hint_matches_a_full_listing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_listing, "FIRST_WINDOW", 2)  # small windows, so most versions double at least once
    root = table(tmp_path, 60, [7, 20, 21, 45, 58])
    log = DeltaLog.for_table(root, auto_checkpoint=False)
    for v in range(58):
        assert log.segment(v) == full_segment(root, v), v


def test_a_cleaned_up_log_that_starts_after_zero(tmp_path: Path) -> None:
    root = table(tmp_path, 300, [100, 280])
    for v in range(100):  # what cleanup leaves: commits up to the oldest kept checkpoint are gone
        (log_dir(root) / f"{v:020d}.json").unlink()
    log = DeltaLog.for_table(root, auto_checkpoint=False)
    assert log.earliest_version() == 100
    snap = log.snapshot(version=150)
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 100
    assert len(paths_of(snap.files())) == 151
    assert log.segment(100) == full_segment(root, 100)
    with pytest.raises(VersionNotFoundError) as err:
        log.snapshot(version=60)
    assert err.value.earliest == 100 and err.value.latest == 300
    with pytest.raises(VersionNotFoundError) as full:
        full_segment(root, 60)
    assert str(err.value) == str(full.value)


def test_a_gap_behind_the_hint_reads_as_a_full_listing_says(tmp_path: Path) -> None:
    root = table(tmp_path, 300, [100, 280])
    (log_dir(root) / f"{140:020d}.json").unlink()
    log = DeltaLog.for_table(root, auto_checkpoint=False)
    with pytest.raises(CorruptLogError) as err:
        log.snapshot(version=150)
    with pytest.raises(CorruptLogError) as full:
        full_segment(root, 150)
    assert str(err.value) == str(full.value) and f"{140:020d}.json" in str(err.value)
    assert log.snapshot(version=139).version == 139  # before the gap is fine


def test_the_latest_version_lists_from_the_hint(long_log: Path) -> None:
    store, log = recorded(long_log)
    assert log.latest_version() == 400
    assert min(versions_listed(store)) == 390
    store, log = recorded(long_log)
    assert log.snapshot().version == 400
    assert min(versions_listed(store)) == 390


def test_earliest_version_needs_one_short_listing_when_zero_is_there(long_log: Path) -> None:
    store, log = recorded(long_log)
    assert log.earliest_version() == 0
    assert store.ranges == [(f"{0:020d}.", f"{1:020d}.")]
