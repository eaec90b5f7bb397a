"""deltalog's expression tree: one typed, immutable form for every predicate and rule a table or a caller
writes, whatever it was written in (Spark SQL text, a pyarrow Expression, deltalake's DNF tuples, a mapping).

Five node kinds, frozen dataclasses so trees compare, hash and can be shared across threads:

* :class:`Column` is a reference as written (``a``, ``s.col``, ``a.b.c``); binding
  (:mod:`deltalog.expr.bind`) turns it into a :class:`Field`, which knows its relation (the table, or ``s`` /
  ``t`` in a merge), its logical and physical path and its type;
* :class:`Literal` is a value of a :mod:`deltalog.expr.types` type (dates as days and timestamps as
  microseconds since the epoch, decimals as :class:`decimal.Decimal`, so no Arrow is needed to hold one);
* :class:`Call` is every operator and function, by one canonical lower-case name (``+``, ``and``, ``in``,
  ``upper``, ``date_format``...); ``and``/``or`` are n-ary so a long chain is shallow;
* :class:`Cast` is ``CAST``/``TRY_CAST``, and also every implicit cast the binder inserts, so the evaluator
  never coerces on its own;
* :class:`Case` is ``CASE WHEN``.

A bound tree has a type on every node (``type`` is None only on unbound nodes). ``at`` is the position in the
text the node came from, for messages; it takes no part in equality.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal

from deltalog.expr import types as T


@dataclass(frozen=True)
class Column:
    """A column reference as written: ``parts`` split on dots, backticks removed (``a.b`` vs ```a.b```
    differ: the second is one part)."""

    parts: tuple[str, ...]
    at: int | None = field(default=None, compare=False)

    @property
    def type(self) -> T.DataType | None:
        return None


@dataclass(frozen=True)
class Field:
    """A bound column: ``relation`` indexes the scope's relations (0 for a table), ``path`` the logical names
    as the schema spells them, ``physical`` the names files use (column mapping)."""

    relation: int
    path: tuple[str, ...]
    physical: tuple[str, ...]
    type: T.DataType
    nullable: bool = True


@dataclass(frozen=True)
class Literal:
    value: object
    type: T.DataType
    at: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Call:
    """An operator or function. ``name`` is canonical (aliases resolved), ``written`` how the text spelled it."""

    name: str
    args: tuple[Expr, ...]
    type: T.DataType | None = None
    at: int | None = field(default=None, compare=False)
    written: str | None = field(default=None, compare=False)

    @property
    def shown_name(self) -> str:
        return self.written or self.name


@dataclass(frozen=True)
class Cast:
    """``CAST(operand AS to)``; ``try_`` gives null where ANSI ``CAST`` raises; ``implicit`` marks the casts
    the binder inserted (shown without ``CAST`` in messages)."""

    operand: Expr
    to: T.DataType
    try_: bool = False
    implicit: bool = field(default=False, compare=False)
    at: int | None = field(default=None, compare=False)
    #: written as a typed literal (``DATE '...'``): Spark checks its text when it parses it
    typed_literal: bool = field(default=False, compare=False)

    @property
    def type(self) -> T.DataType:
        return self.to


@dataclass(frozen=True)
class Case:
    branches: tuple[tuple[Expr, Expr], ...]
    otherwise: Expr | None = None
    type: T.DataType | None = None
    at: int | None = field(default=None, compare=False)


Expr = Column | Field | Literal | Call | Cast | Case

TRUE = Literal(True, T.BOOLEAN)
FALSE = Literal(False, T.BOOLEAN)
NULL = Literal(None, T.VOID)


def children(e: Expr) -> tuple[Expr, ...]:
    if isinstance(e, Call):
        return e.args
    if isinstance(e, Cast):
        return (e.operand,)
    if isinstance(e, Case):
        inner = [x for branch in e.branches for x in branch]
        return (*inner, e.otherwise) if e.otherwise is not None else tuple(inner)
    return ()


def with_children(e: Expr, new: Sequence[Expr]) -> Expr:
    """``e`` with its children replaced (same order as :func:`children`)."""
    if isinstance(e, Call):
        return replace(e, args=tuple(new))
    if isinstance(e, Cast):
        return replace(e, operand=new[0])
    if isinstance(e, Case):
        n = len(e.branches)
        branches = tuple((new[2 * i], new[2 * i + 1]) for i in range(n))
        return replace(e, branches=branches, otherwise=new[2 * n] if e.otherwise is not None else None)
    return e


def walk(e: Expr) -> Iterator[Expr]:
    """Every node of ``e``, parents before children (iterative: deep trees cannot exhaust the stack)."""
    stack = [e]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def depth(e: Expr) -> int:
    level, n = [e], 0
    while level:
        n += 1
        level = [c for x in level for c in children(x)]
    return n


def references(e: Expr) -> list[Field]:
    """The bound columns ``e`` reads, in order of first appearance."""
    out: list[Field] = []
    for node in walk(e):
        if isinstance(node, Field) and node not in out:
            out.append(node)
    return out


def column_refs(e: Expr) -> list[Column]:
    """The unbound column references of ``e``, in order of first appearance."""
    out: list[Column] = []
    for node in walk(e):
        if isinstance(node, Column) and node not in out:
            out.append(node)
    return out


def conjuncts(e: Expr) -> list[Expr]:
    """``e`` split at its top-level ANDs."""
    if isinstance(e, Call) and e.name == "and":
        return [c for a in e.args for c in conjuncts(a)]
    return [e]


def disjuncts(e: Expr) -> list[Expr]:
    if isinstance(e, Call) and e.name == "or":
        return [c for a in e.args for c in disjuncts(a)]
    return [e]


def _junction(name: str, parts: Sequence[Expr], bound: bool) -> Expr:
    flat: list[Expr] = []
    for p in parts:
        flat.extend(p.args if isinstance(p, Call) and p.name == name else (p,))
    if len(flat) == 1:
        return flat[0]
    return Call(name, tuple(flat), T.BOOLEAN if bound else None)


def and_(*parts: Expr, bound: bool = False) -> Expr:
    """The conjunction of ``parts`` (flattened; TRUE when there are none)."""
    return _junction("and", parts, bound) if parts else TRUE


def or_(*parts: Expr, bound: bool = False) -> Expr:
    return _junction("or", parts, bound) if parts else FALSE


# ---------------------------------------------------------------------------------------------- SQL text
_INFIX = {
    "+": "+", "-": "-", "*": "*", "/": "/", "%": "%", "div": "div", "=": "=", "<=>": "<=>", "!=": "!=",
    "<": "<", "<=": "<=", ">": ">", ">=": ">=", "||": "||",
}  # fmt: skip
_POSTFIX = {
    "is_null": "IS NULL", "is_not_null": "IS NOT NULL", "is_true": "IS TRUE", "is_not_true": "IS NOT TRUE",
    "is_false": "IS FALSE", "is_not_false": "IS NOT FALSE",
}  # fmt: skip
_EPOCH = dt.date(1970, 1, 1)


def quote(name: str) -> str:
    """An identifier as Spark SQL reads it back: plain when it can be, else in backticks."""
    if name and (name[0].isalpha() or name[0] == "_") and all(c.isalnum() or c == "_" for c in name):
        return name
    return "`" + name.replace("`", "``") + "`"


def _string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def literal_sql(value: object, t: T.DataType) -> str:
    """A literal as Spark SQL text that reads back as the same value and type."""
    if value is None:
        return "NULL" if t == T.VOID else f"CAST(NULL AS {t.sql()})"
    if t == T.BOOLEAN:
        return "true" if value else "false"
    if t == T.STRING:
        return _string(str(value))
    if t == T.BINARY and isinstance(value, bytes):
        return "X'" + value.hex().upper() + "'"
    if t == T.INT:
        return str(value)
    suffix = {T.BYTE: "Y", T.SHORT: "S", T.LONG: "L", T.DOUBLE: "D", T.FLOAT: "F"}
    if (
        t in (T.DOUBLE, T.FLOAT)
        and isinstance(value, float)
        and (value != value or value in (float("inf"), -float("inf")))
    ):
        text = "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
        return f"CAST('{text}' AS {t.sql()})"
    if t in suffix:
        return f"{value!r}{suffix[t]}" if t in (T.DOUBLE, T.FLOAT) else f"{value}{suffix[t]}"
    if isinstance(t, T.Decimal):
        return f"{value}BD" if t.scale >= 0 else f"CAST('{value}' AS {t.sql()})"
    if t == T.DATE and isinstance(value, int):
        return f"DATE '{(_EPOCH + dt.timedelta(days=value)).isoformat()}'"
    if t in (T.TIMESTAMP, T.TIMESTAMP_NTZ) and isinstance(value, int):
        when = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=value)
        text = when.isoformat(sep=" ")
        return f"TIMESTAMP '{text}+00:00'" if t == T.TIMESTAMP else f"TIMESTAMP_NTZ '{text}'"
    if t == T.DAY_TIME and isinstance(value, int):
        return f"INTERVAL '{value}' MICROSECOND"
    if t == T.YEAR_MONTH and isinstance(value, int):
        return f"INTERVAL '{value}' MONTH"
    return f"CAST({_string(str(value))} AS {t.sql()})"


def to_sql(e: Expr) -> str:
    """``e`` as Spark SQL text (how messages, commit info and the Spark writer show it), without the outermost
    parentheses."""
    text = _sql(e)
    return text[1:-1] if _wrapped(text) else text


def _wrapped(text: str) -> bool:
    """Whether one pair of parentheses encloses all of ``text`` (quotes and backticks skipped)."""
    if not (text.startswith("(") and text.endswith(")")):
        return False
    depth, i, quote = 0, 0, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == "'":
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "'`":
            quote = c
        elif c in "()":
            depth += 1 if c == "(" else -1
            if depth == 0 and i < len(text) - 1:
                return False
        i += 1
    return True


def _sql(e: Expr) -> str:
    if isinstance(e, Column):
        return ".".join(quote(p) for p in e.parts)
    if isinstance(e, Field):
        return ".".join(quote(p) for p in e.path)
    if isinstance(e, Literal):
        return literal_sql(e.value, e.type)
    if isinstance(e, Cast):
        if e.implicit:
            return _sql(e.operand)
        if e.typed_literal and isinstance(e.operand, Literal):
            return f"{e.to.sql()} {_sql(e.operand)}"
        return f"{'TRY_CAST' if e.try_ else 'CAST'}({_sql(e.operand)} AS {e.to.sql()})"
    if isinstance(e, Case):
        parts = " ".join(f"WHEN {_sql(c)} THEN {_sql(v)}" for c, v in e.branches)
        other = f" ELSE {_sql(e.otherwise)}" if e.otherwise is not None else ""
        return f"CASE {parts}{other} END"
    args = [_sql(a) for a in e.args]
    if e.name in ("and", "or"):
        return "(" + f" {e.name.upper()} ".join(args) + ")"
    if e.name == "not":
        return f"(NOT {args[0]})"
    if e.name == "neg":
        return f"(- {args[0]})"
    if e.name in _INFIX and len(args) == 2:
        return f"({args[0]} {_INFIX[e.name]} {args[1]})"
    if e.name in _POSTFIX:
        return f"({args[0]} {_POSTFIX[e.name]})"
    if e.name == "in":
        return f"({args[0]} IN ({', '.join(args[1:])}))"
    if e.name in ("like", "ilike"):
        escape = f" ESCAPE {args[2]}" if len(args) > 2 else ""
        return f"({args[0]} {e.name.upper()} {args[1]}{escape})"
    if e.name == "rlike":
        return f"({args[0]} RLIKE {args[1]})"
    if e.name == "get_field":
        return f"{args[0]}.{quote(str(e.args[1].value))}" if isinstance(e.args[1], Literal) else f"{args[0]}.?"
    if e.name in ("add_interval_months", "add_interval_micros"):
        return f"({args[0]} + {args[1]})"
    if e.name == "subscript":
        return f"{args[0]}[{args[1]}]"
    if e.name in ("current_date", "current_timestamp") and not args:
        return e.name
    return f"{e.shown_name}({', '.join(args)})"


def literal_of(value: object) -> Literal:
    """A Python value as a literal of the type Spark gives the same value written in SQL (ints: INT when they
    fit, else BIGINT; floats: DOUBLE; ``Decimal``: its own precision and scale; dates; aware datetimes:
    TIMESTAMP; naive ones: TIMESTAMP_NTZ)."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        return Literal(value, T.BOOLEAN)
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return Literal(value, T.INT)
        if -(2**63) <= value < 2**63:
            return Literal(value, T.LONG)
        return Literal(Decimal(value), decimal_type_of(Decimal(value)))
    if isinstance(value, float):
        return Literal(value, T.DOUBLE)
    if isinstance(value, Decimal):
        return Literal(value, decimal_type_of(value))
    if isinstance(value, str):
        return Literal(value, T.STRING)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return Literal(bytes(value), T.BINARY)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return Literal(micros_of(value), T.TIMESTAMP_NTZ)
        return Literal(micros_of(value.astimezone(dt.timezone.utc).replace(tzinfo=None)), T.TIMESTAMP)
    if isinstance(value, dt.date):
        return Literal((value - _EPOCH).days, T.DATE)
    raise TypeError(f"{type(value).__name__} is not a literal value")


