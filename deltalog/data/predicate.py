"""A row predicate over a table's logical rows, in any form a caller writes it, decided row by row.

Deleting rows, replacing them (``replace_where``), scans (``to_arrow``/``scan``/``files``) and the command line's
``--where`` take a filter as SQL text, a pyarrow compute ``Expression``, deltalake's DNF tuples or a mapping;
:mod:`deltalog.data.filters` turns each into the expression tree, bound here against the table's schema
(logical names). A row matches when the predicate is TRUE; false and null do not match (SQL's ``WHERE``).

* Rows: a tree is evaluated with Spark's semantics (:mod:`deltalog.compute`), so ``x > 1`` means what it means
  in Spark SQL whichever way it was written; an ``Expression`` is evaluated by pyarrow, with pyarrow's meaning,
  as the caller wrote it for pyarrow.
* Files: ``pruning`` is a pyarrow expression every matching row satisfies, handed to the scan's skipping
  (:mod:`deltalog.data.skipping`): the Expression itself, or what the tree implies where the two dialects
  provably agree (conjuncts that cannot be translated are dropped, never guessed).
* Partitions: ``partition`` is what the tree says about partition columns alone, its partition-only conjuncts
  plus those derived through generated partition columns (:mod:`deltalog.data.partition_pruning`); it prunes
  files exactly and is what a transaction records as read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.compute import Evaluation, evaluate
from deltalog.compute.arrow_types import arrow_type
from deltalog.core.files.partitions import Condition
from deltalog.data.expressions import fold, logical_scope
from deltalog.data.filters import source
from deltalog.data.read import read_schema
from deltalog.errors import InvalidArgumentError
from deltalog.expr import bind_predicate
from deltalog.expr import tree as X
from deltalog.expr import types as T

#: the column a batch gets while an Expression is evaluated on it, to find the matching rows' positions
_ROW = "__deltalog_row_position__"
_FLOATS = (T.FLOAT, T.DOUBLE)


@dataclass(frozen=True)
class RowFilter:
    """One predicate against one table schema, checked and ready to evaluate.

    ``columns`` are the top-level columns (logical names) it reads; ``tree`` the bound (folded) predicate (None for a
    pyarrow Expression that could not be read as one); ``partition`` what it implies about partition columns
    alone (None: nothing); ``exact_partition`` whether that is the whole predicate; ``text`` how a commit
    records it.
    """

    text: str
    columns: tuple[str, ...]
    tree: X.Expr | None = None
    arrow: pc.Expression | None = None
    partition: X.Expr | None = None
    exact_partition: bool = False
    session_time_zone: str = "UTC"
    now_micros: int | None = field(default=None, compare=False)
    _positions: Callable[[pa.RecordBatch], np.ndarray] | None = field(default=None, compare=False, repr=False)

    @functools.cached_property
    def pruning(self) -> pc.Expression | None:
        """A pyarrow expression every matching row satisfies (None: nothing to say about files): the caller's
        Expression, or what the tree and its partition part imply (built on first use: it loads Arrow's
        expression machinery)."""
        if self.arrow is not None:
            return self.arrow
        parts = [p for p in (implied(t) for t in (self.tree, self.partition) if t is not None) if p is not None]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else parts[0] & parts[1]

    def positions(self, batch: pa.RecordBatch) -> np.ndarray:
        """Positions (ascending ``int64``) of the rows of ``batch`` (logical columns) where the predicate is TRUE."""
        if self._positions is not None:
            return self._positions(batch)
        if self.arrow is not None:
            return _expression_positions(self.arrow, batch)
        if self.tree is None:
            return np.arange(batch.num_rows, dtype=np.int64)
        value = evaluate(
            self.tree,
            Evaluation.of(batch, session_time_zone=self.session_time_zone, now_micros=self.now_micros),
            self.text,
        )
        return np.asarray(pc.indices_nonzero(pc.fill_null(value, False)).to_numpy(), dtype=np.int64)

    def mask(self, batch: pa.RecordBatch) -> pa.Array:
        """A boolean array over ``batch``: True where the predicate is TRUE (never null)."""
        keep = np.zeros(batch.num_rows, dtype=bool)
        keep[self.positions(batch)] = True
        return pa.array(keep)

    def filter(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The rows of ``batch`` where the predicate is TRUE."""
        if self.arrow is not None:
            return batch.filter(self.arrow)
        return batch.take(pa.array(self.positions(batch)))

    def conditions(self) -> tuple[Condition, ...]:
        """The partition conditions a transaction records as read (ANDed): every partition-only conjunct of the
        form ``column op literal``, ``IN``, ``IS NULL`` or an OR of equalities on one column. A conjunct of
        another form is left out, which widens the recorded read (never narrows it)."""
        if self.partition is None:
            return ()
        out = []
        for c in X.conjuncts(self.partition):
            found = _condition_of(c)
            if found is not None:
                out.append(found)
        return tuple(out)


