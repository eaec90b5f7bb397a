"""Spark SQL's operators and functions that deltalog evaluates: their names, aliases and typing rules.

Each rule takes the bound arguments of a call and returns the bound call: arguments cast (implicitly, as
Spark's analyzer casts them) to what the function takes, and the result type Spark gives it. A name not in
:data:`RULES` is refused by name (:class:`~deltalog.errors.UnsupportedExpressionError`); a type Spark's
analyzer rejects is an :class:`~deltalog.errors.InvalidExpressionError` naming the function and the types.
The kernels that evaluate each name live in :mod:`deltalog.compute`; a unit test keeps the two lists equal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from deltalog.expr import coerce as C
from deltalog.expr import tree as X
from deltalog.expr import types as T


class Typer(Protocol):
    """What a rule needs of the binder: casts and typed errors that name the call and the text."""

    def cast(self, e: X.Expr, to: T.DataType) -> X.Expr: ...

    def mismatch(self, call: X.Call, why: str) -> Exception: ...

    def unsupported(self, call: X.Call, what: str) -> Exception: ...


Rule = Callable[[Typer, X.Call, list[X.Expr]], X.Expr]
RULES: dict[str, Rule] = {}
#: alias -> canonical name (``nvl`` is ``coalesce``, ``substr`` is ``substring``...)
ALIASES = {
    "nvl": "coalesce", "substr": "substring", "char_length": "length", "character_length": "length",
    "dayofmonth": "day", "ceiling": "ceil", "signum": "sign", "now": "current_timestamp", "lcase": "lower",
    "ucase": "upper", "==": "=", "<>": "!=",
}  # fmt: skip
_DATETIMES = (T.DATE, T.TIMESTAMP, T.TIMESTAMP_NTZ)
_DAY = 86_400_000_000


def rule(*names: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for n in names:
            RULES[n] = fn
        return fn

    return register


def canonical(name: str) -> str:
    low = name.lower()
    alias = ALIASES.get(low, low)
    return alias if alias is not None else low


def _typed(call: X.Call, args: Sequence[X.Expr], t: T.DataType) -> X.Call:
    return replace(call, args=tuple(args), type=t)


def _arity(ty: Typer, call: X.Call, args: Sequence[X.Expr], low: int, high: int | None = None) -> None:
    high = low if high is None else high
    if not low <= len(args) <= high:
        want = str(low) if low == high else f"{low} to {high}" if high < 99 else f"at least {low}"
        raise ty.mismatch(call, f"{call.shown_name} takes {want} argument(s), not {len(args)}")


def _expect(ty: Typer, call: X.Call, arg: X.Expr, t: T.DataType, which: str = "argument") -> X.Expr:
    """``arg`` implicitly cast to ``t``, or the analyzer's refusal naming both types."""
    assert arg.type is not None
    if C.implicit(arg.type, t):
        return ty.cast(arg, t)
    raise ty.mismatch(call, f"the {which} of {call.shown_name} must be {t.sql()}, not {arg.type.sql()}")


def _types(args: Sequence[X.Expr]) -> list[T.DataType]:
    out = []
    for a in args:
        assert a.type is not None
        out.append(a.type)
    return out


def _common(ty: Typer, call: X.Call, args: Sequence[X.Expr], strings: bool = True) -> tuple[list[X.Expr], T.DataType]:
    common = C.wider_all(_types(args), strings)
    if common is None:
        shown = ", ".join(t.sql() for t in _types(args))
        raise ty.mismatch(call, f"{call.shown_name} needs operands of one type, not {shown}")
    return [ty.cast(a, common) for a in args], common


