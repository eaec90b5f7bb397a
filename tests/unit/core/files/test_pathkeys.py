"""Log paths read the way Delta Spark's Hadoop ``Path`` reads them (deltalog.core.files.pathkeys).

Expected values follow Hadoop's rules as documented in ``org.apache.hadoop.fs.Path`` (double slashes
collapsed, trailing slash dropped, ``URI.normalize`` removing ``.`` and ``..``) and Delta's
``DeltaFileOperations.tryRelativizePath`` (a path is relativised against the qualified table root, and one
that stays absolute lives outside the table). They are written out here, not computed with the code under test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltalog import DeltaLog
from deltalog.core.files.pathkeys import (
    canonical_path,
    climbs_out,
    escapes_root,
    needs_canonicalizing,
    normalize_segments,
    parse_location,
    relative_key,
)
from deltalog.core.state import parse_bulk
from tests.unit import logkit as K
from tests.unit import logwriter as W

ROOT = "/data/t"


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("a.parquet", "a.parquet"),
        ("./a.parquet", "a.parquet"),
        ("sub/../a.parquet", "a.parquet"),
        ("sub//../a.parquet", "a.parquet"),
        ("a.parquet/", "a.parquet"),
        ("p=1//a.parquet", "p=1/a.parquet"),
        ("file:///data/t//a.parquet", "a.parquet"),  # the double slash Hadoop collapses
        ("file:///data/t/./a.parquet", "a.parquet"),  # "<root>/./b.parquet"
        ("file:///data/t/sub/../a.parquet", "a.parquet"),  # "<root>/sub/../c.parquet"
        ("file:/data/t/a.parquet", "a.parquet"),
        ("file://localhost/data/t/a.parquet", "a.parquet"),
        ("/data/t//p=1/./a.parquet", "p=1/a.parquet"),
        ("FILE:///data/t/a.parquet", "a.parquet"),  # schemes are case-insensitive
        ("file:///data/t/p%3D1/a%20b.parquet", "p=1/a b.parquet"),
        ("file:///data/t/x=A%252FA/f.parquet", "x=A%2FA/f.parquet"),  # decoded exactly once
        ("../t/a.parquet", "a.parquet"),  # out and back in
        ("p=ts 10:00/a.parquet", "p=ts 10:00/a.parquet"),  # a colon in a relative name is not a scheme
    ],
)
def test_spellings_of_a_file_under_the_root_share_one_key(path: str, key: str) -> None:
    assert canonical_path(path, ROOT) == key
    assert relative_key(path, ROOT) == key
    assert canonical_path(path, ROOT + "/") == key
    assert canonical_path(path, "file:" + ROOT) == key


@pytest.mark.parametrize(
    ("path", "absolute"),
    [
        ("../x/a.parquet", "/data/x/a.parquet"),
        ("%2E%2E/x/a.parquet", "/data/x/a.parquet"),  # decoded, then resolved as the file system would
        ("sub/../../../etc/passwd", "/etc/passwd"),
        ("/data/tx/a.parquet", "/data/tx/a.parquet"),  # a sibling sharing the root's name as a prefix
        ("file:///data/t/../x.parquet", "/data/x.parquet"),
        ("file:///data/t", "/data/t"),  # the root itself is no file of the table
        ("s3://bucket/t/a.parquet", "s3://bucket/t/a.parquet"),  # another file system
        ("/../../a.parquet", "/a.parquet"),
    ],
)
def test_paths_outside_the_root_have_no_relative_key(path: str, absolute: str) -> None:
    assert relative_key(path, ROOT) is None
    assert canonical_path(path, ROOT) == absolute


def test_object_store_roots_and_their_scheme_and_authority_forms() -> None:
    assert relative_key("s3://b/t/p=1/x.parquet", "s3://b/t") == "p=1/x.parquet"
    assert relative_key("s3a://b/t//x.parquet", "s3://b/t") == "x.parquet"  # s3a is the same file system
    assert relative_key("/t/x.parquet", "s3://b/t") == "x.parquet"  # qualified with the table's bucket
    assert relative_key("s3://other/t/x.parquet", "s3://b/t") is None
    assert relative_key("s3://b/t2/x.parquet", "s3://b/t") is None
    assert relative_key("abfss://c@acct.dfs.core.windows.net/t/x", "abfs://c/t") == "x"
    assert relative_key("az://c/t/./x", "abfss://c@acct.dfs.core.windows.net/t") == "x"
    assert relative_key("abfss://c@other.dfs.core.windows.net/t/x", "abfss://c@acct.dfs.core.windows.net/t") is None
    assert relative_key("abfss://d@acct.dfs.core.windows.net/t/x", "abfs://c/t") is None
    assert relative_key("file:///t/x", "s3://b/t") is None
    assert relative_key("memory://t/x.parquet", "memory://t") == "x.parquet"


def test_aliases_of_the_root_count_as_the_root() -> None:
    assert relative_key("/real/t/x.parquet", "/link/t") is None
    assert relative_key("/real/t/x.parquet", "/link/t", ("/real/t",)) == "x.parquet"
    assert relative_key("file:///real/t/p=1/x.parquet", "/link/t", ("/real/t",)) == "p=1/x.parquet"


def test_without_a_root_paths_stay_relative_or_absolute() -> None:
    assert canonical_path("a%20b") == "a b"
    assert canonical_path("./p=1/../a.parquet") == "a.parquet"
    assert canonical_path("../a.parquet") == "../a.parquet"
    assert canonical_path("file:///t//x.parquet") == "/t/x.parquet"
    assert canonical_path("s3a://B/t/x") == "s3a://B/t/x"


def test_parse_location_and_normalize_segments() -> None:
    loc = parse_location("S3://bucket/a//b/./c/../d/")
    assert (loc.scheme, loc.authority, loc.path) == ("s3", "bucket", "/a/b/d")
    assert parse_location("file:/a/b").authority == ""
    assert normalize_segments("a/b/../../..") == ".."
    assert normalize_segments("/a/../..") == "/"
    assert normalize_segments("./") == ""


def test_needs_canonicalizing_flags_every_spelling_that_is_not_its_own_key() -> None:
    plain = ["a.parquet", "p=1/part-0.snappy.parquet", "x.y/z.parquet"]
    assert not any(needs_canonicalizing(p) for p in plain)
    for p in ["./a", "a/./b", "a//b", "a/", "../a", "/a", "a%20", "s3://b/a", ".hidden/a", "a/../b"]:
        assert needs_canonicalizing(p), p


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(["a", "b", ".", "..", "", "p=1", "x y"]), min_size=1, max_size=8))
def test_a_path_that_needs_no_work_is_already_its_key(segments: list[str]) -> None:
    path = "/".join(segments)
    if not needs_canonicalizing(path):
        assert canonical_path(path, ROOT) == path == canonical_path(path)


def test_escapes_root_and_climbs_out() -> None:
    for inside in ["a", "p=1/a.parquet", "a/../b", "...", "..a/b"]:
        assert not escapes_root(inside), inside
    for outside in ["", "..", "../a", "a/../../b", "/abs", "s3://b/x", "file:///x"]:
        assert escapes_root(outside), outside
    assert climbs_out("../x") and climbs_out("file:///t/%2E%2E/x") and not climbs_out("/other/x.parquet")


@pytest.mark.parametrize("bulk", [True, False], ids=["bulk", "exact"])
def test_both_replay_paths_reconcile_every_spelling_of_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bulk: bool
) -> None:
    """An add and a remove of one file spelled differently cancel out, on the Arrow path and the exact path."""
    root = tmp_path / "t"
    spellings = [
        ("p=a/one.parquet", "./p=a/one.parquet"),
        (f"file://{root}//p=a/two.parquet", "p=a/two.parquet/"),
        ("p=a/sub/../three.parquet", f"{root}/p=a/./three.parquet"),
        ("p=a/f%6Fur.parquet", "p=a//four.parquet"),
    ]
    commits = [[K.commit_info("CREATE"), K.protocol(), K.metadata(partition_columns=("p",))]]
    commits.append(
        [K.commit_info()] + [K.add(a, {"p": "a"}) for a, _ in spellings] + [K.add("p=a/kept.parquet", {"p": "a"})]
    )
    commits.append([K.commit_info()] + [K.remove(r) for _, r in spellings])
    W.write_table(root, commits)
    taken: list[bool] = []
    original = parse_bulk.parse

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(parse_bulk, "parse", spy)
    monkeypatch.setattr(parse_bulk, "MIN_BYTES", 0 if bulk else 1 << 62)
    snap = DeltaLog.for_table(root).snapshot()
    assert any(taken) is bulk  # the path under test is the one that replayed
    assert [a.path for a in snap.add_actions()] == ["p=a/kept.parquet"]
    assert snap.tombstones().num_rows == len(spellings)
