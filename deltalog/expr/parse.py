"""Spark SQL text to the expression tree, through sqlglot's Spark dialect.

Why sqlglot: it is a maintained, pure-Python SQL parser with a Spark dialect (backticks, ``<=>``, ``1L`` /
``1BD`` suffixes, ``RLIKE``, ``DIV``, typed ``DATE '...'`` literals, ``X'..'``), and deltalog only needs
its syntax tree, never its SQL generation. Two things are adapted:

* sqlglot rewrites many functions into dialect-neutral forms on the way in (``to_date(s, 'yyyy-MM-dd')`` into
  a strftime format, ``day(d)`` into a date conversion, ``nvl`` into ``coalesce``). A dialect subclass with no
  function table keeps every call as written, by name, so the binder sees exactly what the user wrote and
  Spark's meaning is the only one applied. Syntax forms (``CAST``, ``TRIM(BOTH .. FROM ..)``,
  ``SUBSTRING(.. FROM .. FOR ..)``, ``EXTRACT``, ``CASE``, ``IF``) still have their own nodes.
* sqlglot's Spark dialect reads ``CAST`` as a lenient cast (Spark 2's); here ``CAST`` is ANSI and only
  ``TRY_CAST`` is lenient, as in Spark 4.

sqlglot is imported on the first parse, not with :mod:`deltalog` (it costs about half a second).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, ClassVar

from deltalog.errors import InvalidExpressionError, UnsupportedExpressionError
from deltalog.expr import parsing
from deltalog.expr import tree as X
from deltalog.expr import types as T

#: trees deeper than this are refused (evaluation recurses); AND/OR chains are flat and do not count
MAX_DEPTH = 200
_UNITS_DAY_TIME = {
    "DAY": 86_400_000_000, "HOUR": 3_600_000_000, "MINUTE": 60_000_000, "SECOND": 1_000_000,
    "MILLISECOND": 1_000, "MICROSECOND": 1, "WEEK": 7 * 86_400_000_000,
}  # fmt: skip
_UNITS_YEAR_MONTH = {"YEAR": 12, "MONTH": 1}
_EXTRACT = {
    "YEAR": "year", "YEARS": "year", "MONTH": "month", "MONTHS": "month", "DAY": "day", "DAYS": "day",
    "HOUR": "hour", "HOURS": "hour", "MINUTE": "minute", "MINUTES": "minute", "QUARTER": "quarter",
    "DOY": "dayofyear", "DAYOFYEAR": "dayofyear", "WEEK": "weekofyear", "DAYOFWEEK": "dayofweek", "DOW": "dayofweek",
}  # fmt: skip


@functools.cache
def _dialect() -> Any:
    from sqlglot.dialects import spark

    base: Any = spark.Spark

    class DeltaSpark(base):  # type: ignore[misc]
        class Parser(base.Parser):  # type: ignore[misc]
            FUNCTIONS: ClassVar[dict[str, Any]] = {}  # every call kept as written: the binder knows Spark's

    return DeltaSpark


_OCTAL = re.compile(r"[0-3][0-7][0-7]")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_SIMPLE_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "%": "\\%", "_": "\\_"}
_MARK = "\x01"


def unescape(body: str) -> str:
    """A string literal's body as Spark reads it (``unescapeSQLString``): ``\\n``, ``\\'``, ``\\uXXXX``,
    octal ``\\ddd``; ``\\%`` and ``\\_`` keep their backslash (LIKE patterns need it); any other escaped
    character is itself."""
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 >= len(body):
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "u" and _HEX4.fullmatch(body[i + 2 : i + 6]):
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        elif _OCTAL.fullmatch(body[i + 1 : i + 4]):
            out.append(chr(int(body[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(_SIMPLE_ESCAPES.get(nxt, nxt))
            i += 2
    return "".join(out)


@dataclass(frozen=True)
class _Prepared:
    """The text with each run of string literals replaced by a marker sqlglot reads verbatim, the decoded
    strings, and anchors mapping a position in the new text back to the user's."""

    text: str
    strings: tuple[str, ...]
    anchors: tuple[tuple[int, int], ...]  # (offset in the new text, the same place in the user's text)

    def original(self, at: int | None) -> int | None:
        if at is None:
            return None
        new, old = 0, 0
        for n, o in self.anchors:
            if n > at:
                break
            new, old = n, o
        return old + (at - new)


