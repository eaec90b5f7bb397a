"""A checkout without the conformance corpus, as anyone who clones the repository has (issue 23 item 9).

The corpus sits beside the checkout only for the team and CI. Without it, the tests over it have no cases: they
are deselected (never reported as skipped, ``tests/conftest.py``), and the rest passes on its own; the check
that a corpus is complete runs only when one is given. ``DELTALOG_CORPUS=none`` makes a checkout with a corpus
beside it run as a fresh clone does. A run left with nothing to do still exits 5, which ``scripts/test`` fails.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.corpus import REPO

CHECKER_TESTS = "tests/unit/test_protocol_checker.py"  # the corpus check and hand-built logs side by side


def pytest_without_corpus(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DELTALOG_CORPUS": "none"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_without_a_corpus_its_cases_are_deselected_and_the_rest_passes() -> None:
    run = pytest_without_corpus(CHECKER_TESTS, "-rA")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = run.stdout.strip().splitlines()[-1]
    assert " passed" in summary and " deselected" in summary and "skipped" not in summary, summary
    assert "test_every_listed_corpus_table_exists" not in run.stdout  # the completeness check needs a corpus


def test_a_run_that_deselects_everything_exits_5() -> None:
    run = pytest_without_corpus(CHECKER_TESTS, "-m", "corpus")
    assert run.returncode == 5, run.stdout[-3000:]
    script = (REPO / "scripts" / "test").read_text()
    assert '[ "$status" -eq 5 ]' in script  # and scripts/test fails such a run rather than pass it
