"""Non-regular files where the log expects a file, and store failures on the read path.

A FIFO as ``_last_checkpoint`` used to hang every reader forever (``open`` waits for a writer); a directory
raised a raw ``IsADirectoryError``; a symbolic link that loops raised a raw ``OSError`` from reads, listings
and VACUUM's walk. Each case here must end, within a deadline, in a correct read (the same version and
files as the intact table) or a typed :class:`~deltalog.errors.DeltaLogError` that names the file.

Tables are written by ``deltalake`` (deltalog only reads them here), with a checkpoint so the hint and the
checkpoint file both matter.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from deltalog import DeltaLog
from deltalog.errors import DeltaLogError, StorageError
from deltalog.storage.fsspec_store import FsspecLogStore
from deltalog.storage.local import LocalLogStore
from deltalog.storage.uri import store_for
from tests.storage.flaky import FlakyFs

DEADLINE_S = 30.0
LOG = "_delta_log"


def lake_table(root: Path) -> Path:
    """Versions 0-3 written by deltalake, checkpoint at 2, ``_last_checkpoint`` pointing at it."""
    write_deltalake(str(root), pa.table({"id": [1, 2]}))
    write_deltalake(str(root), pa.table({"id": [3]}), mode="append")
    write_deltalake(str(root), pa.table({"id": [4]}), mode="append")
    DeltaTable(str(root)).create_checkpoint()
    write_deltalake(str(root), pa.table({"id": [5]}), mode="append")
    assert (root / LOG / "_last_checkpoint").is_file()
    assert (root / LOG / f"{2:020d}.checkpoint.parquet").is_file()
    return root


@contextlib.contextmanager
def deadline(fifos: list[Path]) -> Iterator[Callable[[Callable[[], Any]], Any]]:
    """Runs a call in a thread and fails the test if it does not finish within the deadline.

    A reader stuck opening a FIFO is released afterwards (by opening the FIFO for writing once), so a
    regression fails this test instead of hanging the suite.
    """

    def run(call: Callable[[], Any]) -> Any:
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = call()
            except BaseException as exc:  # handed to the test below
                box["error"] = exc

        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        thread.join(DEADLINE_S)
        hung = thread.is_alive()
        if hung:
            for fifo in fifos:
                with contextlib.suppress(OSError):
                    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            thread.join(DEADLINE_S)
        assert not hung, f"the call did not finish within {DEADLINE_S} s (blocked on a FIFO?)"
        if "error" in box:
            raise box["error"]
        return box.get("value")

    yield run


def replace_with(path: Path, kind: str) -> None:
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
        (path / "inside").write_bytes(b"x")
    elif kind == "symlink-loop":
        os.symlink(path.name, path)
    else:
        raise AssertionError(kind)


def state(log: DeltaLog) -> tuple[int, frozenset[str]]:
    snap = log.snapshot()
    return snap.version, frozenset(a.path for a in snap.add_actions())


TARGETS = {
    "_last_checkpoint": "_last_checkpoint",
    "checkpoint": f"{2:020d}.checkpoint.parquet",
    "latest-commit": f"{3:020d}.json",
}


@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink-loop"])
@pytest.mark.parametrize("target", list(TARGETS))
def test_a_non_regular_file_in_the_log_is_a_correct_read_or_a_typed_error(
    tmp_path: Path, target: str, kind: str
) -> None:
    pristine = lake_table(tmp_path / "pristine")
    expected = state(DeltaLog.for_table(pristine))
    root = tmp_path / "t"
    shutil.copytree(pristine, root)
    bad = root / LOG / TARGETS[target]
    replace_with(bad, kind)
    with deadline([bad] if kind == "fifo" else []) as run:
        try:
            got = run(lambda: state(DeltaLog.for_table(root)))
        except DeltaLogError as exc:
            assert TARGETS[target] in str(exc), exc
            if isinstance(exc, StorageError):
                assert exc.retryable is False
            return
        except OSError as exc:  # the bug: a raw OSError (IsADirectoryError, ELOOP) from a read path
            raise AssertionError(f"raw {type(exc).__name__} from a read: {exc}") from exc
    if target == "latest-commit":
        # a directory is not listed as a file on any store: the table then ends at version 2, which is
        # exactly what it holds; a FIFO or a looping link is listed and must not be read as absent
        assert kind == "directory", f"{kind} as the latest commit read as {got}"
        assert got[0] == 2
        return
    assert got == expected


def test_the_local_store_refuses_non_regular_files_at_once(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    os.symlink("loop", tmp_path / "loop")
    os.symlink("/dev/zero", tmp_path / "device")  # reading this one would never end
    with deadline([tmp_path / "fifo"]) as run:
        for name, word in [("fifo", "FIFO"), ("dir", "directory"), ("loop", "loops"), ("device", "device")]:
            for call in (store.read, store.open):
                with pytest.raises(StorageError) as info:
                    run(lambda call=call, name=name: call(name))
                assert info.value.path == name and word in str(info.value) and info.value.retryable is False
        assert store.exists("dir") is False and store.exists("fifo") is True
        with pytest.raises(StorageError, match="loops"):
            store.exists("loop")
        listed = {f.name: f.size for f in store.list_from("")}
        assert listed == {"fifo": 0, "loop": 0, "device": 0}  # listed so that reading them says what they are
        assert {f.name for f in store.walk()} == {"fifo", "loop", "device"}


def test_raw_os_errors_become_storage_errors(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    too_long = "x" * (os.pathconf(str(tmp_path), "PC_NAME_MAX") + 10)
    for call in (store.read, store.open, store.exists, store.delete):
        with pytest.raises(StorageError) as info:
            call(too_long)
        assert info.value.path == too_long and isinstance(info.value.__cause__, OSError)
        assert info.value.__cause__.errno == errno.ENAMETOOLONG
    with pytest.raises(StorageError):
        store.put(too_long, b"x")


def test_vacuum_walks_past_a_looping_symbolic_link(tmp_path: Path) -> None:
    """VACUUM's walk used to stop with a raw ELOOP ``OSError``; a looping link is an unreferenced name."""
    root = tmp_path / "t"
    write_deltalake(str(root), pa.table({"id": [1, 2]}))
    os.symlink("loop", root / "loop")
    day_ago = time.time() - 86_400  # old on the store's clock, which vacuum judges by too
    os.utime(root / "loop", (day_ago, day_ago), follow_symlinks=False)
    live = {p.name for p in root.glob("*.parquet")}
    result = DeltaLog.for_table(root).vacuum(retention=0, force=True, dry_run=False)
    assert result.deleted == ("loop",)
    assert {p.name for p in root.glob("*.parquet")} == live
    assert DeltaTable(str(root)).to_pyarrow_table().num_rows == 2


