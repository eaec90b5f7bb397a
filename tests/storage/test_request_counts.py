"""Exact request counts of the store layer, seen by the counting proxy (:mod:`benchmarks.proxy`) in front of the
real moto S3 server and Azurite, and the same requests as recorded on the ``deltalog.storage.requests`` logger.

Counts, never times: a read is one GET whether the file exists or not (s3fs's ``cat_file`` sent a HEAD first,
and a HEAD and a LIST for a missing file), ``read_many`` of N files is N GETs, ``delete_many`` of 1,001 keys is
2 ``DeleteObjects`` on S3 (1,000 keys each at most) and 4 blob batches on Azure (256 each at most), and Azure's
bounded listing of an old range is one LIST.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from benchmarks.proxy import LatencyProxy, Request
from deltalog.errors import NotFoundError
from deltalog.storage import bulk
from deltalog.storage.base import LogStore
from deltalog.storage.requests import REQUESTS
from deltalog.storage.uri import store_for
from tests.storage.servers import BUCKET, CONTAINER, FSSPEC, Server, azure_options, cloud_of, s3_options, unique
from tests.tiers import backends

LOG = "_delta_log"


def commit(v: int) -> str:
    return f"{LOG}/{v:020d}.json"


class Recorded(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    handler = Recorded()
    level = REQUESTS.level
    REQUESTS.addHandler(handler)
    REQUESTS.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        REQUESTS.removeHandler(handler)
        REQUESTS.setLevel(level)


def fill(store: LogStore, count: int, name: Callable[[int], str] = commit) -> list[str]:
    paths = [name(i) for i in range(count)]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda p: store.put_if_absent(p, b"{}\n"), paths))
    return paths


@dataclass
class Proxied:
    """A fresh location on one backend, reachable straight (to set up) or through the counting proxy."""

    kind: str
    proxy: LatencyProxy
    make: Callable[[str], LogStore]

    def ready(self, count: int, name: Callable[[int], str] = commit) -> tuple[list[str], LogStore]:
        """``count`` files written straight to the server; a store through the proxy, whose record is empty."""
        paths = fill(self.make("server"), count, name)
        store = self.make("proxy")
        self.proxy.clear()
        return paths, store


@pytest.fixture(params=backends("s3", "s3-fsspec", "azure", "azure-fsspec"))
def proxied(request: pytest.FixtureRequest) -> Iterator[Proxied]:
    """Each store kind through its default client (obstore when installed) and through fsspec's."""
    kind = cloud_of(str(request.param))
    pinned = FSSPEC if str(request.param).endswith("-fsspec") else {}
    server: Server = request.getfixturevalue("moto_server" if kind == "s3" else "azurite_server")
    with LatencyProxy(server.endpoint, latency_ms=0) as proxy:
        location = f"s3://{BUCKET}/{unique()}" if kind == "s3" else f"abfs://{CONTAINER}/{unique()}"
        options: Callable[[str], dict[str, Any]] = s3_options if kind == "s3" else azure_options

        def make(via: str) -> LogStore:
            return store_for(location, {**options(proxy.endpoint if via == "proxy" else server.endpoint), **pinned})

        yield Proxied(kind, proxy, make)


def seen(proxy: LatencyProxy) -> list[Request]:
    return proxy.records()


def classes(requests: list[Request]) -> list[tuple[str, int]]:
    """(method, status) of each request; Azure answers a read's ranged GET with 206, S3 its plain GET with 200."""
    return sorted((r.method, 200 if r.status == 206 else r.status) for r in requests)


def test_a_read_is_one_request_whether_or_not_the_file_exists(proxied: Proxied, recorded: Recorded) -> None:
    _paths, store = proxied.ready(2)
    proxy = proxied.proxy
    assert store.read(commit(1)) == b"{}\n"
    assert classes(seen(proxy)) == [("GET", 200)]
    proxy.clear()
    with pytest.raises(NotFoundError):
        store.read(commit(7))
    assert classes(seen(proxy)) == [("GET", 404)]


def test_read_many_of_n_files_is_n_requests(proxied: Proxied, recorded: Recorded) -> None:
    paths, store = proxied.ready(150)
    proxy = proxied.proxy
    assert bulk.read_many(store, paths) == [b"{}\n"] * 150
    requests = seen(proxy)
    assert classes(requests) == [("GET", 200)] * 150
    assert sorted(r.target.split("?")[0].rsplit("/", 1)[-1] for r in requests) == sorted(
        p.rsplit("/", 1)[-1] for p in paths
    )


def test_delete_many_of_1001_keys_is_2_requests_on_s3_and_4_on_azure(proxied: Proxied, recorded: Recorded) -> None:
    # One key past a full S3 request fills both stores' batches to their limits: more keys prove nothing more, and
    # each Azurite delete scans every blob it holds (2,500 keys took 24-55 s per Azure client, 1,001 take 5-6 s).
    paths, store = proxied.ready(1001, lambda i: f"p={i % 7}/part-{i:05d}.parquet")
    proxy = proxied.proxy
    bulk.delete_many(store, paths)
    requests = seen(proxy)
    assert [r.method for r in requests] == ["POST"] * {"s3": 2, "azure": 4}[proxied.kind]
    assert all(r.status in (200, 202) for r in requests)
    assert all(("?delete" in r.target) if proxied.kind == "s3" else ("comp=batch" in r.target) for r in requests)
    assert list(proxied.make("server").walk()) == []


def test_azure_lists_an_old_range_in_one_request_and_s3_stops_at_its_end(proxied: Proxied, recorded: Recorded) -> None:
    _paths, store = proxied.ready(1200)  # more than one S3 page (1,000 keys)
    proxy = proxied.proxy
    got = store.list_range(f"{LOG}/{5:020d}.", f"{11:020d}.")
    assert [f.name for f in got] == [f"{v:020d}.json" for v in range(5, 11)]
    assert [r.method for r in seen(proxy)] == ["GET"]  # one LIST (a GET with a list query), one page


def test_the_request_log_matches_what_the_server_saw(proxied: Proxied, recorded: Recorded) -> None:
    """One DEBUG record per request, with the method, path and status the proxy saw (obstore has no request hook:
    its store records each call it makes with the status inferred from the outcome, so any success is 200)."""
    paths, store = proxied.ready(30)
    proxy = proxied.proxy
    recorded.records.clear()
    store.read(commit(0))
    with pytest.raises(NotFoundError):
        store.read(commit(99))
    bulk.read_many(store, paths[:20])
    list(store.list_from(f"{LOG}/"))
    store.put(f"{LOG}/_last_checkpoint", b"{}")
    store.put_if_absent(commit(30), b"{}\n")
    assert store.exists(commit(30))
    bulk.delete_many(store, paths[20:])
    store.delete(commit(30))
    inferred = getattr(store, "backend", None) == "obstore"

    def status(code: int) -> int:
        return 200 if inferred and 200 <= code < 300 else code

    logged = sorted(
        (r.request_method, r.request_path.split("?")[0], status(r.request_status))  # type: ignore[attr-defined]
        for r in recorded.records
    )
    sent = sorted((r.method, r.target.split("?")[0], status(r.status)) for r in seen(proxy))
    assert logged == sent, sorted(set(logged) ^ set(sent))
    assert len(sent) == 1 + 1 + 20 + 1 + 1 + 1 + 1 + 1 + 1
    assert all(r.levelno == logging.DEBUG and r.name == "deltalog.storage.requests" for r in recorded.records)
