"""One conversion layer: every filter form a caller writes, as deltalog's expression tree.

* SQL text (Spark SQL, parsed by :mod:`deltalog.expr.parse`);
* a pyarrow compute ``Expression``: pyarrow cannot be walked from Python, so its printed form is read back
  for the shapes a filter has (comparisons of a column with a literal, ``is_in``, ``is_null``/``is_valid``,
  ``and``/``or``/``invert``), with each literal typed as its column, and kept only if the tree prints back to
  the very same text through pyarrow; anything else stays an opaque Expression (its rows are selected by
  pyarrow, and it says nothing about partitions);
* deltalake's DNF tuples: ``[("a", "=", 1), ("b", "in", [...])]`` is an AND, a list of such lists an OR;
* a mapping: ``{"c": v}`` (``=``), ``{"c": [v1, v2]}`` (``IN``), ``{"c": {">=": a, "<": b}}``.

Tuples and mappings read each value as the column's type, as :meth:`deltalog.Snapshot.files` always has
(``"2024-01-01"`` for a date, ``"5"`` for a long); ``None`` means NULL: ``=`` is ``IS NULL``, ``IN`` with a
``None`` also matches null, ``NOT IN`` with one matches nothing, any other comparison with it matches nothing.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.core.partitions import PartitionValueError, conditions_from_where, parse_value
from deltalog.errors import InvalidArgumentError, InvalidExpressionError
from deltalog.expr import tree as X
from deltalog.expr import types as T
from deltalog.expr.parse import parse

_OPS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_ARROW_OPS = {"==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


@dataclass(frozen=True)
class Source:
    """A filter as a tree (unbound column references) and as text; ``arrow`` is the caller's Expression when
    given as one (None otherwise); ``tree`` is None when an Expression could not be read back."""

    tree: X.Expr | None
    text: str
    arrow: pc.Expression | None = None


# ---------------------------------------------------------------------------------------------- values
def typed_literal(value: Any, t: T.DataType, column: str) -> X.Literal:
    """A Python value (or a partition-value string) as a literal of column type ``t``."""
    if value is None:
        return X.Literal(None, t)
    name = t.name if isinstance(t, T.Atomic) else ("decimal" if isinstance(t, T.Decimal) else "complex")
    delta = f"decimal({t.precision},{t.scale})" if isinstance(t, T.Decimal) else name
    try:
        parsed = parse_value(delta, value)
    except PartitionValueError as exc:
        raise InvalidArgumentError(f"column {column!r}: {exc}") from None
    if parsed is None:
        return X.Literal(None, t)
    if t == T.DATE:
        return X.Literal((parsed - dt.date(1970, 1, 1)).days, t)
    if t in (T.TIMESTAMP, T.TIMESTAMP_NTZ):
        naive = parsed.astimezone(dt.timezone.utc).replace(tzinfo=None) if parsed.tzinfo else parsed
        return X.Literal(X.micros_of(naive), t)
    if T.is_integral(t):
        bits = T.INTEGRAL_BITS[t]
        if not -(2 ** (bits - 1)) <= int(parsed) < 2 ** (bits - 1):
            raise InvalidArgumentError(f"column {column!r}: {value!r} is not a valid {name} value")
        return X.Literal(int(parsed), t)
    if isinstance(t, T.Decimal):
        return X.Literal(Decimal(parsed), t)
    if not T.is_atomic(t):
        raise InvalidArgumentError(f"column {column!r} is a {t.sql()}: a filter value cannot name one")
    return X.Literal(parsed, t)


def _condition(column: str, op: str, values: Sequence[Any], t: T.DataType, ref: X.Column) -> X.Expr:
    typed = [typed_literal(v, t, column) for v in values]  # "" and __HIVE_DEFAULT_PARTITION__ read as null
    present = [lit for lit in typed if lit.value is not None]
    has_null = len(present) < len(values)
    if op in ("in", "not in"):
        if op == "not in":
            if has_null:
                return X.FALSE  # SQL: NOT IN over a list holding NULL is never true
            return X.and_(X.Call("is_not_null", (ref,)), X.Call("not", (X.Call("in", (ref, *present)),)))
        hit: X.Expr = X.Call("in", (ref, *present)) if present else X.FALSE
        return X.or_(hit, X.Call("is_null", (ref,))) if has_null else hit
    if has_null:
        return X.Call("is_null", (ref,)) if op == "=" else X.FALSE
    return X.Call(op, (ref, present[0]))


def _fields_by_name(fields: Sequence[T.StructField], column: str) -> T.StructField:
    """A column a mapping or a DNF tuple names: exactly as the table spells it (deltalake's rule)."""
    found = [f for f in fields if f.name == column]
    if not found:
        names = sorted(f.name for f in fields)
        raise InvalidExpressionError(
            f"unknown column {column!r}; the table has {names or 'no columns'}", expression=str(column), column=column
        )
    return found[0]


def from_mapping(where: Mapping[str, Any], fields: Sequence[T.StructField]) -> Source:
    try:
        conditions = conditions_from_where(where)
    except PartitionValueError as exc:
        raise InvalidArgumentError(str(exc)) from None
    if not conditions:
        raise InvalidArgumentError("an empty predicate mapping selects nothing; pass None to mean every row")
    parts = []
    for c in conditions:
        f = _fields_by_name(fields, c.column)
        ref = X.Column((f.name,))
        parts.append(_condition(f.name, "=" if c.op == "==" else c.op, c.values, f.type, ref))
    tree = X.and_(*parts)
    return Source(tree, X.to_sql(tree))


def _tuple(item: Any, fields: Sequence[T.StructField]) -> X.Expr:
    if not (isinstance(item, (tuple, list)) and len(item) == 3 and isinstance(item[0], str)):
        raise InvalidArgumentError(f"a DNF filter term is (column, operator, value), not {item!r}")
    column, op, value = item
    op_norm = str(op).strip().lower()
    f = _fields_by_name(fields, column)
    ref = X.Column((f.name,))
    if op_norm in ("in", "not in"):
        if not isinstance(value, (list, tuple, set, frozenset)):
            raise InvalidArgumentError(f"{op!r} on column {column!r} needs a list of values, not {value!r}")
        return _condition(f.name, op_norm, list(value), f.type, ref)
    if op_norm not in _OPS:
        raise InvalidArgumentError(f"unknown operator {op!r} in the filter term {item!r}")
    return _condition(f.name, _OPS[op_norm], [value], f.type, ref)


def is_dnf(value: Any) -> bool:
    """Whether ``value`` is deltalake's filter form: a list of (column, op, value) tuples, or a list of them."""
    if not isinstance(value, (list, tuple)) or not value:
        return False
    first = value[0]
    if isinstance(first, (list, tuple)) and first and isinstance(first[0], (list, tuple)):
        return True
    return isinstance(first, (list, tuple)) and len(first) == 3 and isinstance(first[0], str)


def from_dnf(value: Sequence[Any], fields: Sequence[T.StructField]) -> Source:
    groups = value if isinstance(value[0][0], (list, tuple)) else [value]
    disjuncts = []
    for group in groups:
        if not group:
            raise InvalidArgumentError("an empty DNF conjunction selects nothing")
        disjuncts.append(X.and_(*(_tuple(item, fields) for item in group)))
    tree = X.or_(*disjuncts)
    return Source(tree, X.to_sql(tree))


# ---------------------------------------------------------------------------------------------- pyarrow
_TOKEN = re.compile(
    r"""\s*(?:
      (?P<string>"(?:[^"\\]|\\.)*")
    | (?P<nulllit>null\[[a-z0-9_]*\])
    | (?P<op>==|!=|<=|>=|<|>|\(|\)|,|\{|\}|\[|\]|=|:)
    | (?P<atom>[^\s(),{}\[\]=!<>:"]+(?:\s[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?Z?)?)
    )""",
    re.VERBOSE,
)


class _Unreadable(Exception):
    pass


class _ArrowReader:
    """Reads pyarrow's printed form of a filter back into a tree, literals typed by their column."""

    def __init__(self, text: str, fields: Sequence[T.StructField]) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None or m.lastgroup is None:
                if text[pos:].strip():
                    raise _Unreadable
                break
            self.tokens.append((m.lastgroup, m.group(m.lastgroup)))
            pos = m.end()
        self.i = 0
        self.fields = {f.name: f for f in fields}

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.i] if self.i < len(self.tokens) else ("end", "")

    def take(self, text: str | None = None) -> str:
        kind, value = self.peek()
        if kind == "end" or (text is not None and value != text):
            raise _Unreadable
        self.i += 1
        return value

    def expr(self) -> X.Expr:
        kind, value = self.peek()
        if value == "(":
            self.take("(")
            left = self.expr()
            _, op = self.peek()
            if op in ("and", "or"):
                self.take()
                right = self.expr()
                self.take(")")
                return X.and_(left, right) if op == "and" else X.or_(left, right)
            if op in _ARROW_OPS:
                self.take()
                if not isinstance(left, X.Column):
                    raise _Unreadable
                right = self.literal(self.field(left))
                self.take(")")
                return X.Call(_ARROW_OPS[op], (left, right))
            raise _Unreadable
        if kind == "atom" and value in ("invert", "is_null", "is_valid", "is_in"):
            self.take()
            self.take("(")
            if value == "invert":
                inner = self.expr()
                self.take(")")
                return X.Call("not", (inner,))
            ref = self.column()
            if value == "is_valid":
                self.take(")")
                return X.Call("is_not_null", (ref,))
            if value == "is_null":
                self.take(",")
                self.options({"nan_is_null": "false"})
                self.take(")")
                return X.Call("is_null", (ref,))
            self.take(",")
            return self.is_in(ref)
        if kind == "atom":
            return self.column()
        raise _Unreadable

    def options(self, expected: Mapping[str, str]) -> dict[str, str]:
        self.take("{")
        out: dict[str, str] = {}
        while self.peek()[1] != "}":
            key = self.take()
            self.take("=")
            out[key] = self.take()
            if self.peek()[1] == ",":
                self.take(",")
        self.take("}")
        if any(out.get(k) != v for k, v in expected.items()):
            raise _Unreadable
        return out

    def is_in(self, ref: X.Column) -> X.Expr:
        f = self.field(ref)
        self.take("{")
        if self.take() != "value_set":
            raise _Unreadable
        self.take("=")
        self.take()  # the value set's type
        self.take(":")
        self.take("[")
        items: list[X.Expr] = []
        while self.peek()[1] != "]":
            items.append(self.literal(f))
            if self.peek()[1] == ",":
                self.take(",")
        self.take("]")
        self.take(",")
        if self.take() != "null_matching_behavior":
            raise _Unreadable
        self.take("=")
        behaviour = self.take()
        self.take("}")
        self.take(")")
        present = [i for i in items if not (isinstance(i, X.Literal) and i.value is None)]
        hit: X.Expr = X.Call("in", (ref, *present)) if present else X.FALSE
        if len(present) < len(items):
            if behaviour != "MATCH":
                raise _Unreadable
            return X.or_(hit, X.Call("is_null", (ref,)))
        if behaviour not in ("MATCH", "SKIP"):
            raise _Unreadable
        return hit

    def column(self) -> X.Column:
        kind, value = self.peek()
        if kind != "atom" or value not in self.fields:
            raise _Unreadable
        self.take()
        return X.Column((value,))

    def field(self, ref: X.Column) -> T.StructField:
        return self.fields[ref.parts[0]]

    def literal(self, f: T.StructField) -> X.Literal:
        kind, value = self.peek()
        self.take()
        if kind == "nulllit":
            return X.Literal(None, f.type)
        if kind == "string":
            if f.type != T.STRING:
                raise _Unreadable
            body = value[1:-1]
            if "\\" in body:
                raise _Unreadable  # pyarrow's escapes are not a documented format: leave it opaque
            return X.Literal(body, T.STRING)
        if kind != "atom" or f.type in (T.STRING, T.BINARY, T.FLOAT, T.DOUBLE):
            raise _Unreadable
        try:
            return typed_literal(value.rstrip("Z") if f.type == T.TIMESTAMP_NTZ else value, f.type, f.name)
        except InvalidArgumentError:
            raise _Unreadable from None


