"""The prefix-bounded listing Azure uses: exact results, and a cost that follows what lies after the start."""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import given, settings
from hypothesis import strategies as st

from deltalog.storage.base import FileInfo
from deltalog.storage.prefix_listing import list_from_by_prefix, version_of


class FakeDir:
    """A directory that answers prefix listings and counts calls and entries returned."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = sorted(set(names), key=str.encode)
        self.calls = 0
        self.entries = 0

    def list_prefix(self, prefix: str) -> list[FileInfo]:
        self.calls += 1
        out = [FileInfo(n, 1, 0) for n in self.names if n.startswith(prefix)]
        self.entries += len(out)
        return out


def delta_log(first: int, last: int) -> list[str]:
    names = ["_last_checkpoint"]
    for v in range(first, last + 1):
        names.append(f"{v:020d}.json")
        if v % 10 == 0:
            names += [f"{v:020d}.checkpoint.parquet", f"{v:020d}.crc"]
    return names


def expected(names: list[str], start: str) -> list[str]:
    return sorted((n for n in names if version_of(n) is not None and n >= start), key=str.encode)


@settings(max_examples=300, deadline=None)
@given(
    first=st.integers(0, 2500),
    length=st.integers(0, 700),
    start_v=st.integers(0, 3300),
    suffix=st.sampled_from([".", "", ".json", ".checkpoint", ".crc"]),
)
def test_prefix_listing_is_exact_and_bounded(first: int, length: int, start_v: int, suffix: str) -> None:
    last = first + length - 1
    names = delta_log(first, last) if length else ["_last_checkpoint"]
    start = f"{start_v:020d}{suffix}"
    d = FakeDir(names)
    files, calls = list_from_by_prefix(d.list_prefix, start)
    got = [f.name for f in files]
    assert got == expected(names, start)
    assert calls == d.calls <= 22
    if length and first <= start_v <= last + 1:  # from within the log, or just past it (a refresh)
        assert d.entries <= 10 * (len(got) + 15)


def test_refresh_past_the_latest_version_costs_one_or_two_calls() -> None:
    cases = [(127, 125, 1), (127, 128, 1), (129, 130, 2), (129, 129, 2), (1999, 2000, 2)]
    for latest, start_v, calls in cases:
        names = delta_log(0, latest)
        d = FakeDir(names)
        files, n = list_from_by_prefix(d.list_prefix, f"{start_v:020d}.")
        assert [f.name for f in files] == expected(names, f"{start_v:020d}.")
        assert n == calls and d.entries <= 50, (latest, start_v)


def test_listing_from_a_checkpoint_of_a_long_log_reads_only_the_tail() -> None:
    names = delta_log(0, 99_999)
    d = FakeDir(names)
    files, _ = list_from_by_prefix(d.list_prefix, f"{99_990:020d}.")
    assert [f.name for f in files][:3] == [
        f"{99_990:020d}.checkpoint.parquet",
        f"{99_990:020d}.crc",
        f"{99_990:020d}.json",
    ]
    assert len(files) == 12
    # the block 99990..99999 ends full, so one more listing checks 100000..100099: a full listing is 100k names
    assert d.calls == 2 and d.entries == 12


def test_a_log_that_starts_above_the_start_is_found() -> None:
    names = delta_log(5000, 5100)  # cleaned up below 5000
    for start in ["00000000000000000000.", "00000000000000000003.", "00000000000000004990."]:
        d = FakeDir(names)
        files, _ = list_from_by_prefix(d.list_prefix, start)
        assert [f.name for f in files] == expected(names, start)
    empty = FakeDir([])
    assert list_from_by_prefix(empty.list_prefix, "00000000000000000040.") == ([], 5)


def test_non_version_starts_list_everything_and_filter() -> None:
    names = [*delta_log(0, 12), "_sidecars-not-a-dir"]
    d = FakeDir(names)
    files, calls = list_from_by_prefix(d.list_prefix, "_l")
    assert [f.name for f in files] == ["_last_checkpoint", "_sidecars-not-a-dir"]
    assert calls == 1
    files, _ = list_from_by_prefix(FakeDir(names).list_prefix, "")
    assert [f.name for f in files] == sorted(names, key=str.encode)


def test_a_round_start_lists_its_whole_block_at_once() -> None:
    """From a checkpoint at 1000 the tail up to 1999 is one listing, whatever its length; from 1230 (not round)
    the first listing is the 10-block, re-listing nothing before 1230."""
    for last, calls in [(1011, 1), (1200, 1), (1999, 2), (2500, 2)]:
        names = delta_log(0, last)
        d = FakeDir(names)
        files, n = list_from_by_prefix(d.list_prefix, f"{1000:020d}.")
        assert [f.name for f in files] == expected(names, f"{1000:020d}.")
        assert n == calls, last
    d = FakeDir(delta_log(0, 1235))
    files, n = list_from_by_prefix(d.list_prefix, f"{1230:020d}.")
    assert n == 1 and d.entries == len(files) == len(expected(delta_log(0, 1235), f"{1230:020d}."))
