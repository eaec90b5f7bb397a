"""The MERGE statement as a builder: ``log.merge(source, predicate).when_matched_update(...)....execute()``.

The names and arguments are ``deltalake``'s (``TableMerger``) and Delta Spark's Python API's: each ``when_*``
call adds one clause, in order, and returns the builder; nothing is read or written before :meth:`execute`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from deltalog.dml.merge import clauses as C
from deltalog.dml.merge.execute import merge

if TYPE_CHECKING:
    from deltalog.table.commit import CommitResult, Transaction


class MergeBuilder:
    """A MERGE being built; see :meth:`deltalog.DeltaLog.merge`."""

    def __init__(
        self,
        start_transaction: Callable[[], Transaction],
        source: Any,
        predicate: Any,
        *,
        source_alias: str | None = "s",
        target_alias: str | None = "t",
        schema_mode: str | None = None,
        max_memory: int | None = None,
        session_time_zone: str | None = None,
    ) -> None:
        self._start = start_transaction
        self._source = source
        self._predicate = predicate
        self._options: dict[str, Any] = {
            "source_alias": source_alias,
            "target_alias": target_alias,
            "schema_mode": schema_mode,
            "max_memory": max_memory,
            "session_time_zone": session_time_zone,
        }
        self._clauses: list[C.Clause] = []

    def _add(self, clause: C.Clause) -> MergeBuilder:
        self._clauses.append(clause)
        return self

    def when_matched_update(self, updates: Mapping[str, Any], predicate: Any = None) -> MergeBuilder:
        """``WHEN MATCHED [AND predicate] THEN UPDATE SET column = value, ...`` (values are Spark SQL)."""
        return self._add(C.clause(C.MATCHED, C.UPDATE, predicate, updates))

    def when_matched_update_all(self, predicate: Any = None) -> MergeBuilder:
        """``WHEN MATCHED [AND predicate] THEN UPDATE SET *``: every column from the source's of that name."""
        return self._add(C.clause(C.MATCHED, C.UPDATE, predicate, star=True))

    def when_matched_delete(self, predicate: Any = None) -> MergeBuilder:
        """``WHEN MATCHED [AND predicate] THEN DELETE``."""
        return self._add(C.clause(C.MATCHED, C.DELETE, predicate))

    def when_not_matched_insert(self, updates: Mapping[str, Any], predicate: Any = None) -> MergeBuilder:
        """``WHEN NOT MATCHED [AND predicate] THEN INSERT (column, ...) VALUES (value, ...)``."""
        return self._add(C.clause(C.NOT_MATCHED, C.INSERT, predicate, updates))

    def when_not_matched_insert_all(self, predicate: Any = None) -> MergeBuilder:
        """``WHEN NOT MATCHED [AND predicate] THEN INSERT *``."""
        return self._add(C.clause(C.NOT_MATCHED, C.INSERT, predicate, star=True))

    def when_not_matched_by_source_update(self, updates: Mapping[str, Any], predicate: Any = None) -> MergeBuilder:
        """``WHEN NOT MATCHED BY SOURCE [AND predicate] THEN UPDATE SET ...`` (target columns only)."""
        return self._add(C.clause(C.NOT_MATCHED_BY_SOURCE, C.UPDATE, predicate, updates))

    def when_not_matched_by_source_delete(self, predicate: Any = None) -> MergeBuilder:
        """``WHEN NOT MATCHED BY SOURCE [AND predicate] THEN DELETE``."""
        return self._add(C.clause(C.NOT_MATCHED_BY_SOURCE, C.DELETE, predicate))

    def execute(self) -> CommitResult:
        """Run the merge as one commit (see :func:`deltalog.dml.merge.execute.merge`); its ``metrics`` are Delta
        Spark's MERGE metrics, also in the commit's ``commitInfo``."""
        return merge(self._start, self._source, self._predicate, list(self._clauses), **self._options)


__all__ = ["MergeBuilder"]