def _expression_positions(expression: pc.Expression, batch: pa.RecordBatch) -> np.ndarray:
    rows = pa.array(np.arange(batch.num_rows, dtype=np.int64))
    marked = pa.Table.from_batches([batch]).append_column(_ROW, rows)
    try:
        found = marked.filter(expression).column(_ROW)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        from deltalog.data.skipping import shown

        raise InvalidArgumentError(f"the predicate {shown(expression)} cannot be evaluated: {exc}") from None
    return np.asarray(found.to_numpy(), dtype=np.int64)


# ---------------------------------------------------------------------------------------------- what it implies
_MIRROR = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_ARROW = {"=": "__eq__", "!=": "__ne__", "<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__"}


def _top(e: X.Expr) -> X.Field | None:
    return e if isinstance(e, X.Field) and len(e.path) == 1 else None


def _scalar(lit: X.Literal) -> pa.Scalar:
    if lit.type == T.DATE:
        return pa.scalar(lit.value, pa.int32()).cast(pa.date32())
    if lit.type in (T.TIMESTAMP, T.TIMESTAMP_NTZ):
        return pa.scalar(lit.value, pa.int64()).cast(arrow_type(lit.type))
    return pa.scalar(lit.value, arrow_type(lit.type))


def _comparison(e: X.Expr) -> tuple[X.Field, str, X.Literal] | None:
    """``column op literal`` (either side), the column top-level and not a float (NaN orders differently)."""
    if not (isinstance(e, X.Call) and e.name in _MIRROR and len(e.args) == 2):
        return None
    left, right, op = e.args[0], e.args[1], e.name
    if _top(left) is None:
        left, right, op = right, left, _MIRROR[op]
    column = _top(left)
    if column is None or not isinstance(right, X.Literal) or right.value is None or column.type in _FLOATS:
        return None
    if not T.is_atomic(column.type) or right.type != column.type:
        return None
    return column, op, right


def implied(e: X.Expr) -> pc.Expression | None:
    """A pyarrow expression every row satisfying ``e`` (bound, folded) also satisfies, or None."""
    if isinstance(e, X.Call) and e.name == "and":
        parts = [p for p in (implied(a) for a in e.args) if p is not None]
        if not parts:
            return None
        out = parts[0]
        for p in parts[1:]:
            out = out & p
        return out
    if isinstance(e, X.Call) and e.name == "or":
        parts = [implied(a) for a in e.args]
        if any(p is None for p in parts):
            return None
        out = parts[0]
        for p in parts[1:]:
            out = out | p
        return out
    if isinstance(e, X.Call) and e.name in ("is_null", "is_not_null"):
        column = _top(e.args[0])
        if column is None:
            return None
        f = pc.field(column.path[0])
        return f.is_null() if e.name == "is_null" else f.is_valid()
    if isinstance(e, X.Call) and e.name == "in":
        column = _top(e.args[0])
        items = e.args[1:]
        if column is None or column.type in _FLOATS or not T.is_atomic(column.type):
            return None
        if not all(isinstance(i, X.Literal) and i.type == column.type and i.value is not None for i in items):
            return None
        values = pa.array([_scalar(i).as_py() for i in items if isinstance(i, X.Literal)], arrow_type(column.type))
        return pc.field(column.path[0]).isin(values)
    found = _comparison(e)
    if found is None:
        return None
    column, op, literal = found
    return getattr(pc.field(column.path[0]), _ARROW[op])(pc.scalar(_scalar(literal)))


