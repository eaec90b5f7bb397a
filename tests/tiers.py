"""The suite's tiers: what marks a test ``spark``, ``cloud`` or ``slow``, and the guard of the fast tier.

A test's tier follows from what it uses, so nobody has to remember to mark it:

- ``spark``: it uses the ``spark`` fixture (a JVM: 10-17 s to start, ~0.6 GB, two busy cores while it runs).
- ``cloud``: it uses a server fixture (moto, Azurite, fake-gcs-server), by name or through a parameter that picks
  one (:func:`backends`: a test run on ``local`` and ``s3`` is ``cloud`` only in its ``s3`` case). A test whose
  server is started by something else (a benchmark harness in a subprocess) carries ``@pytest.mark.cloud``.
- ``slow``: it took longer than :data:`SLOW_S` of CPU in the measured run recorded in :data:`SLOW` (its own CPU
  and its child processes'; wall time on this shared machine says more about the neighbours than the test).

``scripts/test --fast`` runs ``-m "not spark and not cloud and not slow"`` with :data:`TIER_ENV` set to
``fast``; then starting Spark or an emulator fails the test that did it (:func:`refuse_in_fast_tier`), so a test
that starts one some other way (a subprocess, a harness) shows at once instead of slowing the inner loop.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

TIER_ENV = "DELTALOG_TEST_TIER"

SPARK_FIXTURES = frozenset({"spark"})
CLOUD_FIXTURES = frozenset({"moto_server", "moto_auth_server", "azurite_server", "gcs_server"})

#: a backend parameter value that needs no server
LOCAL_BACKENDS = frozenset({"local"})

#: CPU seconds (the test and its children, one process) above which a test is ``slow``. Measured outside the
#: spark and cloud tiers, the tail breaks here: five tests took 11-53 s each (104 s together, 30% of those tiers'
#: CPU), the next ones 6.4 s and less; the rest of the fast tier took ~260 s of CPU under load, about two minutes
#: on two xdist workers of a quiet machine. Later measured (issue 24's last check): the fast tier took 484 s of CPU,
#: 200 s of it loading duckdb's delta extension into a fresh database for every peer check; with one database per
#: process (tests/peers.py) it takes 278 s, and the change feed's every-range case on kernel-rs's table (17 s) is slow
SLOW_S = 10.0

#: tests measured above SLOW_S outside the spark and cloud tiers, as ``<top directory>/<file name>::<function>``
#: (every case of it) or with ``[<parameter id>]`` (that case), and the CPU seconds measured (all its cases). The
#: folders between ``tests/unit`` and the file are left out (:func:`slow_key`), so moving a test file inside its
#: tier directory keeps its mark; a name that matches no test function of a collected file fails the run.
SLOW: dict[str, float] = {
    "integration/test_crash_and_clock.py::test_acknowledged_commits_survive_kills_skewed_clocks_and_cleanup": 53.1,
    "integration/test_conformance_writes.py::test_no_corpus_table_fails_the_write_checks": 13.6,
    "integration/test_log_compaction.py::"
    "test_generated_logs_read_the_same_at_every_version_with_compaction_files": 13.3,
    "integration/test_bench_data.py::test_the_data_plane_benchmark_runs_and_checks_itself": 12.8,
    "integration/test_concurrent_writers.py::test_sixteen_processes_blind_append_four_hundred_commits": 11.2,
    "integration/test_changes_corpus.py::test_changes_over_every_range_equal_the_reference"
    "[delta-kernel-rs/cdf-table-with-cdc-and-dvs]": 17.3,
}


def backends(*names: str) -> list[Any]:
    """``names`` as parameters of a backend fixture or test, the cloud ones marked ``cloud``."""
    return [name if name in LOCAL_BACKENDS else pytest.param(name, marks=pytest.mark.cloud) for name in names]


def is_fast_tier() -> bool:
    return os.environ.get(TIER_ENV) == "fast"


def refuse_in_fast_tier(what: str) -> None:
    """Fail the test that starts ``what`` (Spark, an emulator) in the fast tier: it is marked wrong."""
    if is_fast_tier():
        pytest.fail(
            f"{what} started in the fast tier ({TIER_ENV}=fast): the test that needs it must be marked spark or "
            "cloud (tests/tiers.py: use the fixture, or tiers.backends for a parameter that picks a server)",
            pytrace=False,
        )


TESTS = Path(__file__).resolve().parent


def slow_key(item: pytest.Item) -> str:
    """``<top directory>/<file name>::<function>`` of a test item, e.g. ``unit/test_codec.py::test_x``: the
    directory under ``tests/`` and the file's name, not the folders between (parameters dropped)."""
    name = getattr(item, "originalname", None) or item.name.split("[", 1)[0]
    top = item.path.resolve().relative_to(TESTS).parts[0]
    return f"{top}/{item.path.name}::{name}"


def mark(items: list[pytest.Item]) -> None:
    """Add the tier markers to collected ``items``; a SLOW name whose file is collected but has no such test
    function is an error (renamed tests do not drop out of the tier silently)."""
    modules: dict[str, Any] = {}
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & SPARK_FIXTURES:
            item.add_marker(pytest.mark.spark)
        if used & CLOUD_FIXTURES:
            item.add_marker(pytest.mark.cloud)
        key = slow_key(item)
        callspec = getattr(item, "callspec", None)
        if key in SLOW or (callspec is not None and f"{key}[{callspec.id}]" in SLOW):
            item.add_marker(pytest.mark.slow)
        modules.setdefault(slow_key(item).split("::", 1)[0], getattr(item, "module", None))
    stale = []
    for key in SLOW:
        file, function = key.split("[", 1)[0].split("::", 1)
        if file in modules and not hasattr(modules[file], function):
            stale.append(key)
    if stale:
        raise pytest.UsageError(f"tests/tiers.py SLOW names tests that do not exist (renamed?): {sorted(stale)}")


__all__ = [
    "CLOUD_FIXTURES",
    "SLOW",
    "SLOW_S",
    "SPARK_FIXTURES",
    "TIER_ENV",
    "backends",
    "is_fast_tier",
    "mark",
    "refuse_in_fast_tier",
]
