"""A small, exact subset of Spark SQL expressions: what a table's CHECK constraints, invariants and generated
columns are written in, parsed so that deltalog can evaluate them itself.

Delta stores those rules as Spark SQL text (PROTOCOL "Column Invariants", "CHECK Constraints", "Generated
Columns"). Evaluating them in another dialect would differ in casts, functions, overflow and NaN ordering, so
this module accepts only constructs whose Spark meaning is known and evaluates exactly (see
:mod:`deltalog.data.constraints`), and raises :class:`SqlSubsetError` for everything else:

* column references: ``a``, ``a.b`` (nested), ```odd name```.`x``` (backticks, ``````  inside is a backtick);
* literals: ``NULL``, ``TRUE``/``FALSE``, integers (``1``, ``1L``, ``1S``, ``1Y``), decimals (``1.5``,
  ``1.5BD``: Spark reads ``1.5`` as a decimal), doubles (``1.5D``, ``1e3``), floats (``1.5F``), strings in single
  or double quotes with Spark's backslash escapes (adjacent strings concatenate, as in Spark),
  ``DATE '...'``, ``TIMESTAMP '...'``, ``TIMESTAMP_NTZ '...'``;
* ``=``/``==``, ``<=>``, ``<>``/``!=``, ``<``, ``<=``, ``>``, ``>=``; ``AND``, ``OR``, ``NOT``/``!``;
  ``IS [NOT] NULL``, ``[NOT] IN (...)``, ``[NOT] BETWEEN ... AND ...``; ``+``, ``-``, ``*``, unary minus;
  parentheses.

Functions, ``CAST``, ``CASE``, ``/``, ``%``, ``LIKE``, subqueries and the rest are refused by name.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

MAX_NESTING = 50  # parentheses, NOT and signs nested deeper are refused rather than recursed into
MAX_DEPTH = 200  # trees deeper than this (long AND/OR/+ chains) are refused: evaluating them recurses


class SqlSubsetError(ValueError):
    """The text is not an expression of the supported subset; the message says what was found and where."""


@dataclass(frozen=True)
class Column:
    path: tuple[str, ...]


@dataclass(frozen=True)
class Literal:
    """``kind``: null, boolean, int (``width`` 8/16/32/64), decimal, double, float, string, date, timestamp,
    timestamp_ntz. ``value`` is the literal's text for temporal kinds, else a Python value."""

    kind: str
    value: Any
    width: int = 0


@dataclass(frozen=True)
class Unary:
    op: str  # "not" or "neg"
    operand: Node


@dataclass(frozen=True)
class Binary:
    op: str  # "and", "or", "=", "<=>", "!=", "<", "<=", ">", ">=", "+", "-", "*"
    left: Node
    right: Node


@dataclass(frozen=True)
class IsNull:
    operand: Node
    negated: bool


@dataclass(frozen=True)
class In:
    operand: Node
    items: tuple[Node, ...]
    negated: bool


@dataclass(frozen=True)
class Between:
    operand: Node
    low: Node
    high: Node
    negated: bool


