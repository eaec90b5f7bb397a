"""``deltalog.spark.DeltaTable``: Delta Spark's ``delta.tables.DeltaTable``, method for method, on deltalog.

A job written against Delta Spark's Python API moves by changing its import: the class methods and methods keep
Delta Spark's names, parameters and defaults (``python/delta/tables.py``), and each either does what it does
there or raises a typed error naming the method and why (:data:`~deltalog.spark.table_api.REFUSED`). The work
runs where Delta Spark runs it: MERGE joined by Spark (:mod:`deltalog.spark.distributed_merge`), UPDATE and
DELETE on the executors (:mod:`deltalog.spark.distributed_dml`),
OPTIMIZE's bins on the executors (:mod:`deltalog.spark.distributed_optimize`), reads through
``format("deltalog")``; the driver replays the log and commits, through the commit path every deltalog writer
uses.

Conditions and values are Spark SQL text or pyspark ``Column`` objects, as in Delta Spark. Spark evaluates a
MERGE's condition in its join as given; where deltalog's core binds and evaluates one itself (with Spark's
semantics), a Column becomes the SQL text of its expression tree (:mod:`deltalog.spark.columns`), and one with
no SQL spelling (a user-defined function, a lambda) is refused, typed. The storage options of
:meth:`DeltaTable.forPath`'s third argument are deltalake's key names (Delta Spark's Hadoop ``fs.*`` keys are
refused by name: there is no Hadoop connector here). A result Delta Spark returns as a DataFrame (history,
detail, restore and optimize metrics) is a DataFrame with Delta Spark's column names.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deltalog.errors import InvalidArgumentError, TableNotFoundError
from deltalog.log import DeltaLog
from deltalog.spark.table_api import refuse, spark_job, sql_mapping, sql_text, storage_options_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from deltalog.spark.table_builders import DeltaMergeBuilder, DeltaOptimizeBuilder, DeltaTableBuilder

logger = logging.getLogger(__name__)

#: Delta Spark's setting that lets VACUUM take a retention below the table's (deltalog's ``force``)
RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
#: ``forName``'s spelling of a path: delta.`/path/to/table`
_PATH_NAME = re.compile(r"^\s*(?:delta|deltalog)\s*\.\s*`(?P<path>[^`]+)`\s*$", re.IGNORECASE)


def _ms_time(ms: int | None) -> dt.datetime | None:
    return None if ms is None else dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)


def _strings(values: Mapping[str, Any] | None) -> dict[str, str] | None:
    if values is None:
        return None
    return {str(k): v if isinstance(v, str) else str(v) for k, v in values.items()}


HISTORY_SCHEMA = (
    "version BIGINT, timestamp TIMESTAMP, userId STRING, userName STRING, operation STRING, "
    "operationParameters MAP<STRING, STRING>, job MAP<STRING, STRING>, notebook MAP<STRING, STRING>, "
    "clusterId STRING, readVersion BIGINT, isolationLevel STRING, isBlindAppend BOOLEAN, "
    "operationMetrics MAP<STRING, STRING>, userMetadata STRING, engineInfo STRING"
)
DETAIL_SCHEMA = (
    "format STRING, id STRING, name STRING, description STRING, location STRING, createdAt TIMESTAMP, "
    "lastModified TIMESTAMP, partitionColumns ARRAY<STRING>, clusteringColumns ARRAY<STRING>, numFiles BIGINT, "
    "sizeInBytes BIGINT, properties MAP<STRING, STRING>, minReaderVersion INT, minWriterVersion INT, "
    "tableFeatures ARRAY<STRING>"
)
RESTORE_SCHEMA = (
    "table_size_after_restore BIGINT, num_of_files_after_restore BIGINT, num_removed_files BIGINT, "
    "num_restored_files BIGINT, removed_files_size BIGINT, restored_files_size BIGINT"
)
#: restore's columns and the commitInfo metrics they come from
_RESTORE_METRICS = (
    ("table_size_after_restore", "tableSizeAfterRestore"),
    ("num_of_files_after_restore", "numOfFilesAfterRestore"),
    ("num_removed_files", "numRemovedFiles"),
    ("num_restored_files", "numRestoredFiles"),
    ("removed_files_size", "removedFilesSize"),
    ("restored_files_size", "restoredFilesSize"),
)


class DeltaTable:
    """A Delta table as Delta Spark's ``DeltaTable`` shows it (open one with :meth:`forPath`)."""

    def __init__(
        self,
        spark: SparkSession,
        path: str,
        storage_options: Mapping[str, Any] | None = None,
        alias: str | None = None,
    ) -> None:
        self._spark = spark
        self._path = path
        self._options = dict(storage_options) if storage_options else None
        self._alias = alias
        self._log = DeltaLog.for_table(path, self._options)
        self._log.latest_version()  # TableNotFoundError when there is no table

    # ------------------------------------------------------------------------------------------ opening
    @classmethod
    def forPath(cls, sparkSession: SparkSession, path: str, hadoopConf: dict[str, str] = dict()) -> DeltaTable:  # noqa: B006  # Delta Spark's signature
        """The table at ``path`` (``TableNotFoundError`` when there is none); ``hadoopConf`` takes storage options
        in deltalake's key names."""
        return cls(sparkSession, path, storage_options_of(hadoopConf))

    @classmethod
    def forName(cls, sparkSession: SparkSession, tableOrViewName: str) -> DeltaTable:
        """Only ``delta.`/path``` (a path spelled as a name): deltalog has no catalog."""
        named = _PATH_NAME.match(tableOrViewName) if isinstance(tableOrViewName, str) else None
        if named is None:
            raise refuse("DeltaTable.forName")
        return cls(sparkSession, named.group("path"))

    @classmethod
    def isDeltaTable(cls, sparkSession: SparkSession, identifier: str) -> bool:
        """Whether ``identifier`` (a path) is the root of a Delta table."""
        try:
            DeltaLog.for_table(identifier).latest_version()
        except TableNotFoundError:
            return False
        return True

    @classmethod
    def convertToDelta(cls, sparkSession: SparkSession, identifier: str, partitionSchema: Any = None) -> DeltaTable:
        """Refused: see :data:`~deltalog.spark.table_api.REFUSED`."""
        raise refuse("DeltaTable.convertToDelta")

    @classmethod
    def create(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        """A builder that creates the table (``CREATE TABLE``: an existing one is ``TableAlreadyExistsError``)."""
        return _builder(sparkSession, "create")

    @classmethod
    def createIfNotExists(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        """A builder that creates the table unless one exists (``CREATE TABLE IF NOT EXISTS``)."""
        return _builder(sparkSession, "createIfNotExists")

    @classmethod
    def replace(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        """A builder that replaces an existing table (``REPLACE TABLE``); none there is ``TableNotFoundError``."""
        return _builder(sparkSession, "replace")

    @classmethod
    def createOrReplace(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        """A builder that creates the table, or replaces the one there (``CREATE OR REPLACE TABLE``)."""
        return _builder(sparkSession, "createOrReplace")

    # ------------------------------------------------------------------------------------------ reading
    def toDF(self) -> DataFrame:
        """The table's latest version as a DataFrame, read through ``format("deltalog")`` (aliased if
        :meth:`alias` named it)."""
        from deltalog.spark.reader import read

        df = read(self._spark, self._path, storage_options=self._options)
        return df.alias(self._alias) if self._alias else df

    def alias(self, aliasName: str) -> DeltaTable:
        """The same table under ``aliasName``: the target's qualifier in :meth:`merge` and in :meth:`toDF`."""
        return DeltaTable(self._spark, self._path, self._options, aliasName)

    def history(self, limit: int | None = None) -> DataFrame:
        """The latest ``limit`` commits (all by default), newest first, with ``DESCRIBE HISTORY``'s columns."""
        rows = []
        for e in self._log.history(limit):
            info = e.commit_info
            rows.append(
                (
                    e.version,
                    _ms_time(e.timestamp),
                    info.get("userId"),
                    info.get("userName"),
                    info.get("operation"),
                    _strings(info.get("operationParameters")),
                    _strings(info.get("job")),
                    _strings(info.get("notebook")),
                    info.get("clusterId"),
                    info.get("readVersion"),
                    info.get("isolationLevel"),
                    info.get("isBlindAppend"),
                    _strings(info.get("operationMetrics")),
                    info.get("userMetadata"),
                    info.get("engineInfo"),
                )
            )
        return self._spark.createDataFrame(rows, HISTORY_SCHEMA)

    def detail(self) -> DataFrame:
        """One row with ``DESCRIBE DETAIL``'s columns: format, id, location, sizes, properties, protocol."""
        from deltalog.core.features import clustering

        snap = self._log.snapshot()
        meta, protocol = snap.metadata, snap.protocol
        files = snap.files()
        size = int(files.column("size").to_numpy().sum()) if files.num_rows else 0
        last = self._log.history(1)
        clustered = clustering.columns_of(snap.domain_metadata.values())
        clustering_names = (
            list(clustering.logical_columns(snap.schema_json, clustered, snap.column_mapping_mode)) if clustered else []
        )
        features = sorted({*(protocol.reader_features or ()), *(protocol.writer_features or ())})
        row = (
            "delta",
            meta.id,
            meta.name,
            meta.description,
            self._log.location,
            _ms_time(meta.created_time),
            _ms_time(last[0].timestamp) if last else None,
            list(meta.partition_columns),
            clustering_names,
            snap.num_files,
            size,
            dict(meta.configuration),
            protocol.min_reader_version,
            protocol.min_writer_version,
            features,
        )
        return self._spark.createDataFrame([row], DETAIL_SCHEMA)

    # ------------------------------------------------------------------------------------------ changing rows
    @spark_job
    def delete(self, condition: Any = None) -> None:
        """Delete the rows matching ``condition`` (Spark SQL text or a pyspark Column; None: every row) as one
        commit, the candidate files' rows found and taken out by Spark's executors: deletion vectors where the
        table enables them, else rewritten files (see :meth:`deltalog.DeltaLog.delete`)."""
        from deltalog.spark.distributed_dml import delete

        predicate = None if condition is None else sql_text(self._spark, condition, "DeltaTable.delete", "condition")
        delete(self._spark, self._path, predicate, self._options)

    @spark_job
    def update(self, condition: Any = None, set: Any = None) -> None:  # Delta Spark's name
        """Set ``set`` (column -> Spark SQL value or pyspark Column) on the rows matching ``condition`` (text or a
        Column; None: every row), one commit, the rows changed by Spark's executors (see
        :meth:`deltalog.DeltaLog.update`)."""
        from deltalog.spark.distributed_dml import update

        updates = sql_mapping(self._spark, set, "DeltaTable.update", "set")
        predicate = None if condition is None else sql_text(self._spark, condition, "DeltaTable.update", "condition")
        update(self._spark, self._path, updates, predicate, self._options)

    def merge(self, source: DataFrame, condition: Any) -> DeltaMergeBuilder:
        """A MERGE of ``source`` into this table on ``condition`` (Spark SQL text or a pyspark Column, which
        Spark's join evaluates as given): add clauses, then ``execute()``."""
        from deltalog.spark.table_builders import DeltaMergeBuilder

        if source is None:
            raise InvalidArgumentError("DeltaTable.merge: source cannot be None")
        from pyspark.sql import DataFrame

        if not isinstance(source, DataFrame):
            raise InvalidArgumentError(f"DeltaTable.merge: source must be a DataFrame, not {type(source).__name__}")
        if condition is None:
            raise InvalidArgumentError("DeltaTable.merge: condition cannot be None")
        text = sql_text(self._spark, condition, "DeltaTable.merge", "condition")
        column = None if isinstance(condition, str) else condition
        return DeltaMergeBuilder(self._spark, self._path, self._options, self._alias, source, text, column)

    # ------------------------------------------------------------------------------------------ maintenance
    def vacuum(self, retentionHours: float | None = None) -> DataFrame:
        """Delete the files no version within ``retentionHours`` (default: the table's
        ``delta.deletedFileRetentionDuration``, 7 days) needs. A shorter retention than the table's is refused,
        as Delta Spark refuses it, unless ``spark.databricks.delta.retentionDurationCheck.enabled`` is false."""
        check = self._spark.conf.get(RETENTION_CHECK, "true")
        force = str(check).strip().lower() == "false"
        retention = None if retentionHours is None else dt.timedelta(hours=float(retentionHours))
        self._log.vacuum(retention, dry_run=False, force=force)
        return self._spark.createDataFrame([(self._log.location,)], "path STRING")

    def restoreToVersion(self, version: int) -> DataFrame:
        """Make ``version`` current again as a new version (RESTORE); its metrics as Delta Spark's columns."""
        if isinstance(version, bool) or not isinstance(version, int):
            raise InvalidArgumentError(f"DeltaTable.restoreToVersion: version must be an int, not {version!r}")
        return self._restored(self._log.restore(version=version).metrics)

    def restoreToTimestamp(self, timestamp: str) -> DataFrame:
        """Make the version as of ``timestamp`` (``yyyy-MM-dd`` or ``yyyy-MM-dd HH:mm:ss``, UTC) current again."""
        if not isinstance(timestamp, str):
            raise InvalidArgumentError(f"DeltaTable.restoreToTimestamp: timestamp must be a str, not {timestamp!r}")
        return self._restored(self._log.restore(timestamp=timestamp).metrics)

    def _restored(self, metrics: Mapping[str, str]) -> DataFrame:
        row = tuple(int(metrics.get(name, 0)) for _, name in _RESTORE_METRICS)
        return self._spark.createDataFrame([row], RESTORE_SCHEMA)

    def optimize(self) -> DeltaOptimizeBuilder:
        """An OPTIMIZE of the table (``where`` partitions, then ``executeCompaction`` or ``executeZOrderBy``),
        its bins rewritten by Spark's executors."""
        from deltalog.spark.table_builders import DeltaOptimizeBuilder

        return DeltaOptimizeBuilder(self._spark, self._path, self._options)

    # ------------------------------------------------------------------------------------------ protocol
    def upgradeTableProtocol(self, readerVersion: int, writerVersion: int) -> None:
        """Raise the table's protocol to at least ``readerVersion``/``writerVersion`` (never lowers it)."""
        for name, value in (("readerVersion", readerVersion), ("writerVersion", writerVersion)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidArgumentError(f"DeltaTable.upgradeTableProtocol: {name} must be an int, not {value!r}")
        protocol = self._log.snapshot().protocol
        reader = max(readerVersion, protocol.min_reader_version)
        writer = max(writerVersion, protocol.min_writer_version)
        if (reader, writer) == (protocol.min_reader_version, protocol.min_writer_version):
            return
        self._log.set_properties({"delta.minReaderVersion": str(reader), "delta.minWriterVersion": str(writer)})

    def addFeatureSupport(self, featureName: str) -> None:
        """Add table feature ``featureName`` to the protocol (writer 7, and reader 3 for a reader feature)."""
        if not isinstance(featureName, str):
            raise InvalidArgumentError(f"DeltaTable.addFeatureSupport: featureName must be a str, not {featureName!r}")
        self._log.enable_feature(featureName)

    def dropFeatureSupport(self, featureName: str, truncateHistory: bool | None = None) -> None:
        """Refused: see :data:`~deltalog.spark.table_api.REFUSED`."""
        raise refuse("DeltaTable.dropFeatureSupport")

    def generate(self, mode: str) -> None:
        """Refused: see :data:`~deltalog.spark.table_api.REFUSED`."""
        raise refuse("DeltaTable.generate")

    def clone(
        self, target: str, isShallow: bool = False, replace: bool = False, properties: dict[str, str] | None = None
    ) -> DeltaTable:
        """Refused: see :data:`~deltalog.spark.table_api.REFUSED`."""
        raise refuse("DeltaTable.clone")

    def cloneAtVersion(
        self,
        version: int,
        target: str,
        isShallow: bool = False,
        replace: bool = False,
        properties: dict[str, str] | None = None,
    ) -> DeltaTable:
        """Refused: see :data:`~deltalog.spark.table_api.REFUSED`."""
        raise refuse("DeltaTable.cloneAtVersion")

    def cloneAtTimestamp(
        self,
        timestamp: str,
        target: str,
        isShallow: bool = False,
        replace: bool = False,
        properties: dict[str, str] | None = None,
    ) -> DeltaTable:
        """Refused: see :data:`~deltalog.spark.table_api.REFUSED`."""
        raise refuse("DeltaTable.cloneAtTimestamp")

    def __repr__(self) -> str:
        return f"DeltaTable({self._path!r})"


def _builder(spark: SparkSession | None, mode: str) -> DeltaTableBuilder:
    from deltalog.spark.table_builders import DeltaTableBuilder

    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        if spark is None:
            raise InvalidArgumentError(f"DeltaTable.{mode}: no SparkSession given and none is active")
    return DeltaTableBuilder(spark, mode, DeltaTable)


__all__ = ["DeltaTable"]
