"""A SparkSession for deltalog's jobs and CLI: local master by default, no UI, loopback for local runs.

Also where the ways a Spark run fails before it does any work become one readable
:class:`~deltalog.errors.SetupError`: pyspark not installed, no Java to start the driver's JVM (pyspark
would print a Java launcher error and a 20-line ``JAVA_GATEWAY_EXITED`` traceback), and executors whose
Python cannot import deltalog (a worker traceback, deep inside a ``Py4JJavaError``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from deltalog.errors import SetupError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SPARK_EXTRA = "pip install 'deltalog[spark]'"


def require_pyspark(what: str = "deltalog.spark") -> None:
    """Raise :class:`SetupError` naming ``what`` (the call or command) when pyspark cannot be imported."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SetupError(f"{what} needs pyspark, which is not installed: {SPARK_EXTRA}") from None


def find_java() -> str:
    """The ``java`` Spark will start (``$JAVA_HOME/bin/java``, else the one on PATH); :class:`SetupError`
    when there is none, so that a run stops before it has changed anything."""
    home = os.environ.get("JAVA_HOME")
    if home:
        java = os.path.join(home, "bin", "java")
        if os.access(java, os.X_OK):
            return java
        raise SetupError(f"JAVA_HOME is {home}, which has no bin/java: Spark needs Java 17; fix or unset JAVA_HOME")
    on_path = shutil.which("java")
    if on_path is None:
        raise SetupError("Spark needs Java 17, and no java is on PATH (and JAVA_HOME is not set)")
    return on_path


def get_session(
    master: str = "local[2]", app_name: str = "deltalog", conf: Mapping[str, str] | None = None
) -> SparkSession:
    """``SparkSession.builder`` with deltalog's defaults; an active session with the same master is reused."""
    require_pyspark()
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
    if SparkSession.getActiveSession() is None:
        find_java()
    try:
        return builder.getOrCreate()
    except Exception as exc:
        if "JAVA_GATEWAY_EXITED" in str(exc) or "Java gateway process exited" in str(exc):
            raise SetupError(
                f"Spark could not start its JVM with {find_java()}: Spark needs Java 17 (check JAVA_HOME)"
            ) from None
        raise


#: what a worker prints when the executors' Python lacks a module the job's functions live in
_MISSING_MODULE = "No module named 'deltalog"


@contextlib.contextmanager
def executor_setup_errors() -> Iterator[None]:
    """Turn a job failure whose cause is executors that cannot import deltalog into a :class:`SetupError`.

    The functions deltalog runs on executors are pickled by reference, so a worker whose Python lacks
    deltalog fails to unpickle them; the driver then sees a ``Py4JJavaError``/``PythonException`` holding
    the worker's traceback. Other failures pass through unchanged.
    """
    try:
        yield
    except SetupError:
        raise
    except Exception as exc:
        if _MISSING_MODULE in str(exc):
            raise SetupError(
                "Spark's executors cannot import deltalog (ModuleNotFoundError in a Python worker): install "
                "deltalog in the Python the executors run (PYSPARK_PYTHON), or ship it with "
                "spark.submit.pyFiles / SparkContext.addPyFile"
            ) from None
        raise


__all__ = ["SPARK_EXTRA", "executor_setup_errors", "find_java", "get_session", "require_pyspark"]
