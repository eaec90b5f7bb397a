"""A row predicate over a table's logical rows, in the forms a caller writes it, decided row by row.

Deleting rows, replacing them (``replace_where``) and the command line's ``scan --where`` take a predicate as:

* a pyarrow compute ``Expression`` on logical names, evaluated by pyarrow;
* SQL text in the subset :mod:`deltalog.data.sql` parses (comparisons, ``AND``/``OR``/``NOT``, ``IS [NOT]
  NULL``, ``IN``, ``BETWEEN``, ``+ - *``), evaluated with Spark's semantics by :mod:`deltalog.data.evaluate`,
  the evaluator of CHECK constraints, so ``deltalog scan --where "x > 1"`` means what it means in Spark SQL;
* a mapping in :meth:`deltalog.Snapshot.files`' ``where`` form (``{"c": v}``, ``{"c": [v1, v2]}``,
  ``{"c": {">=": a}}``), values read as the column's type.

A row matches when the predicate is TRUE; false and null do not match (SQL's ``WHERE``).

Which files can hold a match is decided by a pyarrow expression, ``pruning``, handed to the scan's skipping
(:mod:`deltalog.data.skipping`). For an Expression or a mapping it is the predicate itself. SQL is translated
only where the two dialects provably agree, and only into something *implied* by the predicate (conjuncts that
cannot be translated are dropped, never guessed): pruning may then keep more files than needed, never fewer.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.core.partitions import PartitionValueError, conditions_from_where, parse_value
from deltalog.core.schema import top_level_fields
from deltalog.data import sql
from deltalog.data.evaluate import Frame, compile_expression, evaluate
from deltalog.data.read import read_schema
from deltalog.data.skipping import check_filter, referenced_columns, shown
from deltalog.data.sql import SqlSubsetError
from deltalog.data.types import plan_schema
from deltalog.errors import InvalidArgumentError

#: the column a batch gets while an Expression is evaluated on it, to find the matching rows' positions
_ROW = "__deltalog_row_position__"
_FALSE = pc.scalar(False)


@dataclass(frozen=True)
class RowFilter:
    """One predicate against one table schema, checked and ready to evaluate.

    ``columns`` are the top-level columns (logical names) it reads; ``pruning`` a pyarrow expression every
    matching row satisfies (None: it says nothing about files); ``where`` the predicate in the ``where`` form
    when it was given so (a transaction records partition conditions from it); ``text`` how a commit records it.
    """

    text: str
    columns: tuple[str, ...]
    pruning: pc.Expression | None
    where: Mapping[str, Any] | None
    _positions: Callable[[pa.RecordBatch], np.ndarray]

    def positions(self, batch: pa.RecordBatch) -> np.ndarray:
        """Positions (ascending ``int64``) of the rows of ``batch`` (logical columns) where the predicate is TRUE."""
        return self._positions(batch)

    def mask(self, batch: pa.RecordBatch) -> pa.Array:
        """A boolean array over ``batch``: True where the predicate is TRUE (never null)."""
        keep = np.zeros(batch.num_rows, dtype=bool)
        keep[self.positions(batch)] = True
        return pa.array(keep)


def _expression_positions(expression: pc.Expression) -> Callable[[pa.RecordBatch], np.ndarray]:
    def positions(batch: pa.RecordBatch) -> np.ndarray:
        rows = pa.array(np.arange(batch.num_rows, dtype=np.int64))
        marked = pa.Table.from_batches([batch]).append_column(_ROW, rows)
        try:
            found = marked.filter(expression).column(_ROW)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"the predicate {shown(expression)} cannot be evaluated: {exc}") from None
        return np.asarray(found.to_numpy(), dtype=np.int64)

    return positions


def _from_expression(
    expression: pc.Expression, schema: Mapping[str, Any], partition_columns: Sequence[str]
) -> RowFilter:
    arrow = read_schema(schema, partition_columns).schema
    checked = check_filter(expression, arrow)
    columns = tuple(referenced_columns(checked, arrow))
    return RowFilter(shown(checked, 1000), columns, checked, None, _expression_positions(checked))


# ---------------------------------------------------------------------------------------------- the where form
def _condition_expression(column: str, op: str, values: Sequence[Any], arrow_type: pa.DataType) -> pc.Expression:
    field = pc.field(column)

    def scalar(value: Any) -> pc.Expression:
        return pc.scalar(pa.scalar(value, type=arrow_type))

    if op in ("in", "not in"):
        present = [v for v in values if v is not None]
        hit = field.isin(pa.array(present, type=arrow_type)) if present else _FALSE
        if op == "in":
            return hit | field.is_null() if len(present) < len(values) else hit
        if len(present) < len(values):
            return _FALSE  # SQL: NOT IN over a list holding NULL is never true
        return field.is_valid() & ~hit
    target = values[0]
    if target is None:
        return field.is_null() if op in ("=", "==") else _FALSE
    compare = {
        "=": field.__eq__,
        "==": field.__eq__,
        "!=": field.__ne__,
        "<": field.__lt__,
        "<=": field.__le__,
        ">": field.__gt__,
        ">=": field.__ge__,
    }[op]
    return compare(scalar(target))


def _from_where(where: Mapping[str, Any], schema: Mapping[str, Any], partition_columns: Sequence[str]) -> RowFilter:
    fields = {f["name"]: f for f in top_level_fields(schema)}
    arrow = read_schema(schema, partition_columns).schema
    try:
        conditions = conditions_from_where(where)
    except PartitionValueError as exc:
        raise InvalidArgumentError(str(exc)) from None
    if not conditions:
        raise InvalidArgumentError("an empty predicate mapping selects nothing; pass None to mean every row")
    expression: pc.Expression | None = None
    for c in conditions:
        if c.column not in fields:
            raise InvalidArgumentError(f"unknown column {c.column!r}; the table has {sorted(fields) or 'no columns'}")
        try:
            values = [parse_value(fields[c.column]["type"], v) for v in c.values]
        except PartitionValueError as exc:
            raise InvalidArgumentError(f"column {c.column!r}: {exc}") from None
        part = _condition_expression(c.column, c.op, values, arrow.field(c.column).type)
        expression = part if expression is None else expression & part
    assert expression is not None
    built = _from_expression(expression, schema, partition_columns)
    return RowFilter(_where_text(where), built.columns, built.pruning, dict(where), built.positions)


def _where_text(where: Mapping[str, Any]) -> str:
    return " AND ".join(
        f"{c.column} {c.op} {list(c.values) if len(c.values) > 1 else c.values[0]!r}"
        for c in conditions_from_where(where)
    )


# ---------------------------------------------------------------------------------------------- SQL
_SQL_OPS = {"=": "__eq__", "!=": "__ne__", "<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__"}
_MIRROR = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_INTEGERS = ("byte", "short", "integer", "long")


def _literal_scalar(node: sql.Node, delta_type: Any) -> pa.Scalar | None:
    """A literal as a scalar of the column's type, only where Spark and pyarrow compare it alike."""
    if not isinstance(node, sql.Literal) or not isinstance(delta_type, str):
        return None
    if node.kind == "int" and delta_type in _INTEGERS:
        return pa.scalar(int(node.value), pa.int64())
    if node.kind == "string" and delta_type == "string":
        return pa.scalar(str(node.value), pa.string())
    if node.kind == "boolean" and delta_type == "boolean":
        return pa.scalar(bool(node.value))
    if node.kind in ("date", "string") and delta_type == "date":
        try:
            return pa.scalar(dt.date.fromisoformat(str(node.value).strip()), pa.date32())
        except ValueError:
            return None
    return None


