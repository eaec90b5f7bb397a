"""Hooks for the whole suite: every collected test gets its tier markers (:mod:`tests.tiers`), and each test
module starts with an empty Azurite (:func:`tests.storage.servers.empty_azurite`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import tiers
from tests.storage.servers import empty_azurite


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by these markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tiers.mark(items)


@pytest.fixture(scope="module", autouse=True)
def _azurite_empty_after_each_module() -> Iterator[None]:
    yield
    empty_azurite()
