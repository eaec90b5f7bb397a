"""Log compaction files in the pure core: the reconciled content of a range, which files a load may read instead
of commits, which ranges may be compacted, and the names.

The content is proven twice: a replay with a compaction file in place of its commits equals the replay of the
commits, on the generated logs of the parser differential (every path spelling, deletion vectors, txns,
domains, protocol and metadata changes, partition shapes), and every compaction file is checked by the
independent reference in ``tests/compaction_checker.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from deltalog.core.log.paths import Kind, LogPath, compaction_name, parse
from deltalog.core.log.segment import build_segment, usable_compactions
from deltalog.core.plans.compaction import default_start, due, plan_range
from deltalog.core.state import BaseState, CommitData
from deltalog.core.state.compact import compacted_actions, encode
from deltalog.core.state.compact_check import unusable_reason
from deltalog.errors import CorruptLogError, InvalidArgumentError, VersionNotFoundError
from tests import compaction_checker, foreign_compaction
from tests.unit import logkit as K
from tests.unit.test_replay_differential import ROOT, SETTINGS, logs, outcome


def _commit(v: int, *actions: dict[str, Any]) -> CommitData:
    return CommitData(v, f"_delta_log/{v:020d}.json", b"".join(orjson.dumps(a) + b"\n" for a in actions))


def test_the_protocol_example_compacts_to_the_protocol_answer() -> None:
    """PROTOCOL "Log Compaction Files": commits 4..6 give f2, f4 live, f1, f3 tombstones, the newest txn."""
    app = "3ae45b72-24e1-865a-a211-34987ae02f2a"
    commits = [
        _commit(4, K.commit_info("WRITE"), K.add("f2", size=1), K.remove("f1")),
        _commit(5, K.commit_info("WRITE"), K.add("f3", size=1), K.add("f4", size=1), K.txn(app, 4389)),
        _commit(6, K.commit_info("WRITE"), K.remove("f3"), K.txn(app, 4390)),
    ]
    actions = compacted_actions(commits, ROOT)
    assert [(k, b.get("path", b.get("version"))) for k, b in actions] == [
        ("txn", 4390),
        ("add", "f2"),
        ("remove", "f1"),
        ("add", "f4"),
        ("remove", "f3"),
    ]
    data = encode(actions)
    assert data.count(b"\n") == 5 and b"commitInfo" not in data
    assert compacted_actions(commits, ROOT) == actions  # deterministic
    name = compaction_name(4, 6)
    assert name == "00000000000000000004.00000000000000000006.compacted.json"
    assert compaction_checker.check_bytes(name, data, [c.data for c in commits]) == []


def test_tombstones_removed_domains_and_the_newest_state_stay() -> None:
    commits = [
        _commit(1, K.metadata({"id": "long"}, [], {"a": "1"}), K.domain("user.x", "{}"), K.add("a", size=1)),
        _commit(2, K.domain("user.x", "{}", removed=True), K.metadata({"id": "long"}, [], {"a": "2"})),
        _commit(3, K.protocol(1, 2), K.remove("a"), K.add("b", size=1), K.remove("old")),
    ]
    keys = [
        (k, b.get("domain") or b.get("path") or b.get("configuration")) for k, b in compacted_actions(commits, ROOT)
    ]
    assert keys == [
        ("protocol", None),
        ("metaData", {"a": "2"}),
        ("domainMetadata", "user.x"),
        ("remove", "a"),
        ("add", "b"),
        ("remove", "old"),
    ]
    removed = [b for k, b in compacted_actions(commits, ROOT) if k == "domainMetadata"]
    assert removed[0]["removed"] is True


def test_a_bad_action_in_the_range_is_a_typed_error_naming_the_commit_and_line() -> None:
    bad = CommitData(3, "_delta_log/00000000000000000003.json", b'{"add":{"path":"a","size":"x"}}\n{"txn":7}\n')
    with pytest.raises(CorruptLogError, match=r"00000000000000000003\.json") as err:
        compacted_actions([_commit(2, K.add("z", size=1)), bad], ROOT)
    assert err.value.path == bad.path


def _replaced(commits: list[CommitData], i: int, j: int) -> tuple[list[CommitData], bytes]:
    data = encode(compacted_actions(commits[i : j + 1], ROOT))
    start, end = commits[i].version, commits[j].version
    compaction = CommitData(end, f"_delta_log/{compaction_name(start, end)}", data)
    return [*commits[:i], compaction, *commits[j + 1 :]], data


def _same_state(state: dict[str, Any], in_range: set[str]) -> dict[str, Any]:
    """The state with the file a protocol or metadata came from made neutral when it is one of the range's
    commits or its compaction file (the file holds the commit's action, under its own name)."""
    out = dict(state)
    for key in ("protocol", "metadata"):
        action, source = state[key]
        out[key] = (action, "<range>" if source in in_range else source)
    return out


def test_replay_with_a_compaction_file_equals_replay_of_its_commits_on_generated_logs() -> None:
    checked: list[int] = []

    @SETTINGS
    @given(logs(), st.data())
    def check(log: tuple[BaseState, list[CommitData], bool, int], data: st.DataObject) -> None:
        base, commits, defer, _ = log
        if len(commits) < 3:  # the range, and the target's own commit after it
            return
        plain, _ = outcome(base, commits, bulk=False, defer_stats=defer)
        i = data.draw(st.integers(0, len(commits) - 3))
        j = data.draw(st.integers(i + 1, len(commits) - 2))
        try:
            replaced, raw = _replaced(commits, i, j)
        except CorruptLogError:
            assert "error" in plain  # a range compaction refuses, a load refuses too
            return
        if not raw:  # commitInfo only: nothing to write (compact_log writes no empty file)
            return
        name = replaced[i].path.rsplit("/", 1)[-1]
        assert compaction_checker.check_bytes(name, raw, [c.data for c in commits[i : j + 1]], ROOT) == []
        assert unusable_reason(raw, replaced[i].path, ROOT) is None  # a reader takes what deltalog writes
        in_range = {replaced[i].path, *(c.path for c in commits[i : j + 1])}
        for bulk in (False, True):
            with_file, _ = outcome(base, replaced, bulk=bulk, defer_stats=defer)
            if "error" in plain:
                assert with_file.get("error") == plain["error"]
            else:
                assert _same_state(with_file, in_range) == _same_state(plain, in_range)
        checked.append(j - i + 1)

    check()
    assert len(checked) >= 100, len(checked)


# ---------------------------------------------------------------------------------------------- reading


def _listing(latest: int, *compactions: tuple[int, int], checkpoint: int | None = None) -> list[LogPath]:
    paths = [LogPath(f"{v:020d}.json", Kind.COMMIT, v, size=10) for v in range(latest + 1)]
    if checkpoint is not None:
        paths.append(LogPath(f"{checkpoint:020d}.checkpoint.parquet", Kind.CHECKPOINT, checkpoint, size=10))
    for x, y in compactions:
        p = parse(compaction_name(x, y), size=10)
        assert p is not None
        paths.append(p)
    return paths


def _ranges(paths: list[LogPath], version: int | None = None) -> list[tuple[int, int | None]]:
    return [(p.version, p.end_version) for p in build_segment(paths, version).compactions]


def test_a_load_uses_the_widest_compactions_inside_the_commits_it_replays() -> None:
    paths = _listing(20, (1, 4), (1, 6), (5, 9), (7, 9), (10, 19), (10, 20), checkpoint=0)
    # after checkpoint 0; (1, 6) reaches furthest from 1; (5, 9) overlaps it; (10, 20) reaches the target
    assert _ranges(paths) == [(1, 6), (7, 9), (10, 19)]
    seg = build_segment(paths)
    read = [p.name for p in seg.replay_files()]
    assert read == [compaction_name(1, 6), compaction_name(7, 9), compaction_name(10, 19), f"{20:020d}.json"]
    assert len(seg.commits) == 20  # every commit is still named, for the tip, history and the pending count


def test_time_travel_inside_a_range_and_ranges_before_the_checkpoint_read_commits() -> None:
    paths = _listing(12, (2, 5), (6, 9), checkpoint=3)
    assert _ranges(paths, 8) == []  # inside (6, 9): commits; (2, 5) starts before the checkpoint
    assert _ranges(paths, 9) == []  # the target's own commit is read (its commitInfo is in no compaction)
    assert _ranges(paths, 10) == [(6, 9)]
    assert _ranges(_listing(12, (0, 5)), 6) == [(0, 5)]  # without a checkpoint, from version 0


def test_empty_and_misnamed_compaction_files_are_ignored() -> None:
    paths = _listing(9)
    paths.append(LogPath(compaction_name(1, 5), Kind.COMPACTION, 1, size=0, end_version=5))
    assert _ranges(paths) == []
    for name in (
        f"{5:020d}.{3:020d}.compacted.json",  # end below start
        f"{5:020d}.{5:020d}.compacted.json",  # one commit
        f"{5:019d}.{8:020d}.compacted.json",  # 19 digits
        f"{5:020d}.{8:020d}.compacted.json.tmp",
        f"{5:020d}.{8:020d}.compact.json",
    ):
        assert parse(name) is None, name
    assert usable_compactions(_listing(9, (2, 4)), 3, 8) == ()


def test_a_compaction_whose_commits_are_not_all_listed_is_not_used() -> None:
    """A compaction file only ever stands in for commits that are there (cleanup may have deleted some)."""
    paths = _listing(9, (2, 4), (5, 7))
    assert usable_compactions(paths, 1, 8) == tuple(p for p in paths if p.end_version in (4, 7))
    without_3 = [p for p in paths if p.name != f"{3:020d}.json"]
    assert [p.end_version for p in usable_compactions(without_3, 1, 8)] == [7]


# ---------------------------------------------------------------------------------------------- writing


def test_the_default_range_starts_after_the_newest_checkpoint_or_compaction() -> None:
    assert default_start(_listing(9)) == 0
    assert default_start(_listing(9, checkpoint=4)) == 5
    assert default_start(_listing(9, (5, 7), checkpoint=4)) == 8
    rng = plan_range(_listing(9, checkpoint=4), None, None, "t/_delta_log")
    assert (rng.start, rng.end, len(rng.commits)) == (5, 9, 5)


def test_ranges_that_cannot_be_compacted_are_typed_errors() -> None:
    where = "t/_delta_log"
    with pytest.raises(InvalidArgumentError, match="at least 2 commits"):
        plan_range(_listing(9), 4, 4, where)
    with pytest.raises(InvalidArgumentError, match="nothing to compact in t/_delta_log: 1 commit after the newest"):
        plan_range(_listing(9, checkpoint=8), None, None, where)  # only version 9 after the checkpoint
    with pytest.raises(InvalidArgumentError, match="nothing to compact in t/_delta_log: the log holds 1 commit,"):
        plan_range(_listing(0), None, None, where)
    with pytest.raises(VersionNotFoundError, match="latest version is 9"):
        plan_range(_listing(9), 5, 12, where)
    cleaned = [p for p in _listing(9, checkpoint=5) if p.version >= 5]
    with pytest.raises(VersionNotFoundError, match="deleted by log cleanup"):
        plan_range(cleaned, 2, 7, where)
    gap = [p for p in _listing(9) if p.version != 6]
    with pytest.raises(CorruptLogError, match=f"{6:020d}.json is missing") as err:
        plan_range(gap, 4, 8, where)
    assert err.value.path == f"{where}/{6:020d}.json"


def test_automatic_compaction_is_due_every_interval_commits() -> None:
    assert [v for v in range(12) if due(v, 4)] == [3, 7, 11]
    assert not any(due(v, 1) for v in range(5)) and not any(due(v, 0) for v in range(5))


def test_the_checker_and_the_foreign_shapes_are_independent_of_deltalog() -> None:
    for module in (compaction_checker, foreign_compaction):
        tree = ast.parse(Path(module.__file__ or "").read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not any(m.split(".")[0] in ("deltalog", "tests") for m in imported), (module, imported)


def test_the_checker_catches_what_a_wrong_file_would_do() -> None:
    commits = [_commit(1, K.add("a", size=1)), _commit(2, K.remove("a"), K.add("b", size=1))]
    good = encode(compacted_actions(commits, ROOT))
    name = compaction_name(1, 2)
    raw = [c.data for c in commits]
    assert compaction_checker.check_bytes(name, good, raw) == []
    no_tombstone = b"".join(line + b"\n" for line in good.splitlines() if b'"remove"' not in line)
    with_info = orjson.dumps(K.commit_info("WRITE")) + b"\n" + good
    two_per_line = orjson.dumps({**K.add("b", size=1), **K.remove("a")}) + b"\n"
    stale = good.replace(b'"size":1', b'"size":2', 1)
    for wrong in (no_tombstone, with_info, two_per_line, stale):
        assert compaction_checker.check_bytes(name, wrong, raw), wrong
    assert compaction_checker.check_bytes(f"{1:020d}.{2:019d}.compacted.json", good, raw)