Node = Column | Literal | Unary | Binary | IsNull | In | Between

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?:BD|bd|[LlSsYyDdFf])?(?![A-Za-z_0-9]))
    | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
    | (?P<quoted>`(?:[^`]|``)*`)
    | (?P<word>[A-Za-z_][A-Za-z_0-9]*)
    | (?P<op><=>|==|<>|!=|<=|>=|[=<>+\-*/%(),.!])
    )""",
    re.VERBOSE | re.DOTALL,
)
_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "%": "\\%", "_": "\\_"}
_KEYWORDS = {"and", "or", "not", "is", "null", "in", "between", "true", "false"}
_COMPARISONS = {"=": "=", "==": "=", "<=>": "<=>", "<>": "!=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_TEMPORAL = {"date": "date", "timestamp": "timestamp", "timestamp_ntz": "timestamp_ntz"}


def _unescape(body: str) -> str:
    """Spark's string literal escapes (``unescapeSQLString``): ``\\n``, ``\\'``, ``\\uXXXX``, ..."""
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 >= len(body):
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", body[i + 2 : i + 6]):
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


@dataclass(frozen=True)
class _Tok:
    kind: str  # number, string, quoted, word, op, end
    text: str
    at: int


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            out.append(_Tok("end", "", pos))
            return out
        m = _TOKEN.match(text, pos)
        if m is None or m.lastgroup is None:
            raise SqlSubsetError(f"unexpected character {text[pos]!r} at position {pos}")
        out.append(_Tok(m.lastgroup, m.group(m.lastgroup), m.start(m.lastgroup)))
        pos = m.end()


def _number(text: str) -> Literal:
    upper = text.upper()
    try:
        if upper.endswith("BD"):
            return Literal("decimal", Decimal(text[:-2]))
        suffix = upper[-1]
        if suffix == "D":
            return Literal("double", float(text[:-1]))
        if suffix == "F":
            return Literal("float", float(text[:-1]))
        if suffix in "LSY":
            width = {"L": 64, "S": 16, "Y": 8}[suffix]
            value = int(text[:-1])
            if not -(2 ** (width - 1)) <= value < 2 ** (width - 1):
                raise SqlSubsetError(f"{text} does not fit its {width}-bit type")
            return Literal("int", value, width)
        if "e" in text.lower():
            return Literal("double", float(text))
        if "." in text:
            return Literal("decimal", Decimal(text))
        value = int(text)
    except (ValueError, InvalidOperation):
        raise SqlSubsetError(f"malformed number {text!r}") from None
    if -(2**31) <= value < 2**31:
        return Literal("int", value, 32)
    if -(2**63) <= value < 2**63:
        return Literal("int", value, 64)
    return Literal("decimal", Decimal(value))  # Spark: an integer literal beyond long is a decimal


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.depth = 0

    def peek(self, offset: int = 0) -> _Tok:
        return self.toks[min(self.i + offset, len(self.toks) - 1)]

    def word(self, offset: int = 0) -> str:
        tok = self.peek(offset)
        return tok.text.lower() if tok.kind == "word" else ""

    def take(self) -> _Tok:
        tok = self.peek()
        self.i += 1
        return tok

    def expect(self, text: str) -> None:
        tok = self.take()
        if tok.text.lower() != text:
            raise self.error(tok, f"expected {text!r}")

    def error(self, tok: _Tok, what: str) -> SqlSubsetError:
        shown = tok.text or "the end"
        return SqlSubsetError(f"{what}, found {shown!r} at position {tok.at}")

    def parse(self) -> Node:
        node = self.expr()
        if self.peek().kind != "end":
            raise self.error(self.peek(), "unsupported syntax")
        return node

    @contextlib.contextmanager
    def deeper(self) -> Iterator[None]:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise SqlSubsetError(f"the expression nests deeper than {MAX_NESTING} levels")
        try:
            yield
        finally:
            self.depth -= 1

    def expr(self) -> Node:
        with self.deeper():
            return self.chain("or", lambda: self.chain("and", self.negation))

    def chain(self, word: str, operand: Callable[[], Node]) -> Node:
        node = operand()
        while self.word() == word:
            self.take()
            node = Binary(word, node, operand())
        return node

    def negation(self) -> Node:
        if self.word() == "not" or self.peek().text == "!":
            self.take()
            with self.deeper():
                return Unary("not", self.negation())
        return self.predicate()

    def predicate(self) -> Node:
        node = self.additive()
        tok = self.peek()
        if tok.kind == "op" and tok.text in _COMPARISONS:
            self.take()
            return Binary(_COMPARISONS[tok.text], node, self.additive())
        if self.word() == "is":
            self.take()
            negated = self.word() == "not"
            if negated:
                self.take()
            if self.word() != "null":
                raise self.error(self.peek(), "only IS [NOT] NULL is supported after IS")
            self.take()
            return IsNull(node, negated)
        negated = self.word() == "not" and self.word(1) in ("in", "between")
        if negated:
            self.take()
        if self.word() == "in":
            self.take()
            self.expect("(")
            items = [self.expr()]
            while self.peek().text == ",":
                self.take()
                items.append(self.expr())
            self.expect(")")
            return In(node, tuple(items), negated)
        if self.word() == "between":
            self.take()
            low = self.additive()
            self.expect("and")
            return Between(node, low, self.additive(), negated)
        return node

    def additive(self) -> Node:
        node = self.multiplicative()
        while self.peek().kind == "op" and self.peek().text in ("+", "-"):
            op = self.take().text
            node = Binary(op, node, self.multiplicative())
        return node

    def multiplicative(self) -> Node:
        node = self.unary()
        while self.peek().kind == "op" and self.peek().text in ("*", "/", "%"):
            tok = self.take()
            if tok.text != "*":
                raise self.error(tok, "division and modulo are not in the supported subset")
            node = Binary("*", node, self.unary())
        return node

    def unary(self) -> Node:
        tok = self.peek()
        if tok.kind == "op" and tok.text in ("-", "+"):
            self.take()
            with self.deeper():
                operand = self.unary()
            if tok.text == "+":
                return operand
            if isinstance(operand, Literal) and operand.kind in ("int", "decimal", "double", "float"):
                return Literal(operand.kind, -operand.value, operand.width)
            return Unary("neg", operand)
        return self.primary()

    def primary(self) -> Node:
        tok = self.take()
        if tok.kind == "number":
            return _number(tok.text)
        if tok.kind == "string":
            parts = [_unescape(tok.text[1:-1])]
            while self.peek().kind == "string":  # Spark concatenates adjacent string literals
                parts.append(_unescape(self.take().text[1:-1]))
            return Literal("string", "".join(parts))
        if tok.text == "(":
            node = self.expr()
            self.expect(")")
            return node
        if tok.kind == "word":
            low = tok.text.lower()
            if low in _TEMPORAL and self.peek().kind == "string":
                return Literal(_TEMPORAL[low], _unescape(self.take().text[1:-1]))
            if low == "null":
                return Literal("null", None)
            if low in ("true", "false"):
                return Literal("boolean", low == "true")
            if self.peek().text == "(":
                raise self.error(tok, f"function {tok.text}() is not in the supported subset")
            if low in _KEYWORDS:
                raise self.error(tok, "unexpected keyword")
            return self.column(tok.text)
        if tok.kind == "quoted":
            return self.column(tok.text[1:-1].replace("``", "`"))
        raise self.error(tok, "unsupported syntax")

    def column(self, first: str) -> Column:
        path = [first]
        while self.peek().text == ".":
            self.take()
            tok = self.take()
            if tok.kind not in ("word", "quoted"):
                raise self.error(tok, "expected a field name after '.'")
            path.append(tok.text if tok.kind == "word" else tok.text[1:-1].replace("``", "`"))
        return Column(tuple(path))


