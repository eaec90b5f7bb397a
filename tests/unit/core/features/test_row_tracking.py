"""Row tracking (issue 14 Build 4): fresh row ids above the high-water mark, copied fields for re-committed
files, renumbering on retry, and the refusals (unpreserved rewrites, enabling without a backfill)."""

from __future__ import annotations

import itertools
import random

import orjson
import pytest

from deltalog.core import actions as A
from deltalog.core.features import row_tracking as RT
from deltalog.core.files.facts import known_files
from deltalog.errors import CorruptLogError, InvalidCommitError, UnsupportedFeatureError

RT_PROTOCOL = A.Protocol(1, 7, None, ("domainMetadata", "rowTracking"))
DV1 = A.DeletionVector("u", "ab" + "0" * 20, 10, 2, 1)
DV2 = A.DeletionVector("u", "cd" + "0" * 20, 12, 3, 1)


def add(path: str, n: int | None = None, **fields: object) -> A.Add:
    stats = None if n is None else orjson.dumps({"numRecords": n}).decode()
    return A.Add(path, {}, 100, 1, True, stats=stats, **fields)  # type: ignore[arg-type]


def mark_of(actions: tuple[A.Action, ...]) -> int | None:
    domains = [a for a in actions if isinstance(a, A.DomainMetadata) and a.domain == RT.DOMAIN]
    assert len(domains) <= 1
    return RT.parse_mark(domains[0].configuration) if domains else None


def test_supported_enabled_suspended() -> None:
    assert RT.supported(RT_PROTOCOL) and RT.assigns(RT_PROTOCOL, {})
    assert not RT.enabled(RT_PROTOCOL, {}) and RT.enabled(RT_PROTOCOL, {RT.ENABLED: "true"})
    assert not RT.assigns(RT_PROTOCOL, {RT.SUSPENDED: "true"})
    assert not RT.supported(A.Protocol(1, 6)) and not RT.enabled(A.Protocol(1, 2), {RT.ENABLED: "true"})


def test_the_domain() -> None:
    assert RT.parse_mark('{"rowIdHighWaterMark":9,"domainName":"delta.rowTracking"}') == 9  # as Spark writes it
    assert RT.high_water_mark({}) == RT.NO_MARK == -1
    assert RT.high_water_mark({RT.DOMAIN: '{"rowIdHighWaterMark":4}'}) == 4
    assert RT.high_water_mark([RT.domain_action(7)]) == 7
    assert RT.high_water_mark([A.DomainMetadata(RT.DOMAIN, '{"rowIdHighWaterMark":7}', removed=True)]) == -1
    assert RT.domain_action(12) == A.DomainMetadata(RT.DOMAIN, '{"rowIdHighWaterMark":12}')
    for bad in ("{", "[]", '{"rowIdHighWaterMark":"9"}', '{"rowIdHighWaterMark":true}', '{"rowIdHighWaterMark":-5}'):
        with pytest.raises(CorruptLogError, match=RT.DOMAIN):
            RT.parse_mark(bad)


def test_fresh_ids_are_cumulative_above_the_mark() -> None:
    out = RT.assign([add("a", 5), A.CommitInfo(), add("b", 3), add("c", 0)], read_mark=9, version=4)
    adds = [a for a in out.actions if isinstance(a, A.Add)]
    assert [(a.base_row_id, a.default_row_commit_version) for a in adds] == [(10, 4), (15, 4), (18, 4)]
    assert out.high_water_mark == 17 and mark_of(out.actions) == 17  # "c" has no rows, so no ids
    first = RT.assign([add("a", 2)], read_mark=RT.NO_MARK, version=0)
    assert [a.base_row_id for a in first.actions if isinstance(a, A.Add)] == [0] and first.high_water_mark == 1


def test_no_new_ids_no_domain() -> None:
    out = RT.assign([A.CommitInfo(), A.Metadata(id="t")], read_mark=3, version=2)
    assert out.high_water_mark == 3 and mark_of(out.actions) is None


def test_refusals_of_assign() -> None:
    with pytest.raises(InvalidCommitError, match="numRecords"):
        RT.assign([add("a")], read_mark=0, version=1)
    with pytest.raises(InvalidCommitError, match="written by the commit"):
        RT.assign([add("a", 1), RT.domain_action(99)], read_mark=0, version=1)
    with pytest.raises(InvalidCommitError, match="assigned by the commit"):
        RT.assign([add("a", 1, base_row_id=50)], read_mark=0, version=1)


