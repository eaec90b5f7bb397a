"""Listing "every log file from version N on" on a store that can only list by name prefix (Azure Blob).

Why: S3's ListObjectsV2 takes ``StartAfter``, so a listing from version N costs what lies after N. Azure's List
Blobs has no such parameter that servers honour (Azurite ignores ``startFrom``), only ``name_starts_with``.
Listing the whole ``_delta_log`` on every refresh would make each snapshot cost the length of the log, which is
the slowness users of other engines complain about (delta#1191, delta#7456).

How: version names are 20 zero-padded digits, so all versions in an aligned decimal block share a prefix:
versions 120..129 are ``0000000000000000012*``, 100..199 are ``000000000000000001*``. A block costs what it
holds: the versions after N we want anyway, plus the ones before N it re-lists. So each listing takes the
widest block around its position whose part before that position stays small: at most 10 versions for the
first (from N = 1234 the block 1230..1239; from a round N, where checkpoints sit, N = 1000, the block
1000..1999 at once), at most 100 plus twice what was found for the later ones. If a block holds versions
through its very end, more may follow and the next listing starts right after it. We stop at the first block
whose last version is absent. Every listing is filtered to names ``>= start``, so extra names never leak.
If N's block is empty, N is usually one past the latest version (a refresh asking "anything new?"): when N
starts a block, one listing of the 10 versions before it shows the log ends there. Otherwise (the log starts
above N, or ends well below it, or there is none) we widen the block around N until it holds some version. A
start of version 0 lists the whole directory. A refresh costs one or two calls; a listing from a checkpoint
one call when the tail stays inside the round block (a checkpoint at 1000 followed by 200 commits: one
listing of 1000..1999), else about one per decade after it; every listing re-lists few versions before N.
Dependent listings are round trips on the load's chain, which is why the first block is as wide as it can be
for free.

What that assumes, and documents: the log's versions are contiguous above the oldest one present (true of every
Delta log; a gap is already a corrupt log). With a version-shaped start, names that are not version files
(``_last_checkpoint``) are not returned; a caller that wants them lists from an empty start.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from deltalog.storage.base import FileInfo

#: lists the direct children of the directory whose bare names start with the given prefix
PrefixLister = Callable[[str], Iterable[FileInfo]]

DIGITS = 20
_TOP = 10**DIGITS


def version_of(name: str) -> int | None:
    """The version a log file name starts with (``00000000000000000007.json`` -> 7), else ``None``."""
    head = name[:DIGITS]
    if len(head) == DIGITS and head.isdigit() and head.isascii():
        return int(head)
    return None


def _block_prefix(lo: int, size: int) -> str:
    """The name prefix shared by versions ``lo .. lo + size - 1`` (``size`` a power of ten, ``lo`` aligned)."""
    width = DIGITS - (len(str(size)) - 1)
    return f"{lo:0{DIGITS}d}"[:width]


#: versions the first listing may re-list before its start (module docstring)
FIRST_RELIST = 10


def widest_block(position: int, relist: int) -> tuple[int, int]:
    """(lo, size) of the widest aligned decimal block holding ``position`` with at most ``relist`` versions
    before it (at least the 10-block)."""
    size = 10
    while size * 10 < _TOP and position % (size * 10) <= relist:
        size *= 10
    return position - position % size, size


def list_from_by_prefix(list_prefix: PrefixLister, start: str) -> tuple[list[FileInfo], int]:
    """Files named ``>= start`` (version files only when ``start`` is version-shaped), sorted; and the call count."""
    v = version_of(start)
    if v is None or v == 0:
        everything = [
            f
            for f in list_prefix("")
            if f.name.encode() >= start.encode() and (v is None or version_of(f.name) is not None)
        ]
        return sorted(everything, key=lambda f: f.name.encode()), 1
    found: dict[str, FileInfo] = {}
    calls = 0

    def list_block(lo: int, size: int) -> list[int]:
        nonlocal calls
        calls += 1
        prefix = _block_prefix(lo, size) if size < _TOP else ""
        versions = []
        for f in list_prefix(prefix):
            found[f.name] = f
            fv = version_of(f.name)
            if fv is not None:
                versions.append(fv)
        return versions

    lo, size = widest_block(v, FIRST_RELIST)
    versions = list_block(lo, size)
    if not versions and v % 10 == 0 and list_block(v - 10, 10):
        # N starts a block and the 10 before it hold versions: N is one past the latest ("anything new?").
        return [], calls
    while not versions and size < _TOP:
        # The log ends below N's block or starts above it: widen until some version shows which (twice by
        # ten, then the whole directory, so a missing log costs a handful of calls, not twenty).
        size = size * 10 if size < 1000 else _TOP
        lo = v - v % size
        versions = list_block(lo, size)
    if versions and max(versions) < v:
        return [], calls  # versions are contiguous: the log ends below N
    while versions and max(versions) == lo + size - 1 and lo + size < _TOP:
        # The block is full through its end: more may follow. List from right after it, as widely as
        # re-listing the part before that point stays cheap next to what we found.
        after_start = len({fv for fv in map(version_of, found) if fv is not None and fv >= v})
        lo, size = widest_block(lo + size, 100 + 2 * after_start)
        versions = list_block(lo, size)
    wanted = [f for f in found.values() if version_of(f.name) is not None and f.name.encode() >= start.encode()]
    return sorted(wanted, key=lambda f: f.name.encode()), calls


def range_prefix(start: str, stop: str | None) -> str | None:
    """The name prefix of the smallest aligned decimal block holding versions ``version_of(start)`` through
    ``version_of(stop)``, or ``None`` unless both are version-shaped (and ``start <= stop``).

    Why: a store that lists by prefix only can still bound a listing of ``[start, stop)``. Versions 5..11 share
    ``000000000000000000`` (the block 0..99): one listing of at most a hundred names, where a listing from 5
    would walk the log to its end. The block is at most ten times the range (less when the range is aligned).
    """
    lo, hi = version_of(start), version_of(stop) if stop is not None else None
    if lo is None or hi is None or hi < lo:
        return None
    a, b = f"{lo:0{DIGITS}d}", f"{hi:0{DIGITS}d}"
    common = 0
    while common < DIGITS and a[common] == b[common]:
        common += 1
    return a[:common]


__all__ = ["FIRST_RELIST", "PrefixLister", "list_from_by_prefix", "range_prefix", "version_of", "widest_block"]