def _prepare(text: str) -> _Prepared:
    """String literals decoded as Spark decodes them (sqlglot keeps backslashes and reads ``''`` apart), and
    adjacent literals joined as Spark joins them (``'a' 'b'`` is ``'ab'``)."""
    out: list[str] = []
    size = 0
    strings: list[str] = []
    anchors: list[tuple[int, int]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "`":
            j = i + 1
            while j < n and not (text[j] == "`" and text[j + 1 : j + 2] != "`"):
                j += 2 if text[j] == "`" else 1
            out.append(text[i : j + 1])
            size += len(out[-1])
            i = j + 1
            continue
        hex_literal = (
            c == "'" and i > 0 and text[i - 1] in "xX" and (i < 2 or not (text[i - 2].isalnum() or text[i - 2] == "_"))
        )
        if c not in "'\"" or hex_literal:
            end = text.index("'", i + 1) + 1 if hex_literal and "'" in text[i + 1 :] else i + 1
            out.append(text[i:end])
            size += end - i
            i = end
            continue
        start = i
        parts: list[str] = []
        while True:
            quote, j, body = text[i], i + 1, []
            while (j < n and text[j] != quote) or (j < n and text[j + 1 : j + 2] == quote):
                if text[j] == "\\" and j + 1 < n:
                    body.append(text[j : j + 2])
                    j += 2
                elif text[j] == quote:  # a doubled quote is one quote character
                    body.append(quote)
                    j += 2
                else:
                    body.append(text[j])
                    j += 1
            if j >= n:
                raise InvalidExpressionError(
                    f"the string literal at position {i} in {text!r} is not closed", expression=text, position=i
                )
            parts.append(unescape("".join(body)))
            i = j + 1
            k = i
            while k < n and text[k].isspace():
                k += 1
            if k < n and text[k] in "'\"":
                i = k
                continue
            break
        marker = f"'{_MARK}{len(strings)}{_MARK}'"
        strings.append("".join(parts))
        anchors.append((size, start))
        out.append(marker)
        size += len(marker)
        anchors.append((size, i))
    return _Prepared("".join(out), tuple(strings), tuple(anchors))


def parse(text: str) -> X.Expr:
    """The unbound tree of one Spark SQL expression.

    Text that does not parse, or holds more than one expression, is an
    :class:`~deltalog.errors.InvalidExpressionError` naming the position; a syntax deltalog does not evaluate
    (subqueries, lambdas, ``LIKE ANY``...) an :class:`~deltalog.errors.UnsupportedExpressionError` naming it.
    """
    if not isinstance(text, str):
        raise InvalidExpressionError(f"an expression is SQL text, not {type(text).__name__}", expression=repr(text))
    if not text.strip():
        raise InvalidExpressionError("empty expression", expression=text, position=0)
    import sqlglot
    from sqlglot.errors import ParseError, TokenError

    prepared = _prepare(text)
    try:
        statements = sqlglot.parse(prepared.text, dialect=_dialect())
    except ParseError as exc:
        position = prepared.original(_position(prepared.text, exc))
        first = str(exc).splitlines()[0]
        where = f" at position {position}" if position is not None else ""
        raise InvalidExpressionError(
            f"cannot parse {text!r}{where}: {_plain(first)}", expression=text, position=position
        ) from None
    except TokenError as exc:
        raise InvalidExpressionError(f"cannot parse {text!r}: {exc}", expression=text) from None
    except RecursionError:
        raise InvalidExpressionError(f"{text[:80]!r}... nests too deeply to parse", expression=text) from None
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        raise InvalidExpressionError(
            f"{text!r} holds {len(statements)} statements; one expression is expected", expression=text
        )
    try:
        out = _Converter(text, prepared).convert(statements[0])
    except RecursionError:
        raise InvalidExpressionError(f"{text[:80]!r}... nests too deeply", expression=text) from None
    if X.depth(out) > MAX_DEPTH:
        raise InvalidExpressionError(f"the expression nests deeper than {MAX_DEPTH} levels", expression=text)
    return out


def _plain(message: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", message)


def _position(text: str, exc: Any) -> int | None:
    """The 0-based offset a sqlglot ParseError points at (it reports line and column)."""
    for err in getattr(exc, "errors", None) or []:
        line, col = err.get("line"), err.get("col")
        if isinstance(line, int) and isinstance(col, int):
            lines = text.split("\n")
            return sum(len(x) + 1 for x in lines[: line - 1]) + max(col - 1, 0)
    return None


def number(text: str, at: int | None = None, source: str = "") -> X.Literal:
    """A numeric literal without suffix typed as Spark types it: INT, then BIGINT, then DECIMAL for integers;
    DECIMAL for ``1.5``; DOUBLE with an exponent."""
    try:
        if "e" in text.lower():
            return X.Literal(float(text), T.DOUBLE, at)
        if "." in text:
            value = Decimal(text)
            t = X.decimal_type_of(value)
            if t.precision > T.MAX_PRECISION:
                raise InvalidExpressionError(
                    f"decimal literal {text} has more than 38 digits", expression=source or text, position=at
                )
            return X.Literal(value, t, at)
        whole = int(text)
    except (ValueError, InvalidOperation):
        raise InvalidExpressionError(f"malformed number {text!r}", expression=source or text, position=at) from None
    if -(2**31) <= whole < 2**31:
        return X.Literal(whole, T.INT, at)
    if -(2**63) <= whole < 2**63:
        return X.Literal(whole, T.LONG, at)
    d = Decimal(whole)
    if len(str(abs(whole))) > T.MAX_PRECISION:
        raise InvalidExpressionError(
            f"integer literal {text} has more than 38 digits", expression=source or text, position=at
        )
    return X.Literal(d, X.decimal_type_of(d), at)


class _Converter:
    """One text's sqlglot tree to deltalog's; messages quote the text and positions point into it."""

    def __init__(self, text: str, prepared: _Prepared) -> None:
        self.text = text
        self.prepared = prepared

    def unsupported(self, node: Any, what: str | None = None) -> UnsupportedExpressionError:
        shown = what or self.sql(node)
        at = self.at(node)
        where = f" at position {at}" if at is not None else ""
        return UnsupportedExpressionError(
            f"{shown}{where} in {self.text!r} is not an expression deltalog evaluates (it never evaluates one "
            "with another meaning than Spark's)",
            expression=self.text,
            function=shown,
            position=at,
        )

    def invalid(self, node: Any, why: str) -> InvalidExpressionError:
        at = self.at(node)
        where = f" at position {at}" if at is not None else ""
        return InvalidExpressionError(f"{why}{where} in {self.text!r}", expression=self.text, position=at)

    @staticmethod
    def sql(node: Any) -> str:
        try:
            return str(node.sql(dialect="spark"))
        except Exception:  # sqlglot cannot always print what it parsed
            return type(node).__name__

    def at(self, node: Any) -> int | None:
        """Where ``node`` starts in the text: sqlglot records offsets on identifiers, literals and calls."""
        best: int | None = None
        for n in node.walk() if hasattr(node, "walk") else ():
            meta = getattr(n, "_meta", None) or {}
            start = meta.get("start")
            if isinstance(start, int) and (best is None or start < best):
                best = start
        return self.prepared.original(best)

    def string(self, value: str) -> str:
        if value.startswith(_MARK) and value.endswith(_MARK):
            return self.prepared.strings[int(value[1:-1])]
        return value

    def args(self, nodes: Any) -> tuple[X.Expr, ...]:
        return tuple(self.convert(n) for n in nodes or [])

    def convert(self, node: Any) -> X.Expr:
        from sqlglot import exp

        at = self.at(node)
        if isinstance(node, exp.Paren):
            return self.convert(node.this)
        if isinstance(node, exp.Column):
            if isinstance(node.this, exp.Star):
                raise self.unsupported(node, "*")
            return X.Column(tuple(str(p.this) for p in node.parts), at)
        if isinstance(node, exp.Identifier):
            return X.Column((str(node.this),), at)
        if isinstance(node, exp.Dot):
            base = self.convert(node.this)
            name = node.expression
            field = str(name.this) if isinstance(name, exp.Identifier) else self.sql(name)
            if isinstance(base, X.Column):
                return X.Column((*base.parts, field), base.at)
            return X.Call("get_field", (base, X.Literal(field, T.STRING)), at=at)
        if isinstance(node, exp.Literal):
            if node.is_string:
                return X.Literal(self.string(str(node.this)), T.STRING, at)
            return number(str(node.this), at, self.text)
        if isinstance(node, exp.Boolean):
            return X.Literal(bool(node.this), T.BOOLEAN, at)
        if isinstance(node, exp.Null):
            return X.Literal(None, T.VOID, at)
        if isinstance(node, exp.HexString):
            digits = str(node.this)
            try:
                return X.Literal(bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits), T.BINARY, at)
            except ValueError:
                raise self.invalid(node, f"X'{digits}' is not a hexadecimal literal") from None
        if isinstance(node, (exp.Cast, exp.TryCast)):
            to = self.data_type(node.to)
            operand = self.convert(node.this)
            lenient = isinstance(node, exp.TryCast) and bool(node.args.get("safe"))
            folded = None if lenient else _typed_literal(operand, to)
            typed = (
                isinstance(node, exp.Cast)
                and isinstance(operand, X.Literal)
                and operand.type == T.STRING
                and self.typed_literal_syntax(operand)
            )
            if typed and isinstance(operand, X.Literal):
                self.check_typed_literal(node, str(operand.value), to)
            return folded if folded is not None else X.Cast(operand, to, lenient, at=at, typed_literal=typed)
        if isinstance(node, exp.Neg):
            operand = self.convert(node.this)
            if isinstance(operand, X.Literal) and T.is_numeric(operand.type) and operand.value is not None:
                return _negated(operand, self.text)
            return X.Call("neg", (operand,), at=at)
        binary = _BINARY.get(type(node).__name__)
        if binary is not None:
            return X.Call(binary, (self.convert(node.this), self.convert(node.expression)), at=at)
        if isinstance(node, (exp.And, exp.Or)):
            parts = (self.convert(node.this), self.convert(node.expression))
            return X.and_(*parts) if isinstance(node, exp.And) else X.or_(*parts)
        if isinstance(node, exp.Not):
            inner = node.this.this if isinstance(node.this, exp.Paren) else node.this
            if isinstance(inner, exp.Is):
                positive = self.convert(inner)
                assert isinstance(positive, X.Call)
                return X.Call(positive.name.replace("is_", "is_not_", 1), positive.args, at=at)
            return X.Call("not", (self.convert(node.this),), at=at)
        if isinstance(node, exp.Is):
            target = node.expression
            name = (
                "is_null"
                if isinstance(target, exp.Null)
                else ("is_true" if isinstance(target, exp.Boolean) and target.this else "is_false")
            )
            if not isinstance(target, (exp.Null, exp.Boolean)):
                raise self.unsupported(node)
            return X.Call(name, (self.convert(node.this),), at=at)
        if isinstance(node, exp.In):
            if node.args.get("query") is not None or node.args.get("unnest") is not None:
                raise self.unsupported(node, "IN (subquery)")
            return X.Call("in", (self.convert(node.this), *self.args(node.expressions)), at=at)
        if isinstance(node, exp.Between):
            value = self.convert(node.this)
            low, high = self.convert(node.args["low"]), self.convert(node.args["high"])
            return X.and_(X.Call(">=", (value, low), at=at), X.Call("<=", (value, high), at=at))
        if isinstance(node, exp.Escape):
            like = node.this
            if not isinstance(like, (exp.Like, exp.ILike)):
                raise self.unsupported(node)
            escape = self.convert(node.expression)
            return self.like(like, escape)
        if isinstance(node, (exp.Like, exp.ILike)):
            return self.like(node, None)
        if isinstance(node, exp.RegexpLike):
            return X.Call("rlike", (self.convert(node.this), self.convert(node.expression)), at=at, written="RLIKE")
        if isinstance(node, exp.Case):
            subject = self.convert(node.this) if node.this is not None else None
            branches = []
            for branch in node.args.get("ifs") or []:
                cond: X.Expr = self.convert(branch.this)
                if subject is not None:
                    cond = X.Call("=", (subject, cond), at=self.at(branch))
                branches.append((cond, self.convert(branch.args["true"])))
            default = node.args.get("default")
            return X.Case(tuple(branches), self.convert(default) if default is not None else None, at=at)
        if isinstance(node, exp.If):
            false = node.args.get("false")
            pair = (self.convert(node.this), self.convert(node.args["true"]))
            return X.Call("if", (*pair, self.convert(false) if false is not None else X.NULL), at=at, written="if")
        if isinstance(node, exp.Concat):
            pieces = self.args(node.expressions)
            if all(isinstance(p, X.Literal) and p.type == T.STRING for p in pieces):  # 'a' 'b': one literal
                return X.Literal("".join(str(p.value) for p in pieces if isinstance(p, X.Literal)), T.STRING, at)
            return X.Call("concat", pieces, at=at)
        if isinstance(node, exp.DPipe):
            return X.Call("concat", (self.convert(node.this), self.convert(node.expression)), at=at, written="||")
        if isinstance(node, exp.Bracket):
            if len(node.expressions) != 1:
                raise self.unsupported(node)
            return X.Call("subscript", (self.convert(node.this), self.convert(node.expressions[0])), at=at)
        if isinstance(node, exp.Substring):
            given = [node.this, node.args.get("start"), node.args.get("length")]
            return X.Call("substring", self.args([a for a in given if a is not None]), at=at, written="substring")
        if isinstance(node, exp.Trim):
            position = str(node.args.get("position") or "BOTH").upper()
            name = {"BOTH": "trim", "LEADING": "ltrim", "TRAILING": "rtrim"}.get(position)
            if name is None:
                raise self.unsupported(node)
            chars = node.expression
            args = (self.convert(node.this), *((self.convert(chars),) if chars is not None else ()))
            return X.Call(name, args, at=at, written=f"TRIM({position})")
        if isinstance(node, (exp.Ceil, exp.Floor)):
            name = "ceil" if isinstance(node, exp.Ceil) else "floor"
            scale = node.args.get("decimals")
            extra = (self.convert(scale),) if scale is not None else ()
            return X.Call(name, (self.convert(node.this), *extra), at=at, written=name)
        if isinstance(node, exp.Extract):
            unit = str(node.this.name if hasattr(node.this, "name") else node.this).upper()
            if unit not in _EXTRACT:
                raise self.unsupported(node, f"EXTRACT({unit} FROM ...)")
            return X.Call(_EXTRACT[unit], (self.convert(node.expression),), at=at)
        if isinstance(node, exp.Interval):
            return self.interval(node)
        if isinstance(node, exp.CurrentDate):
            return X.Call("current_date", (), at=at, written="current_date")
        if isinstance(node, exp.CurrentTimestamp):
            return X.Call("current_timestamp", (), at=at, written="current_timestamp")
        if isinstance(node, exp.Anonymous):
            name = str(node.this)
            return X.Call(name.lower(), self.args(node.expressions), at=at, written=name)
        raise self.unsupported(node)

    def typed_literal_syntax(self, literal: X.Literal) -> bool:
        """Whether the literal was written after its type (``DATE '...'``), not inside ``CAST(... AS DATE)``."""
        if literal.at is None:
            return False
        before = self.text[: literal.at].rstrip()
        return bool(before) and before[-1].isalpha()

    def check_typed_literal(self, node: Any, value: str, to: T.DataType) -> None:
        """``DATE '...'``, ``TIMESTAMP '...'``: Spark refuses a malformed one when it parses the text."""
        ok = parsing.date(value) is not None if to == T.DATE else parsing.timestamp_wall(value) is not None
        if to in (T.DATE, T.TIMESTAMP, T.TIMESTAMP_NTZ) and not ok:
            raise self.invalid(node, f"[INVALID_TYPED_LITERAL] {to.sql()} {value!r} is not a valid {to.sql()} literal")

    def like(self, node: Any, escape: X.Expr | None) -> X.Expr:
        from sqlglot import exp

        pattern = node.expression
        if isinstance(pattern, (exp.Any, exp.All)):
            raise self.unsupported(node, "LIKE ANY/ALL")
        name = "ilike" if isinstance(node, exp.ILike) else "like"
        args = (self.convert(node.this), self.convert(pattern), *((escape,) if escape is not None else ()))
        call = X.Call(name, args, at=self.at(node), written=name.upper())
        return X.Call("not", (call,), at=call.at) if node.args.get("negate") else call

    def interval(self, node: Any) -> X.Expr:
        from sqlglot import exp

        unit_node = node.args.get("unit")
        if not isinstance(unit_node, exp.Var) or not isinstance(node.this, exp.Literal):
            raise self.unsupported(node, f"{self.sql(node)} (only single-unit intervals are evaluated)")
        unit = str(unit_node.this).upper().rstrip("S") if str(unit_node.this).upper() != "S" else "S"
        text = str(node.this.this).strip()
        try:
            amount = Decimal(text)
        except InvalidOperation:
            raise self.invalid(node, f"{text!r} is not an interval amount") from None
        at = self.at(node)
        if unit in _UNITS_YEAR_MONTH:
            if amount != amount.to_integral_value():
                raise self.invalid(node, f"INTERVAL {text} {unit} is not a whole number of {unit.lower()}s")
            return X.Literal(int(amount) * _UNITS_YEAR_MONTH[unit], T.YEAR_MONTH, at)
        if unit in _UNITS_DAY_TIME:
            micros = amount * _UNITS_DAY_TIME[unit]
            if micros != micros.to_integral_value():
                raise self.invalid(node, f"INTERVAL {text} {unit} is finer than a microsecond")
            return X.Literal(int(micros), T.DAY_TIME, at)
        raise self.unsupported(node, f"INTERVAL ... {unit}")

    def data_type(self, node: Any) -> T.DataType:
        from sqlglot import exp

        kind = node.this
        name = kind.name if hasattr(kind, "name") else str(kind)
        simple = _TYPES.get(name)
        if simple is not None:
            return simple
        params = node.expressions or []
        if name == "DECIMAL":
            values = [int(str(p.this.this if isinstance(p, exp.DataTypeParam) else p.this)) for p in params]
            precision = values[0] if values else 10
            scale = values[1] if len(values) > 1 else 0
            if not 1 <= precision <= T.MAX_PRECISION or not 0 <= scale <= precision:
                raise self.invalid(node, f"DECIMAL({precision},{scale}) is not a decimal type")
            return T.Decimal(precision, scale)
        if name == "ARRAY" and len(params) == 1:
            return T.Array(self.data_type(params[0]))
        if name == "MAP" and len(params) == 2:
            return T.Map(self.data_type(params[0]), self.data_type(params[1]))
        if name == "STRUCT":
            fields = []
            for p in params:
                if not isinstance(p, exp.ColumnDef):
                    raise self.unsupported(node)
                fields.append(T.StructField(str(p.this.this), self.data_type(p.args["kind"])))
            return T.Struct(tuple(fields))
        raise self.unsupported(node, f"type {self.sql(node)}")


_BINARY = {
    "Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "Mod": "%", "IntDiv": "div", "EQ": "=", "NEQ": "!=",
    "LT": "<", "LTE": "<=", "GT": ">", "GTE": ">=", "NullSafeEQ": "<=>",
}  # fmt: skip
_TYPES = {
    "BOOLEAN": T.BOOLEAN, "TINYINT": T.BYTE, "SMALLINT": T.SHORT, "INT": T.INT, "BIGINT": T.LONG,
    "FLOAT": T.FLOAT, "DOUBLE": T.DOUBLE, "TEXT": T.STRING, "VARCHAR": T.STRING, "CHAR": T.STRING,
    "BINARY": T.BINARY, "VARBINARY": T.BINARY, "DATE": T.DATE, "TIMESTAMPTZ": T.TIMESTAMP,
    "TIMESTAMPLTZ": T.TIMESTAMP, "TIMESTAMP": T.TIMESTAMP, "TIMESTAMPNTZ": T.TIMESTAMP_NTZ,
}  # fmt: skip


def _typed_literal(operand: X.Expr, to: T.DataType) -> X.Literal | None:
    """``1L``, ``1.5BD``, ``2D`` and ``CAST(<number> AS <numeric type>)`` as one typed literal (the same value
    Spark folds them to); anything else stays a cast, evaluated (and checked) like every other."""
    if not isinstance(operand, X.Literal) or operand.value is None:
        return None
    value = operand.value
    if operand.type == T.INT or operand.type == T.LONG:
        assert isinstance(value, int)
        if to in T.INTEGRAL_BITS:
            bits = T.INTEGRAL_BITS[to]
            return X.Literal(value, to, operand.at) if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1) else None
        if to in (T.DOUBLE, T.FLOAT):
            return X.Literal(float(value), to, operand.at)
    if isinstance(operand.type, T.Decimal) and to in (T.DOUBLE, T.FLOAT):
        return X.Literal(float(value), to, operand.at)  # type: ignore[arg-type]
    if operand.type == T.DOUBLE and to in (T.DOUBLE, T.FLOAT):
        return X.Literal(value, to, operand.at)
    if operand.type == T.STRING and isinstance(to, T.Decimal):  # 1.5BD arrives as CAST('1.5' AS DECIMAL(2,1))
        try:
            d = Decimal(str(value))
        except InvalidOperation:
            return None
        t = X.decimal_type_of(d)
        if t == to or (d == d.to_integral_value() and t.scale == 0 and to.scale == 0 and to.precision >= t.precision):
            return X.Literal(d, to, operand.at)
    return None


def _negated(literal: X.Literal, text: str) -> X.Literal:
    """``-<literal>`` folded as Spark's parser folds it: ``-2147483648`` is an INT, not an overflow."""
    value = literal.value
    if literal.type in (T.INT, T.LONG) and isinstance(value, int):
        return number(str(-value), literal.at, text)
    if literal.type in T.INTEGRAL_BITS and isinstance(value, int):
        bits = T.INTEGRAL_BITS[literal.type]
        if -value < -(2 ** (bits - 1)):
            raise InvalidExpressionError(
                f"-{value} does not fit {literal.type.sql()}", expression=text, position=literal.at
            )
        return X.Literal(-value, literal.type, literal.at)
    if isinstance(value, (float, Decimal)):
        return X.Literal(-value, literal.type, literal.at)
    return literal


__all__ = ["MAX_DEPTH", "number", "parse"]