def test_dv_update_and_removes_copy_the_fields_of_the_paths_last_add() -> None:
    live = add("p", 10, deletion_vector=DV1, base_row_id=100, default_row_commit_version=3)
    known = known_files([live])
    dv_update = [live.remove(5), add("p", 10, deletion_vector=DV2), add("new", 4)]
    dv_update[0] = A.Remove("p", 5, deletion_vector=DV1)  # a remove built without the fields
    out = RT.assign(dv_update, read_mark=200, version=8, known=known)
    removed, readded, new = out.actions[:3]
    assert isinstance(removed, A.Remove) and (removed.base_row_id, removed.default_row_commit_version) == (100, 3)
    assert isinstance(readded, A.Add) and (readded.base_row_id, readded.default_row_commit_version) == (100, 3)
    assert isinstance(new, A.Add) and (new.base_row_id, new.default_row_commit_version) == (201, 8)
    assert out.high_water_mark == 204
    with pytest.raises(InvalidCommitError, match="differs"):
        RT.assign([add("p", 10, base_row_id=101)], read_mark=200, version=8, known=known)


def test_a_known_file_without_ids_gets_fresh_ones() -> None:
    old = add("p", 6)  # committed before the table supported row tracking
    out = RT.assign(
        [A.Remove("p", 1), add("p", 6, deletion_vector=DV1)], read_mark=RT.NO_MARK, version=5, known=known_files([old])
    )
    remove, readd = out.actions[:2]
    assert isinstance(remove, A.Remove) and remove.base_row_id is None
    assert isinstance(readd, A.Add) and (readd.base_row_id, readd.default_row_commit_version) == (0, 5)


def test_retry_renumbers_our_ids_above_the_winners_mark() -> None:
    copied = add("old", 4, base_row_id=3, default_row_commit_version=2)
    first = RT.assign([add("a", 5), add("b", 3)], read_mark=9, version=6)
    staged = (*first.actions, copied)
    out = RT.reassign(staged, read_mark=9, winner_mark=20, attempted_version=6, new_version=7)
    adds = {a.path: a for a in out.actions if isinstance(a, A.Add)}
    assert (adds["a"].base_row_id, adds["b"].base_row_id) == (21, 26)
    assert adds["a"].default_row_commit_version == adds["b"].default_row_commit_version == 7
    assert (adds["old"].base_row_id, adds["old"].default_row_commit_version) == (3, 2)  # copied: untouched
    assert out.high_water_mark == 28 and mark_of(out.actions) == 28
    # a second loss: the previous result's mark is the read mark of the next retry
    again = RT.reassign(out.actions, read_mark=20, winner_mark=40, attempted_version=7, new_version=8)
    assert [a.base_row_id for a in again.actions if isinstance(a, A.Add)] == [41, 46, 3]
    assert mark_of(again.actions) == 48


def test_retry_after_a_winner_added_no_ids_only_moves_the_version() -> None:
    first = RT.assign([add("a", 2)], read_mark=4, version=3)
    out = RT.reassign(first.actions, read_mark=4, winner_mark=4, attempted_version=3, new_version=4)
    a = next(x for x in out.actions if isinstance(x, A.Add))
    assert (a.base_row_id, a.default_row_commit_version, out.high_water_mark) == (5, 4, 6)


def test_retry_starts_assigning_when_the_winner_added_the_feature() -> None:
    staged = [A.CommitInfo(), add("a", 3), add("b", 2)]  # committed as if the table had no row tracking
    out = RT.reassign(staged, read_mark=RT.NO_MARK, winner_mark=RT.NO_MARK, attempted_version=2, new_version=3)
    assert [(a.base_row_id, a.default_row_commit_version) for a in out.actions if isinstance(a, A.Add)] == [
        (0, 3),
        (3, 3),
    ]
    assert mark_of(out.actions) == 4


def test_a_caller_base_row_id_of_the_wrong_type_is_refused_on_retry() -> None:
    with pytest.raises(InvalidCommitError, match="not an integer"):
        RT.reassign([add("a", 1, base_row_id="5")], read_mark=1, winner_mark=2, attempted_version=3, new_version=4)


def test_a_winner_mark_below_ours_is_a_corrupt_log() -> None:
    with pytest.raises(CorruptLogError, match="never decreases"):
        RT.reassign([add("a", 1)], read_mark=10, winner_mark=5, attempted_version=3, new_version=4)