def _condition_of(e: X.Expr) -> Condition | None:
    found = _comparison(e)
    if found is not None:
        column, op, literal = found
        return Condition(column.path[0], op, (X.python_value(literal.value, literal.type),))
    if isinstance(e, X.Call) and e.name == "is_null":
        nulls = _top(e.args[0])
        return Condition(nulls.path[0], "=", (None,)) if nulls is not None else None
    if isinstance(e, X.Call) and e.name == "in":
        member = _top(e.args[0])
        if member is None or member.type in _FLOATS:
            return None
        if not all(isinstance(i, X.Literal) and i.type == member.type for i in e.args[1:]):
            return None
        values = tuple(X.python_value(i.value, i.type) for i in e.args[1:] if isinstance(i, X.Literal))
        return Condition(member.path[0], "in", values)
    if isinstance(e, X.Call) and e.name == "or":
        parts = [_condition_of(a) for a in e.args]
        if any(p is None for p in parts):
            return None
        names = {p.column for p in parts if p is not None}
        if len(names) != 1 or not all(p is not None and p.op in ("=", "in") for p in parts):
            return None
        values = tuple(v for p in parts if p is not None for v in p.values)
        return Condition(names.pop(), "in", values)
    return None


# ---------------------------------------------------------------------------------------------- building
def _top_columns(tree: X.Expr) -> tuple[str, ...]:
    return tuple(dict.fromkeys(f.path[0] for f in X.references(tree)))


def row_filter(
    predicate: Any,
    schema: Mapping[str, Any],
    partition_columns: Sequence[str] = (),
    session_time_zone: str | None = None,
) -> RowFilter:
    """``predicate`` (SQL text, a pyarrow Expression, DNF tuples or a mapping) checked against the table's
    ``schema`` (Delta JSON, logical names). Text that does not parse, an unknown or ambiguous column, a type
    Spark rejects or a value of the wrong type is an :class:`~deltalog.errors.InvalidArgumentError` naming it;
    a function deltalog does not evaluate an :class:`~deltalog.errors.UnsupportedExpressionError`."""
    from deltalog.data.partition_pruning import partition_part

    tz = session_time_zone or "UTC"
    scope = logical_scope(schema)
    src = source(predicate, scope.relations[0].fields)
    if src.arrow is not None:
        from deltalog.data.skipping import check_filter, referenced_columns  # pyarrow.dataset: on first use

        arrow_schema = read_schema(schema, partition_columns).schema
        checked = check_filter(src.arrow, arrow_schema)
        columns = tuple(referenced_columns(checked, arrow_schema))
        tree = bind_predicate(src.tree, scope, src.text) if src.tree is not None else None
        partition, exact = (
            (None, False) if tree is None else partition_part(fold(tree, tz), schema, partition_columns, tz)
        )
        return RowFilter(src.text, columns, tree, checked, partition, exact, tz)
    assert src.tree is not None
    tree = bind_predicate(src.tree, scope, src.text)
    folded = fold(tree, tz)
    partition, exact = partition_part(folded, schema, partition_columns, tz)
    return RowFilter(src.text, _top_columns(tree), folded, None, partition, exact, tz)


def tree_filter(
    tree: X.Expr,
    schema: Mapping[str, Any],
    partition_columns: Sequence[str] = (),
    session_time_zone: str | None = None,
    text: str | None = None,
) -> RowFilter:
    """A predicate already bound against the table's logical scope (relation 0: a merge's target-only
    conjuncts, an UPDATE's condition) as a :class:`RowFilter`; ``text`` is how a commit records it."""
    from deltalog.data.partition_pruning import partition_part

    tz = session_time_zone or "UTC"
    folded = fold(tree, tz)
    partition, exact = partition_part(folded, schema, partition_columns, tz)
    return RowFilter(text or X.to_sql(tree), _top_columns(tree), folded, None, partition, exact, tz)


def every_row() -> RowFilter:
    """The predicate that matches every row (a delete without a predicate)."""
    return RowFilter("true", (), X.TRUE, _positions=lambda b: np.arange(b.num_rows, dtype=np.int64))


__all__ = ["RowFilter", "every_row", "implied", "row_filter", "tree_filter"]
