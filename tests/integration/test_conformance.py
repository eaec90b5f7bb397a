"""Every corpus table through the conformance runner, one test per table so failures name the table."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.runner import TableChecker
from tests.corpus import corpus_dir, corpus_entries

ENTRIES = corpus_entries()


@pytest.mark.corpus
@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_table_matches_reference(entry: dict[str, Any]) -> None:
    root = corpus_dir()
    assert root is not None
    result = TableChecker(str(root), entry).run()
    assert result.checks > 0
    assert result.failures == []
