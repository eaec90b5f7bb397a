"""String functions with Spark's meaning: lengths and positions in code points, ``trim`` of spaces only,
Java's full case mapping, ``LIKE`` with its escape rules, ``RLIKE`` as Java's ``find``."""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.compute.columns import Session, per_value
from deltalog.compute.failures import refuse, shown
from deltalog.expr import tree as X
from deltalog.expr import types as T

_INT_MAX = 2**31 - 1


def _literal(e: X.Expr) -> Any:
    return e.value if isinstance(e, X.Literal) else None


def _case(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    arr = args[0]
    upper = call.name == "upper"
    if len(arr) and pc.all(pc.string_is_ascii(arr)).as_py() is not False:
        return pc.ascii_upper(arr) if upper else pc.ascii_lower(arr)
    return per_value([arr], pa.string(), str.upper if upper else str.lower)


def _trim(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    chars = " " if len(args) == 1 else _literal(call.args[1])
    fn = {"trim": pc.utf8_trim, "ltrim": pc.utf8_ltrim, "rtrim": pc.utf8_rtrim}[call.name]
    if isinstance(chars, str):
        return fn(args[0], characters=chars) if chars else args[0]
    py = {"trim": str.strip, "ltrim": str.lstrip, "rtrim": str.rstrip}[call.name]
    return per_value(args, pa.string(), lambda s, c: py(s, c) if c else s)


def substring_sql(s: Any, pos: int, length: int = _INT_MAX) -> Any:
    """``UTF8String.substringSQL``: 1-based, 0 as 1, negative from the end, in code points (bytes for
    binary)."""
    n = len(s)
    start = pos - 1 if pos > 0 else (n + pos if pos < 0 else 0)
    end = min(max(start + length, -(2**31)), _INT_MAX)  # Java's int end, clamped as Spark clamps it
    start = max(start, 0)
    return s[start:end] if start < end else s[:0]


def _substring(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    out = pa.binary() if call.type == T.BINARY else pa.string()
    return per_value(args, out, substring_sql)


def _concat(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    if not args:
        return pa.array([""], pa.string())
    if call.type == T.BINARY:
        return per_value(args, pa.binary(), lambda *parts: b"".join(parts))
    if len(args) == 1:
        return args[0]
    return pc.binary_join_element_wise(*args, "", null_handling="emit_null")


def _concat_ws(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    # pyarrow's binary_join_element_wise(null_handling="skip") drops rows whose parts are all null (pyarrow 26)
    def join(sep: str | None, *parts: str | None) -> str | None:
        return None if sep is None else sep.join(p for p in parts if p is not None)

    return per_value(args, pa.string(), join, nulls=False)


def _length(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    if call.args[0].type == T.BINARY:
        return pc.binary_length(args[0]).cast(pa.int32())
    return pc.utf8_length(args[0]).cast(pa.int32())


def _replace(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    return per_value(args, pa.string(), lambda s, search, rep: s.replace(search, rep) if search else s)


def _pad(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    left = call.name == "lpad"

    def pad(s: str, n: int, p: str) -> str:
        spaces = n - len(s)
        if spaces <= 0 or not p:
            return s[: max(n, 0)]
        fill = (p * (spaces // len(p) + 1))[:spaces]
        return fill + s if left else s + fill

    return per_value(args, pa.string(), pad)


def _split_part(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    def part(s: str, delim: str, n: int) -> str:
        if n == 0:
            raise refuse("INVALID_INDEX_OF_ZERO", "The index 0 is invalid in split_part (the first part is 1)")
        pieces = s.split(delim) if delim else [s]
        if s == "" and delim:
            pieces = [""]
        index = n - 1 if n > 0 else len(pieces) + n
        return pieces[index] if 0 <= index < len(pieces) else ""

    return per_value(args, pa.string(), part)


def _left_right(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    if call.name == "left":
        return per_value(args, pa.string(), lambda s, n: substring_sql(s, 1, n) if n > 0 else "")
    return per_value(args, pa.string(), lambda s, n: substring_sql(s, -n) if n > 0 else "")


def _affix(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    fn = {
        "startswith": lambda s, p: s.startswith(p),
        "endswith": lambda s, p: s.endswith(p),
        "contains": lambda s, p: p in s,
    }
    return per_value(args, pa.bool_(), fn[call.name])


def like_regex(pattern: str, escape: str = "\\") -> re.Pattern[str]:
    """A Spark ``LIKE`` pattern as a regular expression (``StringUtils.escapeLikeRegex``): ``_`` one
    character, ``%`` any run, the escape character before ``_``, ``%`` or itself taking it literally; any other
    use of the escape is an error."""
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == escape:
            if i + 1 >= len(pattern):
                raise refuse("INVALID_FORMAT", f"the pattern {shown(pattern)} ends with the escape character", pattern)
            nxt = pattern[i + 1]
            if nxt not in ("_", "%", escape):
                raise refuse(
                    "INVALID_FORMAT",
                    f"the escape character is not allowed to precede {nxt!r} in the pattern {shown(pattern)}",
                    pattern,
                )
            out.append(re.escape(nxt))
            i += 2
            continue
        out.append("." if c == "_" else ".*" if c == "%" else re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def _like(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    escape = str(_literal(call.args[2])) if len(call.args) > 2 else "\\"
    ilike = call.name == "ilike"
    cache: dict[str, re.Pattern[str]] = {}

    def match(s: str, p: str) -> bool:
        if ilike:
            s, p = s.lower(), p.lower()
        rx = cache.get(p)
        if rx is None:
            rx = cache[p] = like_regex(p, escape)
        return rx.fullmatch(s) is not None

    return per_value(args[:2], pa.bool_(), match)


def _rlike(ev: Session, call: X.Call, args: list[pa.Array]) -> pa.Array:
    cache: dict[str, re.Pattern[str]] = {}

    def find(s: str, p: str) -> bool:
        rx = cache.get(p)
        if rx is None:
            try:
                rx = cache[p] = re.compile(p)
            except re.error as exc:
                raise refuse(
                    "INVALID_PARAMETER_VALUE.PATTERN", f"{shown(p)} is not a valid regular expression: {exc}", p
                ) from None
        return rx.search(s) is not None

    return per_value(args, pa.bool_(), find)


KERNELS = {
    "upper": _case,
    "lower": _case,
    "trim": _trim,
    "ltrim": _trim,
    "rtrim": _trim,
    "substring": _substring,
    "concat": _concat,
    "concat_ws": _concat_ws,
    "length": _length,
    "replace": _replace,
    "lpad": _pad,
    "rpad": _pad,
    "split_part": _split_part,
    "left": _left_right,
    "right": _left_right,
    "startswith": _affix,
    "endswith": _affix,
    "contains": _affix,
    "like": _like,
    "ilike": _like,
    "rlike": _rlike,
}

__all__ = ["KERNELS", "like_regex", "substring_sql"]
