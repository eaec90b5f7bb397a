"""The identity values one data-file writer gives its rows (PROTOCOL.md "Identity Columns").

A batch without an identity column gets the column's next values, ``start + k * step`` beyond the high-water
mark the writer's table had, in input order across batches (the writer prepares one batch at a time). A batch
that has the column gives explicit values: refused by name unless the column allows explicit inserts, else
kept and remembered, since they move the mark too (:meth:`~deltalog.core.features.identity.IdentityColumn.synced`).
What was generated, and the marks the commit must record, are read back once the files are written.

Rows the table already held (a rewrite's copies, an update's new values of existing rows) are not new rows: the
writer passes them by (:meth:`~deltalog.data.prepare.BatchPreparer.prepare` with ``kept``), their values as they
are, neither generated again nor taken as explicit values, and they move no mark. New rows that must also go
into change files get their values first (:meth:`IdentityValues.complete`), so that both files hold the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.core.features import identity
from deltalog.errors import SchemaMismatchError


class IdentityValues:
    """The identity columns of a writer's table and what the writer gave them so far."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.columns = identity.columns(schema)
        self._next = {c.name: c.first() for c in self.columns}
        self._generated: dict[str, identity.Run] = {}
        self._explicit: dict[str, tuple[int, int]] = {}

    def __bool__(self) -> bool:
        return bool(self.columns)

    def fill(self, batch: pa.RecordBatch, missing: set[str]) -> pa.RecordBatch:
        """``batch`` (physical columns) with generated values in the identity columns it lacked; explicit values
        checked."""
        for col in self.columns:
            index = batch.schema.get_field_index(col.physical)
            if col.name not in missing:
                self._explicit_values(col, batch.column(index))
            elif batch.num_rows:
                batch = batch.set_column(index, batch.schema.field(index), self._generate(col, batch.num_rows))
        return batch

    def complete(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` of new rows (logical names, matched regardless of case) with generated values appended for
        the identity columns it lacks, explicit values checked: rows the writer then takes as they are."""
        names = {n.lower(): i for i, n in enumerate(batch.schema.names)}
        for col in self.columns:
            index = names.get(col.name.lower())
            if index is not None:
                self._explicit_values(col, batch.column(index))
            else:
                batch = batch.append_column(pa.field(col.name, pa.int64()), self._generate(col, batch.num_rows))
        return batch

    def _generate(self, col: identity.IdentityColumn, n: int) -> pa.Array:
        """The next ``n`` values of ``col``, remembered as generated."""
        if n == 0:
            return pa.array([], pa.int64())
        first, last = col.values(n, self._next[col.name])
        self._next[col.name] = last + col.step
        done = self._generated.get(col.name)
        self._generated[col.name] = identity.Run(col.name, done.first if done else first, last)
        return pa.array(np.arange(n, dtype=np.int64) * np.int64(col.step) + np.int64(first), pa.int64())

    def _explicit_values(self, col: identity.IdentityColumn, values: pa.Array) -> None:
        if not col.allow_explicit_insert:
            raise SchemaMismatchError(
                f"the data has values for identity column {col.name!r}, which generates its own "
                "(delta.identity.allowExplicitInsert is false: DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED); "
                "leave the column out of the data",
                column=col.name,
            )
        if len(values) == values.null_count:
            return
        bounds = pc.min_max(values)
        lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
        seen = self._explicit.get(col.name)
        self._explicit[col.name] = (lo, hi) if seen is None else (min(lo, seen[0]), max(hi, seen[1]))

    @property
    def generated(self) -> tuple[identity.Run, ...]:
        return tuple(self._generated.values())

    def marks(self) -> dict[str, int]:
        """The high-water marks the commit records: past every generated value, and synced past explicit ones."""
        out: dict[str, int] = {}
        for col in self.columns:
            mark = col.mark
            g = self._generated.get(col.name)
            if g is not None:
                mark = g.last if mark is None else col.further(mark, g.last)
            explicit = self._explicit.get(col.name)
            if explicit is not None:
                synced = identity.IdentityColumn(
                    col.name, col.physical, col.start, col.step, mark, col.allow_explicit_insert
                ).synced(*explicit)
                mark = synced if synced is not None else mark
            if mark is not None and mark != col.mark:
                out[col.name] = mark
        return out


__all__ = ["IdentityValues"]
