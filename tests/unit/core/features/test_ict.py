"""In-commit timestamps (issue 14 Build 3): when they are on, the timestamp of each attempt, commitInfo first,
the enablement pair at version > 0, and re-stamping on every retry."""

from __future__ import annotations

import pytest

from deltalog.core import actions as A
from deltalog.core.features import ict
from deltalog.core.features.ict import CommitTime, IctEnablement
from deltalog.errors import InvalidCommitError

ICT = A.Protocol(1, 7, None, ("inCommitTimestamp",))
ON = {ict.ENABLED: "true"}
ADD = A.Add("part-0.parquet", {}, 10, 1, True)


def meta(conf: dict[str, str]) -> A.Metadata:
    return A.Metadata(id="t", schema_string='{"type":"struct","fields":[]}', configuration=conf)


def test_enabled_needs_the_feature_and_the_property() -> None:
    assert ict.enabled(ICT, ON)
    assert ict.enabled(ICT, {ict.ENABLED: "TRUE"})
    assert not ict.enabled(ICT, {})
    assert not ict.enabled(A.Protocol(1, 7, None, ("appendOnly",)), ON)
    assert not ict.enabled(A.Protocol(1, 6), ON)  # no legacy version implies it


def test_the_enablement_parser() -> None:
    assert ict.ict_enablement({}) is None
    assert ict.ict_enablement({ict.ENABLED: "false", ict.ENABLEMENT_VERSION: "3"}) is None
    assert ict.ict_enablement(ON) == IctEnablement(0, None)  # created with ICT: no pair
    pair = {**ON, ict.ENABLEMENT_VERSION: "7", ict.ENABLEMENT_TIMESTAMP: "1700000000123"}
    assert ict.ict_enablement(pair) == IctEnablement(7, 1_700_000_000_123)
    # another engine's unreadable values: read as history always has, never a raw error
    assert ict.ict_enablement({**ON, ict.ENABLEMENT_VERSION: "x", ict.ENABLEMENT_TIMESTAMP: "y"}) == IctEnablement(
        0, None
    )
    assert ict.ict_enablement({**ON, ict.ENABLEMENT_VERSION: "-2"}) == IctEnablement(0, None)
    # with the protocol, the property counts only where the feature is supported
    assert ict.ict_enablement(pair, A.Protocol(1, 2)) is None
    assert ict.ict_enablement(pair, ICT) == IctEnablement(7, 1_700_000_000_123)


def test_first_attempt_is_after_the_previous_commit() -> None:
    assert ict.first_attempt_timestamp(5_000, None) == 5_000
    assert ict.first_attempt_timestamp(5_000, CommitTime(3, 4_000, 9_999)) == 5_000
    assert ict.first_attempt_timestamp(5_000, CommitTime(3, 7_000, 1)) == 7_001  # a clock behind the log
    assert ict.first_attempt_timestamp(5_000, CommitTime(3, None, 8_000)) == 8_001  # before ICT: its mtime


def test_retry_is_after_the_winner() -> None:
    assert ict.retry_timestamp(5_000, CommitTime(4, 4_000, 0)) == 5_000
    assert ict.retry_timestamp(5_000, CommitTime(4, 5_000, 0)) == 5_001
    assert ict.retry_timestamp(5_000, CommitTime(4, None, 6_500)) == 6_501  # a winner without ICT: its mtime


def test_commit_info_goes_first_with_the_timestamp() -> None:
    info = A.CommitInfo(timestamp=1, operation="WRITE")
    out = ict.stamp_attempt(
        [ADD, info], version=4, timestamp=9_000, protocol=ICT, configuration=ON, prior_configuration=ON
    )
    assert out == [A.CommitInfo(timestamp=1, operation="WRITE", in_commit_timestamp=9_000), ADD]
    created = ict.stamp_attempt(
        [ADD], version=4, timestamp=9_000, protocol=ICT, configuration=ON, prior_configuration=ON
    )
    assert created[0] == A.CommitInfo(timestamp=9_000, in_commit_timestamp=9_000) and created[1:] == [ADD]
    ict.check_stamped(created, CommitTime(3, 8_999, 0))


def test_nothing_changes_without_ict() -> None:
    actions = [ADD, A.CommitInfo(operation="WRITE")]
    assert (
        ict.stamp_attempt(actions, version=4, timestamp=1, protocol=ICT, configuration={}, prior_configuration={})
        == actions
    )
    no_feature = A.Protocol(1, 2)
    assert (
        ict.stamp_attempt(
            actions, version=4, timestamp=1, protocol=no_feature, configuration=ON, prior_configuration={}
        )
        == actions
    )


