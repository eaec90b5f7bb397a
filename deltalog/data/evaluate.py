"""Evaluate a parsed Spark SQL expression (:mod:`deltalog.data.sql`) on Arrow batches, with Spark's semantics.

An expression is *compiled* once against the table's schema: columns are resolved (case-insensitively, as
Spark does), every operand gets its type, and any combination whose Spark meaning this module does not
reproduce exactly is refused then (:class:`~deltalog.data.sql.SqlSubsetError`), before a single row is read.
Running the compiled expression on a batch is then pure pyarrow compute:

* Three-valued logic: ``AND``/``OR`` are Kleene, comparisons with null are null, ``x IN (...)`` is the ``OR``
  of equalities (so ``1 IN (2, NULL)`` is null, as in SQL), ``BETWEEN`` is ``>= AND <=``, ``<=>`` is
  null-safe.
* Spark orders NaN above every other float and equal to itself; pyarrow does not, so float comparisons are
  rewritten to Spark's order.
* Integer and decimal arithmetic is checked (Spark's ANSI mode raises on overflow; an overflow here fails the
  write as well, never wraps); ``float`` op ``float`` stays 32-bit as in Spark.
* String literals compared with a date, ``timestamp_ntz`` or zone-carrying ``timestamp`` value are read as that
  type. A ``TIMESTAMP`` literal without a zone is refused: Spark reads it in the session's time zone, which a
  table does not record.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.data import sql
from deltalog.data.sql import SqlSubsetError
from deltalog.data.types import FieldPlan

Value: TypeAlias = pa.Array | pa.Scalar
Fn = Callable[["Frame"], Value]
_BOOL = pa.bool_()
_INT_DECIMAL = {8: 3, 16: 5, 32: 10, 64: 20}  # Spark's decimal type for each integer width


@dataclass(frozen=True)
class Frame:
    """One physical batch being evaluated: its columns by physical name."""

    batch: pa.RecordBatch

    def column(self, physical: str) -> pa.Array:
        return self.batch.column(physical)


@dataclass(frozen=True)
class Compiled:
    """A typed expression: ``type`` is its Arrow result type (``null`` for a bare NULL)."""

    type: pa.DataType
    fn: Fn
    literal: sql.Literal | None = None

    def __call__(self, frame: Frame) -> Value:
        return self.fn(frame)


def _resolve(plans: Sequence[FieldPlan], path: tuple[str, ...]) -> tuple[list[FieldPlan], FieldPlan]:
    """The chain of plans a column path names (case-insensitive), or SqlSubsetError."""
    chain: list[FieldPlan] = []
    level = list(plans)
    for i, name in enumerate(path):
        found = [p for p in level if p.name.lower() == name.lower()]
        if not found:
            shown = ".".join(path[: i + 1])
            raise SqlSubsetError(f"column {shown} does not exist in the table")
        plan = found[0]
        chain.append(plan)
        if i + 1 < len(path):
            if plan.kind != "struct":
                raise SqlSubsetError(f"{'.'.join(path[: i + 1])} is a {plan.kind}: only struct fields can be named")
            level = list(plan.children)
    return chain[:-1], chain[-1]


def _column(plans: Sequence[FieldPlan], path: tuple[str, ...]) -> Compiled:
    parents, plan = _resolve(plans, path)
    if plan.kind == "void":
        return Compiled(pa.null(), lambda f: pa.nulls(f.batch.num_rows))
    if isinstance(plan.delta_type, str) and plan.delta_type.startswith("string collate"):
        raise SqlSubsetError(f"column {'.'.join(path)} has a collation, whose comparisons are outside the subset")
    chain = [*parents, plan]
    top = chain[0]
    steps = [[c.physical for c in chain[i].stored].index(chain[i + 1].physical) for i in range(len(chain) - 1)]

    def get(f: Frame) -> Value:
        arr = f.column(top.physical)
        for index in steps:
            arr = pc.struct_field(arr, [index])  # null where a parent is null
        return arr

    return Compiled(plan.file_field.type, get)  # type: ignore[union-attr]


def _decimal_type(value: Decimal) -> pa.DataType:
    _, digits, exponent = value.as_tuple()
    scale = max(0, -int(exponent))
    precision = max(len(digits) + max(0, int(exponent)), scale, 1)
    if precision > 38:
        raise SqlSubsetError(f"decimal literal {value} has more than 38 digits")
    return pa.decimal128(precision, scale)


def _parse_timestamp(text: str, zone: bool) -> dt.datetime:
    try:
        value = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise SqlSubsetError(f"{text!r} is not a timestamp in ISO form") from None
    if zone and value.tzinfo is None:
        raise SqlSubsetError(
            f"TIMESTAMP {text!r} has no zone: Spark reads it in the session time zone, which the table does not "
            "record; write it with an offset (e.g. 'Z' or '+01:00')"
        )
    if not zone and value.tzinfo is not None:
        raise SqlSubsetError(f"TIMESTAMP_NTZ {text!r} carries a zone")
    return value


def _temporal(kind: str, text: str) -> pa.Scalar:
    if kind == "date":
        try:
            return pa.scalar(dt.date.fromisoformat(text.strip()), pa.date32())
        except ValueError:
            raise SqlSubsetError(f"{text!r} is not a date in ISO form (YYYY-MM-DD)") from None
    if kind == "timestamp":
        return pa.scalar(_parse_timestamp(text, True), pa.timestamp("us", tz="UTC"))
    return pa.scalar(_parse_timestamp(text, False), pa.timestamp("us"))


def _literal(node: sql.Literal) -> Compiled:
    if node.kind in ("date", "timestamp", "timestamp_ntz"):
        scalar = _temporal(node.kind, node.value)
    elif node.kind == "int":
        scalar = pa.scalar(node.value, getattr(pa, f"int{node.width}")())
    elif node.kind == "decimal":
        scalar = pa.scalar(node.value, _decimal_type(node.value))
    else:
        types = {"null": pa.null(), "boolean": _BOOL, "double": pa.float64(), "float": pa.float32()}
        scalar = pa.scalar(node.value, types.get(node.kind, pa.string()))
    return Compiled(scalar.type, lambda f: scalar, node)


# ---------------------------------------------------------------------------------------------- operators


def _category(t: pa.DataType) -> str:
    if pa.types.is_null(t):
        return "null"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        return "exact"
    if pa.types.is_string(t):
        return "string"
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_boolean(t) or pa.types.is_binary(t):
        return str(t)
    return "complex"


def _float_type(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    return pa.float32() if all(t == pa.float32() or not pa.types.is_floating(t) for t in (a, b)) else pa.float64()


def _cast(c: Compiled, to: pa.DataType) -> Compiled:
    if c.type == to:
        return c
    if c.literal is not None and c.literal.kind == "string" and _category(to) in ("date", "timestamp", "timestamp_ntz"):
        scalar = _temporal(_category(to), c.literal.value)
        return Compiled(to, lambda f: scalar)
    return Compiled(to, lambda f: pc.cast(c(f), to))


def _comparable(left: Compiled, right: Compiled, op: str) -> tuple[Compiled, Compiled, bool]:
    """Both sides of a comparison in one type, and whether it is a float comparison (NaN ordering)."""
    a, b = _category(left.type), _category(right.type)
    if "null" in (a, b):
        return left, right, False
    if a in ("exact", "float") and b in ("exact", "float"):
        if "float" in (a, b):
            to = _float_type(left.type, right.type)
            return _cast(left, to), _cast(right, to), True
        return left, right, False
    temporal = ("date", "timestamp", "timestamp_ntz")
    if a == "string" and b in temporal and left.literal is not None:
        return _cast(left, right.type), right, False
    if b == "string" and a in temporal and right.literal is not None:
        return left, _cast(right, left.type), False
    if a == b and a != "complex":
        return left, right, False
    raise SqlSubsetError(f"comparing {left.type} with {right.type} ({op}) is outside the supported subset")


def _nan_aware(op: str, a: Value, b: Value) -> Value:
    """Spark's float order: NaN equals NaN and is above every other value; nulls stay null."""
    na, nb = pc.is_nan(a), pc.is_nan(b)
    ca, cb = pc.if_else(na, 0.0, a), pc.if_else(nb, 0.0, b)
    both_nan, neither = pc.and_(na, nb), pc.and_(pc.invert(na), pc.invert(nb))
    eq = pc.or_(both_nan, pc.and_(neither, pc.equal(ca, cb)))
    lt = pc.or_(pc.and_(pc.invert(na), nb), pc.and_(neither, pc.less(ca, cb)))
    gt = pc.or_(pc.and_(na, pc.invert(nb)), pc.and_(neither, pc.greater(ca, cb)))
    return {"=": eq, "!=": pc.invert(eq), "<": lt, ">": gt, "<=": pc.or_(lt, eq), ">=": pc.or_(gt, eq)}[op]