def _children(n: Node) -> list[Node]:
    if isinstance(n, (Unary, IsNull)):
        return [n.operand]
    if isinstance(n, Binary):
        return [n.left, n.right]
    if isinstance(n, In):
        return [n.operand, *n.items]
    return [n.operand, n.low, n.high] if isinstance(n, Between) else []


def parse(text: str) -> Node:
    """The expression tree of ``text``; :class:`SqlSubsetError` when it is outside the subset.

    Trees deeper than :data:`MAX_DEPTH` (``a + a + ... + a`` chains too) are refused, so evaluating one can
    never exhaust the interpreter's stack.
    """
    if not isinstance(text, str) or not text.strip():
        raise SqlSubsetError("empty expression")
    node = _Parser(text).parse()
    level = [node]
    for _ in range(MAX_DEPTH):
        level = [c for n in level for c in _children(n)]
        if not level:
            return node
    raise SqlSubsetError(f"the expression nests deeper than {MAX_DEPTH} levels")


def columns(node: Node) -> list[tuple[str, ...]]:
    """The column paths ``node`` refers to, in order of first appearance."""
    out: list[tuple[str, ...]] = []
    stack: list[Node] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Column) and n.path not in out:
            out.append(n.path)
        stack.extend(reversed(_children(n)))
    return out


__all__ = [
    "Between",
    "Binary",
    "Column",
    "In",
    "IsNull",
    "Literal",
    "Node",
    "SqlSubsetError",
    "Unary",
    "columns",
    "parse",
]