def test_racing_writers_keep_every_protocol_invariant() -> None:
    """Seeded race: each round, several writers stage appends on the same read version; one wins, the others
    retry against each winner in turn. The log must satisfy PROTOCOL's row-tracking invariants throughout."""
    rng = random.Random(14)
    mark, version, log = RT.NO_MARK, 0, []
    for _ in range(40):
        writers = []
        for w in range(rng.randint(1, 4)):
            files = [add(f"v{version}-w{w}-f{i}", rng.randint(0, 9)) for i in range(rng.randint(1, 3))]
            writers.append((RT.assign(files, read_mark=mark, version=version + 1), mark, version + 1))
        for result, read_mark, attempted in writers:
            while attempted <= version:  # lost: rebase over every commit since
                winner_mark = RT.high_water_mark(a for a in log[attempted - 1][1] if isinstance(a, A.DomainMetadata))
                winner_mark = max(winner_mark, read_mark)
                result = RT.reassign(
                    result.actions,
                    read_mark=read_mark,
                    winner_mark=winner_mark,
                    attempted_version=attempted,
                    new_version=attempted + 1,
                )
                read_mark, attempted = winner_mark, attempted + 1
            version += 1
            log.append((version, result.actions))
            mark = max(mark, result.high_water_mark)
    seen: list[tuple[int, int]] = []
    previous_mark = RT.NO_MARK
    for v, actions in log:
        commit_mark = mark_of(actions)
        for a in actions:
            if isinstance(a, A.Add):
                n = orjson.loads(a.stats or "{}")["numRecords"]
                assert a.default_row_commit_version == v
                assert a.base_row_id is not None and a.base_row_id > previous_mark
                if n:
                    assert commit_mark is not None and a.base_row_id + n - 1 <= commit_mark
                    seen.append((a.base_row_id, a.base_row_id + n - 1))
        if commit_mark is not None:
            assert commit_mark >= previous_mark
            previous_mark = commit_mark
    seen.sort()
    assert all(hi < lo for (_, hi), (lo, _) in itertools.pairwise(seen))  # disjoint ranges


def test_rewrites_and_tags() -> None:
    RT.check_rewrite(RT_PROTOCOL, {})  # only supported: copies just get fresh ids
    RT.check_rewrite(RT_PROTOCOL, {RT.ENABLED: "true"}, preserves_ids=True)
    with pytest.raises(UnsupportedFeatureError, match="materialized") as info:
        RT.check_rewrite(RT_PROTOCOL, {RT.ENABLED: "true"})
    assert info.value.feature == "rowTracking"
    assert RT.preserved_tags(RT_PROTOCOL, {}, copies_rows=True) == {}
    assert RT.preserved_tags(RT_PROTOCOL, {RT.ENABLED: "true"}, copies_rows=False) == {RT.PRESERVED_TAG: "true"}
    assert RT.preserved_tags(RT_PROTOCOL, {RT.ENABLED: "true"}, copies_rows=True) == {RT.PRESERVED_TAG: "false"}


def test_enabling_row_tracking() -> None:
    names = {RT.MATERIALIZED_ROW_ID: "_row-id-col-1", RT.MATERIALIZED_COMMIT_VERSION: "_row-commit-version-col-1"}
    on = {RT.ENABLED: "true", **names}
    RT.check_enablement(None, on, RT_PROTOCOL, live_files=0)  # a new table
    RT.check_enablement(on, on, RT_PROTOCOL, live_files=10)  # already enabled: nothing to check
    RT.check_enablement({}, {}, RT_PROTOCOL, live_files=10)
    cases = [
        ({}, on, RT_PROTOCOL, 3, "backfill"),
        (None, on, A.Protocol(1, 7, None, ("rowTracking",)), 0, "domainMetadata"),
        (None, {**on, RT.SUSPENDED: "true"}, RT_PROTOCOL, 0, "rowTrackingSuspended"),
        (None, {RT.ENABLED: "true"}, RT_PROTOCOL, 0, "distinct"),
        (None, {**on, RT.MATERIALIZED_COMMIT_VERSION: "_row-id-col-1"}, RT_PROTOCOL, 0, "distinct"),
    ]
    for before, after, protocol, live, message in cases:
        with pytest.raises(UnsupportedFeatureError, match=message):
            RT.check_enablement(before, after, protocol, live_files=live)
    with pytest.raises(UnsupportedFeatureError, match="already a column"):
        RT.check_enablement(None, on, RT_PROTOCOL, live_files=0, column_names=["x", "_ROW-ID-COL-1"])
