"""A SparkSession for deltalog's jobs and CLI: local master by default, no UI, loopback for local runs."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def get_session(
    master: str = "local[2]", app_name: str = "deltalog", conf: Mapping[str, str] | None = None
) -> SparkSession:
    """``SparkSession.builder`` with deltalog's defaults; an active session with the same master is reused."""
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


__all__ = ["get_session"]
