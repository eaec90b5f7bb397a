"""The verdict on a commit just written, from the listing made after it (deltalog.core.log.reachability).

Each case is a listing as the store would show it after our put-if-absent of version 5 on top of the tip
we read version 4 from; the times are the store's modification times in milliseconds.
"""

from __future__ import annotations

import pytest

from deltalog.core.log.paths import LogPath, parse
from deltalog.core.log.reachability import (
    UNLISTED,
    Tip,
    Verdict,
    holds,
    judge,
    moved_on,
    replaced,
    segment_tip,
    tip_in,
)
from deltalog.core.log.segment import build_segment
from deltalog.core.plans.cleanup import plan_cleanup


def f(name: str, mtime: int, size: int = 100) -> LogPath:
    p = parse(name, size, mtime)
    assert p is not None
    return p


def commit(v: int, mtime: int, size: int = 100) -> LogPath:
    return f(f"{v:020d}.json", mtime, size)


def checkpoint(v: int, mtime: int) -> LogPath:
    return f(f"{v:020d}.checkpoint.parquet", mtime, 5000)


TIP = Tip(4, ((f"{4:020d}.json", 100, 1_000),))
OURS = commit(5, 5_000)


def test_the_tip_unchanged_means_reachable_whatever_came_after() -> None:
    # later commits and a checkpoint of them (built on ours) do not matter once version 4 is as we read it
    listing = [commit(4, 1_000), OURS, commit(6, 6_000), checkpoint(6, 6_500)]
    judged = judge(5, TIP, listing)
    assert judged.verdict is Verdict.REACHABLE
    assert judged.ours == OURS


def test_a_file_after_us_that_is_older_than_ours_makes_ours_an_orphan() -> None:
    # the slow writer: cleanup deleted 4..9 below checkpoint 10 before our write; 5 was free again
    listing = [OURS, checkpoint(10, 3_000), commit(10, 2_900), commit(11, 3_100)]
    judged = judge(5, TIP, listing)
    assert judged.verdict is Verdict.ORPHAN
    assert "00000000000000000010.json" in judged.reason or "00000000000000000010.checkpoint" in judged.reason


def test_a_gap_without_any_checkpoint_makes_ours_an_orphan() -> None:
    # the table was deleted and recreated shorter: nothing at 4, nothing that could have cleaned it
    listing = [OURS]
    assert judge(5, TIP, listing).verdict is Verdict.ORPHAN
    assert judge(5, TIP, []).verdict is Verdict.ORPHAN


def test_cleanup_right_after_our_write_cannot_be_told_apart() -> None:
    # a checkpoint written after ours (newer time) and version 4 removed: it may hold our commit or not
    listing = [OURS, commit(6, 6_000), checkpoint(6, 6_500)]
    judged = judge(5, TIP, listing)
    assert judged.verdict is Verdict.UNKNOWN
    assert "log cleanup" in judged.reason
    # ours removed too: still undecidable
    assert judge(5, TIP, [commit(6, 6_000), checkpoint(6, 6_500)]).verdict is Verdict.UNKNOWN


def test_a_replaced_commit_under_ours_makes_ours_an_orphan() -> None:
    # same name, a different file: commits are never rewritten, so the table was deleted and created again,
    # and ours would be a commit into a table the writer never read (issue 23)
    for listing in ([commit(4, 4_000), OURS], [commit(4, 1_000, size=90), OURS, commit(6, 6_000)]):
        judged = judge(5, TIP, listing)
        assert judged.verdict is Verdict.ORPHAN
        assert "deleted and created again" in judged.reason


def test_a_rewritten_checkpoint_under_ours_is_unknown() -> None:
    # a checkpoint may be written again at its version (another engine): that alone says nothing of the table
    tip = Tip(4, ((f"{4:020d}.checkpoint.parquet", 5000, 900),))
    judged = judge(5, tip, [checkpoint(4, 4_000), OURS])
    assert judged.verdict is Verdict.UNKNOWN
    assert "replaced" in judged.reason


#: version 5 read (not listed) after losing it on the young path, on top of the tip of version 4
READ_WINNER = Tip(5, ((f"{5:020d}.json", 100, UNLISTED),), TIP)