def test_two_commit_infos_are_refused() -> None:
    with pytest.raises(InvalidCommitError, match="one commitInfo"):
        ict.stamp_attempt(
            [A.CommitInfo(), A.CommitInfo()],
            version=1,
            timestamp=1,
            protocol=ICT,
            configuration=ON,
            prior_configuration=ON,
        )


def test_enabling_at_a_later_version_records_the_pair_and_version_zero_does_not() -> None:
    enabling = meta(ON)
    out = ict.stamp_attempt(
        [enabling], version=5, timestamp=7_000, protocol=ICT, configuration=ON, prior_configuration={}
    )
    assert out[1].configuration == {**ON, ict.ENABLEMENT_VERSION: "5", ict.ENABLEMENT_TIMESTAMP: "7000"}
    created = ict.stamp_attempt(
        [enabling], version=0, timestamp=7_000, protocol=ICT, configuration=ON, prior_configuration=None
    )
    assert created[1].configuration == ON
    # a commit on a table that already has ICT keeps the metadata as it is
    kept = meta({**ON, ict.ENABLEMENT_VERSION: "2", ict.ENABLEMENT_TIMESTAMP: "100"})
    again = ict.stamp_attempt(
        [kept], version=9, timestamp=9_000, protocol=ICT, configuration=ON, prior_configuration=kept.configuration
    )
    assert again[1] is kept


def test_a_metadata_update_that_drops_the_pair_gets_it_back() -> None:
    prior = {**ON, ict.ENABLEMENT_VERSION: "2", ict.ENABLEMENT_TIMESTAMP: "100"}
    replaced = ict.stamped_metadata(meta(ON), version=9, timestamp=9_000, protocol=ICT, prior_configuration=prior)
    assert replaced.configuration == prior


def test_an_enabling_commit_that_retries_is_restamped_with_its_new_version() -> None:
    """Writer B enables ICT reading v4 (no ICT, mtime 5_000); writer A wins v5 without ICT (mtime 6_000)."""
    read = CommitTime(4, None, 5_000)
    first_ts = ict.first_attempt_timestamp(4_000, read)
    assert first_ts == 5_001  # the enabling ICT exceeds the previous commit file's mtime
    attempt = ict.stamp_attempt(
        [meta(ON)], version=5, timestamp=first_ts, protocol=ICT, configuration=ON, prior_configuration={}
    )
    assert attempt[1].configuration[ict.ENABLEMENT_VERSION] == "5"
    winner = CommitTime(5, None, 6_000)
    retry_ts = ict.retry_timestamp(ict.check_stamped(attempt, read), winner)
    retry = ict.stamp_attempt(
        attempt, version=6, timestamp=retry_ts, protocol=ICT, configuration=ON, prior_configuration={}
    )
    assert retry[0].in_commit_timestamp == 6_001
    assert retry[1].configuration == {**ON, ict.ENABLEMENT_VERSION: "6", ict.ENABLEMENT_TIMESTAMP: "6001"}
    assert ict.check_stamped(retry, winner) == 6_001


def test_racing_writers_stay_strictly_increasing() -> None:
    read = CommitTime(3, 1_000, 1_000)

    def attempt(actions: list[A.Action], version: int, timestamp: int) -> list[A.Action]:
        return ict.stamp_attempt(
            actions, version=version, timestamp=timestamp, protocol=ICT, configuration=ON, prior_configuration=ON
        )

    a = attempt([ADD], 4, ict.first_attempt_timestamp(900, read))
    b = attempt([ADD], 4, ict.first_attempt_timestamp(900, read))
    assert ict.check_stamped(a, read) == ict.check_stamped(b, read) == 1_001
    winner = CommitTime(4, ict.check_stamped(a, read), 50)  # A took version 4
    with pytest.raises(InvalidCommitError, match="not after version 4"):
        ict.check_stamped(b, winner)  # B as it was is no longer valid
    b = attempt(b, 5, ict.retry_timestamp(1_001, winner))
    assert ict.check_stamped(b, winner) == 1_002 and len(b) == 2


def test_check_stamped_refusals() -> None:
    with pytest.raises(InvalidCommitError, match="first action"):
        ict.check_stamped([ADD, A.CommitInfo(in_commit_timestamp=5)], None)
    with pytest.raises(InvalidCommitError, match="no integer"):
        ict.check_stamped([A.CommitInfo()], None)
    with pytest.raises(InvalidCommitError, match="first action"):
        ict.check_stamped([], None)
    assert ict.check_stamped([A.CommitInfo(in_commit_timestamp=5)], None) == 5