def micros_of(naive: dt.datetime) -> int:
    delta = naive - dt.datetime(1970, 1, 1)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def decimal_type_of(value: Decimal) -> T.Decimal:
    """Spark's type of a decimal literal: its digits as precision, its fractional digits as scale."""
    _sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    scale = max(0, -exponent)
    precision = max(len(digits) + max(0, exponent), scale, 1)
    return T.Decimal(precision, scale)


def python_value(value: object, t: T.DataType) -> object:
    """A literal's value as Python gives it to a user (dates and datetimes rather than counts)."""
    if value is None:
        return None
    if t == T.DATE and isinstance(value, int):
        return _EPOCH + dt.timedelta(days=value)
    if t in (T.TIMESTAMP, T.TIMESTAMP_NTZ) and isinstance(value, int):
        naive = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=value)
        return naive.replace(tzinfo=dt.timezone.utc) if t == T.TIMESTAMP else naive
    return value


__all__ = [
    "FALSE",
    "NULL",
    "TRUE",
    "Call",
    "Case",
    "Cast",
    "Column",
    "Expr",
    "Field",
    "Literal",
    "and_",
    "children",
    "column_refs",
    "conjuncts",
    "decimal_type_of",
    "depth",
    "disjuncts",
    "literal_of",
    "literal_sql",
    "micros_of",
    "or_",
    "python_value",
    "quote",
    "references",
    "to_sql",
    "walk",
    "with_children",
]
