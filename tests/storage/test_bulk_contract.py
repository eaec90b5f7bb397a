"""The bulk part of the store contract, on the local disk, S3 (moto), Azure (Azurite) and the optional backends:
``read_many`` answers in order and fails as a loop of ``read`` would, ``delete_many`` deletes everything it is
given (a missing file counts as deleted), both refuse a name outside the root before any request, and the
store's capabilities say what it does.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from deltalog.errors import NotFoundError, PathOutsideRootError
from deltalog.storage import bulk
from deltalog.storage.base import LogStore
from tests.storage.servers import cloud_of

LOG = "_delta_log"


def commit(v: int) -> str:
    return f"{LOG}/{v:020d}.json"


def fill(store: LogStore, count: int, start: int = 0) -> dict[str, bytes]:
    files = {commit(v): f'{{"commitInfo":{{"v":{v}}}}}\n'.encode() * (v % 7 + 1) for v in range(start, start + count)}
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda item: store.put_if_absent(*item), files.items()))
    return files


def test_read_many_answers_in_order_past_its_concurrency(new_store: Callable[[], LogStore]) -> None:
    store = new_store()
    files = fill(store, 150)  # more than the 64 reads an object store keeps in flight
    order = sorted(files, reverse=True)
    assert bulk.read_many(store, order) == [files[p] for p in order]
    assert bulk.read_many(store, []) == []
    twice = [commit(3), commit(3), commit(1)]
    assert bulk.read_many(store, twice) == [files[commit(3)], files[commit(3)], files[commit(1)]]


def test_read_many_of_a_missing_file_is_not_found_naming_it(new_store: Callable[[], LogStore]) -> None:
    store = new_store()
    fill(store, 5)
    with pytest.raises(NotFoundError) as info:
        bulk.read_many(store, [commit(0), commit(9), commit(1), commit(12)])
    assert info.value.path == commit(9) and commit(9) in str(info.value)  # the first missing one, in order


def test_delete_many_deletes_everything_and_a_missing_file_counts_as_deleted(
    new_store: Callable[[], LogStore],
) -> None:
    store = new_store()
    files = fill(store, 300)  # more than one Azure batch (256)
    store.put_if_absent("p=1/part-0.parquet", b"data")
    bulk.delete_many(store, [*files, "never/was.json", "p=1/part-0.parquet"])
    assert list(store.list_from(f"{LOG}/")) == []
    assert list(store.walk()) == []
    bulk.delete_many(store, list(files))  # all gone already: fine
    bulk.delete_many(store, [])
    store.put_if_absent(commit(0), b"again")
    bulk.delete_many(store, [commit(0)])  # a batch of one
    assert not store.exists(commit(0))


def test_bulk_calls_refuse_a_path_outside_the_root_before_touching_anything(new_store: Callable[[], LogStore]) -> None:
    store = new_store()
    files = fill(store, 3)
    for call in (bulk.read_many, bulk.delete_many):
        with pytest.raises(PathOutsideRootError):
            call(store, [commit(0), "../other/secret.parquet", commit(1)])
    assert {p: store.read(p) for p in files} == files  # nothing was deleted


def test_capabilities_say_what_the_bulk_calls_do(new_store: Callable[[], LogStore], backend: str) -> None:
    caps = new_store().capabilities
    if backend == "local":
        assert (caps.read_concurrency, caps.delete_batch) == (1, 1)  # the page cache beats a thread pool
    else:
        assert caps.read_concurrency >= 64
        assert caps.delete_batch == {"s3": 1000, "azure": 256, "gcs": 1}[cloud_of(backend)]


def test_list_range_on_a_long_log_is_exact(new_store: Callable[[], LogStore]) -> None:
    """Ranges across decimal blocks (Azure lists the smallest block holding both ends)."""
    store = new_store()
    fill(store, 130)
    store.put_if_absent(f"{LOG}/{100:020d}.checkpoint.parquet", b"cp")
    names = [f.name for f in store.list_from(f"{LOG}/")]
    for lo, hi in [(0, 1), (5, 11), (9, 101), (95, 130), (99, 100), (120, 200), (0, 130)]:
        start, stop = f"{lo:020d}.", f"{hi:020d}."
        got = [f.name for f in store.list_range(f"{LOG}/{start}", stop)]
        assert got == [n for n in names if start <= n < stop], (lo, hi)