def _column_name(node: sql.Node, types: Mapping[str, Any]) -> str | None:
    """The table's name for a top-level column reference (Spark resolves names case-insensitively)."""
    if not isinstance(node, sql.Column) or len(node.path) != 1:
        return None
    found = [n for n in types if n.lower() == node.path[0].lower()]
    return found[0] if found else None


def _implied(node: sql.Node, types: Mapping[str, Any]) -> pc.Expression | None:
    """A pyarrow expression every row satisfying ``node`` also satisfies, or None when there is none to give."""
    if isinstance(node, sql.Binary) and node.op == "and":
        left, right = _implied(node.left, types), _implied(node.right, types)
        if left is None or right is None:
            return left if right is None else right
        return left & right
    if isinstance(node, sql.Binary) and node.op == "or":
        left, right = _implied(node.left, types), _implied(node.right, types)
        return None if left is None or right is None else left | right
    if isinstance(node, sql.IsNull):
        name = _column_name(node.operand, types)
        if name is None:
            return None
        return pc.field(name).is_valid() if node.negated else pc.field(name).is_null()
    if isinstance(node, sql.Binary) and node.op in _SQL_OPS:
        op, column, literal = node.op, node.left, node.right
        if _column_name(column, types) is None:
            op, column, literal = _MIRROR[op], node.right, node.left
        name = _column_name(column, types)
        value = _literal_scalar(literal, types[name]) if name is not None else None
        if name is None or value is None:
            return None
        return getattr(pc.field(name), _SQL_OPS[op])(pc.scalar(value))
    if isinstance(node, sql.In) and not node.negated:
        name = _column_name(node.operand, types)
        values = [_literal_scalar(i, types[name]) for i in node.items] if name is not None else [None]
        known = [v for v in values if v is not None]
        if name is None or len(known) < len(values):
            return None
        return pc.field(name).isin(pa.array([v.as_py() for v in known], known[0].type))
    if isinstance(node, sql.Between) and not node.negated:
        return _implied(
            sql.Binary("and", sql.Binary(">=", node.operand, node.low), sql.Binary("<=", node.operand, node.high)),
            types,
        )
    return None


