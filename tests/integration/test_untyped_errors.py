"""Every error of the table layer is a ``DeltaLogError`` (issue 23 item 7): whatever the store raises, and
whatever another engine (or a hand edit) left in ``metaData.configuration``.

Two ways out used to be raw. A store that raises a builtin ``TimeoutError`` or ``OSError`` (deltalog's own
``FaultyStore`` does, as a client library would) escaped ``snapshot()``; the table's context now holds its store
through :mod:`deltalog.storage.typed`, which makes such an error a ``StorageError`` with the original as
``__cause__``. And a table property whose value is not a string made ``checkpoint()`` raise pyarrow's
``ArrowTypeError``: a number or a boolean now reads as its JSON text (as Delta Spark and delta-kernel-rs read
it), an object or a list keeps the table readable, is named (file and key) by what would write it again, and
is repaired with ``unset_properties``/``set_properties``.

The fault campaign runs every public read and commit entry point once without faults, counting its store
calls, then once per call with that call failing in each of four ways: "0 untyped" is asserted for all of them.
"""

from __future__ import annotations

import errno
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from deltalake import DeltaTable

from deltalog import DeltaLog, DeltaLogError
from deltalog.errors import CorruptLogError, PropertyError, StorageError
from deltalog.storage.faults import ErrorFactory, FaultyStore, connection_reset, fail_before, timeout
from deltalog.storage.local import LocalLogStore
from tests.integration.datafiles import SCHEMA, assert_peers_agree, data_file

COMMIT0 = "_delta_log/00000000000000000000.json"


# ---------------------------------------------------------------------------------------------- configuration
def with_configuration(root: Path, values: dict[str, Any]) -> None:
    """A table whose ``0.json`` metaData carries ``values`` as written (another engine's, or a hand edit)."""
    DeltaLog.for_table(root).create(SCHEMA, configuration={"delta.appendOnly": "false"})
    path = root / COMMIT0
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    for line in lines:
        if "metaData" in line:
            line["metaData"]["configuration"].update(values)
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    DeltaLog.for_table(root).start_transaction().commit([data_file(root, "a")])


def test_a_number_or_a_boolean_property_reads_as_its_json_text_as_the_peers_read_it(tmp_path: Path) -> None:
    with_configuration(tmp_path, {"custom.count": 5, "custom.ratio": 0.5, "custom.flag": True})
    conf = DeltaLog.for_table(tmp_path).snapshot().configuration
    assert {k: conf[k] for k in ("custom.count", "custom.ratio", "custom.flag")} == {
        "custom.count": "5",
        "custom.ratio": "0.5",
        "custom.flag": "true",
    }
    assert DeltaLog.for_table(tmp_path).checkpoint().version == 1  # strings, as every reader of it expects
    assert DeltaLog.for_table(tmp_path).snapshot().configuration == conf
    assert_peers_agree(tmp_path)
    assert DeltaTable(str(tmp_path)).metadata().configuration["custom.count"] == "5"  # what deltalake reads


@pytest.mark.parametrize("value", [{"a": 1}, [1, 2]], ids=["object", "array"])
def test_an_object_property_is_named_by_what_would_write_it_and_unset_repairs_the_table(
    tmp_path: Path, value: Any
) -> None:
    with_configuration(tmp_path, {"custom.nested": value})
    log = DeltaLog.for_table(tmp_path)
    snap = log.snapshot()  # nothing needs the key: the version loads, appends go on
    assert snap.configuration["custom.nested"] == value
    log.start_transaction().commit([data_file(tmp_path, "b")])

    with pytest.raises(CorruptLogError) as cp:  # once an ArrowTypeError from pyarrow
        log.checkpoint()
    assert cp.value.path == COMMIT0
    assert COMMIT0 in str(cp.value) and "custom.nested" in str(cp.value) and "unset_properties" in str(cp.value)
    with pytest.raises(PropertyError) as other:  # writing the metaData again would carry the value forward
        log.set_properties({"custom.other": "x"})
    assert other.value.key == "custom.nested"
    assert not (tmp_path / "_delta_log" / "00000000000000000002.checkpoint.parquet").exists()

    log.unset_properties(["custom.nested"])
    assert log.checkpoint().version == 3
    assert "custom.nested" not in DeltaLog.for_table(tmp_path).snapshot().configuration
    assert_peers_agree(tmp_path)


def test_setting_the_corrupt_key_to_a_string_repairs_it_too(tmp_path: Path) -> None:
    with_configuration(tmp_path, {"custom.nested": {"a": 1}})
    log = DeltaLog.for_table(tmp_path)
    log.set_properties({"custom.nested": '{"a":1}'})
    assert log.checkpoint().version == 2
    assert DeltaLog.for_table(tmp_path).snapshot().configuration["custom.nested"] == '{"a":1}'
    assert_peers_agree(tmp_path)


