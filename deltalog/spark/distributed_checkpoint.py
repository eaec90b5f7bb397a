"""A classic multi-part checkpoint written by Spark executors; the file list never passes through the driver.

1. The driver lists the log segment for the version (the newest complete checkpoint plus later commits) and
   hands Spark the *names* of those log files.
2. Executors read them through deltalog's stores inside ``mapInArrow``
   (:func:`deltalog.spark._checkpoint_io.read_log_files`): one row per action with its reconciliation key
   (decoded path + DV id, as in :func:`deltalog.core.files.pathkeys.file_key`), version and position.
3. Spark reconciles: per key the newest action wins (a window ordered by version and position). Protocol,
   metaData, live txns and live domains are a handful of rows: the driver collects those. File actions stay
   on the executors: live adds, and removes younger than ``delta.deletedFileRetentionDuration``.
4. Each file action gets its part as the local writer assigns it (crc32 of the key modulo the part count),
   Spark repartitions by part, and each task writes its parts (``<v>.checkpoint.<k>.<p>.parquet``, the schema
   of :mod:`deltalog.checkpoint.schema`, protocol/metaData/txn/domain rows in part 1), published with
   put-if-absent. A local and a Spark writer with the same part count produce the same parts.
5. The driver moves ``_last_checkpoint`` forward with :func:`deltalog.checkpoint.hint.update_hint`.

Not done here: V2 checkpoints (tables with ``v2Checkpoint`` are refused: use the local writer), and the
``stats_parsed``/``partitionValues_parsed`` columns (stats are kept as JSON, which every reader accepts).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from deltalog.checkpoint.hint import update_hint
from deltalog.checkpoint.writer import CheckpointResult
from deltalog.core import actions as A
from deltalog.core.features import properties
from deltalog.core.features.protocol import check_readable, supported_features
from deltalog.core.log.codec import from_dict
from deltalog.core.log.paths import LOG_DIR, Kind
from deltalog.errors import CheckpointError, DeltaLogError, InvalidArgumentError, UnsupportedFeatureError
from deltalog.log import DeltaLog
from deltalog.spark._checkpoint_io import ACTIONS_DDL, PART_RESULT_DDL, read_log_files, write_parts
from deltalog.spark._files import raise_carried

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_NON_FILE = ("protocol", "metaData", "txn", "domainMetadata")
COMMITS_PER_TASK = 64


def _tasks(spark: SparkSession, log: DeltaLog, version: int | None) -> tuple[int, DataFrame]:
    segment = log.segment(version)
    rows: list[tuple[str, int, bool]] = []
    if segment.checkpoint is not None:
        if segment.checkpoint.kind is Kind.UUID_CHECKPOINT:
            raise UnsupportedFeatureError("the Spark checkpoint writer reads classic checkpoints only", feature="v2")
        rows += [(f"{LOG_DIR}/{f.name}", segment.checkpoint.version, True) for f in segment.checkpoint.files]
    rows += [(f"{LOG_DIR}/{c.name}", c.version, False) for c in segment.commits]
    n_tasks = max(1, len(rows) // COMMITS_PER_TASK)
    df = spark.createDataFrame(rows, "path string, version long, is_checkpoint boolean").repartition(n_tasks)
    return segment.version, df


def _small_state(reconciled: DataFrame) -> list[tuple[str, dict[str, Any]]]:
    from pyspark.sql import functions as F

    rows = reconciled.where(F.col("kind").isin(*_NON_FILE)).select("kind", "payload").collect()
    return [(r["kind"], orjson.loads(r["payload"])) for r in rows]


def _live_small_state(
    small: list[tuple[str, dict[str, Any]]], now_ms: int
) -> tuple[A.Protocol, A.Metadata, list[tuple[str, dict[str, Any]]]]:
    protocols = [b for k, b in small if k == "protocol"]
    metas = [b for k, b in small if k == "metaData"]
    if len(protocols) != 1 or len(metas) != 1:
        raise CheckpointError("the log segment has no protocol or no metaData: not a Delta table version")
    protocol = from_dict("protocol", protocols[0])
    metadata = from_dict("metaData", metas[0])
    assert isinstance(protocol, A.Protocol) and isinstance(metadata, A.Metadata)
    retention = properties.txn_retention_ms(metadata.configuration)
    kept: list[tuple[str, dict[str, Any]]] = [("protocol", protocols[0]), ("metaData", metas[0])]
    for kind, body in small:
        if kind == "txn":
            last = body.get("lastUpdated")
            if retention is None or (last is not None and last > now_ms - retention):
                kept.append((kind, body))
        elif kind == "domainMetadata" and not body.get("removed"):
            kept.append((kind, body))
    return protocol, metadata, kept


def checkpoint(
    spark: SparkSession,
    table_uri: str,
    version: int | None = None,
    parts: int | None = None,
    storage_options: dict[str, Any] | None = None,
    *,
    now_ms: int | None = None,
) -> CheckpointResult:
    """Write a classic (multi-part) checkpoint of ``table_uri`` at ``version`` (default: the latest) with Spark's
    executors.

    ``parts`` defaults to the context's default parallelism (1 writes a classic single-file checkpoint); the
    parts are the same the local writer would produce. V2-checkpoint tables are refused. ``now_ms`` fixes the
    clock that expires tombstones (tests). A deltalog error raised on an executor (a corrupt commit, a missing
    log file) is raised here typed.
    """
    try:
        return _checkpoint(spark, table_uri, version, parts, storage_options, now_ms)
    except DeltaLogError:
        raise
    except Exception as exc:
        raise_carried(exc)
        raise


def _checkpoint(
    spark: SparkSession,
    table_uri: str,
    version: int | None,
    parts: int | None,
    storage_options: dict[str, Any] | None,
    now_ms: int | None,
) -> CheckpointResult:
    from pyspark import StorageLevel
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    started = time.monotonic()
    log = DeltaLog.for_table(table_uri, storage_options, auto_checkpoint=False)
    n_parts = parts if parts is not None else max(1, spark.sparkContext.defaultParallelism)
    if n_parts < 1:
        raise InvalidArgumentError(f"parts must be >= 1, not {parts}")
    now = log.now_ms() if now_ms is None else now_ms
    root = log.store.root
    target, tasks = _tasks(spark, log, version)

    actions = tasks.mapInArrow(
        functools.partial(read_log_files, root=root, storage_options=storage_options, parts=n_parts), ACTIONS_DDL
    )
    group = F.when(F.col("kind").isin("add", "remove"), F.lit("file")).otherwise(F.col("kind"))
    newest = Window.partitionBy(group, F.col("key")).orderBy(F.desc("version"), F.desc("ord"))
    reconciled = (actions.withColumn("rank", F.row_number().over(newest)).where("rank = 1").drop("rank")).persist(
        StorageLevel.MEMORY_AND_DISK
    )
    try:
        protocol, metadata, small = _live_small_state(_small_state(reconciled), now)
        source = f"{log.location}/_delta_log (version {target})"
        check_readable(protocol, source)
        if "v2Checkpoint" in supported_features(protocol):
            raise UnsupportedFeatureError(
                f"{source}: tables with v2Checkpoint need V2 checkpoints; use the local writer", feature="v2Checkpoint"
            )
        conf: Mapping[str, str] = metadata.configuration
        cutoff = now - properties.deleted_file_retention_ms(conf)
        files = reconciled.where(
            (F.col("kind") == "add") | ((F.col("kind") == "remove") & (F.coalesce("del_ts", F.lit(0)) > cutoff))
        )
        markers = spark.range(n_parts).select(
            F.col("id").alias("part"), F.lit("marker").alias("kind"), F.lit(None).cast("string").alias("payload")
        )
        by_part = files.select("part", "kind", "payload").unionByName(markers).repartition(n_parts, "part")
        writer = functools.partial(
            write_parts,
            root=root,
            storage_options=storage_options,
            version=target,
            parts=n_parts,
            stats_json=properties.checkpoint_stats_json(conf),
            compression=properties.parquet_codec(conf),
            non_file=small,
        )
        written = by_part.mapInArrow(writer, PART_RESULT_DDL).collect()
    finally:
        reconciled.unpersist()
    if sorted(r["part"] for r in written) != list(range(n_parts)):
        raise CheckpointError(f"expected {n_parts} checkpoint parts, the executors wrote {len(written)}")
    written = sorted(written, key=lambda r: r["part"])
    num_actions = sum(r["rows"] for r in written)
    num_adds = sum(r["adds"] for r in written)
    size = sum(r["size"] for r in written)
    hint: dict[str, Any] = {"version": target, "size": num_actions}
    if n_parts > 1:
        hint["parts"] = n_parts
    hint["sizeInBytes"] = size
    hint["numOfAddFiles"] = num_adds
    update_hint(log.store, hint)
    return CheckpointResult(
        version=target,
        kind="multipart" if n_parts > 1 else "classic",
        files=tuple(r["path"] for r in written),
        num_actions=num_actions,
        num_add_files=num_adds,
        size_in_bytes=size,
        seconds=time.monotonic() - started,
    )


__all__ = ["checkpoint"]
