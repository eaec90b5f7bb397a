"""Choosing the newest complete checkpoint plus contiguous commits from a listing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltalog.core.log.paths import Kind, LogPath, checkpoint_name, commit_name, multipart_name, parse
from deltalog.core.log.segment import (
    build_segment,
    complete_checkpoints,
    earliest_version,
    latest_version,
)
from deltalog.errors import CorruptLogError, TableNotFoundError, VersionNotFoundError

SETTINGS = settings(max_examples=200, deadline=None, database=None)
UUID_A = "3a0d65cd-4056-49b8-937b-95f9e3ee90e5"
UUID_B = "ffffffff-4056-49b8-937b-95f9e3ee90e5"


def lp(name: str, size: int = 10) -> LogPath:
    p = parse(name, size=size)
    assert p is not None, name
    return p


def commits(*versions: int) -> list[LogPath]:
    return [lp(commit_name(v)) for v in versions]


def names(paths: tuple[LogPath, ...]) -> list[str]:
    return [p.name for p in paths]


def test_commits_only() -> None:
    seg = build_segment(commits(0, 1, 2))
    assert seg.version == 2
    assert seg.checkpoint is None
    assert [c.version for c in seg.commits] == [0, 1, 2]
    assert seg.files == seg.commits


def test_newest_complete_checkpoint_chosen() -> None:
    listing = [*commits(*range(0, 13)), lp(checkpoint_name(5)), lp(checkpoint_name(10))]
    seg = build_segment(sorted(listing, key=lambda p: p.name))
    assert seg.checkpoint is not None and seg.checkpoint.version == 10
    assert [c.version for c in seg.commits] == [11, 12]
    assert names(seg.files) == [checkpoint_name(10), commit_name(11), commit_name(12)]


def test_checkpoint_at_or_below_target() -> None:
    listing = [*commits(*range(0, 13)), lp(checkpoint_name(5)), lp(checkpoint_name(10))]
    seg = build_segment(listing, version=9)
    assert seg.checkpoint is not None and seg.checkpoint.version == 5
    assert [c.version for c in seg.commits] == [6, 7, 8, 9]
    seg = build_segment(listing, version=10)
    assert seg.checkpoint is not None and seg.checkpoint.version == 10
    assert seg.commits == ()
    seg = build_segment(listing, version=4)
    assert seg.checkpoint is None and [c.version for c in seg.commits] == [0, 1, 2, 3, 4]


def test_checkpoint_without_older_commits() -> None:
    listing = [lp(checkpoint_name(10)), *commits(10, 11, 12)]
    seg = build_segment(listing)
    assert seg.checkpoint is not None and seg.checkpoint.version == 10
    assert [c.version for c in seg.commits] == [11, 12]


def test_incomplete_multipart_skipped() -> None:
    listing = [*commits(*range(0, 8)), lp(checkpoint_name(3)), lp(multipart_name(6, 1, 3)), lp(multipart_name(6, 3, 3))]
    seg = build_segment(listing)
    assert seg.checkpoint is not None and seg.checkpoint.version == 3
    assert [c.version for c in seg.commits] == [4, 5, 6, 7]


def test_complete_multipart_used_with_all_parts_in_order() -> None:
    listing = commits(*range(0, 8)) + [lp(multipart_name(6, i, 3)) for i in (3, 1, 2)]
    seg = build_segment(listing)
    assert seg.checkpoint is not None
    assert seg.checkpoint.kind is Kind.MULTIPART
    assert names(seg.checkpoint.files) == [multipart_name(6, i, 3) for i in (1, 2, 3)]
    assert [c.version for c in seg.commits] == [7]


def test_multipart_parts_of_different_counts_do_not_mix() -> None:
    # parts 1/2 and 2/3 and 3/3: no complete set of either count
    listing = [
        *commits(*range(0, 8)),
        lp(multipart_name(6, 1, 2)),
        lp(multipart_name(6, 2, 3)),
        lp(multipart_name(6, 3, 3)),
    ]
    assert complete_checkpoints(listing) == []
    seg = build_segment(listing)
    assert seg.checkpoint is None


def test_zero_byte_checkpoint_skipped() -> None:
    listing = [*commits(*range(0, 8)), lp(checkpoint_name(3)), lp(checkpoint_name(6), size=0)]
    seg = build_segment(listing)
    assert seg.checkpoint is not None and seg.checkpoint.version == 3


def test_zero_byte_part_makes_multipart_incomplete() -> None:
    listing = [*commits(*range(0, 8)), lp(multipart_name(6, 1, 2)), lp(multipart_name(6, 2, 2), size=0)]
    assert complete_checkpoints(listing) == []


@pytest.mark.parametrize(
    ("present", "winner"),
    [
        ([checkpoint_name(5), multipart_name(5, 1, 2), multipart_name(5, 2, 2)], Kind.MULTIPART),
        ([checkpoint_name(5), f"00000000000000000005.checkpoint.{UUID_A}.json"], Kind.UUID_CHECKPOINT),
        (
            [
                checkpoint_name(5),
                multipart_name(5, 1, 2),
                multipart_name(5, 2, 2),
                f"00000000000000000005.checkpoint.{UUID_A}.parquet",
            ],
            Kind.UUID_CHECKPOINT,
        ),
        ([checkpoint_name(5)], Kind.CHECKPOINT),
    ],
)
def test_tie_break_at_one_version(present: list[str], winner: Kind) -> None:
    for order in (present, list(reversed(present))):
        listing = commits(*range(0, 7)) + [lp(n) for n in order]
        seg = build_segment(listing)
        assert seg.checkpoint is not None and seg.checkpoint.version == 5
        assert seg.checkpoint.kind is winner


def test_tie_break_more_parts_then_greater_name() -> None:
    listing = (
        commits(*range(0, 7))
        + [lp(multipart_name(5, i, 2)) for i in (1, 2)]
        + [lp(multipart_name(5, i, 3)) for i in (1, 2, 3)]
    )
    seg = build_segment(listing)
    assert seg.checkpoint is not None and len(seg.checkpoint.files) == 3
    uuids = [lp(f"00000000000000000005.checkpoint.{u}.json") for u in (UUID_B, UUID_A)]
    seg = build_segment(commits(*range(0, 7)) + uuids)
    assert seg.checkpoint is not None and seg.checkpoint.files[0].name.endswith(f"{UUID_B}.json")


def test_gap_names_missing_commit() -> None:
    with pytest.raises(CorruptLogError) as exc:
        build_segment(commits(0, 1, 3, 4), where="/t/_delta_log")
    msg = str(exc.value)
    assert commit_name(2) in msg
    assert exc.value.path == f"/t/_delta_log/{commit_name(2)}"


def test_gap_after_checkpoint_names_missing_commit() -> None:
    listing = [*commits(*range(0, 6)), lp(checkpoint_name(5)), *commits(7, 8)]
    with pytest.raises(CorruptLogError) as exc:
        build_segment(listing)
    assert commit_name(6) in str(exc.value)
    # an older version below the gap is still fine
    assert build_segment(listing, version=5).version == 5


def test_gap_before_checkpoint_does_not_matter() -> None:
    listing = [*commits(0, 1, 4, 5, 6), lp(checkpoint_name(4))]
    seg = build_segment(listing)
    assert seg.checkpoint is not None and seg.checkpoint.version == 4
    assert [c.version for c in seg.commits] == [5, 6]


def test_version_before_earliest() -> None:
    listing = [lp(checkpoint_name(5)), *commits(*range(3, 11))]
    with pytest.raises(VersionNotFoundError) as exc:
        build_segment(listing, version=2)
    assert exc.value.earliest == 5
    assert exc.value.latest == 10
    with pytest.raises(VersionNotFoundError) as exc:
        build_segment(listing, version=4)
    assert (exc.value.earliest, exc.value.latest) == (5, 10)


def test_truncated_log_without_checkpoint_is_corrupt() -> None:
    """Commits 3..5 and no checkpoint: no version can be rebuilt at all. That is a damaged log (Spark:
    "the transaction log has been truncated", naming 0.json), not a version outside a valid range."""
    for version in (None, 5, 3):
        with pytest.raises(CorruptLogError) as exc:
            build_segment(commits(3, 4, 5), version=version, where="/t/_delta_log")
        assert commit_name(0) in str(exc.value)


def test_version_above_latest() -> None:
    with pytest.raises(VersionNotFoundError) as exc:
        build_segment(commits(0, 1, 2), version=3)
    assert (exc.value.earliest, exc.value.latest) == (0, 2)
    assert "3" in str(exc.value) and "2" in str(exc.value)


def test_negative_version() -> None:
    with pytest.raises(VersionNotFoundError):
        build_segment(commits(0, 1), version=-1)


def test_empty_listing() -> None:
    with pytest.raises(TableNotFoundError):
        build_segment([], where="/t/_delta_log")
    with pytest.raises(TableNotFoundError):
        build_segment([lp("00000000000000000000.crc")])
    with pytest.raises(TableNotFoundError):
        build_segment([lp(checkpoint_name(3), size=0)])


def test_compaction_files_are_not_commits() -> None:
    listing = [*commits(0, 1, 2, 3), lp("00000000000000000001.00000000000000000003.compacted.json")]
    seg = build_segment(listing)
    assert [c.kind for c in seg.commits] == [Kind.COMMIT] * 4


def test_latest_and_earliest() -> None:
    listing = commits(0, 1, 2)
    assert (earliest_version(listing), latest_version(listing)) == (0, 2)
    listing = [lp(checkpoint_name(4)), *commits(3, 4, 5)]
    assert (earliest_version(listing), latest_version(listing)) == (4, 5)
    assert latest_version([]) is None and earliest_version([]) is None


def test_describe_mentions_files() -> None:
    listing = [*commits(*range(0, 8)), lp(checkpoint_name(5))]
    text = build_segment(listing).describe()
    assert checkpoint_name(5) in text and commit_name(6) in text and commit_name(7) in text


@SETTINGS
@given(
    st.integers(1, 40).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.sets(st.integers(0, n - 1)),
            st.sets(st.integers(0, n - 1)),
            st.integers(0, n - 1),
        )
    )
)
def test_segment_is_contiguous_and_uses_newest_usable_checkpoint(
    data: tuple[int, set[int], set[int], int],
) -> None:
    n, cps, zero_size, target = data
    listing = commits(*range(n)) + [lp(checkpoint_name(v), size=0 if v in zero_size else 10) for v in cps]
    seg = build_segment(listing, version=target)
    usable = [v for v in cps if v <= target and v not in zero_size]
    expected_cp = max(usable) if usable else None
    assert (seg.checkpoint.version if seg.checkpoint else None) == expected_cp
    start = 0 if expected_cp is None else expected_cp + 1
    assert [c.version for c in seg.commits] == list(range(start, target + 1))
