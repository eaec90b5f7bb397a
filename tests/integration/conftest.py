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
