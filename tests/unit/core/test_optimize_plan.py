"""The OPTIMIZE planner (``deltalog.core.optimize_plan``): which files are rewritten, in which bins, from the log
alone, as Delta Spark's ``OptimizeTableCommand`` chooses them."""

from __future__ import annotations

import orjson
import pytest

from deltalog.core import actions as A
from deltalog.core import optimize_plan as P
from deltalog.errors import InvalidArgumentError

MB = 1024 * 1024


def add(
    name: str,
    size: int,
    part: str = "x",
    rows: int | None = 100,
    deleted: int = 0,
    tags: dict[str, str | None] | None = None,
    provider: str | None = None,
) -> A.Add:
    dv = A.DeletionVector("u", "ab" * 10, 10, deleted) if deleted else None
    stats = None if rows is None else orjson.dumps({"numRecords": rows}).decode()
    return A.Add(f"{name}.parquet", {"p": part}, size, 0, True, stats, tags, dv, clustering_provider=provider)


def names(plan: P.Plan) -> list[list[str]]:
    return [[a.path.removesuffix(".parquet") for a in b.files] for b in plan.bins]


def test_small_files_are_packed_per_partition_in_size_order_up_to_the_target() -> None:
    files = [add("a", 40 * MB), add("b", 10 * MB), add("c", 30 * MB), add("d", 50 * MB), add("e", 5 * MB, "y")]
    files.append(add("f", 7 * MB, "y"))
    plan = P.plan(files, P.Settings(target_size=100 * MB))
    assert names(plan) == [["b", "c", "a"], ["e", "f"]]  # d would overflow the first bin, and is alone: left
    assert plan.files_considered == 6 and plan.files_skipped == 1 and plan.partitions == 2


def test_large_files_and_lone_clean_files_stay() -> None:
    files = [add("big", 200 * MB), add("alone", 1 * MB, "y"), add("other", 150 * MB, "z")]
    plan = P.plan(files, P.Settings(target_size=100 * MB))
    assert plan.bins == () and plan.files_skipped == 3


def test_min_file_size_decides_what_is_small() -> None:
    files = [add("a", 10 * MB), add("b", 20 * MB), add("c", 60 * MB)]
    assert names(P.plan(files, P.Settings(target_size=100 * MB, min_file_size=15 * MB))) == []
    assert names(P.plan(files, P.Settings(target_size=100 * MB, min_file_size=25 * MB))) == [["a", "b"]]


def test_deleted_rows_over_the_ratio_make_a_large_file_a_candidate_even_alone() -> None:
    files = [
        add("few", 200 * MB, deleted=5),
        add("many", 200 * MB, "y", deleted=6),
        add("nostats", 200 * MB, "z", rows=None, deleted=1),
    ]
    plan = P.plan(files, P.Settings(target_size=100 * MB))
    assert names(plan) == [["many"], ["nostats"]]  # 5% is not more than 0.05; no numRecords: always


def test_z_order_takes_every_file_of_a_partition_in_one_bin() -> None:
    files = [add("a", 300 * MB), add("b", 1 * MB), add("c", 2 * MB, "y")]
    plan = P.plan(files, P.Settings(mode=P.ZORDER, target_size=100 * MB))
    assert names(plan) == [["b", "a"], ["c"]] and plan.files_skipped == 0


def test_purge_takes_only_files_with_deletion_vectors_each_even_alone() -> None:
    files = [add("clean", 1 * MB), add("dv", 500 * MB, deleted=1), add("dv2", 1 * MB, "y", deleted=1)]
    plan = P.plan(files, P.Settings(mode=P.PURGE, target_size=100 * MB))
    assert names(plan) == [["dv"], ["dv2"]]


def test_clustering_skips_other_providers_other_columns_and_full_cubes() -> None:
    cols = ("a", "b")
    mine = {P.ZCUBE_ZORDER_BY: P.cube_columns(cols)}
    files = [
        add("new", 1 * MB),
        add("small-cube", 2 * MB, tags={**mine, P.ZCUBE_ID: "c1"}, provider="liquid"),
        add("full-cube", 5 * MB, tags={**mine, P.ZCUBE_ID: "c2"}, provider="liquid"),
        add("foreign", 1 * MB, provider="other"),
        add("stale", 1 * MB, tags={P.ZCUBE_ZORDER_BY: '["z"]', P.ZCUBE_ID: "c3"}, provider="liquid"),
    ]
    plan = P.plan(files, P.Settings(mode=P.CLUSTER, columns=cols, cube_size=4 * MB))
    assert names(plan) == [["new", "small-cube"]]
    lone = P.plan(files[1:2], P.Settings(mode=P.CLUSTER, columns=cols, cube_size=4 * MB))
    assert lone.bins == ()  # one cube and nothing unclustered to merge into it


def test_settings_are_checked() -> None:
    with pytest.raises(InvalidArgumentError, match="mode"):
        P.Settings(mode="nope")
    with pytest.raises(InvalidArgumentError, match="target_size"):
        P.Settings(target_size=0)
    with pytest.raises(InvalidArgumentError, match="min_file_size"):
        P.Settings(min_file_size=-1)


def test_size_metrics_are_nearest_rank_percentiles() -> None:
    assert P.size_metrics([]) == dict.fromkeys(
        ("minFileSize", "p25FileSize", "p50FileSize", "p75FileSize", "maxFileSize"), 0
    )
    m = P.size_metrics([40, 10, 30, 20])
    assert m == {"minFileSize": 10, "p25FileSize": 10, "p50FileSize": 20, "p75FileSize": 30, "maxFileSize": 40}
