"""Operation names and whether each changes data, as Delta Spark records them in ``commitInfo.operation``.

Why a table: under WriteSerializable, Spark lets a commit with no data-changing file action run at
SnapshotIsolation only when its *operation* does not change data either (``canDowngradeToSnapshotIsolation``,
util/TransactionHelper.scala:111-145). deltalog takes the operation as a free-form string, so it needs Spark's
``changesData`` flag per name. The facts are from delta-io/delta ``DeltaOperations.scala`` (each
``Operation`` subclass's ``name`` and its ``changesData`` override; the default is false).

A name not in the table counts as changing data: deltalog cannot know what a caller's operation did, and
assuming it changed data only keeps the stricter level (delta-write-rules.md section 4).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: Spark's operation names -> ``changesData``.
SPARK_OPERATIONS: Mapping[str, bool] = MappingProxyType(
    {
        # changesData = true
        "WRITE": True,
        "STREAMING UPDATE": True,
        "DELETE": True,
        "TRUNCATE": True,
        "CONVERT": True,
        "MERGE": True,
        "UPDATE": True,
        "CREATE TABLE AS SELECT": True,  # CreateTable: changesData = asSelect
        "REPLACE TABLE": True,  # ReplaceTable: always true, with or without AS SELECT / OR CREATE
        "REPLACE TABLE AS SELECT": True,
        "CREATE OR REPLACE TABLE": True,
        "CREATE OR REPLACE TABLE AS SELECT": True,
        "RESTORE": True,
        "CLONE": True,
        # changesData = false (the Operation default)
        "CREATE TABLE": False,
        "SET TBLPROPERTIES": False,
        "UNSET TBLPROPERTIES": False,
        "DROP FEATURE": False,
        "ADD COLUMNS": False,
        "DROP COLUMNS": False,
        "RENAME COLUMN": False,
        "CHANGE COLUMN": False,
        "REPLACE COLUMNS": False,
        "UPGRADE PROTOCOL": False,
        "Manual Update": False,
        "Empty Commit": False,
        "UPDATE SCHEMA": False,
        "ADD CONSTRAINT": False,
        "DROP CONSTRAINT": False,
        "COMPUTE STATS": False,
        "OPTIMIZE": False,
        "REORG": False,
        "VACUUM START": False,
        "VACUUM END": False,
        "CLUSTER BY": False,
        "ROW TRACKING BACKFILL": False,
        "REMOVE COLUMN MAPPING": False,
        "REORG TABLE UPGRADE UNIFORM": False,
    }
)


def changes_data(operation: str | None) -> bool:
    """Spark's ``changesData`` for ``operation``; True for any name Spark does not define (or none)."""
    if operation is None:
        return True
    return SPARK_OPERATIONS.get(operation, True)


__all__ = ["SPARK_OPERATIONS", "changes_data"]
