"""What :class:`deltalog.spark.DeltaTable` and its builders share: Delta Spark's methods deltalog refuses, and
how arguments in Delta Spark's forms (SQL text or pyspark Columns, mappings of them, ``forPath``'s options)
become deltalog's."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.spark.columns import column_sql, is_column

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

F = TypeVar("F", bound=Callable[..., Any])

#: Delta Spark's methods deltalog refuses, and why (each raises UnsupportedFeatureError naming itself)
REFUSED = {
    "DeltaTable.forName": "deltalog has no catalog: open the table by its location with DeltaTable.forPath "
    "(forName(spark, 'delta.`/path`') works)",
    "DeltaTableBuilder.tableName": "deltalog has no catalog: give the table's location with location(path)",
    "DeltaTable.convertToDelta": "converting a Parquet directory in place is supported by Delta Spark, not yet "
    "by deltalog",
    "DeltaTable.generate": "symlink manifests (for Presto and Athena) are supported by Delta Spark, not yet by "
    "deltalog",
    "DeltaTable.clone": "CLONE is supported by Delta Spark, not yet by deltalog",
    "DeltaTable.cloneAtVersion": "CLONE is supported by Delta Spark, not yet by deltalog",
    "DeltaTable.cloneAtTimestamp": "CLONE is supported by Delta Spark, not yet by deltalog",
    "DeltaTable.dropFeatureSupport": "dropping a table feature (ALTER TABLE DROP FEATURE) is supported by Delta "
    "Spark, not yet by deltalog",
}


def refuse(method: str) -> UnsupportedFeatureError:
    """The typed refusal of one of Delta Spark's methods deltalog does not build (:data:`REFUSED`)."""
    return UnsupportedFeatureError(f"{method}: {REFUSED[method]}", feature=method)


def spark_job(method: F) -> F:
    """Run ``method`` with executors that cannot import deltalog reported as a ``SetupError``."""

    @functools.wraps(method)
    def run(*args: Any, **kwargs: Any) -> Any:
        from deltalog.spark.session import executor_setup_errors

        with executor_setup_errors():
            return method(*args, **kwargs)

    return run  # type: ignore[return-value]


def sql_text(spark: SparkSession, value: Any, method: str, argument: str) -> str:
    """A condition or value as the Spark SQL text deltalog binds: text as it is, a pyspark Column as the text of
    its expression (:func:`~deltalog.spark.columns.column_sql`; one without SQL is refused, typed)."""
    if isinstance(value, str):
        return value
    if is_column(value):
        return column_sql(spark, value, f"{method}: {argument}")
    raise InvalidArgumentError(
        f"{method}: {argument} must be Spark SQL text or a pyspark Column, not {type(value).__name__}"
    )


def sql_mapping(spark: SparkSession, values: Any, method: str, argument: str) -> dict[str, str]:
    """``set``/``values``: column name -> Spark SQL text (each value text or a pyspark Column)."""
    if values is None:
        raise InvalidArgumentError(f"{method}: {argument} cannot be None")
    if not isinstance(values, Mapping):
        raise InvalidArgumentError(f"{method}: {argument} must be a dict of column name -> SQL text or Column")
    out = {}
    for name, value in values.items():
        if not isinstance(name, str):
            raise InvalidArgumentError(f"{method}: the keys of {argument} are column names, not {name!r}")
        out[name] = sql_text(spark, value, method, f"{argument}[{name!r}]")
    return out


def storage_options_of(hadoop_conf: Mapping[str, str] | None) -> dict[str, Any] | None:
    """``forPath``'s third argument: storage options in deltalake's key names; Hadoop keys refused by name."""
    if not hadoop_conf:
        return None
    hadoop = sorted(k for k in hadoop_conf if k.startswith(("fs.", "dfs.")))
    if hadoop:
        raise InvalidArgumentError(
            f"DeltaTable.forPath: {', '.join(hadoop)} are Hadoop settings; deltalog reaches storage without Hadoop: "
            "pass storage options in deltalake's key names (aws_access_key_id, azure_storage_account_name, ...)"
        )
    return dict(hadoop_conf)


__all__ = ["REFUSED", "refuse", "spark_job", "sql_mapping", "sql_text", "storage_options_of"]
