"""The local-disk store: atomic put-if-absent under races, sorted listings, plain reads and writes."""

from __future__ import annotations

import multiprocessing
import os
import threading
from pathlib import Path

import pytest

from deltalog.errors import FileAlreadyExistsError, NotFoundError, StorageError
from deltalog.storage.base import Capabilities, FileInfo, LogStore
from deltalog.storage.local import LocalLogStore
from deltalog.storage.uri import store_for
from tests.unit import logwriter as W

NAME = W.RACE_NAME


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_is_a_log_store(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    assert isinstance(store, LogStore)
    assert store.capabilities == Capabilities(atomic_put_if_absent=True, local=True)
    assert store.root == str(tmp_path)


def test_store_for_plain_path_and_file_url(tmp_path: Path) -> None:
    assert isinstance(store_for(tmp_path), LocalLogStore)
    s = store_for(f"file://{tmp_path}")
    assert isinstance(s, LocalLogStore) and s.root == str(tmp_path)


def test_store_for_file_url_is_decoded(tmp_path: Path) -> None:
    target = tmp_path / "a b%c"
    s = store_for("file://" + str(target).replace("%", "%25").replace(" ", "%20"))
    assert isinstance(s, LocalLogStore) and s.root == str(target)


def test_put_if_absent_creates(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    store.put_if_absent(NAME, b"first\n")
    assert (tmp_path / NAME).read_bytes() == b"first\n"
    assert store.read(NAME) == b"first\n"
    assert store.exists(NAME)
    assert files_under(tmp_path) == [NAME]


def test_second_put_if_absent_fails_and_keeps_original(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    store.put_if_absent(NAME, b"first\n")
    with pytest.raises(FileAlreadyExistsError) as exc:
        store.put_if_absent(NAME, b"second\n")
    assert isinstance(exc.value, StorageError)
    assert exc.value.retryable is False
    assert exc.value.path == NAME
    assert NAME in str(exc.value)
    assert store.read(NAME) == b"first\n"
    assert files_under(tmp_path) == [NAME]


def test_put_if_absent_empty_and_large(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    store.put_if_absent("a/empty", b"")
    big = os.urandom(3 * 1024 * 1024 + 17)
    store.put_if_absent("a/big", big)
    assert store.read("a/empty") == b""
    assert store.read("a/big") == big


def test_thread_race_has_one_winner(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    n = 16
    barrier = threading.Barrier(n)
    results: dict[int, str] = {}

    def attempt(i: int) -> None:
        barrier.wait()
        try:
            store.put_if_absent(NAME, f"writer {i}\n".encode() * 1000)
            results[i] = "won"
        except FileAlreadyExistsError:
            results[i] = "lost"
        except Exception as exc:  # pragma: no cover - reported by the assertion below
            results[i] = f"error: {exc!r}"

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == n
    winners = [i for i, r in results.items() if r == "won"]
    assert len(winners) == 1, results
    assert sorted(r for r in results.values() if r != "won") == ["lost"] * (n - 1)
    assert (tmp_path / NAME).read_bytes() == f"writer {winners[0]}\n".encode() * 1000
    assert files_under(tmp_path) == [NAME], "temp files left behind"


def test_process_race_has_one_winner(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    n = 8
    barrier = ctx.Barrier(n)
    out = ctx.Queue()
    procs = [ctx.Process(target=W.race_put_if_absent, args=(str(tmp_path), i, barrier, out)) for i in range(n)]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=180) for _ in range(n))
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    out.close()
    out.join_thread()
    winners = [i for i, r in results.items() if r == "won"]
    assert len(winners) == 1, results
    assert sorted(r for r in results.values() if r != "won") == ["lost"] * (n - 1)
    assert (tmp_path / NAME).read_bytes() == W.race_payload(winners[0])
    assert files_under(tmp_path) == [NAME], "temp files left behind"


def test_list_from_sorted_with_start_and_no_directories(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    log = tmp_path / "_delta_log"
    log.mkdir()
    names = [
        "00000000000000000010.json",
        "00000000000000000002.json",
        "00000000000000000002.checkpoint.parquet",
        "00000000000000000001.json",
        "00000000000000000003.crc",
        "_last_checkpoint",
        ".00000000000000000004.json.crc",
    ]
    for i, name in enumerate(names):
        (log / name).write_bytes(b"x" * i)
    (log / "00000000000000000005.json.dir").mkdir()  # a directory whose name sorts like a version
    (log / "_sidecars").mkdir()
    (log / "_sidecars" / "s.parquet").write_bytes(b"s")

    listed = list(store.list_from("_delta_log/"))
    assert [f.name for f in listed] == sorted(names, key=lambda s: s.encode())
    assert all(isinstance(f, FileInfo) for f in listed)
    sizes = {f.name: f.size for f in listed}
    assert sizes["00000000000000000002.json"] == 1 and sizes["_last_checkpoint"] == 5

    from_two = [f.name for f in store.list_from("_delta_log/00000000000000000002.")]
    assert from_two == [
        "00000000000000000002.checkpoint.parquet",
        "00000000000000000002.json",
        "00000000000000000003.crc",
        "00000000000000000010.json",
        "_last_checkpoint",
    ]


def test_list_from_reports_mtime_ms(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    (tmp_path / "_delta_log").mkdir()
    f = tmp_path / "_delta_log" / "00000000000000000000.json"
    f.write_bytes(b"{}")
    ms = 1_700_000_000_123
    os.utime(f, ns=(ms * 1_000_000, ms * 1_000_000))
    (info,) = list(store.list_from("_delta_log/"))
    assert (info.name, info.size, info.mtime) == ("00000000000000000000.json", 2, ms)


def test_list_from_missing_directory_is_empty(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path / "nothing"))
    assert list(store.list_from("_delta_log/")) == []


def test_put_overwrites(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    store.put("_delta_log/_last_checkpoint", b'{"version":1}')
    store.put("_delta_log/_last_checkpoint", b'{"version":2}')
    assert store.read("_delta_log/_last_checkpoint") == b'{"version":2}'
    assert files_under(tmp_path) == ["_delta_log/_last_checkpoint"]


def test_delete(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    store.put_if_absent(NAME, b"x")
    store.delete(NAME)
    assert not store.exists(NAME)
    store.delete(NAME)  # missing is fine
    store.delete("_delta_log/never-existed")
    assert files_under(tmp_path) == []


def test_read_missing_raises_file_not_found(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    with pytest.raises(NotFoundError, match=f"{tmp_path}/{NAME}: no such file"):
        store.read(NAME)
    with pytest.raises(NotFoundError, match=f"{tmp_path}/{NAME}: no such file"):
        store.open(NAME)
    assert not store.exists(NAME)


def test_open_is_seekable(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    store.put_if_absent("f.bin", b"0123456789")
    with store.open("f.bin") as f:
        f.seek(-3, os.SEEK_END)
        assert f.read() == b"789"
