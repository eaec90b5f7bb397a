"""The optional store abilities are declared in the ``LogStore`` protocol with defaults on the required calls:
a store that subclasses it and implements only those calls can do everything the engine asks, and a wrapper
answers bulk reads through its own ``read``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import pytest

from deltalog.data.output import Output
from deltalog.errors import NotFoundError, PathOutsideRootError
from deltalog.storage import bulk
from deltalog.storage.base import Capabilities, FileInfo, LogStore, split_dir
from deltalog.storage.local import LocalLogStore
from deltalog.storage.prefetched import PrefetchedStore
from deltalog.storage.retry import missing

LOG = "_delta_log"


class Plain(LogStore):
    """Only the required calls, in memory, each one recorded."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.calls: list[tuple[str, str]] = []

    @property
    def root(self) -> str:
        return "memory://plain"

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(atomic_put_if_absent=True)

    def read(self, path: str) -> bytes:
        self.calls.append(("read", path))
        if path not in self.files:
            raise missing(path)
        return self.files[path]

    def open(self, path: str) -> BinaryIO:
        raise NotImplementedError

    def list_from(self, path: str) -> Iterator[FileInfo]:
        self.calls.append(("list", path))
        directory, start = split_dir(path)
        names = sorted(p.rpartition("/")[2] for p in self.files if p.rpartition("/")[0] == directory)
        return iter([FileInfo(n, len(self.files[f"{directory}/{n}"]), 0) for n in names if n >= start])

    def put_if_absent(self, path: str, data: bytes) -> None:
        self.files.setdefault(path, data)

    def put(self, path: str, data: bytes) -> None:
        self.calls.append(("put", path))
        self.files[path] = data

    def delete(self, path: str) -> None:
        self.calls.append(("delete", path))
        self.files.pop(path, None)

    def exists(self, path: str) -> bool:
        return path in self.files

    def walk(self, path: str = "", skip: Callable[[str], bool] | None = None) -> Iterator[FileInfo]:
        return iter([FileInfo(p, len(d), 0) for p, d in sorted(self.files.items()) if p.startswith(path)])


def commit(v: int) -> str:
    return f"{LOG}/{v:020d}.json"


def test_a_store_with_only_the_required_calls_has_every_ability() -> None:
    store = Plain()
    for v in range(6):
        store.put_if_absent(commit(v), f"{v}\n".encode())
    assert isinstance(store, LogStore)
    assert store.read_many([commit(4), commit(1), commit(4)]) == [b"4\n", b"1\n", b"4\n"]
    with pytest.raises(NotFoundError) as gone:
        store.read_many([commit(0), commit(9), commit(1)])
    assert gone.value.path == commit(9)
    assert [f.name for f in store.list_range(f"{LOG}/{2:020d}", f"{4:020d}")] == [commit(2)[11:], commit(3)[11:]]
    assert store.open_write(f"{LOG}/x") is None
    store.calls.clear()
    store.delete_many([commit(0), commit(1), "never/was.json"])
    assert store.calls == [("delete", commit(0)), ("delete", commit(1)), ("delete", "never/was.json")]
    with pytest.raises(PathOutsideRootError):
        store.delete_many([commit(2), "../escape.json"])  # refused before the first delete
    assert commit(2) in store.files


def test_a_store_that_does_not_stream_gets_a_new_file_through_put() -> None:
    store = Plain()
    out = Output(store, "part-0.parquet")
    out.stream.write(b"PAR1 bytes")
    assert out.close() == 10
    assert store.files["part-0.parquet"] == b"PAR1 bytes" and store.calls == [("put", "part-0.parquet")]


def test_the_bulk_helpers_send_nothing_for_nothing() -> None:
    store = Plain()
    assert bulk.read_many(store, []) == []
    bulk.delete_many(store, [])
    assert store.calls == []


def test_a_prefetched_view_answers_bulk_reads_from_its_bytes_and_streams_through_its_store(tmp_path: Path) -> None:
    inner = Plain()
    inner.put_if_absent(commit(1), b"stored\n")
    view = PrefetchedStore(inner, {commit(0): b"prefetched\n"})
    assert view.read_many([commit(0), commit(1)]) == [b"prefetched\n", b"stored\n"]
    assert inner.calls == [("read", commit(1))]  # the prefetched file cost no request
    local = LocalLogStore(str(tmp_path))
    handle = PrefetchedStore(local, {}).open_write("part-1.parquet")
    assert handle is not None
    with handle:
        handle.write(b"streamed")
    assert (tmp_path / "part-1.parquet").read_bytes() == b"streamed"
