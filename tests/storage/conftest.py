"""Fixtures for the storage tests: the servers (see :mod:`tests.storage.servers`) and a store factory per backend.

``backend`` is parametrized over ``local``, ``s3`` and ``azure`` (each through the default client: obstore when
it is installed), ``s3-fsspec`` and ``azure-fsspec`` (the same servers through s3fs / adlfs, chosen with the
``deltalog_backend`` option), and ``gcs``; a server starts only when a test first needs it, once per session.
Every store a test makes lives under a fresh prefix, so tests never see each other's files.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deltalog.storage.base import LogStore
from deltalog.storage.local import LocalLogStore
from deltalog.storage.uri import store_for
from tests.storage.servers import (
    BUCKET,
    CONTAINER,
    FSSPEC,
    Server,
    azure_options,
    azurite_server,
    cloud_of,
    gcs_options,
    gcs_server,
    moto_auth_server,
    moto_server,
    s3_options,
    unique,
)
from tests.tiers import backends

__all__ = ["azurite_server", "gcs_server", "moto_auth_server", "moto_server"]

BACKENDS = ["local", "s3", "s3-fsspec", "azure", "azure-fsspec", "gcs"]


#: (location, storage_options) for a fresh table root on a backend
Location = tuple[str, dict[str, Any] | None]


@pytest.fixture(params=backends(*BACKENDS))
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def new_location(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Location]:
    """Makes a fresh (URI, storage_options) on the test's backend."""
    pinned = FSSPEC if backend.endswith("-fsspec") else {}
    if cloud_of(backend) == "s3":
        server: Server = request.getfixturevalue("moto_server")
        return lambda: (f"s3://{BUCKET}/{unique()}", {**s3_options(server.endpoint), **pinned})
    if cloud_of(backend) == "azure":
        server = request.getfixturevalue("azurite_server")
        return lambda: (f"abfs://{CONTAINER}/{unique()}", {**azure_options(server.endpoint), **pinned})
    if backend == "gcs":
        server = request.getfixturevalue("gcs_server")
        return lambda: (f"gs://{BUCKET}/{unique()}", gcs_options(server.endpoint))
    return lambda: (str(tmp_path / unique()), None)


@pytest.fixture
def new_store(new_location: Callable[[], Location]) -> Callable[[], LogStore]:
    def make() -> LogStore:
        location, options = new_location()
        store = store_for(location, options)
        assert isinstance(store, LocalLogStore) or store.root == location
        return store

    return make