def _to_arrow(e: X.Expr, fields: Mapping[str, T.StructField]) -> pc.Expression:
    """The tree as pyarrow would build it (for the round-trip check of :func:`from_arrow`)."""
    from deltalog.compute.arrow_types import arrow_type

    if isinstance(e, X.Column):
        return pc.field(e.parts[0])
    if isinstance(e, X.Literal):
        if e.value is None:
            return pc.scalar(pa.scalar(None, arrow_type(e.type)))
        value = X.python_value(e.value, e.type)
        return pc.scalar(pa.scalar(value, arrow_type(e.type)))
    assert isinstance(e, X.Call)
    if e.name in ("and", "or"):
        out = _to_arrow(e.args[0], fields)
        for a in e.args[1:]:
            out = out & _to_arrow(a, fields) if e.name == "and" else out | _to_arrow(a, fields)
        return out
    if e.name == "not":
        return ~_to_arrow(e.args[0], fields)
    if e.name == "is_null":
        return _to_arrow(e.args[0], fields).is_null()
    if e.name == "is_not_null":
        return _to_arrow(e.args[0], fields).is_valid()
    if e.name == "in":
        ref = e.args[0]
        assert isinstance(ref, X.Column)
        t = arrow_type(fields[ref.parts[0]].type)
        values = [X.python_value(a.value, a.type) for a in e.args[1:] if isinstance(a, X.Literal)]
        return _to_arrow(ref, fields).isin(pa.array(values, t))
    ops = {"=": "__eq__", "!=": "__ne__", "<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__"}
    method = getattr(_to_arrow(e.args[0], fields), ops[e.name])
    return method(_to_arrow(e.args[1], fields))


