"""Hooks for the whole suite: every collected test gets its tier markers (:mod:`tests.tiers`)."""

from __future__ import annotations

import pytest

from tests import tiers


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by these markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tiers.mark(items)
