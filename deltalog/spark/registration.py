"""Making ``format("deltalog")`` (and, on request, ``format("delta")``) known to a SparkSession.

A Python data source is registered per session (``spark.dataSource.register``); registering again replaces the
earlier registration, so :func:`register` can be called by every entry point. Its reader implements
``pushFilters``, which Spark refuses to call unless ``spark.sql.python.filterPushdown.enabled`` is true (every
read would fail), so :func:`register` turns it on, unless the user turned it off explicitly: that is refused
with a :class:`~deltalog.errors.SetupError` rather than silently overridden.

``as_delta=True`` also registers the source as ``delta``, so existing jobs (``format("delta")``) run unchanged
on a cluster without Delta Lake's jars. Where the jars are present Spark would resolve ``delta`` to them, not to
deltalog; that is refused, typed, so a job never runs on an engine other than the one it asked for.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from deltalog.errors import SetupError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = logging.getLogger(__name__)

FILTER_PUSHDOWN = "spark.sql.python.filterPushdown.enabled"
#: a class Delta Lake's Spark jars hold
DELTA_SOURCE_CLASS = "org.apache.spark.sql.delta.sources.DeltaDataSource"


def _enable_pushdown(spark: SparkSession) -> None:
    current = spark.conf.get(FILTER_PUSHDOWN, None)
    if current is not None and current.strip().lower() == "false":
        raise SetupError(
            f"{FILTER_PUSHDOWN} is set to false in this session; format('deltalog') pushes filters into its reads "
            f"and Spark refuses such a reader while the setting is off: unset it or set it to true"
        )
    if current is None or current.strip().lower() != "true":
        spark.conf.set(FILTER_PUSHDOWN, "true")
        logger.info(
            "set %s=true for format('deltalog'): its reads prune files by the filters Spark pushes", FILTER_PUSHDOWN
        )


def _jvm(spark: SparkSession) -> Any:
    """The session's py4j view of its JVM; None for a Spark Connect session (no JVM in this process)."""
    return getattr(spark, "_jvm", None)


def activate(spark: SparkSession) -> None:
    """Make ``spark`` the active session of the calling thread's JVM thread. Spark looks Python data sources up
    in that thread's active session, and a thread that never built a DataFrame from local data has none: its
    ``format("deltalog")`` would not be found. (A Connect session resolves sources on the server.)"""
    jvm = _jvm(spark)
    if jvm is not None:
        jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)


def delta_jars_present(spark: SparkSession) -> bool:
    """Whether the session's JVM can load Delta Lake's data source (False where there is no JVM to ask)."""
    jvm = _jvm(spark)
    if jvm is None:
        return False
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(DELTA_SOURCE_CLASS, False, loader)
    except Exception:
        return False
    return True


def register(spark: SparkSession, as_delta: bool = False) -> None:
    """Register deltalog's data source as ``format("deltalog")`` in ``spark`` (again is harmless), and turn on
    the filter pushdown its reads use. ``as_delta`` also answers ``format("delta")`` where Delta Lake's jars are
    absent; where they are present it raises :class:`~deltalog.errors.SetupError`."""
    from deltalog.spark.source import DeltaAsDataSource, DeltaLogDataSource

    _enable_pushdown(spark)
    activate(spark)
    spark.dataSource.register(DeltaLogDataSource)
    if as_delta:
        if delta_jars_present(spark):
            raise SetupError(
                "register(spark, as_delta=True): this session has Delta Lake's jars, so format('delta') is Delta "
                "Spark's; use format('deltalog') for deltalog, or start the session without the Delta jars"
            )
        spark.dataSource.register(DeltaAsDataSource)


__all__ = ["DELTA_SOURCE_CLASS", "FILTER_PUSHDOWN", "activate", "delta_jars_present", "register"]
