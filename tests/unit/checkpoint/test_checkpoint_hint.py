"""``_last_checkpoint`` as deltalog writes it: forward only, checksummed, Spark's key order, right under races.

Races are arranged, not hoped for: each writer gets its own :class:`FaultyStore` over the same directory, and a
delay rule whose injected sleep waits on an event or a barrier parks one writer at an exact step while the
other acts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest

from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.checkpoint.hint import encode_hint, update_hint
from deltalog.checkpoint.writer import CheckpointResult
from deltalog.core.log import last_checkpoint as hints
from deltalog.core.log.paths import LOG_DIR, checkpoint_name, multipart_name
from deltalog.core.log.segment import complete_checkpoints
from deltalog.storage.faults import FaultyStore, slow
from deltalog.storage.local import LocalLogStore

HINT = f"{LOG_DIR}/_last_checkpoint"
SCHEMA = pa.schema([("id", pa.int64())])


def build(root: Path, versions: int, configuration: dict[str, str] | None = None) -> DeltaLog:
    log = DeltaLog(LocalLogStore(str(root)), str(root), auto_checkpoint=False)
    log.create(SCHEMA, configuration=configuration or {})
    for v in range(1, versions + 1):
        log.start_transaction().commit([A.Add(f"f{v:03d}.parquet", {}, v, 1, True)])
    return log


def raw_hint(root: Path) -> dict[str, Any]:
    obj = orjson.loads((root / HINT).read_bytes())
    assert isinstance(obj, dict)
    return obj


def parked_log(root: Path, op: str, path: str, wait: Callable[[], Any]) -> tuple[FaultyStore, DeltaLog]:
    """A log whose first ``op`` on ``path`` blocks in ``wait`` (the injected sleep) before it goes through."""
    store = FaultyStore(LocalLogStore(str(root)), slow(op, path, delay_s=1.0, nth=1), sleep=lambda _s: wait())  # type: ignore[arg-type]
    return store, DeltaLog(store, str(root), auto_checkpoint=False)


def park_until(release: threading.Event) -> tuple[threading.Event, Callable[[], None]]:
    """(parked, wait): ``wait`` says it is parked, then blocks until ``release``."""
    parked = threading.Event()

    def wait() -> None:
        parked.set()
        assert release.wait(60)

    return parked, wait


def run(fn: Callable[[], CheckpointResult], out: dict[str, Any], key: str) -> threading.Thread:
    def target() -> None:
        try:
            out[key] = fn()
        except BaseException as exc:  # reported by the test, not lost in the thread
            out[key] = exc

    t = threading.Thread(target=target, name=key)
    t.start()
    return t


# ---------------------------------------------------------------------------------------------- content


def test_checksum_matches_the_spec_test_vector() -> None:
    doc = orjson.loads(
        '{"k0":"\'v 0\'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", [1, 2],'
        ' {"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}'
    )
    assert hints.checksum(doc) == "6a92d155a59bf2eecbd4b4ec7fd1f875"


@pytest.mark.parametrize("kind", ["classic", "multipart", "v2"])
def test_hint_fields_order_and_checksum(tmp_path: Path, kind: str) -> None:
    conf = {"delta.feature.v2Checkpoint": "supported", "delta.checkpointPolicy": "v2"} if kind == "v2" else {}
    log = build(tmp_path, 7, conf)
    result = log.checkpoint(parts=3 if kind == "multipart" else None)
    data = (tmp_path / HINT).read_bytes()
    obj = raw_hint(tmp_path)
    first = ["version", "size", "parts"] if kind == "multipart" else ["version", "size"]
    assert list(obj)[: len(first)] == first
    assert data.startswith(b'{"version":7,"size":')
    assert list(obj)[-1] == "checksum"
    assert obj["checksum"] == hints.checksum(obj)
    assert obj["version"] == 7 and obj["size"] == result.num_actions
    assert obj["numOfAddFiles"] == result.num_add_files == 7
    assert obj["sizeInBytes"] == result.size_in_bytes == sum((tmp_path / f).stat().st_size for f in result.files)
    assert ("parts" in obj) == (kind == "multipart")
    if kind == "multipart":
        assert obj["parts"] == 3
    parsed = hints.parse(data)
    assert (parsed.version, parsed.size, parsed.parts) == (7, result.num_actions, obj.get("parts"))


def test_encode_hint_puts_version_size_parts_first_whatever_the_input_order() -> None:
    data = encode_hint({"sizeInBytes": 9, "parts": 2, "numOfAddFiles": 1, "size": 4, "version": 3, "checksum": "x"})
    obj = orjson.loads(data)
    assert list(obj) == ["version", "size", "parts", "sizeInBytes", "numOfAddFiles", "checksum"]
    assert obj["checksum"] == hints.checksum(obj) != "x"


def test_tampered_hint_is_ignored_by_readers_and_replaced_by_the_next_checkpoint(tmp_path: Path) -> None:
    log = build(tmp_path, 12)
    log.checkpoint(version=5)
    obj = raw_hint(tmp_path)
    obj["version"] = 11  # a torn or edited hint: the checksum no longer matches
    (tmp_path / HINT).write_bytes(orjson.dumps(obj))
    assert log.read_hint() is None
    snap = DeltaLog.for_table(tmp_path, auto_checkpoint=False).snapshot()
    assert snap.version == 12 and snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 5
    log.checkpoint(version=8)  # the unreadable hint does not hold the real one back
    assert raw_hint(tmp_path)["version"] == 8
    assert hints.parse((tmp_path / HINT).read_bytes()).version == 8


# ---------------------------------------------------------------------------------------------- forward only


def test_hint_moves_only_forward(tmp_path: Path) -> None:
    log = build(tmp_path, 21)
    log.checkpoint(version=20)
    before = (tmp_path / HINT).read_bytes()
    older = log.checkpoint(version=10)
    assert older.version == 10 and (tmp_path / LOG_DIR / checkpoint_name(10)).is_file()
    assert (tmp_path / HINT).read_bytes() == before  # untouched, not merely "says 20"
    assert raw_hint(tmp_path)["version"] == 20
    log.checkpoint(version=20)  # again at the same version: still untouched
    assert (tmp_path / HINT).read_bytes() == before
    log.checkpoint(version=21)
    assert raw_hint(tmp_path)["version"] == 21


def test_update_hint_refuses_to_go_back(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    assert update_hint(store, {"version": 4, "size": 3}) is True
    assert update_hint(store, {"version": 2, "size": 3}) is False
    assert update_hint(store, {"version": 4, "size": 99}) is False
    assert raw_hint(tmp_path)["size"] == 3


# ---------------------------------------------------------------------------------------------- races


@pytest.mark.parametrize("parts", [None, 3], ids=["classic", "multipart"])
def test_two_writers_checkpointing_the_same_version(tmp_path: Path, parts: int | None) -> None:
    build(tmp_path, 10)
    barrier = threading.Barrier(2, timeout=60)
    first = f"{LOG_DIR}/{checkpoint_name(10) if parts is None else multipart_name(10, 1, 3)}"
    logs = [parked_log(tmp_path, "put_if_absent", first, barrier.wait)[1] for _ in range(2)]
    out: dict[str, Any] = {}
    threads = [run(lambda lg=lg: lg.checkpoint(parts=parts), out, f"w{i}") for i, lg in enumerate(logs)]
    for t in threads:
        t.join(timeout=120)
    results = [out["w0"], out["w1"]]
    assert all(isinstance(r, CheckpointResult) for r in results), results
    if parts is None:  # one file, one winner
        assert sorted(r.already_existed for r in results) == [False, True]
    assert {r.files for r in results} == {results[0].files}
    hint = raw_hint(tmp_path)
    assert hint["version"] == 10 and hint["checksum"] == hints.checksum(hint)
    assert hint.get("parts") == parts
    snap = DeltaLog.for_table(tmp_path, auto_checkpoint=False).snapshot()
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 10
    assert snap.num_files == 10


def test_older_writer_overwriting_a_newer_hint_repairs_it(tmp_path: Path) -> None:
    # A (version 10) read the hint and is about to write it; B (version 20) finishes entirely; then A writes.
    build(tmp_path, 20)
    b_done = threading.Event()
    a_parked, wait = park_until(b_done)
    store_a, log_a = parked_log(tmp_path, "put", HINT, wait)
    out: dict[str, Any] = {}
    ta = run(lambda: log_a.checkpoint(version=10), out, "a")
    assert a_parked.wait(60)  # A has written checkpoint 10 and read the (absent) hint
    # B runs on the main thread while A is parked (A cannot finish before b_done)
    b = DeltaLog.for_table(tmp_path, auto_checkpoint=False).checkpoint(version=20)
    assert raw_hint(tmp_path)["version"] == 20
    b_done.set()
    ta.join(timeout=120)
    assert isinstance(out["a"], CheckpointResult) and out["a"].version == 10
    hint = raw_hint(tmp_path)
    assert hint["version"] == 20 and hint["checksum"] == hints.checksum(hint)
    assert b.version == 20
    assert len(store_a.calls_to("put", HINT)) == 2  # A's stale write, then A's repair


def test_newer_writer_parked_before_its_hint_wins(tmp_path: Path) -> None:
    build(tmp_path, 20)
    a_done = threading.Event()
    b_parked, wait = park_until(a_done)
    _, log_b = parked_log(tmp_path, "put", HINT, wait)
    out: dict[str, Any] = {}
    tb = run(lambda: log_b.checkpoint(version=20), out, "b")
    assert b_parked.wait(60)
    DeltaLog.for_table(tmp_path, auto_checkpoint=False).checkpoint(version=10)
    # A's own hint named 10, but A then listed past it, found B's complete checkpoint 20 and pointed there
    # (a repaired hint: version and size -1, as Spark writes when it does not know the size)
    repaired = raw_hint(tmp_path)
    assert (repaired["version"], repaired["size"]) == (20, -1)
    assert repaired["checksum"] == hints.checksum(repaired)
    a_done.set()
    tb.join(timeout=120)
    assert isinstance(out["b"], CheckpointResult)
    final = raw_hint(tmp_path)
    assert (final["version"], final["size"]) == (20, out["b"].num_actions)


def test_incomplete_newer_checkpoint_is_not_named_by_the_repair(tmp_path: Path) -> None:
    # B (20, two parts) has written part 1 only when A (10) writes its hint and looks for newer checkpoints:
    # A must not point the hint at B's incomplete set; B, finishing later, moves the hint to 20.
    build(tmp_path, 20)
    a_done = threading.Event()
    b_parked, wait = park_until(a_done)
    _, log_b = parked_log(tmp_path, "put_if_absent", f"{LOG_DIR}/{multipart_name(20, 2, 2)}", wait)
    out: dict[str, Any] = {}
    tb = run(lambda: log_b.checkpoint(version=20, parts=2), out, "b")
    assert b_parked.wait(60)  # part 1 is published, part 2 not yet
    assert (tmp_path / LOG_DIR / multipart_name(20, 1, 2)).is_file()
    assert not (tmp_path / LOG_DIR / multipart_name(20, 2, 2)).exists()
    DeltaLog.for_table(tmp_path, auto_checkpoint=False).checkpoint(version=10)
    assert raw_hint(tmp_path)["version"] == 10  # not 20: that set is incomplete
    a_done.set()
    tb.join(timeout=120)
    assert isinstance(out["b"], CheckpointResult)
    hint = raw_hint(tmp_path)
    assert (hint["version"], hint["parts"]) == (20, 2)


def test_many_writers_leave_the_hint_at_the_newest_complete_checkpoint(tmp_path: Path) -> None:
    build(tmp_path, 24)
    versions = [4, 8, 12, 16, 20, 24] * 2
    start = threading.Barrier(len(versions), timeout=60)
    logs = [parked_log(tmp_path, "read", HINT, start.wait)[1] for _ in versions]
    out: dict[str, Any] = {}
    threads = [
        run(lambda lg=lg, v=v: lg.checkpoint(version=v), out, f"w{i}")
        for i, (lg, v) in enumerate(zip(logs, versions, strict=True))
    ]
    for t in threads:
        t.join(timeout=120)
    assert all(isinstance(r, CheckpointResult) for r in out.values()), out
    hint = raw_hint(tmp_path)
    assert hint["checksum"] == hints.checksum(hint)
    listing = DeltaLog.for_table(tmp_path, auto_checkpoint=False).list_log(0)
    newest = complete_checkpoints(listing)[-1].version
    assert (hint["version"], newest) == (24, 24), (hint, [p.name for p in listing], out)