def _from_sql(text: str, schema: Mapping[str, Any], partition_columns: Sequence[str]) -> RowFilter:
    plans = plan_schema(schema, False)
    try:
        node = sql.parse(text)
        compiled = compile_expression(node, plans)
        if not (pa.types.is_boolean(compiled.type) or pa.types.is_null(compiled.type)):
            raise SqlSubsetError(f"the predicate is of type {compiled.type}, not boolean")
    except SqlSubsetError as exc:
        raise InvalidArgumentError(f"predicate {text!r}: {exc}") from None
    types = {f["name"]: f["type"] for f in top_level_fields(schema)}
    folded = {n.lower(): n for n in types}
    columns = tuple(dict.fromkeys(folded[path[0].lower()] for path in sql.columns(node)))
    names = [p.name for p in plans]

    def positions(batch: pa.RecordBatch) -> np.ndarray:
        # the evaluator reads columns by the names it was compiled with: give it the table's, in full
        frame = Frame(pa.RecordBatch.from_arrays([_column(batch, n) for n in names], names=names))
        try:
            value = evaluate(compiled, frame)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise InvalidArgumentError(f"predicate {text!r} cannot be evaluated: {exc}") from None
        if pa.types.is_null(value.type):
            return np.empty(0, dtype=np.int64)
        return np.asarray(pc.indices_nonzero(pc.fill_null(value, False)).to_numpy(), dtype=np.int64)

    return RowFilter(text, columns, _implied(node, types), None, positions)


def _column(batch: pa.RecordBatch, name: str) -> pa.Array:
    index = batch.schema.get_field_index(name)
    return batch.column(index) if index >= 0 else pa.nulls(batch.num_rows)


def row_filter(predicate: Any, schema: Mapping[str, Any], partition_columns: Sequence[str] = ()) -> RowFilter:
    """``predicate`` (an Expression, SQL text or a ``where`` mapping) checked against the table's ``schema`` (Delta
    JSON, logical names); an unknown column, text outside the SQL subset or a value of the wrong type is an
    :class:`InvalidArgumentError` naming it."""
    if isinstance(predicate, pc.Expression):
        return _from_expression(predicate, schema, partition_columns)
    if isinstance(predicate, str):
        return _from_sql(predicate, schema, partition_columns)
    if isinstance(predicate, Mapping):
        return _from_where(predicate, schema, partition_columns)
    raise InvalidArgumentError(
        f"a predicate is a pyarrow compute Expression, SQL text or a where mapping, not {type(predicate).__name__}"
    )


__all__ = ["RowFilter", "row_filter"]
