"""A partition predicate, in every form a caller writes it, to the live files it selects: OPTIMIZE's ``where``.

OPTIMIZE (and REORG, auto compaction) takes a predicate on partition columns only, as Delta Spark's
``verifyPartitionPredicates`` requires: a condition on a data column would ask which *rows* match, which the
log cannot answer and OPTIMIZE does not need. Accepted forms:

* SQL text in deltalog's subset (:mod:`deltalog.data.sql`), evaluated with Spark's semantics;
* a pyarrow compute ``Expression`` on logical names;
* a mapping in :meth:`deltalog.Snapshot.files`' ``where`` form;
* DNF as ``deltalake``'s ``partition_filters``: a list of ``(column, op, value)`` tuples ANDed, or a list of
  such lists ORed, values written as partition values are (strings, read as the column's type).

This module is the one place a ``where`` becomes files, so that the expression layer can replace the
conversion behind :func:`select` without touching OPTIMIZE. The predicate is evaluated once per distinct
partition (a small Arrow table of typed partition values), never per file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

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


def _typed(column: str, delta_type: Any, raw: Any, arrow_type: pa.DataType) -> pa.Scalar:
    try:
        value = parse_value(delta_type, None if raw is None else str(raw))
    except PartitionValueError as exc:
        raise InvalidArgumentError(f"partition filter on {column!r}: {exc}") from None
    return pa.scalar(value, type=arrow_type)


def _conjunction(terms: Sequence[Any], schema: Mapping[str, Any], arrow: pa.Schema) -> pc.Expression:
    types = {f["name"]: f["type"] for f in top_level_fields(schema)}
    out: pc.Expression | None = None
    for term in terms:
        if not isinstance(term, (tuple, list)) or len(term) != 3 or str(term[1]).lower() not in _OPS:
            raise InvalidArgumentError(
                f"a partition filter is a (column, op, value) tuple with op one of {sorted(_OPS)}, not {term!r}"
            )
        column, op, value = str(term[0]), str(term[1]).lower(), term[2]
        if column not in types:
            raise InvalidArgumentError(f"unknown column {column!r}; the table has {sorted(types) or 'no columns'}")
        t = arrow.field(column).type
        field = pc.field(column)
        if op in ("in", "not in"):
            if not isinstance(value, (list, tuple, set)):
                raise InvalidArgumentError(f"partition filter {term!r}: {op!r} takes a list of values")
            hit = field.isin(pa.array([_typed(column, types[column], v, t).as_py() for v in value], t))
            part = hit if op == "in" else ~hit
        else:
            scalar = pc.scalar(_typed(column, types[column], value, t))
            part = {
                "=": field == scalar,
                "==": field == scalar,
                "!=": field != scalar,
                "<": field < scalar,
                "<=": field <= scalar,
                ">": field > scalar,
                ">=": field >= scalar,
            }[op]
        out = part if out is None else out & part
    if out is None:
        raise InvalidArgumentError("an empty partition filter selects nothing; pass None to mean every partition")
    return out


def _from_dnf(dnf: Sequence[Any], schema: Mapping[str, Any], partition_columns: Sequence[str]) -> pc.Expression:
    """deltalake's ``partition_filters`` (a conjunction of tuples, or a disjunction of conjunctions)."""
    arrow = read_schema(schema, partition_columns).schema
    if dnf and all(isinstance(t, (list, tuple)) and t and isinstance(t[0], (list, tuple)) for t in dnf):
        out: pc.Expression | None = None
        for conj in dnf:
            part = _conjunction(conj, schema, arrow)
            out = part if out is None else out | part
        assert out is not None
        return out
    return _conjunction(dnf, schema, arrow)


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
    predicate = where
    if isinstance(where, (list, tuple)):
        predicate = _from_dnf(where, snap.schema_json, snap.partition_columns)
    chosen = row_filter(predicate, snap.schema_json, snap.partition_columns)
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