def from_arrow(expression: pc.Expression, fields: Sequence[T.StructField]) -> Source:
    from deltalog.data.skipping import shown

    text = shown(expression, 10_000)
    try:
        tree: X.Expr | None = _ArrowReader(str(expression), fields).expr()
    except (_Unreadable, UnicodeDecodeError, pa.ArrowException, RecursionError):
        tree = None
    if tree is not None:
        try:
            same = str(_to_arrow(tree, {f.name: f for f in fields})) == str(expression)
        except (pa.ArrowException, TypeError, ValueError, AssertionError, KeyError, OverflowError):
            same = False
        if not same:
            tree = None
    return Source(tree, X.to_sql(tree) if tree is not None else text, expression)


def source(filter: Any, fields: Sequence[T.StructField]) -> Source:
    """``filter`` in any form as a :class:`Source`; an unknown form is an InvalidArgumentError."""
    if isinstance(filter, str):
        return Source(parse(filter), filter)
    if isinstance(filter, pc.Expression):
        return from_arrow(filter, fields)
    if isinstance(filter, Mapping):
        return from_mapping(filter, fields)
    if is_dnf(filter):
        return from_dnf(filter, fields)
    if isinstance(filter, (X.Column, X.Field, X.Literal, X.Call, X.Cast, X.Case)):
        return Source(filter, X.to_sql(filter))
    raise InvalidArgumentError(
        "a filter is SQL text, a pyarrow compute Expression, DNF tuples ([('col', '=', value), ...]) or a "
        f"mapping ({{'col': value}}), not {type(filter).__name__}"
    )


__all__ = ["Source", "from_arrow", "from_dnf", "from_mapping", "is_dnf", "source", "typed_literal"]
