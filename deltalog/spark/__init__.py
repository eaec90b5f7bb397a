"""Spark integration: distributed writes, reads and checkpoints over deltalog's transaction log.

pyspark is imported only inside this package (and lazily: ``import deltalog.spark`` works without it; the
functions need it). Install it with ``pip install 'deltalog[spark]'``.

The three entry points below spell out their parameters (rather than forwarding ``*args``) so that
``help()``, IDEs and the API docs show them; ``tests/unit/test_public_api_docs.py`` keeps them equal to
the implementations'. Calling one without pyspark, or on a cluster whose executors cannot import
deltalog, raises :class:`~deltalog.errors.SetupError` saying what to install.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from deltalog.checkpoint.writer import CheckpointResult
    from deltalog.errors import DeltaLogError
    from deltalog.log import Timestamp
    from deltalog.spark.writer import WriteResult

__all__ = ["carried_error", "checkpoint", "read", "write"]


def write(
    df: DataFrame,
    table_uri: str,
    mode: str = "append",
    partition_by: Sequence[str] | None = None,
    replace_where: Mapping[str, Any] | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    storage_options: dict[str, Any] | None = None,
    *,
    configuration: Mapping[str, str] | None = None,
    target_rows_per_file: int = 1_000_000,
    before_commit: Callable[[], None] | None = None,
    early_conflicts: bool = True,
) -> WriteResult:
    """Write ``df`` to the Delta table at ``table_uri`` as one commit (the table is created if missing).

    Executors write the parquet files; the driver commits them. ``mode`` is ``"append"`` or
    ``"overwrite"`` (the whole table, or with ``replace_where`` only the matching partitions, in
    :meth:`deltalog.Snapshot.files`' ``where`` form). ``app_id``/``app_version`` make the write exactly
    once: a batch the table already holds writes nothing and returns ``skipped=True``. ``configuration``
    sets table properties at creation; ``before_commit`` runs between writing the files and committing
    them (orchestration, tests); ``early_conflicts=False`` turns off the intent an overwrite declares.
    Files of a refused commit are deleted. The table's CHECK constraints, invariants and generated columns
    are evaluated with Spark SQL on the executors (false or null fails: a
    :class:`~deltalog.errors.ConstraintViolationError` naming the rule, nothing committed) and missing
    generated columns computed; column-mapped tables get physical names. Details:
    :func:`deltalog.spark.writer.write`.
    """
    from deltalog.spark.session import executor_setup_errors, require_pyspark

    require_pyspark("deltalog.spark.write")
    from deltalog.spark.writer import write as _write

    with executor_setup_errors():
        return _write(
            df,
            table_uri,
            mode,
            partition_by,
            replace_where,
            app_id,
            app_version,
            storage_options,
            configuration=configuration,
            target_rows_per_file=target_rows_per_file,
            before_commit=before_commit,
            early_conflicts=early_conflicts,
        )


def read(
    spark: SparkSession,
    table_uri: str,
    version: int | None = None,
    timestamp: Timestamp | None = None,
    storage_options: dict[str, Any] | None = None,
    *,
    columns: Sequence[str] | None = None,
) -> DataFrame:
    """The table at ``version`` or ``timestamp`` (default: the latest) as a DataFrame of its columns
    (``columns`` to read fewer).

    The driver replays the log; executors read exactly the snapshot's live files with deltalog's own reader
    and stores, so deletion vectors are applied, column mapping resolved, partition values come from the log,
    and ``s3://``/``abfs://``/``gs://`` tables need no Hadoop connector (``storage_options`` travel with the
    tasks). A missing or corrupt file fails the Spark action that reads it (the DataFrame is lazy) with the
    deltalog error marked in the message; :func:`carried_error` rebuilds it. Details:
    :func:`deltalog.spark.reader.read`.
    """
    from deltalog.spark.session import executor_setup_errors, require_pyspark

    require_pyspark("deltalog.spark.read")
    from deltalog.spark.reader import read as _read

    with executor_setup_errors():
        return _read(spark, table_uri, version, timestamp, storage_options, columns=columns)


def checkpoint(
    spark: SparkSession,
    table_uri: str,
    version: int | None = None,
    parts: int | None = None,
    storage_options: dict[str, Any] | None = None,
    *,
    now_ms: int | None = None,
) -> CheckpointResult:
    """Write a classic (multi-part) checkpoint of ``version`` (default: the latest) with Spark's executors.

    ``parts`` defaults to the context's default parallelism; the parts are the same the local writer
    would produce. V2-checkpoint tables are refused. ``now_ms`` fixes the clock that expires tombstones
    (tests). Details: :func:`deltalog.spark.distributed_checkpoint.checkpoint`.
    """
    from deltalog.spark.session import executor_setup_errors, require_pyspark

    require_pyspark("deltalog.spark.checkpoint")
    from deltalog.spark.distributed_checkpoint import checkpoint as _checkpoint

    with executor_setup_errors():
        return _checkpoint(spark, table_uri, version, parts, storage_options, now_ms=now_ms)


def carried_error(exc: BaseException) -> DeltaLogError | None:
    """The deltalog error (typed, with its fields) that failed a Spark task behind ``exc``, or None.

    A task cannot raise a typed error to the driver: Spark hands back its text. deltalog's executor code marks
    its errors in that text, and the entry points above re-raise them typed; an action on the DataFrame
    :func:`read` returns runs after ``read`` has returned, so its caller rebuilds the error with this.
    """
    from deltalog.spark._files import carried_error as _carried

    return _carried(exc)