# ---------------------------------------------------------------------------------------------- store errors
def io_error() -> ErrorFactory:
    """A plain ``OSError`` (EIO), as a network file system or a store wrapper may raise it."""

    def make(op: str, path: str) -> BaseException:
        return OSError(errno.EIO, f"injected I/O error during {op} {path}")

    return make


def client_bug() -> ErrorFactory:
    """Anything else a caller's store may raise (a client library's own exception)."""

    def make(op: str, path: str) -> BaseException:
        return RuntimeError(f"injected client failure during {op} {path}")

    return make


ERRORS: dict[str, Callable[[], ErrorFactory]] = {
    "timeout": timeout,
    "connection-reset": connection_reset,
    "io-error": io_error,
    "client-bug": client_bug,
}


def test_a_raw_timeout_from_the_store_is_a_retryable_storage_error_keeping_its_cause(tmp_path: Path) -> None:
    with_configuration(tmp_path, {})
    store = FaultyStore(LocalLogStore(str(tmp_path)), fail_before(None, "*", error=timeout()))
    with pytest.raises(StorageError) as info:
        DeltaLog(store, str(tmp_path)).snapshot()
    assert info.value.retryable is True
    assert isinstance(info.value.__cause__, TimeoutError)
    assert "_delta_log" in str(info.value)


def table(root: Path) -> None:
    """Versions 0..5, a checkpoint at 3 (so checkpoints are read) and two commits after it (a log compaction
    range), real data files for the data plane."""
    log = DeltaLog.for_table(root)
    log.create(SCHEMA, configuration={"delta.checkpointInterval": "3"})
    for name in ("a", "b", "c", "d", "e"):
        log.start_transaction().commit([data_file(root, name)])


def _read_commit(log: DeltaLog, root: Path) -> object:
    txn = log.start_transaction()
    txn.read()
    return txn.commit([data_file(root, "read-then-new")])


#: every public entry point that reads the table or commits to it, run on a fresh ``DeltaLog`` (no cache)
ENTRIES: dict[str, Callable[[DeltaLog, Path], object]] = {
    "snapshot": lambda log, root: log.snapshot().files(),
    "snapshot-version": lambda log, root: log.snapshot(version=1).files(),
    "snapshot-timestamp": lambda log, root: log.snapshot(timestamp=log.commit_timeline()[2][1]).version,
    "fresh_snapshot": lambda log, root: log.fresh_snapshot(2).files(),
    "files-with-stats": lambda log, root: log.snapshot().files(stats=True),
    "to_arrow": lambda log, root: log.snapshot().to_arrow(),
    "app_version": lambda log, root: log.snapshot().app_version("etl"),
    "history": lambda log, root: log.history(),
    "latest_version": lambda log, root: log.latest_version(),
    "earliest_version": lambda log, root: log.earliest_version(),
    "segment": lambda log, root: log.segment(),
    "read_hint": lambda log, root: log.read_hint(),
    "commit_timeline": lambda log, root: log.commit_timeline(),
    "append": lambda log, root: log.start_transaction().commit([data_file(root, "new")]),
    "read-and-commit": _read_commit,
    "exactly-once": lambda log, root: log.start_transaction(app_id="etl", app_version=1).commit([]),
    "set_properties": lambda log, root: log.set_properties({"delta.appendOnly": "false"}),
    "delete-rows": lambda log, root: log.delete({"id": 0}),
    "checkpoint": lambda log, root: log.checkpoint(),
    "cleanup": lambda log, root: log.cleanup(retention=0, dry_run=False),
    "vacuum": lambda log, root: log.vacuum(retention=0, dry_run=False, force=True),
    "compact_log": lambda log, root: log.compact_log(),
    "restore": lambda log, root: log.restore(version=1),
}


def outcome(entry: str, root: Path, rule: Any = None) -> tuple[BaseException | None, FaultyStore]:
    store = FaultyStore(LocalLogStore(str(root)), *([rule] if rule is not None else []))
    try:
        ENTRIES[entry](DeltaLog(store, str(root)), root)
    except Exception as exc:
        return exc, store
    return None, store


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_no_store_failure_reaches_a_caller_untyped(tmp_path: Path, entry: str) -> None:
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    table(pristine)
    work = tmp_path / "work"
    shutil.copytree(pristine, work)
    error, store = outcome(entry, work)
    assert error is None, error  # the entry point works on the healthy table
    calls = len(store.calls)
    assert calls > 0

    untyped: list[str] = []
    typed = 0
    for name, factory in ERRORS.items():
        for nth in range(1, calls + 1):
            shutil.rmtree(work)
            shutil.copytree(pristine, work)
            error, _ = outcome(entry, work, fail_before(None, "*", nth=nth, error=factory()))
            if error is None:
                continue  # the failed call was retried, or only a hint
            if isinstance(error, DeltaLogError):
                typed += 1
            else:
                untyped.append(f"{name}, call {nth}: {type(error).__name__}: {error}")
    assert untyped == []  # 0 untyped
    assert typed > 0  # the faults did reach the caller somewhere
