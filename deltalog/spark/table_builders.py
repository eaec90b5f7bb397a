"""The builders of :class:`deltalog.spark.DeltaTable`, with Delta Spark's names (``delta.tables``):
:class:`DeltaMergeBuilder` (a MERGE's clauses, joined and run by Spark: :mod:`deltalog.spark.distributed_merge`),
:class:`DeltaOptimizeBuilder` (OPTIMIZE on :func:`deltalog.spark.optimize`), :class:`DeltaTableBuilder`
(``CREATE``/``REPLACE TABLE`` on deltalog's create and overwrite) and :class:`IdentityGenerator`.

Each ``when*`` call adds one clause, in order, exactly as the core's builder does; nothing is read or written
before ``execute()``. The merge's source is a DataFrame: its alias (``src.alias("s")``) cannot be read back
from pyspark, so it is taken from the condition and clauses, as the one qualifier other than the target's
they use (the target's is :meth:`DeltaTable.alias`'s).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog.dml.merge import clauses as C
from deltalog.errors import InvalidArgumentError, TableAlreadyExistsError, TableNotFoundError, UnsupportedFeatureError
from deltalog.log import DeltaLog
from deltalog.spark.table_api import refuse, spark_job, sql_mapping, sql_text

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

#: a qualified name in SQL text: its qualifier
_QUALIFIED = re.compile(r"(?<![\w.`])`?([A-Za-z_]\w*)`?\s*\.\s*`?[A-Za-z_]")
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
MERGE_RESULT_SCHEMA = (
    "num_affected_rows BIGINT, num_updated_rows BIGINT, num_deleted_rows BIGINT, num_inserted_rows BIGINT"
)
OPTIMIZE_RESULT_SCHEMA = (
    "path STRING, metrics STRUCT<numFilesAdded: BIGINT, numFilesRemoved: BIGINT, numBytesAdded: BIGINT, "
    "numBytesRemoved: BIGINT, partitionsOptimized: BIGINT, numBatches: BIGINT, totalConsideredFiles: BIGINT, "
    "totalFilesSkipped: BIGINT, numDeletionVectorsRemoved: BIGINT>"
)


def qualifiers(texts: Iterable[str]) -> list[str]:
    """The qualifiers (``s`` in ``s.id``) SQL texts use, in order of first use (string literals skipped)."""
    seen: dict[str, None] = {}
    for text in texts:
        for q in _QUALIFIED.findall(_STRING.sub("''", text)):
            seen.setdefault(q, None)
    return list(seen)


class DeltaMergeBuilder:
    """A MERGE being built (Delta Spark's ``DeltaMergeBuilder``); made by :meth:`DeltaTable.merge`."""

    def __init__(
        self,
        spark: SparkSession,
        path: str,
        storage_options: Mapping[str, Any] | None,
        target_alias: str | None,
        source: DataFrame,
        condition: str,
        column: Column | None = None,
    ) -> None:
        self._spark = spark
        self._path = path
        self._options = dict(storage_options) if storage_options else None
        self._target_alias = target_alias
        self._source = source
        self._condition = condition
        self._column = column
        self._clauses: list[C.Clause] = []
        self._evolve = False

    def _add(
        self, kind: str, action: str, condition: Any, values: Any, method: str, star: bool = False
    ) -> DeltaMergeBuilder:
        text = None if condition is None else sql_text(self._spark, condition, method, "condition")
        mapping = (
            None
            if star or action == C.DELETE
            else sql_mapping(self._spark, values, method, "set" if action == C.UPDATE else "values")
        )
        self._clauses.append(C.clause(kind, action, text, mapping, star))
        return self

    def whenMatchedUpdate(self, condition: Any = None, set: Any = None) -> DeltaMergeBuilder:
        """``WHEN MATCHED [AND condition] THEN UPDATE SET`` ``set`` (column -> Spark SQL)."""
        return self._add(C.MATCHED, C.UPDATE, condition, set, "whenMatchedUpdate")

    def whenMatchedUpdateAll(self, condition: Any = None) -> DeltaMergeBuilder:
        """``WHEN MATCHED [AND condition] THEN UPDATE SET *``."""
        return self._add(C.MATCHED, C.UPDATE, condition, None, "whenMatchedUpdateAll", star=True)

    def whenMatchedDelete(self, condition: Any = None) -> DeltaMergeBuilder:
        """``WHEN MATCHED [AND condition] THEN DELETE``."""
        return self._add(C.MATCHED, C.DELETE, condition, None, "whenMatchedDelete")

    def whenNotMatchedInsert(self, condition: Any = None, values: Any = None) -> DeltaMergeBuilder:
        """``WHEN NOT MATCHED [AND condition] THEN INSERT`` ``values`` (column -> Spark SQL)."""
        return self._add(C.NOT_MATCHED, C.INSERT, condition, values, "whenNotMatchedInsert")

    def whenNotMatchedInsertAll(self, condition: Any = None) -> DeltaMergeBuilder:
        """``WHEN NOT MATCHED [AND condition] THEN INSERT *``."""
        return self._add(C.NOT_MATCHED, C.INSERT, condition, None, "whenNotMatchedInsertAll", star=True)

    def whenNotMatchedBySourceUpdate(self, condition: Any = None, set: Any = None) -> DeltaMergeBuilder:
        """``WHEN NOT MATCHED BY SOURCE [AND condition] THEN UPDATE SET`` ``set`` (target columns only)."""
        return self._add(C.NOT_MATCHED_BY_SOURCE, C.UPDATE, condition, set, "whenNotMatchedBySourceUpdate")

    def whenNotMatchedBySourceDelete(self, condition: Any = None) -> DeltaMergeBuilder:
        """``WHEN NOT MATCHED BY SOURCE [AND condition] THEN DELETE``."""
        return self._add(C.NOT_MATCHED_BY_SOURCE, C.DELETE, condition, None, "whenNotMatchedBySourceDelete")

    def withSchemaEvolution(self) -> DeltaMergeBuilder:
        """Add the source's new columns to the table for the ``*All`` clauses (``schema_mode="merge"``)."""
        self._evolve = True
        return self

    def _source_alias(self) -> str | None:
        texts = [self._condition]
        for c in self._clauses:
            if isinstance(c.condition, str):
                texts.append(c.condition)
            texts.extend(name for name, _ in c.assignments)
            texts.extend(v for _, v in c.assignments if isinstance(v, str))
        others = [q for q in qualifiers(texts) if q != self._target_alias]
        if len(others) > 1:
            columns = {n.lower() for n in self._source.columns}
            others = [q for q in others if q.lower() not in columns] or others
        if len(others) > 1:
            raise InvalidArgumentError(
                f"DeltaTable.merge: the condition and clauses qualify names with {', '.join(others)}; deltalog "
                f"takes the source's alias from them and needs one qualifier besides the target's "
                f"({self._target_alias or 'none: name it with DeltaTable.alias'})"
            )
        return others[0] if others else None

    @spark_job
    def execute(self) -> DataFrame:
        """Run the MERGE as one commit, the target's rows changed by Spark's executors; a DataFrame of Delta
        Spark's four counts (``num_affected_rows``, ``num_updated_rows``, ``num_deleted_rows``,
        ``num_inserted_rows``)."""
        from deltalog.spark.distributed_merge import merge

        result = merge(
            self._spark,
            self._path,
            self._source,
            self._condition,
            list(self._clauses),
            self._options,
            condition=self._column,
            source_alias=self._source_alias(),
            target_alias=self._target_alias,
            schema_mode="merge" if self._evolve else None,
        )
        m = result.metrics or {}
        updated, deleted, inserted = (
            int(m.get(k, 0)) for k in ("numTargetRowsUpdated", "numTargetRowsDeleted", "numTargetRowsInserted")
        )
        return self._spark.createDataFrame(
            [(updated + deleted + inserted, updated, deleted, inserted)], MERGE_RESULT_SCHEMA
        )


class DeltaOptimizeBuilder:
    """An OPTIMIZE being built (Delta Spark's ``DeltaOptimizeBuilder``); made by :meth:`DeltaTable.optimize`."""

    def __init__(self, spark: SparkSession, path: str, storage_options: Mapping[str, Any] | None) -> None:
        self._spark = spark
        self._path = path
        self._options = dict(storage_options) if storage_options else None
        self._where: list[str] = []

    def where(self, partitionFilter: str) -> DeltaOptimizeBuilder:
        """Only the partitions ``partitionFilter`` (Spark SQL on partition columns) selects; calls add up (AND)."""
        self._where.append(sql_text(self._spark, partitionFilter, "DeltaOptimizeBuilder.where", "partitionFilter"))
        return self

    def _run(self, z_order_by: list[str] | None) -> DataFrame:
        from deltalog.spark.distributed_optimize import optimize

        where = " AND ".join(f"({w})" for w in self._where) if self._where else None
        r = optimize(self._spark, self._path, where=where, z_order_by=z_order_by, storage_options=self._options)
        metrics = (
            r.num_files_added,
            r.num_files_removed,
            r.bytes_added,
            r.bytes_removed,
            r.partitions_optimized,
            r.num_batches,
            r.files_considered,
            r.files_skipped,
            r.deletion_vectors_purged,
        )
        location = DeltaLog.for_table(self._path, self._options).location
        return self._spark.createDataFrame([(location, metrics)], OPTIMIZE_RESULT_SCHEMA)

    @spark_job
    def executeCompaction(self) -> DataFrame:
        """Compact small files, the bins rewritten by Spark's executors; one row: the path and the metrics."""
        return self._run(None)

    @spark_job
    def executeZOrderBy(self, *cols: Any) -> DataFrame:
        """Rewrite the selected partitions' files sorted along the Z-order curve of ``cols``."""
        names = list(cols[0]) if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else list(cols)
        for c in names:
            if not isinstance(c, str):
                raise InvalidArgumentError(f"DeltaOptimizeBuilder.executeZOrderBy: a column name is a str, not {c!r}")
        if not names:
            raise InvalidArgumentError("DeltaOptimizeBuilder.executeZOrderBy: name at least one column")
        return self._run(names)


@dataclass(frozen=True)
class IdentityGenerator:
    """An identity column's values: ``start``, then every ``step`` (Delta Spark's ``IdentityGenerator``)."""

    start: int = 1
    step: int = 1


def _data_type(value: Any, column: str) -> Any:
    """A column's type as Delta's schema JSON: from DDL text (``"BIGINT"``) or a pyspark ``DataType``."""
    from pyspark.sql.types import DataType

    if isinstance(value, str):
        try:
            value = DataType.fromDDL(value)
        except Exception as exc:
            raise InvalidArgumentError(
                f"DeltaTableBuilder.addColumn: column {column!r}: {value!r} is no Spark type: {exc}"
            ) from None
    if not isinstance(value, DataType):
        raise InvalidArgumentError(f"DeltaTableBuilder.addColumn: the type of {column!r} must be a str or DataType")
    return value.jsonValue()


class DeltaTableBuilder:
    """A ``CREATE``/``REPLACE TABLE`` being built (Delta Spark's ``DeltaTableBuilder``); made by
    :meth:`DeltaTable.create`, ``createIfNotExists``, ``replace`` and ``createOrReplace``."""

    def __init__(self, spark: SparkSession, mode: str, opened: Any) -> None:
        self._spark = spark
        self._mode = mode
        self._opened = opened  # the class execute() returns (DeltaTable; passed in, so neither imports the other)
        self._location: str | None = None
        self._comment: str | None = None
        self._fields: list[dict[str, Any]] = []
        self._partitions: list[str] = []
        self._clustering: list[str] = []
        self._properties: dict[str, str] = {}

    def tableName(self, identifier: str) -> DeltaTableBuilder:
        """Refused: deltalog has no catalog (see :data:`~deltalog.spark.delta_table.REFUSED`)."""
        raise refuse("DeltaTableBuilder.tableName")

    def location(self, location: str) -> DeltaTableBuilder:
        """Where the table is (a path or URI)."""
        if not isinstance(location, str):
            raise InvalidArgumentError(f"DeltaTableBuilder.location: a location is a str, not {location!r}")
        self._location = location
        return self

    def comment(self, comment: str) -> DeltaTableBuilder:
        """The table's description."""
        if not isinstance(comment, str):
            raise InvalidArgumentError(f"DeltaTableBuilder.comment: a comment is a str, not {comment!r}")
        self._comment = comment
        return self

    def addColumn(
        self,
        colName: str,
        dataType: Any,
        nullable: bool = True,
        generatedAlwaysAs: Any = None,
        generatedByDefaultAs: IdentityGenerator | None = None,
        comment: str | None = None,
    ) -> DeltaTableBuilder:
        """One column: its type (DDL text or a ``DataType``), nullability, a generation expression (text) or an
        identity (:class:`IdentityGenerator`), and a comment."""
        if not isinstance(colName, str):
            raise InvalidArgumentError(f"DeltaTableBuilder.addColumn: a column name is a str, not {colName!r}")
        if not isinstance(nullable, bool):
            raise InvalidArgumentError(f"DeltaTableBuilder.addColumn: nullable of {colName!r} must be a bool")
        if generatedAlwaysAs is not None and generatedByDefaultAs is not None:
            raise InvalidArgumentError(
                f"DeltaTableBuilder.addColumn: {colName!r} has generatedAlwaysAs and generatedByDefaultAs; give one"
            )
        metadata: dict[str, Any] = {}
        if comment is not None:
            metadata["comment"] = comment
        identity = generatedByDefaultAs if generatedByDefaultAs is not None else generatedAlwaysAs
        if isinstance(identity, IdentityGenerator):
            if identity.step == 0:
                raise InvalidArgumentError(
                    f"DeltaTableBuilder.addColumn: {colName!r}: an identity's step must not be 0"
                )
            metadata["delta.identity.start"] = identity.start
            metadata["delta.identity.step"] = identity.step
            metadata["delta.identity.allowExplicitInsert"] = generatedByDefaultAs is not None
        elif generatedAlwaysAs is not None:
            metadata["delta.generationExpression"] = sql_text(
                self._spark, generatedAlwaysAs, "DeltaTableBuilder.addColumn", "generatedAlwaysAs"
            )
        elif generatedByDefaultAs is not None:
            raise InvalidArgumentError(
                f"DeltaTableBuilder.addColumn: generatedByDefaultAs of {colName!r} must be an IdentityGenerator"
            )
        self._fields.append(
            {"name": colName, "type": _data_type(dataType, colName), "nullable": nullable, "metadata": metadata}
        )
        return self

    def addColumns(self, cols: Any) -> DeltaTableBuilder:
        """The columns of a ``StructType`` (or a list of ``StructField``), metadata included."""
        from pyspark.sql.types import StructField, StructType

        if isinstance(cols, list):
            if not all(isinstance(c, StructField) for c in cols):
                raise InvalidArgumentError("DeltaTableBuilder.addColumns: a list of columns holds StructFields only")
            cols = StructType(cols)
        if not isinstance(cols, StructType):
            raise InvalidArgumentError("DeltaTableBuilder.addColumns: give a StructType or a list of StructField")
        self._fields.extend(cols.jsonValue()["fields"])
        return self

    def _names(self, cols: tuple[Any, ...], method: str) -> list[str]:
        names = list(cols[0]) if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else list(cols)
        for c in names:
            if not isinstance(c, str):
                raise InvalidArgumentError(f"DeltaTableBuilder.{method}: a column name is a str, not {c!r}")
        return names

    def partitionedBy(self, *cols: Any) -> DeltaTableBuilder:
        """The partition columns."""
        self._partitions.extend(self._names(cols, "partitionedBy"))
        return self

    def clusterBy(self, *cols: Any) -> DeltaTableBuilder:
        """The clustering columns (liquid clustering)."""
        self._clustering.extend(self._names(cols, "clusterBy"))
        return self

    def property(self, key: str, value: str) -> DeltaTableBuilder:
        """One table property (``delta.*`` checked as Delta Spark checks it when the table is written)."""
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidArgumentError(f"DeltaTableBuilder.property: key and value are str, not {key!r}, {value!r}")
        self._properties[key] = value
        return self

    def _schema(self) -> str:
        if not self._fields:
            raise InvalidArgumentError(f"DeltaTable.{self._mode}: the table needs at least one column (addColumn)")
        return json.dumps({"type": "struct", "fields": self._fields})

    @spark_job
    def execute(self) -> Any:
        """Create (or replace) the table at :meth:`location` as one commit; the table as a :class:`DeltaTable`."""
        if self._location is None:
            raise InvalidArgumentError(f"DeltaTable.{self._mode}: give the table's location with location(path)")
        log = DeltaLog.for_table(self._location)
        exists = self._opened.isDeltaTable(self._spark, self._location)
        if exists and self._mode == "createIfNotExists":
            return self._opened(self._spark, self._location)
        if exists and self._mode in ("replace", "createOrReplace"):
            self._replace(log)
        elif not exists and self._mode == "replace":
            raise TableNotFoundError(f"DeltaTable.replace: there is no table at {self._location} to replace")
        else:
            try:
                log.create(
                    self._schema(),
                    self._partitions,
                    self._properties or None,
                    description=self._comment,
                    clustering_columns=self._clustering or None,
                )
            except TableAlreadyExistsError:
                if self._mode != "createIfNotExists":
                    raise
        return self._opened(self._spark, self._location)

    def _replace(self, log: DeltaLog) -> None:
        """REPLACE TABLE: every row gone, the schema and partitioning the builder's, as one overwrite commit of
        ``format("deltalog")`` with ``overwriteSchema``."""
        from pyspark.sql.types import StructType

        schema = json.loads(self._schema())
        current = log.snapshot()
        if any(f.get("metadata") for f in schema["fields"]) or self._clustering or self._comment is not None:
            raise UnsupportedFeatureError(
                f"DeltaTable.{self._mode}: replacing a table with column comments, generated or identity columns, "
                "clustering or a comment is supported by Delta Spark, not yet by deltalog",
                feature=f"DeltaTable.{self._mode}",
            )
        changed = {k: v for k, v in self._properties.items() if current.configuration.get(k) != v}
        if changed:
            raise UnsupportedFeatureError(
                f"DeltaTable.{self._mode}: replacing a table with other properties ({', '.join(sorted(changed))}) is "
                "supported by Delta Spark, not yet by deltalog",
                feature=f"DeltaTable.{self._mode}",
            )
        from deltalog.spark.registration import register

        register(self._spark)
        empty = self._spark.createDataFrame([], StructType.fromJson(schema))
        writer = empty.write.format("deltalog").mode("overwrite").option("overwriteSchema", "true")
        if self._partitions:
            writer = writer.option("partitionBy", ",".join(self._partitions))
        writer.save(self._location)


__all__ = [
    "MERGE_RESULT_SCHEMA",
    "OPTIMIZE_RESULT_SCHEMA",
    "DeltaMergeBuilder",
    "DeltaOptimizeBuilder",
    "DeltaTableBuilder",
    "IdentityGenerator",
    "qualifiers",
]
