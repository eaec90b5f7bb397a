"""A partition predicate, in every form a caller writes it, to the live files it selects: OPTIMIZE's ``where``.

OPTIMIZE (and REORG, auto compaction) takes a predicate on partition columns only, as Delta Spark's
``verifyPartitionPredicates`` requires: a condition on a data column would ask which *rows* match, which the
log cannot answer and OPTIMIZE does not need. It is written in the one filter language
(:mod:`deltalog.data.filters`: SQL text, a pyarrow Expression, DNF tuples as ``deltalake``'s
``partition_filters`` write them, a mapping) and evaluated once per distinct partition (a small Arrow table of
typed partition values), never per file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.core import actions as A
from deltalog.core.optimize_plan import partition_key
from deltalog.core.partitions import PartitionValueError, parse_value
from deltalog.core.schema import top_level_fields
from deltalog.data.predicate import row_filter
from deltalog.data.read import read_schema
from deltalog.errors import InvalidArgumentError

if TYPE_CHECKING:
    from deltalog.table.snapshot import Snapshot

_OPS = {"=", "==", "!=", "<", "<=", ">", ">=", "in", "not in"}


@dataclass(frozen=True)
class Selection:
    """The live files a partition predicate selects, and the predicate's text as a commit records it
    (None: no predicate, the whole table)."""

    files: tuple[A.Add, ...]
    text: str | None


def _partition_table(snap: Snapshot, adds: Sequence[A.Add]) -> tuple[pa.RecordBatch, list[Any]]:
    """One row of typed partition values (logical names) per distinct partition, and each row's key."""
    columns = list(snap.partition_columns)
    spec = read_schema(snap.schema_json, columns, snap.column_mapping_mode, columns)
    keys = list(dict.fromkeys(partition_key(a) for a in adds))
    types = {f["name"]: f["type"] for f in top_level_fields(snap.schema_json)}
    arrays = []
    for column in spec.columns:
        values = []
        for key in keys:
            raw = dict(key).get(column.physical)
            try:
                values.append(parse_value(types[column.name], raw))
            except PartitionValueError as exc:
                raise InvalidArgumentError(f"partition value {raw!r} of {column.name!r}: {exc}") from None
        arrays.append(pa.array(values, type=column.type))
    return pa.RecordBatch.from_arrays(arrays, schema=spec.schema), keys


def select(snap: Snapshot, where: Any) -> Selection:
    """The live files of ``snap`` in the partitions ``where`` matches (every file for None).

    Refused, naming it, before anything is read: a condition on a data column or an unknown column, a value
    that is not of its column's type, text outside the SQL subset.
    """
    adds = list(snap.add_actions())
    if where is None:
        return Selection(tuple(adds), None)
    chosen = row_filter(where, snap.schema_json, snap.partition_columns)
    partitions = set(snap.partition_columns)
    data = [c for c in chosen.columns if c not in partitions]
    if data:
        raise InvalidArgumentError(
            f"OPTIMIZE takes a predicate on partition columns only ({sorted(partitions) or 'the table has none'}), "
            f"and {data[0]!r} is a data column",
        )
    if not adds:
        return Selection((), chosen.text)
    batch, keys = _partition_table(snap, adds)
    matched = {keys[i] for i in chosen.positions(batch).tolist()}
    return Selection(tuple(a for a in adds if partition_key(a) in matched), chosen.text)


__all__ = ["Selection", "select"]
