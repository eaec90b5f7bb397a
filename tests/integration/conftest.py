"""Fixtures shared by the integration tests: one SparkSession for the whole run (a session costs 10-17 s)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.tiers import refuse_in_fast_tier


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """local[2], no UI, bound to 127.0.0.1; ``spark.driver.maxResultSize`` is small on purpose: a job that
    collected a big table's file list on the driver would fail instead of passing slowly."""
    refuse_in_fast_tier("Spark")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("deltalog-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.maxResultSize", "1m")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


#: session settings a test may change for itself; restored after each test that used the SparkSession, so one
#: test's time zone or ANSI mode never leaks into the next test on the same worker
_RESTORED_CONF = ("spark.sql.session.timeZone", "spark.sql.ansi.enabled")


@pytest.fixture(autouse=True)
def _spark_conf_restored(request: pytest.FixtureRequest) -> Iterator[None]:
    if "spark" not in request.fixturenames:
        yield
        return
    session = request.getfixturevalue("spark")
    before = {key: session.conf.get(key, None) for key in _RESTORED_CONF}
    yield
    for key, value in before.items():
        if value is None:
            session.conf.unset(key)
        else:
            session.conf.set(key, value)