def test_an_fsspec_local_file_system_refuses_a_fifo_too(tmp_path: Path) -> None:
    store = store_for(f"local://{tmp_path}")
    assert isinstance(store, FsspecLogStore)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    with deadline([tmp_path / "fifo"]) as run:
        for name in ("fifo", "dir"):
            for call in (store.read, store.open):
                with pytest.raises(StorageError) as info:
                    run(lambda call=call, name=name: call(name))
                assert info.value.path == name and info.value.retryable is False


def test_transient_read_failures_are_retried_within_a_budget() -> None:
    memory = fsspec.filesystem("memory")
    root = f"/flaky-{os.getpid()}-{threading.get_ident()}"
    memory.pipe_file(f"{root}/{LOG}/{0:020d}.json", _minimal_commit())
    flaky = FlakyFs(memory, "cat_file", 2, lambda: TimeoutError("read timed out"))
    store = FsspecLogStore(flaky, root, display_root=f"memory://{root}")
    assert DeltaLog(store, store.root).snapshot().version == 0  # two timeouts, then the reads succeeded
    assert flaky.left == 0 and flaky.calls >= 3
    stuck = FlakyFs(memory, "cat_file", 100, lambda: ConnectionResetError(errno.ECONNRESET, "reset by peer"))
    store = FsspecLogStore(stuck, root, display_root=f"memory://{root}")
    with pytest.raises(StorageError) as info:
        store.read(f"{LOG}/{0:020d}.json")
    assert info.value.retryable is True and stuck.calls == 3  # the budget, then a typed, retryable error
    assert f"memory://{root}/{LOG}/{0:020d}.json" in str(info.value)
    broken = FlakyFs(memory, "cat_file", 100, lambda: PermissionError(errno.EACCES, "permission denied"))
    store = FsspecLogStore(broken, root, display_root=f"memory://{root}")
    with pytest.raises(StorageError) as info:
        store.read(f"{LOG}/{0:020d}.json")
    assert info.value.retryable is False and broken.calls == 1  # never retried: it will not pass


def _minimal_commit() -> bytes:
    import orjson

    schema = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "t",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": schema,
                "partitionColumns": [],
                "configuration": {},
                "createdTime": 0,
            }
        },
    ]
    return b"".join(orjson.dumps(a) + b"\n" for a in actions)
