"""The pure rules behind the commit path's new behaviour (issue 14, issue 16): when a writer's anchor is young,
how an unlisted commit's tip holds, and which gate operation a commit is."""

from __future__ import annotations

import dataclasses

from deltalog.core import actions as A
from deltalog.core.features import obligations as G
from deltalog.core.log.paths import parse
from deltalog.core.log.reachability import UNLISTED, YOUNG_MARGIN_MS, Tip, holds, young

DAY = 86_400_000
MONTH = 30 * DAY


def test_young_is_retention_minus_the_margin_on_the_writers_clock() -> None:
    assert young(1_000, 1_000, MONTH)
    assert young(0, MONTH - YOUNG_MARGIN_MS - 1, MONTH)
    assert not young(0, MONTH - YOUNG_MARGIN_MS, MONTH)
    assert not young(None, 0, MONTH)  # no commit of our own: nothing vouches
    assert not young(0, 0, YOUNG_MARGIN_MS)  # a retention of a day or less: never young
    assert not young(0, 1, DAY // 2)


def test_an_unlisted_tip_holds_by_name_and_size_only() -> None:
    name = "00000000000000000003.json"
    tip = Tip(3, ((name, 120, UNLISTED),))
    listed = parse(name, 120, 1_700_000_000_000)
    assert listed is not None
    assert holds(tip, [listed])
    other_size = parse(name, 121, 1_700_000_000_000)
    assert other_size is not None and not holds(tip, [other_size])
    assert not holds(tip, [])
    known = Tip(3, ((name, 120, 5),))
    assert not holds(known, [listed])  # a listed time is compared exactly, as before


def add(path: str, data_change: bool = True) -> A.Add:
    return A.Add(path=path, partition_values={}, size=1, modification_time=0, data_change=data_change)


def test_a_commit_is_gated_as_what_it_does() -> None:
    a, b = add("a"), add("b")
    ra = a.remove(0)
    assert G.commit_kind([], "SET TBLPROPERTIES") == G.METADATA
    assert G.commit_kind([a, b], "WRITE") == G.APPEND
    assert G.commit_kind([ra], "DELETE") == G.DELETE
    assert G.commit_kind([ra, b], "WRITE") == G.OVERWRITE
    assert G.commit_kind([ra, b], "UPDATE") == G.REWRITE
    assert G.commit_kind([ra, b], "SOMETHING ELSE") == G.REWRITE  # an unknown name blocks more
    assert G.commit_kind([a.remove(0, data_change=False), add("c", False)], "OPTIMIZE") == G.REARRANGE
    assert G.commit_kind([ra, b], "RESTORE") == G.RESTORE
    dv = A.DeletionVector("u", "ab^-aqEH.-t@S}K{vb[*k^", 34, 1, 1)
    readded = dataclasses.replace(a, deletion_vector=dv)
    assert G.commit_kind([ra, readded], "DELETE") == G.DV_DELETE  # same file, fewer rows: no row copied
    assert G.commit_kind([ra, readded, b], "DELETE") == G.REWRITE  # a new file copies rows


def test_a_listed_commit_anchors_a_margin_before_the_stores_stamp() -> None:
    """A version the writer only listed is young while it is younger than the retention minus twice the
    margin (a cleaner ahead of the store, a writer behind it); an unknown stamp anchors nothing."""
    from deltalog.core.log.reachability import listed_anchor_ms

    day = 86_400_000
    stamp = 100 * day
    anchor = listed_anchor_ms(stamp)
    assert anchor == stamp - YOUNG_MARGIN_MS and listed_anchor_ms(0) is None
    assert young(anchor, stamp + 30 * day - 2 * YOUNG_MARGIN_MS - 1, 30 * day)
    assert not young(anchor, stamp + 30 * day - 2 * YOUNG_MARGIN_MS, 30 * day)
