"""Compaction files other engines wrote, judged on their own before a load reads them in place of commits.

The rule (:func:`deltalog.core.state.compact_check.unusable_reason`): a file whose actions are not reconciled
(two actions for one file key, protocol, metaData, app id or domain), or whose lines are not JSON objects, is
not used; ``commitInfo``, ``cdc`` and unknown actions are passed over. The independent checker's reader rule
(``tests/compaction_checker.py``, :func:`usable_alone`) agrees on the parser differential's generated logs,
in every shape a file is drawn in: as delta-kernel-rs wrote them, the commits' lines shuffled, and deltalog's own.
"""

from __future__ import annotations

import contextlib
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from deltalog.core.state import CommitData
from deltalog.core.state.compact import compacted_actions, encode
from deltalog.core.state.compact_check import unusable_reason
from deltalog.errors import CorruptLogError
from tests import compaction_checker
from tests.foreign_compaction import kernel_rs_shaped

from . import logkit as K
from .test_replay_differential import ROOT, SETTINGS, logs

NAME = "_delta_log/00000000000000000001.00000000000000000003.compacted.json"


def _file(*actions: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(a) + b"\n" for a in actions)


def _reason(data: bytes) -> str | None:
    return unusable_reason(data, NAME, ROOT)


def test_a_kernel_rs_shaped_file_with_a_superseded_add_is_not_used() -> None:
    """Newest commit first, the remove of a file and the add it cancels both kept: read in order, the add
    would win. The reason names the file, both lines and the data file."""
    commits = [
        _file(K.commit_info("WRITE"), K.add("a", size=1), K.add("b", size=1)),
        _file(K.commit_info("DELETE"), K.remove("a")),
    ]
    data = kernel_rs_shaped(commits)
    assert data.splitlines()[0].startswith(b'{"remove"') and b'"cdc"' in data and b"commitInfo" not in data
    why = _reason(data)
    assert why is not None and NAME in why and "'a'" in why and "line 3" in why and "line 1" in why
    assert compaction_checker.usable_alone(data, ROOT) is False


def test_a_reconciled_file_is_used_in_any_order_with_cdc_and_commit_info_lines() -> None:
    data = _file(
        K.commit_info("WRITE"),
        K.remove("a"),
        {"cdc": {"path": "_change_data/c.parquet", "partitionValues": {}, "size": 1, "dataChange": False}},
        K.add("b", size=1),
        K.add("b", size=1, deletion_vector=K.dv("ab^-aqEH.-t@S}K{vb[*k^")),  # another DV: another logical file
        K.txn("app", 3),
        K.txn("other", 1),
        K.domain("user.x"),
        K.domain("user.y", removed=True),
        K.metadata({"id": "long"}),
        K.protocol(),
        {"someFutureAction": {"x": 1}},
        {"add": None},
    )
    assert _reason(data) is None
    assert compaction_checker.usable_alone(data, ROOT)


def test_every_identity_reconciliation_keeps_once_is_held_to_once() -> None:
    dv = K.dv("ab^-aqEH.-t@S}K{vb[*k^")
    pairs = {
        "add then remove": (K.add("a", size=1), K.remove("a")),
        "one file spelled twice": (K.add("b c.parquet", size=1), K.remove("b%20c.parquet")),
        "an absolute spelling of a relative path": (K.add(f"file:{ROOT}/a", size=1), K.add("a", size=2)),
        "one deletion vector": (K.add("a", size=1, deletion_vector=dv), K.remove("a", deletion_vector=dv)),
        "protocol": (K.protocol(), K.protocol(1, 2)),
        "metaData": (K.metadata({"id": "long"}), K.metadata({"id": "long"})),
        "txn": (K.txn("app", 1), K.txn("app", 2)),
        "domainMetadata": (K.domain("user.x"), K.domain("user.x", removed=True)),
    }
    for label, (first, second) in pairs.items():
        data = _file(first, K.commit_info("WRITE"), second)
        assert _reason(data) is not None, label
        assert not compaction_checker.usable_alone(data, ROOT), label
        one_line = orjson.dumps({**first, **second}) + b"\n"  # two keys on one line reconcile as well
        if first.keys() != second.keys():
            assert _reason(one_line) is not None, label


def test_a_file_that_is_not_json_objects_is_not_used() -> None:
    for data in (
        b'{"add":{"path":"a","size":1,"partitionValues":{},"modificationTime":1,"dataCh',  # torn
        b"[1, 2]\n",
        b"null\n",
        b'{"add":{"size":1}}\n',  # no path
        b'{"add":"a.parquet"}\n',
    ):
        assert _reason(data) is not None, data
        assert not compaction_checker.usable_alone(data, ROOT), data


def _shapes(commits: list[CommitData], draw: st.DrawFn) -> list[tuple[str, bytes]]:
    raw = [c.data for c in commits]
    lines = [line for data in raw for line in data.splitlines() if line.strip()]
    shuffled = b"\n".join(draw(st.permutations(lines))) + b"\n" if lines else b""
    shapes = [("kernel-rs", kernel_rs_shaped(raw)), ("kernel-rs without cdc", kernel_rs_shaped(raw, cdc=False))]
    shapes.append(("shuffled commit lines", shuffled))
    with contextlib.suppress(CorruptLogError):  # deltalog writes no file of a range it cannot read
        shapes.append(("deltalog", encode(compacted_actions(commits, ROOT))))
    return shapes


def test_deltalog_and_the_independent_checker_agree_on_generated_files() -> None:
    seen: dict[tuple[str, bool], int] = {}

    @SETTINGS
    @given(logs(), st.data())
    def check(log: tuple[Any, list[CommitData], bool, int], data: st.DataObject) -> None:
        _, commits, _, _ = log
        for shape, body in _shapes(commits, data.draw):
            try:
                reference = compaction_checker.usable_alone(body, ROOT)
            except (KeyError, TypeError):
                continue  # a body the plain reference cannot even key (deltalog's rule refuses it too)
            ours = _reason(body) is None
            assert ours == reference, (shape, body)
            if shape == "deltalog":
                assert ours, body  # what deltalog writes, deltalog reads
            seen[(shape, ours)] = seen.get((shape, ours), 0) + 1

    check()
    assert seen.get(("kernel-rs", False), 0) >= 20 and seen.get(("kernel-rs", True), 0) >= 20, seen
    assert seen.get(("deltalog", True), 0) >= 50, seen