_PLAIN = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}


def _compare(op: str, left: Compiled, right: Compiled) -> Compiled:
    a, b, floats = _comparable(left, right, op)
    if op == "<=>":
        eq = _compare("=", a, b)

        def null_safe(f: Frame) -> Value:
            x, y = a(f), b(f)
            either = pc.or_(pc.is_null(x), pc.is_null(y))
            return pc.if_else(either, pc.and_(pc.is_null(x), pc.is_null(y)), pc.fill_null(eq(f), False))

        return Compiled(_BOOL, null_safe)
    if pa.types.is_null(a.type) and pa.types.is_null(b.type):
        return Compiled(_BOOL, lambda f: pa.scalar(None, _BOOL))
    if floats:
        return Compiled(_BOOL, lambda f: _nan_aware(op, a(f), b(f)))
    return Compiled(_BOOL, lambda f: _PLAIN[op](_null_as(a(f), b), _null_as(b(f), a)))


def _null_as(value: Value, other: Compiled) -> Value:
    """A bare NULL typed as the other operand, so pyarrow finds a kernel."""
    if isinstance(value, pa.Scalar) and pa.types.is_null(value.type) and not pa.types.is_null(other.type):
        return pa.scalar(None, other.type)
    return value


def _arithmetic(op: str, left: Compiled, right: Compiled) -> Compiled:
    a, b = _category(left.type), _category(right.type)
    if a not in ("exact", "float", "null") or b not in ("exact", "float", "null"):
        raise SqlSubsetError(f"{left.type} {op} {right.type} is outside the supported subset (numbers only)")
    if "float" in (a, b):
        to = _float_type(left.type, right.type)
        left, right = _cast(left, to), _cast(right, to)
    elif pa.types.is_decimal(left.type) != pa.types.is_decimal(right.type) and "null" not in (a, b):
        left, right = _as_decimal(left), _as_decimal(right)
    kernel = {"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked}[op]
    l_, r_ = left, right
    out = left.type if not pa.types.is_null(left.type) else right.type
    return Compiled(out, lambda f: kernel(_null_as(l_(f), r_), _null_as(r_(f), l_)))


def _as_decimal(c: Compiled) -> Compiled:
    if pa.types.is_integer(c.type):
        return _cast(c, pa.decimal128(_INT_DECIMAL[c.type.bit_width], 0))
    return c


def _boolean(c: Compiled, what: str) -> Compiled:
    if pa.types.is_null(c.type):
        return Compiled(_BOOL, lambda f: pa.scalar(None, _BOOL))
    if c.type != _BOOL:
        raise SqlSubsetError(f"{what} needs a boolean operand, not {c.type}")
    return c


def compile_expression(node: sql.Node, plans: Sequence[FieldPlan]) -> Compiled:
    """``node`` typed against the table's fields; SqlSubsetError for anything outside the subset."""
    if isinstance(node, sql.Column):
        return _column(plans, node.path)
    if isinstance(node, sql.Literal):
        return _literal(node)
    if isinstance(node, sql.Unary):
        operand = compile_expression(node.operand, plans)
        if node.op == "not":
            inner = _boolean(operand, "NOT")
            return Compiled(_BOOL, lambda f: pc.invert(inner(f)))
        if _category(operand.type) not in ("exact", "float", "null"):
            raise SqlSubsetError(f"-{operand.type} is outside the supported subset (numbers only)")
        if pa.types.is_null(operand.type):
            return operand
        return Compiled(operand.type, lambda f: pc.negate_checked(operand(f)))
    if isinstance(node, sql.IsNull):
        operand = compile_expression(node.operand, plans)
        check = pc.is_valid if node.negated else pc.is_null
        return Compiled(_BOOL, lambda f: check(operand(f)))
    if isinstance(node, sql.In):
        equalities: sql.Node = sql.Binary("=", node.operand, node.items[0])
        for item in node.items[1:]:
            equalities = sql.Binary("or", equalities, sql.Binary("=", node.operand, item))
        return compile_expression(sql.Unary("not", equalities) if node.negated else equalities, plans)
    if isinstance(node, sql.Between):
        inside = sql.Binary("and", sql.Binary(">=", node.operand, node.low), sql.Binary("<=", node.operand, node.high))
        return compile_expression(sql.Unary("not", inside) if node.negated else inside, plans)
    left, right = compile_expression(node.left, plans), compile_expression(node.right, plans)
    if node.op in ("and", "or"):
        a, b = _boolean(left, node.op.upper()), _boolean(right, node.op.upper())
        kernel = pc.and_kleene if node.op == "and" else pc.or_kleene
        return Compiled(_BOOL, lambda f: kernel(a(f), b(f)))
    if node.op in ("+", "-", "*"):
        return _arithmetic(node.op, left, right)
    return _compare(node.op, left, right)


def evaluate(compiled: Compiled, frame: Frame) -> pa.Array:
    """The expression's value for every row of ``frame`` (a constant is repeated)."""
    value = compiled(frame)
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    if isinstance(value, pa.Scalar):
        return pa.repeat(value, frame.batch.num_rows)
    return value


def scalar_value(value: Any) -> Any:
    """A row value for an error message: Python objects, bytes shortened."""
    if isinstance(value, bytes) and len(value) > 32:
        return value[:32] + b"..."
    return value


__all__ = ["Compiled", "Frame", "compile_expression", "evaluate", "scalar_value"]