def test_a_tip_read_without_a_listing_holds_only_on_an_unreplaced_tip_under_it() -> None:
    assert READ_WINNER.floor == 4 and TIP.floor == 4
    assert holds(READ_WINNER, [commit(4, 1_000), commit(5, 5_000)])
    # cleanup forced below the retention may have removed version 4: the winner's file is what holds then
    assert holds(READ_WINNER, [checkpoint(5, 5_500), commit(5, 5_000)])
    # version 4 is another file: the winner belongs to a table created again at the path (issue 23)
    assert not holds(READ_WINNER, [commit(4, 4_000), commit(5, 5_000)])
    assert replaced(READ_WINNER, [commit(4, 4_000), commit(5, 5_000)]) == f"{4:020d}.json"
    assert "replaced" in moved_on(READ_WINNER, [commit(4, 4_000), commit(5, 5_000)])
    ours = commit(6, 6_000)
    assert judge(6, READ_WINNER, [commit(4, 1_000), commit(5, 5_000), ours]).verdict is Verdict.REACHABLE
    judged = judge(6, READ_WINNER, [commit(4, 4_000), commit(5, 5_000), ours])
    assert judged.verdict is Verdict.ORPHAN and f"{4:020d}.json" in judged.reason


def test_equal_times_are_never_read_as_older() -> None:
    # coarse store clocks give equal times to files written close together: equal is not "before"
    listing = [OURS, commit(6, 5_000), checkpoint(6, 5_000)]
    assert judge(5, TIP, listing).verdict is Verdict.UNKNOWN


def test_holds_needs_the_same_size_and_time() -> None:
    assert holds(TIP, [commit(4, 1_000)])
    assert not holds(TIP, [commit(4, 1_000, size=101)])
    assert not holds(TIP, [commit(4, 1_001)])
    assert not holds(TIP, [])


def test_a_tip_prefers_the_commit_and_falls_back_to_the_checkpoint() -> None:
    assert tip_in([checkpoint(4, 900), commit(4, 1_000)], 4) == TIP
    only_cp = tip_in([checkpoint(4, 900), commit(5, 1_000)], 4)
    assert only_cp == Tip(4, ((f"{4:020d}.checkpoint.parquet", 5000, 900),))
    assert tip_in([commit(5, 1_000)], 4) is None


def test_a_segment_tip_is_its_last_commit_or_its_checkpoint() -> None:
    listing = [commit(v, 1_000 + v) for v in range(0, 5)] + [checkpoint(4, 2_000)]
    seg = build_segment(listing, 4)
    assert seg.commits == ()
    assert segment_tip(seg) == Tip(4, ((f"{4:020d}.checkpoint.parquet", 5000, 2_000),))
    seg3 = build_segment(listing, 3)
    assert segment_tip(seg3) == Tip(3, ((f"{3:020d}.json", 100, 1_003),))


@pytest.mark.parametrize(
    ("listing", "words"),
    [
        ([checkpoint(10, 3_000), commit(10, 3_000)], "removed by log cleanup"),
        ([], "no longer exists"),
        ([commit(4, 7)], "replaced"),
    ],
)
def test_moved_on_says_what_happened(listing: list[LogPath], words: str) -> None:
    assert words in moved_on(TIP, listing)


def test_cleanup_deletes_versions_in_ascending_order_each_commit_before_its_checkpoint() -> None:
    # The reachability proof rests on this order: version v-1's files go before version v's.
    day = 86_400_000
    paths = []
    for v in range(0, 12):
        paths.append(commit(v, v * 10))
        if v % 3 == 0:
            paths.append(checkpoint(v, v * 10 + 5))
    plan = plan_cleanup(list(reversed(paths)), now_ms=40 * day, retention_ms=day)
    versions = [(d.version, d.kind) for d in plan.deletions if d.version is not None]
    assert versions, "the plan deletes version files"
    assert versions == sorted(versions, key=lambda vk: (vk[0], vk[1] != "commit"))
    assert [v for v, _ in versions] == sorted(v for v, _ in versions)
