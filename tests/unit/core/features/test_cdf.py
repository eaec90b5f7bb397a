"""Change data feed at the log level (issue 14 Build 6): which commits need change files, what a writer's cdc
actions must be, and that they make a commit non-blind."""

from __future__ import annotations

import pytest

from deltalog.core import actions as A
from deltalog.core.features import cdf
from deltalog.errors import InvalidCommitError, UnsupportedFeatureError

CDF = A.Protocol(1, 7, None, ("changeDataFeed",))
ON = {"delta.enableChangeDataFeed": "true"}
PART = ["col-p"]
DV1 = A.DeletionVector("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 40, 2)
DV2 = A.DeletionVector("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 40, 6)


def add(path: str, dc: bool = True, dv: A.DeletionVector | None = None) -> A.Add:
    return A.Add(path, {"col-p": "1"}, 10, 1, dc, deletion_vector=dv)


def remove(path: str, dc: bool = True, dv: A.DeletionVector | None = None) -> A.Remove:
    return A.Remove(path, 1, dc, partition_values={"col-p": "1"}, deletion_vector=dv)


def cdc(path: str = "_change_data/p=1/cdc-0.parquet", **kw: object) -> A.Cdc:
    fields: dict[str, object] = {"partition_values": {"col-p": "1"}, "size": 5, **kw}
    return A.Cdc(path, **fields)  # type: ignore[arg-type]


def check(actions: list[A.Action], **kw: object) -> cdf.Changes:
    return cdf.check_commit(actions, CDF, ON, PART, **kw)  # type: ignore[arg-type]


def test_enabled() -> None:
    assert cdf.enabled(CDF, ON) and cdf.enabled(A.Protocol(1, 4), {"delta.enableChangeDataCapture": "true"})
    assert not cdf.enabled(CDF, {}) and not cdf.enabled(A.Protocol(1, 3), ON)


@pytest.mark.parametrize(
    "actions",
    [
        [add("a"), add("b")],  # append
        [remove("a"), remove("b")],  # whole-file deletes
        [remove("a", dc=False), remove("b", dc=False), add("c", dc=False)],  # compaction
        [remove("a", dv=DV1), add("a", dv=DV2)],  # DV-only delete
        [remove("a"), add("a", dv=DV1)],  # first DV on a file
        [A.Metadata(id="t")],
    ],
)
def test_commits_that_need_no_change_files(actions: list[A.Action]) -> None:
    changes = check(actions)
    assert changes.cdc == ()


def test_a_partition_overwrite_is_declared_not_copying() -> None:
    changes = check([remove("a"), add("b")], copies_rows=False)
    assert changes.inserts == ("b",) and changes.deletes == ("a",)


@pytest.mark.parametrize(
    ("actions", "copies"),
    [
        ([remove("a"), add("b")], None),  # undeclared remove + add: may copy rows
        ([remove("a", dv=DV1), add("a", dv=DV2), add("b")], None),  # update with DVs: the new rows are updates
        ([remove("a"), add("b")], True),
    ],
)
def test_row_copying_commits_need_change_files(actions: list[A.Action], copies: bool | None) -> None:
    with pytest.raises(UnsupportedFeatureError, match="change files") as info:
        check(actions, copies_rows=copies)
    assert info.value.feature == "changeDataFeed"
    cdf.check_commit(actions, CDF, {}, PART, copies_rows=copies)  # without the feed on, nothing is owed


def test_a_dv_pair_that_shrinks_reads_as_inserts_and_one_without_vectors_is_a_rewrite() -> None:
    # CDCReader diffs the vectors: rows a smaller (or no) vector unmasks are inserts, as a RESTORE writes them;
    # that ordinary writes never shrink a vector is the deletion-vector rules' refusal, not this one's
    for pair in ([remove("a", dv=DV2), add("a", dv=DV1)], [remove("a", dv=DV1), add("a")]):
        assert check(pair).dv_deletes == ("a",)
    with pytest.raises(UnsupportedFeatureError, match="no deletion vector on either side") as info:
        check([remove("a"), add("a")])
    assert info.value.feature == "changeDataFeed"


def test_writer_cdc_covering_the_commit_is_accepted() -> None:
    actions: list[A.Action] = [remove("a"), add("b"), cdc(), cdc("_change_data/cdc-1.parquet")]
    changes = check(actions, copies_rows=True, covers_all=True)
    assert len(changes.cdc) == 2 and changes.changes_data
    check([add("b"), cdc("b")], covers_all=True)  # a data file the commit adds may be its own change file
    assert not cdf.is_blind_append(actions, read_anything=False)
    assert not cdf.is_blind_append([add("b"), cdc("b")], read_anything=False)
    assert cdf.is_blind_append([add("b"), A.CommitInfo()], read_anything=False)
    assert not cdf.is_blind_append([add("b")], read_anything=True)


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (cdc("other/cdc.parquet"), "_change_data"),
        (cdc("_change_data/../x.parquet"), "_change_data"),
        (cdc(data_change=True), "dataChange"),
        (cdc(partition_values={}), "partition values"),
        (cdc(partition_values={"p": "1"}), "partition values"),  # a logical key
        (cdc(partition_values={"col-p": 1}), "strings"),
        (cdc(size=-1), "size"),
        (cdc(size=True), "size"),
    ],
)
def test_malformed_cdc_actions_are_refused(action: A.Cdc, message: str) -> None:
    with pytest.raises(InvalidCommitError, match=message) as info:
        check([remove("a"), add("b"), action], copies_rows=True, covers_all=True)
    assert info.value.rule == "cdc"


def test_cdc_must_be_declared_to_cover_the_commit_and_have_something_to_cover() -> None:
    with pytest.raises(InvalidCommitError, match="covers_all"):
        check([remove("a"), add("b"), cdc()], copies_rows=True)
    with pytest.raises(InvalidCommitError, match="changes no data"):
        check([cdc()], covers_all=True)
    with pytest.raises(InvalidCommitError, match="without change data feed"):
        cdf.check_commit([add("b"), cdc()], CDF, {}, PART, covers_all=True)


def test_classify() -> None:
    changes = cdf.classify([add("n"), remove("gone"), remove("d", dv=DV1), add("d", dv=DV2), add("c", dc=False)])
    assert changes.inserts == ("n",) and changes.deletes == ("gone",) and changes.dv_deletes == ("d",)
    assert changes.rearranged == 1 and changes.changes_data
    assert not cdf.classify([add("c", dc=False)]).changes_data
