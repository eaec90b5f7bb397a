"""Log cleanup planning (deltalog.core.plans.cleanup): checkpoint-aligned deletion on plain listings.

Every case is a listing of parsed names with chosen modification times, so the rules can be checked
exactly: what goes, what stays, and which version remains the earliest reachable one. The property test
at the end checks the promise itself on random listings: after deleting what the plan says, every version
from the horizon to the latest still has a segment, and no version younger than the cutoff is lost.
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltalog.core.actions import Protocol
from deltalog.core.features.checkpoints import protected_before
from deltalog.core.log.paths import Kind, LogPath, parse
from deltalog.core.log.segment import build_segment, earliest_version
from deltalog.core.log.timetravel import monotonize
from deltalog.core.plans.cleanup import (
    DAY_MS,
    CleanupPlan,
    Horizon,
    LogFile,
    add_sidecars,
    check_maintainable,
    is_temp_file,
    plan_cleanup,
    protect_checkpoints,
    resolve_retention,
    truncate_to_day,
)
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError

NOW = 1_781_524_800_000  # 2026-06-15T12:00:00Z
MIDNIGHT = truncate_to_day(NOW)
RET = 30 * DAY_MS
CUTOFF = truncate_to_day(NOW - RET)  # 2026-05-16T00:00:00Z


def lp(name: str, mtime: int, size: int = 100) -> LogPath:
    p = parse(name, size, mtime)
    assert p is not None, name
    return p


def commit(v: int, mtime: int) -> LogPath:
    return lp(f"{v:020d}.json", mtime)


def checkpoint(v: int, mtime: int, size: int = 1000) -> LogPath:
    return lp(f"{v:020d}.checkpoint.parquet", mtime, size)


def part(v: int, i: int, n: int, mtime: int) -> LogPath:
    return lp(f"{v:020d}.checkpoint.{i:010d}.{n:010d}.parquet", mtime)


def uuid_checkpoint(v: int, mtime: int, fmt: str = "json") -> LogPath:
    return lp(f"{v:020d}.checkpoint.3a0d65cd-4c2c-4a5b-8f1e-6f1f0e2d1c00.{fmt}", mtime)


def crc(v: int, mtime: int) -> LogPath:
    return lp(f"{v:020d}.crc", mtime)


def compaction(x: int, y: int, mtime: int) -> LogPath:
    return lp(f"{x:020d}.{y:020d}.compacted.json", mtime)


def old(days: float) -> int:
    """An instant ``days`` before NOW."""
    return NOW - int(days * DAY_MS)


def log_of(n: int, first_age_days: float = 60.0, step_days: float = 1.0) -> list[LogPath]:
    """Commits 0..n-1, the first ``first_age_days`` old, one every ``step_days``."""
    return [commit(v, old(first_age_days - v * step_days)) for v in range(n)]


def deleted(plan: CleanupPlan) -> set[str]:
    return {d.path for d in plan.deletions}


def remaining(paths: list[LogPath], plan: CleanupPlan) -> list[LogPath]:
    gone = deleted(plan)
    return [p for p in paths if p.name not in gone]


# ---------------------------------------------------------------------------------------------- retention values
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0),
        (86_400_000, DAY_MS),
        ("30d", 30 * DAY_MS),
        ("interval 30 days", 30 * DAY_MS),
        ("INTERVAL 1 WEEK", 7 * DAY_MS),
        ("36 hours", 36 * 3_600_000),
        ("5000", 5000),
        (dt.timedelta(days=2, hours=1), 2 * DAY_MS + 3_600_000),
    ],
)
def test_retention_values_are_ms_timedeltas_or_intervals(value: object, expected: int) -> None:
    assert resolve_retention(value, {}, "delta.logRetentionDuration", "interval 30 days") == expected  # type: ignore[arg-type]


def test_retention_falls_back_to_the_property_then_the_default() -> None:
    key = "delta.logRetentionDuration"
    assert resolve_retention(None, {key: "interval 2 days"}, key, "interval 30 days") == 2 * DAY_MS
    assert resolve_retention(None, {}, key, "interval 30 days") == 30 * DAY_MS
    assert resolve_retention("1d", {key: "interval 2 days"}, key, "interval 30 days") == DAY_MS  # argument wins


@pytest.mark.parametrize("value", [-1, "-2 days", "3 months", "soon", True, 1.5j, ""])
def test_meaningless_retentions_are_invalid_arguments(value: object) -> None:
    with pytest.raises(InvalidArgumentError):
        resolve_retention(value, {}, "k", "interval 30 days")  # type: ignore[arg-type]


def test_a_bad_property_is_an_invalid_argument_not_a_crash() -> None:
    with pytest.raises(InvalidArgumentError, match="months"):
        resolve_retention(None, {"k": "interval 1 month"}, "k", "interval 30 days")


def test_truncation_is_to_utc_midnight() -> None:
    assert truncate_to_day(NOW) == 1_781_481_600_000  # 2026-06-15T00:00:00Z
    assert truncate_to_day(1_781_481_600_000) == 1_781_481_600_000
    assert truncate_to_day(-1) == -DAY_MS


# ---------------------------------------------------------------------------------------------- the boundary
def test_without_a_checkpoint_nothing_is_deleted_however_old() -> None:
    paths = log_of(20, first_age_days=400)
    plan = plan_cleanup(paths, NOW, RET)
    assert plan.deletions == () and plan.boundary is None
    assert "no complete checkpoint" in plan.reason
    assert plan.horizon == Horizon(0, paths[0].mtime)


def test_when_nothing_is_older_than_the_cutoff_nothing_is_deleted() -> None:
    paths = [*log_of(12, first_age_days=10), checkpoint(10, old(0.5))]
    plan = plan_cleanup(paths, NOW, RET)
    assert plan.deletions == () and plan.boundary is None
    assert "nothing is expired" in plan.reason


def test_files_below_the_newest_checkpoint_before_the_cutoff_go_and_it_stays_with_its_commit() -> None:
    # commits 0..39 aged 60..21 days: the cutoff (30 days, at midnight) falls between versions 29 and 30
    paths = [*log_of(40), checkpoint(10, old(50)), checkpoint(20, old(40)), checkpoint(35, old(25))]
    paths += [crc(v, old(60 - v)) for v in (5, 20, 21)]
    plan = plan_cleanup(paths, NOW, RET)
    assert plan.cutoff_ms == CUTOFF
    assert plan.boundary == 20  # 35 is younger than the cutoff
    assert deleted(plan) == {f"{v:020d}.json" for v in range(20)} | {
        f"{10:020d}.checkpoint.parquet",
        f"{5:020d}.crc",
    }
    assert f"{20:020d}.json" not in deleted(plan) and f"{20:020d}.crc" not in deleted(plan)
    assert plan.horizon == Horizon(20, paths[20].mtime)
    assert plan.remaining_checkpoints == (f"{20:020d}.checkpoint.parquet", f"{35:020d}.checkpoint.parquet")
    assert [d.version for d in plan.deletions] == sorted(d.version for d in plan.deletions)  # oldest first


def test_the_cutoff_is_truncated_to_the_day_so_a_commit_after_midnight_is_not_expired() -> None:
    # version 1 is 30 days and 6 hours old, i.e. after the truncated cutoff: a checkpoint there is too young
    paths = [commit(0, old(40)), commit(1, NOW - RET - 6 * 3_600_000), checkpoint(1, NOW - RET)]
    assert NOW - RET - 6 * 3_600_000 > CUTOFF
    plan = plan_cleanup(paths, NOW, RET)
    assert plan.boundary is None and plan.deletions == ()


def test_an_incomplete_or_empty_checkpoint_is_never_the_boundary() -> None:
    paths = [*log_of(30), part(12, 1, 3, old(48)), part(12, 3, 3, old(48)), checkpoint(15, old(45), size=0)]
    plan = plan_cleanup(paths, NOW, RET)
    assert plan.boundary is None and plan.deletions == ()


def test_multi_part_and_uuid_checkpoints_qualify_and_all_kinds_below_go() -> None:
    paths = [
        *log_of(30),
        part(4, 1, 2, old(56)),
        part(4, 2, 2, old(56)),
        uuid_checkpoint(8, old(52)),
        part(9, 1, 3, old(51)),  # an abandoned incomplete set
        checkpoint(10, old(50), size=0),  # an empty leftover
        compaction(2, 6, old(50)),
        part(12, 1, 2, old(48)),
        part(12, 2, 2, old(48)),
    ]
    plan = plan_cleanup(paths, NOW, RET)
    assert plan.boundary == 12
    gone = deleted(plan)
    assert {p.name for p in paths if p.version < 12} == gone
    assert {d.kind for d in plan.deletions} == {"commit", "checkpoint", "compaction"}


def test_the_best_checkpoint_at_a_version_is_the_boundary_and_its_siblings_stay() -> None:
    paths = [*log_of(30), checkpoint(12, old(48)), uuid_checkpoint(12, old(48), "parquet")]
    plan = plan_cleanup(paths, NOW, RET)
    assert plan.boundary == 12
    assert not any(d.version == 12 for d in plan.deletions)


def test_compactions_go_when_they_start_at_or_below_the_boundary() -> None:
    # PROTOCOL "Metadata Cleanup": a compaction whose start is <= the boundary checkpoint's version goes; a load
    # from that checkpoint replays from the version after it, so none could read it. One starting after stays.
    paths = [*log_of(30), checkpoint(10, old(50)), compaction(3, 12, old(45)), compaction(10, 14, old(45))]
    paths.append(compaction(11, 14, old(45)))
    plan = plan_cleanup(paths, NOW, RET)
    assert plan.boundary == 10
    kinds = {d.path: d.kind for d in plan.deletions}
    assert kinds[f"{3:020d}.{12:020d}.compacted.json"] == "compaction"
    assert kinds[f"{10:020d}.{14:020d}.compacted.json"] == "compaction"
    assert f"{11:020d}.{14:020d}.compacted.json" not in kinds
    # and in version order, after the boundary's own files (which stay)
    order = [d.path for d in plan.deletions]
    assert order.index(f"{10:020d}.{14:020d}.compacted.json") == len(order) - 1


def test_a_young_crc_below_the_boundary_stays_on_its_own() -> None:
    paths = [*log_of(30), checkpoint(10, old(50)), crc(3, old(1)), crc(4, old(56))]
    plan = plan_cleanup(paths, NOW, RET)
    assert plan.boundary == 10
    assert f"{3:020d}.crc" not in deleted(plan) and f"{4:020d}.crc" in deleted(plan)


def test_a_young_complete_checkpoint_below_the_boundary_lowers_the_boundary() -> None:
    # checkpoint 5 was (re)written yesterday: it may not go, so nothing from version 5 on goes either,
    # else version 6.. would be left with a checkpoint whose following commits are missing.
    paths = [*log_of(30), checkpoint(2, old(58)), checkpoint(5, old(1)), checkpoint(20, old(40))]
    plan = plan_cleanup(paths, NOW, RET)
    assert plan.boundary == 5
    assert deleted(plan) == {f"{v:020d}.json" for v in range(5)} | {f"{2:020d}.checkpoint.parquet"}
    assert "newer than the cutoff" in plan.reason


def test_commit_times_are_monotonized_so_a_touched_commit_protects_the_ones_after_it() -> None:
    # version 10 was copied yesterday; versions 11.. have older mtimes but, as time travel sees them, later times
    paths = log_of(30)
    paths[10] = commit(10, old(1))
    paths += [checkpoint(8, old(52)), checkpoint(20, old(40))]
    plan = plan_cleanup(paths, NOW, RET)
    assert plan.boundary == 8
    assert deleted(plan) == {f"{v:020d}.json" for v in range(8)}


def test_an_unusable_checkpoint_is_passed_over_for_an_older_one() -> None:
    paths = [*log_of(30), checkpoint(10, old(50)), checkpoint(20, old(40))]
    plan = plan_cleanup(paths, NOW, RET, unusable_checkpoints={f"{20:020d}.checkpoint.parquet"})
    assert plan.boundary == 10
    assert f"{20:020d}.checkpoint.parquet" not in deleted(plan)


def test_a_log_already_cleaned_reports_a_horizon_without_deleting_more() -> None:
    paths = [checkpoint(20, old(40)), *[commit(v, old(60 - v)) for v in range(21, 40)]]
    plan = plan_cleanup(paths, NOW, RET)
    assert plan.boundary == 20 and plan.deletions == ()
    assert plan.horizon == Horizon(20, None)  # its commit is already gone: only the checkpoint remains


# ---------------------------------------------------------------------------------------------- other files
def test_orphan_temp_files_older_than_a_day_go_and_nothing_else_does() -> None:
    others = [
        LogFile(".00000000000000000007.json.0f3a9c.tmp", 10, old(2)),
        LogFile(".00000000000000000008.json.aa11.tmp", 10, old(0.5)),  # a writer may still be at it
        LogFile("_commit_5f0c2a9e.json.tmp", 10, old(3)),
        LogFile(".00000000000000000004.json.crc", 10, old(90)),  # Hadoop checksum of a file that stays
        LogFile("_last_checkpoint.tmp.other", 10, old(90)),
        LogFile("README", 10, old(90)),
    ]
    plan = plan_cleanup(log_of(5), NOW, RET, other_files=others)
    assert [(d.path, d.kind) for d in plan.deletions] == [
        (".00000000000000000007.json.0f3a9c.tmp", "temp"),
        ("_commit_5f0c2a9e.json.tmp", "temp"),
    ]


def test_a_cleaner_whose_clock_runs_ahead_leaves_files_being_written_alone() -> None:
    # The store's clock, as the newest log file shows it, bounds "a day old": a cleaner three days ahead
    # must not take the temp file of a commit or the sidecar of a checkpoint written right now.
    ahead = NOW + 3 * DAY_MS
    paths = [*log_of(5, first_age_days=4), checkpoint(4, NOW)]
    others = [LogFile(".00000000000000000005.json.aa11.tmp", 10, NOW), LogFile(".abandoned.tmp", 10, old(2))]
    plan = plan_cleanup(paths, ahead, RET, other_files=others)
    assert [d.path for d in plan.deletions if d.kind == "temp"] == [".abandoned.tmp"]
    with_sidecars = add_sidecars(plan, [LogFile("new.parquet", 9, NOW), LogFile("old.parquet", 9, old(2))], frozenset())
    assert [d.path for d in with_sidecars.deletions if d.kind == "sidecar"] == ["_sidecars/old.parquet"]


@pytest.mark.parametrize(
    ("name", "temp"),
    [
        (".00000000000000000007.json.0f3a9c.tmp", True),
        ("_commit_abc.json.tmp", True),
        (".tmp", True),
        ("00000000000000000007.json", False),
        ("_last_checkpoint", False),
        (".00000000000000000007.json.crc", False),
        ("_commit_abc.json", False),
        ("_sidecars/.x.tmp", False),
    ],
)
def test_temp_file_names(name: str, temp: bool) -> None:
    assert is_temp_file(name) is temp


def test_hadoop_checksums_go_with_their_files() -> None:
    others = [
        LogFile(".00000000000000000001.json.crc", 12, old(59)),
        LogFile(".00000000000000000025.json.crc", 12, old(35)),
    ]
    paths = [*log_of(30), checkpoint(10, old(50))]
    plan = plan_cleanup(paths, NOW, RET, other_files=others)
    assert ".00000000000000000001.json.crc" in deleted(plan)
    assert ".00000000000000000025.json.crc" not in deleted(plan)


def test_sidecars_go_when_unreferenced_and_older_than_a_day() -> None:
    paths = [*log_of(30), checkpoint(10, old(50)), commit(30, NOW)]
    plan = plan_cleanup(paths, NOW, RET, other_files=[LogFile(".a.tmp", 1, old(5))])
    sidecars = [
        LogFile("keep.parquet", 5, old(90)),
        LogFile("orphan.parquet", 7, old(90)),
        LogFile("new.parquet", 9, old(0.2)),
        LogFile(".orphan.parquet.crc", 1, old(90)),
        LogFile(".keep.parquet.crc", 1, old(90)),
        LogFile(".writer.tmp", 1, old(90)),
    ]
    assert add_sidecars(plan, sidecars, None) == plan  # unknown references: keep them all
    out = add_sidecars(plan, sidecars, frozenset({"keep.parquet"}))
    extra = [d for d in out.deletions if d.kind == "sidecar"]
    assert [(d.path, d.size) for d in extra] == [("_sidecars/orphan.parquet", 7)]
    twins = [d.path for d in out.deletions if d.kind == "hadoop-crc"]
    assert twins == ["_sidecars/.orphan.parquet.crc"]
    assert out.deletions[-1].kind == "temp"  # sidecars before temp files, after every log file
    assert out.total_bytes == plan.total_bytes + 8 and out.count("sidecar") == 1


# ---------------------------------------------------------------------------------------------- protocol gate
def test_the_maintenance_gate_is_the_writer_check_on_the_protocol() -> None:
    check_maintainable(
        Protocol(3, 7, ("deletionVectors", "vacuumProtocolCheck"), ("deletionVectors", "vacuumProtocolCheck")), "t"
    )
    check_maintainable(Protocol(1, 4), "t")  # changeDataFeed and generated columns: understood, never written here
    # row tracking numbers new rows: deleting log files or unreferenced data files adds none
    rt = Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "rowTracking", "domainMetadata"))
    for op in ("cleanup", "vacuum"):
        check_maintainable(rt, "t", op, {"delta.enableRowTracking": "true"})
    with pytest.raises(UnsupportedFeatureError, match="collations"):
        check_maintainable(Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "collations")), "t")
    uniform = Protocol(3, 7, ("columnMapping",), ("columnMapping", "icebergCompatV2"))
    check_maintainable(uniform, "t", "cleanup", {"delta.enableIcebergCompatV2": "true"})
    with pytest.raises(UnsupportedFeatureError, match="icebergCompatV2"):  # Iceberg's files live in the table
        check_maintainable(uniform, "t", "vacuum", {"delta.enableIcebergCompatV2": "true"})
    with pytest.raises(UnsupportedFeatureError):
        check_maintainable(Protocol(1, 8), "t")
    with pytest.raises(UnsupportedFeatureError):
        check_maintainable(Protocol(3, 7, ("catalogManaged",), ("catalogManaged",)), "t")


# ---------------------------------------------------------------------------------------------- the promise
@st.composite
def listings(draw: st.DrawFn) -> tuple[list[LogPath], int, int]:
    n = draw(st.integers(min_value=1, max_value=40))
    start_age = draw(st.integers(min_value=0, max_value=120))
    times = []
    t = NOW - start_age * DAY_MS
    for _ in range(n):
        t += draw(st.integers(min_value=-DAY_MS, max_value=5 * DAY_MS))  # clocks and copies go backwards too
        times.append(t)
    first = draw(st.integers(min_value=0, max_value=n - 1)) if draw(st.booleans()) else 0
    paths = [commit(v, times[v]) for v in range(first, n)]
    if first > 0:
        paths.append(checkpoint(first, times[first]))  # an earlier cleanup left the log starting here
    for v in draw(st.lists(st.integers(min_value=0, max_value=n - 1), max_size=8, unique=True)):
        kind = draw(st.sampled_from(["classic", "multi", "uuid", "partial", "empty", "crc", "compaction"]))
        age = times[v] + draw(st.sampled_from([0, DAY_MS, 60 * DAY_MS]))  # written with, or after, its commit
        if kind == "classic":
            paths.append(checkpoint(v, age))
        elif kind == "multi":
            paths += [part(v, 1, 2, age), part(v, 2, 2, age)]
        elif kind == "uuid":
            paths.append(uuid_checkpoint(v, age))
        elif kind == "partial":
            paths.append(part(v, 1, 2, age))
        elif kind == "empty":
            paths.append(checkpoint(v, age, size=0))
        elif kind == "crc":
            paths.append(crc(v, age))
        elif v + 1 < n:
            paths.append(compaction(v, n - 1, age))
    paths = list({p.name: p for p in paths}.values())
    now = NOW + draw(st.integers(min_value=0, max_value=200)) * DAY_MS
    retention = draw(st.integers(min_value=0, max_value=90)) * DAY_MS + draw(st.integers(0, DAY_MS))
    return paths, now, retention


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(listings())
def test_every_version_from_the_horizon_on_stays_reconstructable(case: tuple[list[LogPath], int, int]) -> None:
    paths, now, retention = case
    plan = plan_cleanup(paths, now, retention)
    left = remaining(paths, plan)
    latest = max(p.version for p in paths if p.kind is Kind.COMMIT)
    if plan.horizon is None:  # no version of this log is reconstructable: nothing to protect, nothing goes
        assert earliest_version(paths) is None and plan.boundary is None
        assert all(d.kind == "temp" for d in plan.deletions)
        return
    readable_before = set()
    for v in range(0, latest + 1):
        try:
            build_segment(paths, v)
            readable_before.add(v)
        except Exception:
            pass
    for v in range(plan.horizon.version, latest + 1):
        if v in readable_before:
            assert build_segment(left, v).version == v
    times = dict(
        monotonize([(p.version, p.mtime) for p in sorted(paths, key=lambda p: p.version) if p.kind is Kind.COMMIT])
    )
    if plan.boundary is not None:
        assert earliest_version(left) == plan.boundary == plan.horizon.version
        # nothing at or above the boundary goes (but a compaction starting at it, which no load from it reads),
        # everything that goes was at or before the cutoff
        assert all(
            d.version is None or d.version < plan.boundary or (d.kind == "compaction" and d.version == plan.boundary)
            for d in plan.deletions
        )
        assert all(d.time <= plan.cutoff_ms for d in plan.deletions)
        # no version younger than the cutoff is lost
        assert all(v >= plan.boundary for v, t in times.items() if t > plan.cutoff_ms)
        # the horizon's time is the one time travel computes on what is left
        left_times = dict(
            monotonize([(p.version, p.mtime) for p in sorted(left, key=lambda p: p.version) if p.kind is Kind.COMMIT])
        )
        assert plan.horizon.timestamp == left_times.get(plan.boundary)
    else:
        assert plan.deletions == ()


# ---------------------------------------------------------------------------------------------- checkpoint protection
def test_protected_version_comes_only_with_the_feature_and_a_bad_value_protects_everything() -> None:
    key = "delta.requireCheckpointProtectionBeforeVersion"
    assert protected_before({key: "12"}, {"checkpointProtection"}) == 12
    assert protected_before({key: "12"}, set()) is None
    assert protected_before({}, {"checkpointProtection"}) is None
    assert protected_before({key: "twelve"}, {"checkpointProtection"}) == 2**63 - 1


def test_a_cleanup_short_of_the_protected_version_keeps_its_checkpoints_and_deletes_commits_first() -> None:
    old = CUTOFF - 10 * DAY_MS
    paths = [commit(v, old + v) for v in range(9)] + [checkpoint(3, old + 3), checkpoint(6, old + 6)]
    plan = plan_cleanup(paths, NOW, RET)
    assert plan.boundary == 6 and plan.count("checkpoint") == 1
    short = protect_checkpoints(plan, 8)
    assert short.count("checkpoint") == 0 and short.count("commit") == plan.count("commit") == 6
    assert "checkpoint protection" in short.reason
    assert f"{3:020d}.checkpoint.parquet" in short.remaining_checkpoints
    assert short.horizon == plan.horizon
    assert protect_checkpoints(plan, 6) == plan  # truncating up to the protected version in one go: as planned
    assert protect_checkpoints(plan, None) == plan
