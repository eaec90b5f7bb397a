"""Collection rules for the whole suite: every collected test gets its tier markers (:mod:`tests.tiers`), and no
test is reported as skipped.

Tests over the conformance corpus carry the ``corpus`` mark and take their tables from it (:mod:`tests.corpus`).
Without a corpus, which is what anyone who clones the repository has, they have no cases: they are deselected,
not skipped, so the rest of the suite runs and passes or fails on its own (``scripts/test`` says in one line
what did not run; pytest's summary counts them as deselected). Any other empty parameter set would be a
skipped test in disguise and stops the run.
"""

from __future__ import annotations

import pytest

from tests import tiers
from tests.corpus import corpus_dir

_EMPTY = "got empty parameter set"


def _empty_parameter_set(item: pytest.Item) -> bool:
    return any(m.name == "skip" and str(m.kwargs.get("reason", "")).startswith(_EMPTY) for m in item.iter_markers())


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by the tier markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tiers.mark(items)
    without_corpus = corpus_dir() is None
    keep: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        if without_corpus and item.get_closest_marker("corpus") is not None:
            deselected.append(item)
        elif _empty_parameter_set(item):
            raise pytest.UsageError(
                f"{item.nodeid} has no cases: a test over the corpus needs @pytest.mark.corpus (deselected without "
                "a corpus), any other test needs parameters"
            )
        else:
            keep.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = keep
