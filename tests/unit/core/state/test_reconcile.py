"""Replay is two parsers feeding one reconciler: the parsers only read, :func:`reconcile` alone decides.

Each parser's output is checked to be raw (every add and remove it read, superseded ones too, with
positions in log order), the two outputs to mean the same rows, and the reconciler to be the only step
between them and the state, for either parser.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pytest

from deltalog.core.state import BaseState, CommitData, FileActions, Parsed, parse_bulk, parse_exact
from deltalog.core.state import replay as replay_module
from deltalog.core.state.columns import ADD_SCHEMA, REMOVE_SCHEMA, table_from_dicts
from deltalog.core.state.reconcile import reconcile
from deltalog.core.state.replay import replay
from deltalog.errors import CorruptLogError
from tests.unit import logkit as K

BASE = BaseState(version=-1, source="_delta_log/00000000000000000000.json")


def _commit(version: int, *actions: dict[str, Any]) -> CommitData:
    data = b"".join(orjson.dumps(a) + b"\n" for a in actions)
    return CommitData(version, f"_delta_log/{version:020d}.json", data)


def _log() -> list[CommitData]:
    """A file added, removed and added again; another removed in the commit that adds it; an escaped path."""
    start = [K.commit_info("CREATE"), K.protocol(), K.metadata(partition_columns=("p",))]
    return [
        _commit(0, *start, K.add("p=a/1.parquet", {"p": "a"}, size=1), K.add("p=a/x%20y.parquet", {"p": "a"})),
        _commit(1, K.commit_info(), K.remove("p=a/1.parquet"), K.add("p=a/2.parquet", {"p": "a"})),
        _commit(2, K.commit_info(), K.add("p=a/1.parquet", {"p": "a"}, size=9), K.remove("p=a/2.parquet")),
        _commit(3, K.commit_info(), K.remove("p=a/x y.parquet"), K.add("p=a/3.parquet", {"p": "a"})),
    ]


def _rows(actions: FileActions) -> list[tuple[str, str, int | None]]:
    """Every action a parse read, in log order: (kind, path, size)."""
    rows = []
    for kind, table, positions in (
        ("add", actions.adds, actions.add_positions),
        ("remove", actions.removes, actions.remove_positions),
    ):
        rows += [(int(p), kind, r["path"], r["size"]) for r, p in zip(table.to_pylist(), positions, strict=True)]
    return [r[1:] for r in sorted(rows)]


def test_both_parsers_hand_over_every_action_unreconciled() -> None:
    exact = parse_exact.parse(BASE, _log())
    bulk = parse_bulk.parse(BASE, _log())
    assert bulk is not None
    expected = [
        ("add", "p=a/1.parquet", 1),
        ("add", "p=a/x%20y.parquet", 100),
        ("remove", "p=a/1.parquet", None),
        ("add", "p=a/2.parquet", 100),
        ("add", "p=a/1.parquet", 9),
        ("remove", "p=a/2.parquet", None),
        ("remove", "p=a/x y.parquet", None),
        ("add", "p=a/3.parquet", 100),
    ]
    for parsed in (exact, bulk):
        assert _rows(parsed.actions) == expected
        for positions in (parsed.actions.add_positions, parsed.actions.remove_positions):
            assert positions.dtype == np.int64 and (np.diff(positions) > 0).all()
    assert exact.state == bulk.state


def test_the_reconciler_turns_either_parse_into_one_state() -> None:
    states = []
    for parsed in (parse_exact.parse(BASE, _log()), parse_bulk.parse(BASE, _log())):
        assert parsed is not None
        files = reconcile(BASE, parsed.state, parsed.actions, "/t", parsed.stats_at)
        states.append((files.adds(stats=True).to_pylist(), files.tombstones().to_pylist()))
    assert states[0] == states[1]
    adds, tombstones = states[0]
    assert [(a["path"], a["size"]) for a in adds] == [("p=a/1.parquet", 9), ("p=a/3.parquet", 100)]
    assert [t["path"] for t in tombstones] == ["p=a/2.parquet", "p=a/x y.parquet"]


@pytest.mark.parametrize("bulk", [True, False], ids=["bulk", "exact"])
def test_replay_goes_through_the_reconciler_whichever_parser_reads(bulk: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_bulk, "MIN_BYTES", 0 if bulk else 1 << 62)
    parsers: list[str] = []
    calls: list[Parsed] = []
    for module in (parse_bulk, parse_exact):
        original = module.parse

        def spy(*args: Any, _original: Any = original, _name: str = module.__name__, **kwargs: Any) -> Any:
            out = _original(*args, **kwargs)
            if out is not None:
                parsers.append(_name.rsplit(".", 1)[-1])
                calls.append(out)
            return out

        monkeypatch.setattr(module, "parse", spy)
    seen: list[FileActions] = []

    def reconciler(base: BaseState, state: Any, actions: FileActions, root: str | None, stats_at: Any = None) -> Any:
        seen.append(actions)
        return reconcile(base, state, actions, root, stats_at)

    monkeypatch.setattr(replay_module, "reconcile", reconciler)
    result = replay(BASE, _log(), "/t")
    assert parsers == ["parse_bulk" if bulk else "parse_exact"]
    assert seen == [calls[0].actions]  # the parser's own output, handed to the reconciler as it is
    assert result.files is not None and result.files.num_files == 2


def test_positions_not_table_order_decide() -> None:
    """The reconciler compares positions across the two tables: a remove between an add and its re-add."""
    add = K.add("a.parquet", {}, size=1)["add"]
    re_add = K.add("a.parquet", {}, size=2)["add"]
    other = K.add("b.parquet", {})["add"]
    actions = FileActions(
        adds=table_from_dicts([add, other, re_add], ADD_SCHEMA),
        add_positions=np.array([0, 1, 5], dtype="int64"),
        removes=table_from_dicts([K.remove("a.parquet")["remove"], K.remove("b.parquet")["remove"]], REMOVE_SCHEMA),
        remove_positions=np.array([3, 7], dtype="int64"),
    )
    parsed = parse_exact.parse(BASE, _log()[:1])
    files = reconcile(BASE, parsed.state, actions, None)
    assert [(a["path"], a["size"]) for a in files.adds().to_pylist()] == [("a.parquet", 2)]
    assert [t["path"] for t in files.tombstones().to_pylist()] == ["b.parquet"]


def test_a_deletion_vector_makes_another_file_and_a_key_without_an_id_is_the_path() -> None:
    """One identity function for every row (:func:`deltalog.core.files.pathkeys.file_key`): a descriptor whose
    unique id is empty keys as the bare path on either parser, as a row without one does."""
    plain = K.add("a.parquet", {})["add"]
    with_dv = K.add("a.parquet", {}, deletion_vector=K.dv("ab^-aqEH.-t@S}K{vb[*k^"))["add"]
    no_id = {**K.add("c.parquet", {})["add"], "deletionVector": {"sizeInBytes": 1, "cardinality": 1}}
    actions = FileActions(
        adds=table_from_dicts([plain, with_dv, no_id], ADD_SCHEMA),
        add_positions=np.array([0, 1, 3], dtype="int64"),
        removes=table_from_dicts([K.remove("c.parquet")["remove"]], REMOVE_SCHEMA),
        remove_positions=np.array([2], dtype="int64"),
    )
    parsed = parse_exact.parse(BASE, _log()[:1])
    files = reconcile(BASE, parsed.state, actions, None)
    assert [a["path"] for a in files.adds().to_pylist()] == ["a.parquet", "a.parquet", "c.parquet"]
    assert files.tombstones().num_rows == 0  # the remove of c.parquet came before its add


@pytest.mark.parametrize("bulk", [True, False], ids=["bulk", "exact"])
def test_a_superseded_add_that_does_not_decode_is_corrupt(bulk: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every action of a commit decodes, superseded or not, as Delta Spark and delta-rs decode them all."""
    monkeypatch.setattr(parse_bulk, "MIN_BYTES", 0 if bulk else 1 << 62)
    bad = {"add": {**K.add("p=a/1.parquet", {"p": "a"})["add"], "size": "12"}}
    commits = [*_log()[:1], _commit(1, K.commit_info(), bad), _commit(2, K.commit_info(), K.remove("p=a/1.parquet"))]
    with pytest.raises(CorruptLogError) as err:
        replay(BASE, commits, "/t")
    assert (err.value.path, err.value.line) == (commits[1].path, 2)