# ---------------------------------------------------------------------------------------------- logic
@rule("and", "or")
def _logic(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    return _typed(call, [_expect(ty, call, a, T.BOOLEAN, "operand") for a in args], T.BOOLEAN)


@rule("not", "is_true", "is_false", "is_not_true", "is_not_false")
def _not(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 1)
    return _typed(call, [_expect(ty, call, args[0], T.BOOLEAN, "operand")], T.BOOLEAN)


@rule("is_null", "is_not_null")
def _is_null(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    return _typed(call, args, T.BOOLEAN)


def _comparable(ty: Typer, call: X.Call, t: T.DataType) -> None:
    if isinstance(t, (T.Struct, T.Map, T.Array)) or t in (T.DAY_TIME, T.YEAR_MONTH):
        raise ty.unsupported(call, f"comparing {t.sql()} values")


@rule("=", "!=", "<", "<=", ">", ">=", "<=>")
def _compare(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    left, right = _types(args)
    common = C.wider(left, right)
    if common is None:
        raise ty.mismatch(call, f"{left.sql()} and {right.sql()} cannot be compared ({call.name})")
    _comparable(ty, call, common)
    return _typed(call, [ty.cast(a, common) for a in args], T.BOOLEAN)


@rule("in")
def _in(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    if len(args) < 2:
        raise ty.mismatch(call, "IN needs at least one value")
    cast, common = _common(ty, call, args)
    _comparable(ty, call, common)
    return _typed(call, cast, T.BOOLEAN)


@rule("like", "ilike")
def _like(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2, 3)
    out = [_expect(ty, call, a, T.STRING, "operand") for a in args[:2]]
    if len(args) == 3:
        escape = args[2]
        if not isinstance(escape, X.Literal) or escape.type != T.STRING or len(str(escape.value)) != 1:
            raise ty.mismatch(call, "the ESCAPE of LIKE must be a one-character string literal")
        out.append(escape)
    return _typed(call, out, T.BOOLEAN)


@rule("rlike", "regexp", "regexp_like")
def _rlike(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2)
    return replace(_typed(call, [_expect(ty, call, a, T.STRING, "operand") for a in args], T.BOOLEAN), name="rlike")


# ---------------------------------------------------------------------------------------------- conditionals
@rule("if")
def _if(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 3)
    if args[0].type not in (T.BOOLEAN, T.VOID):  # Spark casts no condition of IF but a NULL
        assert args[0].type is not None
        raise ty.mismatch(call, f"the condition of IF must be BOOLEAN, not {args[0].type.sql()}")
    cond = ty.cast(args[0], T.BOOLEAN)
    values, common = _common(ty, call, args[1:])
    return _typed(call, [cond, *values], common)


@rule("coalesce")
def _coalesce(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 1, 999)
    if call.written and call.written.lower() == "nvl":
        _arity(ty, call, args, 2)
    values, common = _common(ty, call, args)
    return _typed(call, values, common)


@rule("nullif")
def _nullif(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2)
    left, right = _types(args)
    common = C.wider(left, right)
    if common is None:
        raise ty.mismatch(call, f"{left.sql()} and {right.sql()} cannot be compared (nullif)")
    return _typed(call, [ty.cast(args[0], common), ty.cast(args[1], common), args[0]], left)


@rule("greatest", "least")
def _extreme(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2, 999)
    values, common = _common(ty, call, args, strings=False)
    _comparable(ty, call, common)
    return _typed(call, values, common)


# ---------------------------------------------------------------------------------------------- arithmetic
def _literal_decimal(e: X.Expr) -> T.Decimal | None:
    """Spark's decimal type for an operand beside a decimal (``DecimalPrecision``): an integral literal by its
    digits, an integral value by its width, a decimal as itself."""
    if isinstance(e, X.Literal) and T.is_integral(e.type) and isinstance(e.value, int):
        return C.decimal_of_integral_literal(e.value)
    assert e.type is not None
    return T.as_decimal(e.type)


def _decimal_result(op: str, a: T.Decimal, b: T.Decimal) -> T.Decimal:
    p1, s1, p2, s2 = a.precision, a.scale, b.precision, b.scale
    if op in ("+", "-"):
        scale = max(s1, s2)
        return T.adjusted_decimal(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if op == "*":
        return T.adjusted_decimal(p1 + p2 + 1, s1 + s2)
    if op == "/":
        scale = max(6, s1 + p2 + 1)
        return T.adjusted_decimal(p1 - s1 + s2 + scale, scale)
    scale = max(s1, s2)  # % and pmod
    return T.adjusted_decimal(min(p1 - s1, p2 - s2) + scale, scale)


def _numeric_operands(ty: Typer, call: X.Call, args: list[X.Expr]) -> list[X.Expr]:
    """Operands of arithmetic with a STRING promoted as Spark promotes it (beside an integral: BIGINT, else
    DOUBLE); two strings, or anything not numeric, is refused."""
    left, right = _types(args)
    out = list(args)
    for i, (t, other) in enumerate(((left, right), (right, left))):
        if t == T.STRING and T.is_numeric(other):
            out[i] = ty.cast(args[i], C.string_promotion(other) or T.DOUBLE)
        elif t == T.VOID:
            out[i] = args[i]
        elif not T.is_numeric(t):
            shown = "NUMERIC" if call.name != "/" else '("DOUBLE" or "DECIMAL")'
            raise ty.mismatch(call, f"{call.shown_name} requires {shown} operands, not {left.sql()} and {right.sql()}")
    return out


def _numeric_pair(ty: Typer, call: X.Call, args: list[X.Expr], op: str) -> X.Expr:
    args = _numeric_operands(ty, call, args)
    left, right = _types(args)
    if left == T.VOID and right == T.VOID:
        left = right = T.DOUBLE
        args = [ty.cast(a, left) for a in args]
    elif left == T.VOID or right == T.VOID:
        known = right if left == T.VOID else left
        args = [ty.cast(a, known) for a in args]
        left = right = known
    if op == "/" and not (isinstance(left, T.Decimal) or isinstance(right, T.Decimal)):
        return _typed(call, [ty.cast(a, T.DOUBLE) for a in args], T.DOUBLE)
    if op == "div":
        if T.is_fractional(left) or T.is_fractional(right):
            raise ty.mismatch(call, f"div requires integral or decimal operands, not {left.sql()} and {right.sql()}")
        if isinstance(left, T.Decimal) or isinstance(right, T.Decimal):
            da, db = _literal_decimal(args[0]), _literal_decimal(args[1])
            assert da is not None and db is not None
            return _typed(call, [ty.cast(args[0], da), ty.cast(args[1], db)], T.LONG)
        return _typed(call, [ty.cast(a, T.LONG) for a in args], T.LONG)
    common = C.wider_numeric(left, right)
    assert common is not None
    if isinstance(common, T.Decimal):
        da, db = _literal_decimal(args[0]), _literal_decimal(args[1])
        assert da is not None and db is not None
        return _typed(call, [ty.cast(args[0], da), ty.cast(args[1], db)], _decimal_result(op, da, db))
    return _typed(call, [ty.cast(a, common) for a in args], common)


@rule("+", "-")
def _additive(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    left, right = _types(args)
    if left in _DATETIMES or right in _DATETIMES:
        return _datetime_arithmetic(ty, call, args, left, right)
    return _numeric_pair(ty, call, args, call.name)


def _datetime_arithmetic(ty: Typer, call: X.Call, args: list[X.Expr], left: T.DataType, right: T.DataType) -> X.Expr:
    minus = call.name == "-"
    if not minus and left not in _DATETIMES:  # 1 + date, interval + timestamp
        args, left, right = [args[1], args[0]], right, left
    when, amount = args
    if (left == T.DATE and T.is_integral(right)) or (left == T.DATE and right == T.STRING):
        days = _days(ty, call, amount)
        name = "date_sub" if minus else "date_add"
        return X.Call(name, (when, days), T.DATE, call.at)
    if left in _DATETIMES and right == T.YEAR_MONTH:
        months = X.Call("neg", (amount,), T.YEAR_MONTH) if minus else amount
        return X.Call("add_interval_months", (when, months), left, call.at)
    if left in _DATETIMES and right == T.DAY_TIME:
        micros = X.Call("neg", (amount,), T.DAY_TIME) if minus else amount
        whole_days = isinstance(amount, X.Literal) and isinstance(amount.value, int) and amount.value % _DAY == 0
        if left == T.DATE and whole_days:
            assert isinstance(amount, X.Literal) and isinstance(amount.value, int)
            days = X.Literal(amount.value // _DAY * (-1 if minus else 1), T.INT)
            return X.Call("date_add", (when, days), T.DATE, call.at)
        target = T.TIMESTAMP if left == T.DATE else left
        return X.Call("add_interval_micros", (ty.cast(when, target), micros), target, call.at)
    raise ty.unsupported(call, f"{left.sql()} {call.name} {right.sql()}")


def _days(ty: Typer, call: X.Call, amount: X.Expr) -> X.Expr:
    assert amount.type is not None
    if amount.type in (T.BYTE, T.SHORT, T.INT, T.VOID):
        return ty.cast(amount, T.INT)
    if amount.type == T.STRING:
        return ty.cast(amount, T.INT)
    raise ty.mismatch(
        call, f'the days of {call.shown_name} must be ("INT" or "SMALLINT" or "TINYINT"), not {amount.type.sql()}'
    )


@rule("*", "/", "%", "div", "pmod")
def _multiplicative(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2)
    op = "%" if call.name in ("%", "pmod") else call.name
    return _numeric_pair(ty, call, args, op)


@rule("neg")
def _neg(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    (t,) = _types(args)
    if t == T.STRING:
        return _typed(call, [ty.cast(args[0], T.DOUBLE)], T.DOUBLE)
    if t == T.VOID:
        return _typed(call, [ty.cast(args[0], T.DOUBLE)], T.DOUBLE)
    if not T.is_numeric(t) and t not in (T.DAY_TIME, T.YEAR_MONTH):
        raise ty.mismatch(call, f"unary minus requires a numeric operand, not {t.sql()}")
    return _typed(call, args, t)


@rule("abs")
def _abs(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 1)
    return _neg(ty, call, args)


def _numeric_arg(ty: Typer, call: X.Call, arg: X.Expr) -> X.Expr:
    assert arg.type is not None
    if arg.type in (T.STRING, T.VOID):
        return ty.cast(arg, T.DOUBLE)
    if not T.is_numeric(arg.type):
        raise ty.mismatch(call, f"{call.shown_name} requires a numeric argument, not {arg.type.sql()}")
    return arg


def _int_literal(ty: Typer, call: X.Call, arg: X.Expr, what: str) -> int:
    if isinstance(arg, X.Literal) and T.is_integral(arg.type) and isinstance(arg.value, int):
        return arg.value
    raise ty.mismatch(call, f"the {what} of {call.shown_name} must be an integer literal")


@rule("round", "bround")
def _round(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 1, 2)
    value = _numeric_arg(ty, call, args[0])
    scale = _int_literal(ty, call, args[1], "scale") if len(args) == 2 else 0
    t = value.type
    if isinstance(t, T.Decimal):
        integral = t.precision - t.scale + 1
        if scale < 0:
            t = T.Decimal(min(max(integral, -scale + 1), T.MAX_PRECISION), 0)
        else:
            new_scale = min(t.scale, scale)
            t = T.Decimal(min(integral + new_scale, T.MAX_PRECISION), new_scale)
    assert t is not None
    return _typed(call, [value, X.Literal(scale, T.INT)], t)


@rule("floor", "ceil")
def _floor(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    if len(args) != 1:
        raise ty.unsupported(call, f"{call.shown_name} with a scale")
    value = _numeric_arg(ty, call, args[0])
    t = value.type
    if isinstance(t, T.Decimal):
        if t.scale == 0:
            return _typed(call, [value], t)
        return _typed(call, [value], T.Decimal(max(min(t.precision - t.scale + 1, T.MAX_PRECISION), 1), 0))
    return _typed(call, [value], T.LONG)


@rule("sign")
def _sign(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 1)
    return _typed(call, [ty.cast(_numeric_arg(ty, call, args[0]), T.DOUBLE)], T.DOUBLE)


# ---------------------------------------------------------------------------------------------- strings
def _strings(ty: Typer, call: X.Call, args: Sequence[X.Expr]) -> list[X.Expr]:
    return [_expect(ty, call, a, T.STRING) for a in args]


@rule("upper", "lower")
def _case(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 1)
    return _typed(call, _strings(ty, call, args), T.STRING)


@rule("trim", "ltrim", "rtrim", "btrim")
def _trim(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 1, 2)
    name = "trim" if call.name == "btrim" else call.name
    return replace(_typed(call, _strings(ty, call, args), T.STRING), name=name)


@rule("substring")
def _substring(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2, 3)
    (t, *_) = _types(args)
    head = args[0] if t == T.BINARY else _expect(ty, call, args[0], T.STRING)
    rest = [_expect(ty, call, a, T.INT, "position and length") for a in args[1:]]
    return _typed(call, [head, *rest], T.BINARY if t == T.BINARY else T.STRING)


@rule("concat")
def _concat(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    types = _types(args)
    if any(isinstance(t, (T.Array, T.Map, T.Struct)) for t in types):
        raise ty.unsupported(call, "concat of arrays")
    if types and all(t == T.BINARY for t in types):
        return _typed(call, args, T.BINARY)
    return _typed(call, _strings(ty, call, args), T.STRING)


@rule("concat_ws")
def _concat_ws(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 1, 999)
    if any(isinstance(t, (T.Array, T.Map, T.Struct)) for t in _types(args)):
        raise ty.unsupported(call, "concat_ws of arrays")
    return _typed(call, _strings(ty, call, args), T.STRING)


@rule("length")
def _length(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 1)
    if args[0].type == T.BINARY:
        return _typed(call, args, T.INT)
    return _typed(call, _strings(ty, call, args), T.INT)


@rule("replace")
def _replace(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2, 3)
    out = _strings(ty, call, args)
    if len(out) == 2:
        out.append(X.Literal("", T.STRING))
    return _typed(call, out, T.STRING)


@rule("lpad", "rpad")
def _pad(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2, 3)
    if args[0].type == T.BINARY:
        raise ty.unsupported(call, f"{call.shown_name} of BINARY")
    out = [_expect(ty, call, args[0], T.STRING), _expect(ty, call, args[1], T.INT, "length")]
    out.append(_expect(ty, call, args[2], T.STRING) if len(args) == 3 else X.Literal(" ", T.STRING))
    return _typed(call, out, T.STRING)


@rule("split_part")
def _split_part(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 3)
    out = [*_strings(ty, call, args[:2]), _expect(ty, call, args[2], T.INT, "part number")]
    return _typed(call, out, T.STRING)


@rule("left", "right")
def _left(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2)
    return _typed(call, [_expect(ty, call, args[0], T.STRING), _expect(ty, call, args[1], T.INT, "length")], T.STRING)


@rule("startswith", "endswith", "contains")
def _affix(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2)
    if all(t == T.BINARY for t in _types(args)):
        return _typed(call, args, T.BOOLEAN)
    return _typed(call, _strings(ty, call, args), T.BOOLEAN)


# ---------------------------------------------------------------------------------------------- date and time
def _date_arg(ty: Typer, call: X.Call, arg: X.Expr) -> X.Expr:
    return _expect(ty, call, arg, T.DATE)


def _timestamp_arg(ty: Typer, call: X.Call, arg: X.Expr, keep_ntz: bool = True) -> X.Expr:
    if keep_ntz and arg.type == T.TIMESTAMP_NTZ:
        return arg
    return _expect(ty, call, arg, T.TIMESTAMP)


@rule("year", "month", "day", "dayofweek", "dayofyear", "quarter", "weekofyear")
def _date_part(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 1)
    return _typed(call, [_date_arg(ty, call, args[0])], T.INT)


@rule("hour", "minute", "second")
def _time_part(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 1)
    return _typed(call, [_timestamp_arg(ty, call, args[0])], T.INT)


@rule("date_trunc")
def _date_trunc(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2)
    unit = _expect(ty, call, args[0], T.STRING, "unit")
    return _typed(call, [unit, _timestamp_arg(ty, call, args[1], keep_ntz=False)], T.TIMESTAMP)


@rule("trunc")
def _trunc(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2)
    return _typed(call, [_date_arg(ty, call, args[0]), _expect(ty, call, args[1], T.STRING, "unit")], T.DATE)


@rule("date_format")
def _date_format(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2)
    value = _timestamp_arg(ty, call, args[0], keep_ntz=False)
    return _typed(call, [value, _expect(ty, call, args[1], T.STRING, "format")], T.STRING)


@rule("to_date")
def _to_date(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 1, 2)
    if len(args) == 1:
        return _typed(call, [_date_arg(ty, call, args[0])], T.DATE)
    fmt = _expect(ty, call, args[1], T.STRING, "format")
    value = args[0] if args[0].type in _DATETIMES else _expect(ty, call, args[0], T.STRING)
    return _typed(call, [value, fmt], T.DATE)


@rule("to_timestamp")
def _to_timestamp(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 1, 2)
    if len(args) == 1:
        return _typed(call, [_expect(ty, call, args[0], T.TIMESTAMP)], T.TIMESTAMP)
    fmt = _expect(ty, call, args[1], T.STRING, "format")
    value = args[0] if args[0].type in _DATETIMES else _expect(ty, call, args[0], T.STRING)
    return _typed(call, [value, fmt], T.TIMESTAMP)


@rule("date_add", "date_sub")
def _date_add(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2)
    return _typed(call, [_date_arg(ty, call, args[0]), _days(ty, call, args[1])], T.DATE)


@rule("add_months")
def _add_months(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2)
    return _typed(call, [_date_arg(ty, call, args[0]), _days(ty, call, args[1])], T.DATE)


@rule("datediff")
def _datediff(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2)
    return _typed(call, [_date_arg(ty, call, a) for a in args], T.INT)


@rule("months_between")
def _months_between(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2, 3)
    out = [_timestamp_arg(ty, call, a, keep_ntz=False) for a in args[:2]]
    out.append(_expect(ty, call, args[2], T.BOOLEAN, "roundOff") if len(args) == 3 else X.TRUE)
    return _typed(call, out, T.DOUBLE)


@rule("current_date")
def _current_date(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 0)
    return _typed(call, args, T.DATE)


@rule("current_timestamp")
def _current_timestamp(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 0)
    return replace(_typed(call, args, T.TIMESTAMP), name="current_timestamp")


@rule("make_date")
def _make_date(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 3)
    return _typed(call, [_expect(ty, call, a, T.INT) for a in args], T.DATE)


@rule("unix_timestamp")
def _unix_timestamp(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 0, 2)
    if not args:
        return _typed(call, [X.Call("current_timestamp", (), T.TIMESTAMP)], T.LONG)
    value = args[0] if args[0].type in _DATETIMES else _expect(ty, call, args[0], T.STRING)
    fmt = (
        _expect(ty, call, args[1], T.STRING, "format") if len(args) == 2 else X.Literal("yyyy-MM-dd HH:mm:ss", T.STRING)
    )
    return _typed(call, [value, fmt], T.LONG)


@rule("from_unixtime")
def _from_unixtime(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 1, 2)
    fmt = (
        _expect(ty, call, args[1], T.STRING, "format") if len(args) == 2 else X.Literal("yyyy-MM-dd HH:mm:ss", T.STRING)
    )
    return _typed(call, [_expect(ty, call, args[0], T.LONG), fmt], T.STRING)


# ---------------------------------------------------------------------------------------------- hashing
def _hashable(ty: Typer, call: X.Call, args: list[X.Expr]) -> None:
    for t in _types(args):
        if not T.is_atomic(t) or t in (T.DAY_TIME, T.YEAR_MONTH):
            raise ty.unsupported(call, f"{call.shown_name} of {t.sql()}")


@rule("hash")
def _hash(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _hashable(ty, call, args)
    return _typed(call, args, T.INT)


@rule("xxhash64")
def _xxhash64(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _hashable(ty, call, args)
    return _typed(call, args, T.LONG)


@rule("md5")
def _md5(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 1)
    return _typed(call, [_expect(ty, call, args[0], T.BINARY)], T.STRING)


@rule("sha2")
def _sha2(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2)
    return _typed(
        call, [_expect(ty, call, args[0], T.BINARY), _expect(ty, call, args[1], T.INT, "bit length")], T.STRING
    )


# ---------------------------------------------------------------------------------------------- collections
@rule("element_at", "subscript")
def _element_at(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 2)
    container, key = args
    t = container.type
    if isinstance(t, T.Array):
        return _typed(call, [container, _expect(ty, call, key, T.INT, "index")], t.element)
    if isinstance(t, T.Map):
        return _typed(call, [container, _expect(ty, call, key, t.key, "key")], t.value)
    assert t is not None
    raise ty.mismatch(call, f"{call.shown_name} needs an ARRAY or a MAP, not {t.sql()}")


@rule("size", "cardinality")
def _size(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    _arity(ty, call, args, 1)
    t = args[0].type
    if not isinstance(t, (T.Array, T.Map)) and t != T.VOID:
        assert t is not None
        raise ty.mismatch(call, f"{call.shown_name} needs an ARRAY or a MAP, not {t.sql()}")
    return replace(_typed(call, args, T.INT), name="size")


@rule("get_field")
def _get_field(ty: Typer, call: X.Call, args: list[X.Expr]) -> X.Expr:
    base, name = args
    t = base.type
    if not isinstance(t, T.Struct) or not isinstance(name, X.Literal):
        assert t is not None
        raise ty.mismatch(call, f"field access needs a STRUCT, not {t.sql()}")
    found = [f for f in t.fields if f.name.lower() == str(name.value).lower()]
    if not found:
        raise ty.mismatch(call, f"the struct has no field {name.value!r}; it has {[f.name for f in t.fields]}")
    index = t.fields.index(found[0])
    return _typed(call, [base, X.Literal(index, T.INT)], found[0].type)


#: calls that are NULL when any argument is (Spark's ``NullIntolerant``): a NULL literal argument folds them
NULL_INTOLERANT = frozenset(
    {
        "/", "%", "div", "pmod", "=", "!=", "<", "<=", ">", ">=", "not", "like",
        "ilike", "rlike", "upper", "lower", "trim", "ltrim", "rtrim", "substring", "replace", "lpad",
        "rpad", "split_part", "left", "right", "startswith", "endswith", "contains", "round", "bround", "floor",
        "ceil", "sign", "year", "month", "day", "dayofweek", "dayofyear", "quarter", "weekofyear", "hour",
        "minute", "second", "date_format", "date_add", "date_sub", "add_months", "datediff", "make_date",
        "add_interval_months", "add_interval_micros", "md5", "sha2",
    }
)  # fmt: skip


def function_names() -> list[str]:
    """Every function and operator name deltalog evaluates (canonical names and their aliases)."""
    return sorted({*RULES, *(k for k, v in ALIASES.items() if v is not None)})


__all__ = ["ALIASES", "RULES", "Typer", "canonical", "function_names"]
