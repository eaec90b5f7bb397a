"""The facts the feature rules share: a file's stats read once (strictly for new files, leniently for old ones)
and the last committed add of a path, found however the path is spelled."""

from __future__ import annotations

import pytest

from deltalog.core import actions as A
from deltalog.core.files.facts import (
    FileStats,
    KnownFile,
    known_file,
    known_files,
    num_records,
    parse_stats,
    read_stats,
)
from deltalog.errors import InvalidCommitError

DV = A.DeletionVector("i", "abcde", 4, 1)


def test_parse_stats() -> None:
    assert parse_stats(None, "f") is None
    text = '{"numRecords":3,"tightBounds":false,"minValues":{"a":1},"maxValues":{"a":5},"nullCount":{"a":0}}'
    assert parse_stats(text, "f") == FileStats(3, False, {"a": 1}, {"a": 5}, {"a": 0})
    assert parse_stats("{}", "f") == FileStats(None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not valid JSON"),
        ("[1]", "JSON object"),
        ('{"numRecords":-1}', "numRecords"),
        ('{"numRecords":2.5}', "numRecords"),
        ('{"numRecords":true}', "numRecords"),
        ('{"minValues":[1]}', "minValues"),
    ],
)
def test_bad_stats_of_a_new_file_are_refused_by_name(text: str, message: str) -> None:
    with pytest.raises(InvalidCommitError, match=message) as info:
        parse_stats(text, "part-1.parquet")
    assert "part-1.parquet" in str(info.value) and info.value.rule == "stats"
    assert read_stats(text) is None  # the same stats already in the log count as none
    with pytest.raises(InvalidCommitError):
        num_records(A.Add("part-1.parquet", {}, 1, 1, True, stats=text))


def test_known_files_by_canonical_path() -> None:
    add = A.Add(
        "p%3D1/f.parquet",
        {},
        1,
        1,
        True,
        stats='{"numRecords":7}',
        deletion_vector=DV,
        base_row_id=4,
        default_row_commit_version=2,
    )
    assert known_file(add) == KnownFile("p%3D1/f.parquet", DV, 7, 4, 2)
    assert known_file(add).dv_id == DV.unique_id and KnownFile("x").dv_id is None
    files = known_files([add], root="s3://b/t")
    for spelling in ("p=1/f.parquet", "s3://b/t/p%3D1/f.parquet", "p%3D1/./f.parquet"):
        assert files.get(spelling) == known_file(add), spelling
    assert files.get("p=2/f.parquet") is None and list(files) == [known_file(add)]
    assert known_file(A.Add("g", {}, 1, 1, True, stats="{bad")).num_records is None
