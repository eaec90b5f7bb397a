"""A pyspark ``Column`` as the Spark SQL text it stands for, read from its expression tree.

Where Spark evaluates a condition (the join of a MERGE, :mod:`deltalog.spark.distributed_merge`) it is given
the Column itself. Where deltalog's core binds and evaluates one (a DELETE's or UPDATE's predicate, a merge
clause's condition or value, the merge condition as the commit records it and as files are pruned by), it needs
the text, and gets the text Spark's parser turns back into the same expression:

Spark 4's classic Column holds a ``ColumnNode`` tree (``org.apache.spark.sql.internal``), read node by node: a
column by its name parts (backquoted), a function by its name (SQL and the Column API resolve both through the
one function registry), an operator the Column API spells as a function (``=``, ``>``, ``and``, ``in``) in its
SQL form, a literal as Catalyst renders it (``3``, ``3L``, ``1.5D``, ``1.50BD``, ``DATE '2026-01-02'``,
``TIMESTAMP '...'`` in the session's time zone: Spark's own literal syntax, which keeps the literal's type),
``CAST``/``TRY_CAST``, ``CASE``, ``a[b]``, and the text of ``F.expr`` as written. A node with no SQL spelling is
refused, typed and named, never guessed: a user-defined function, a lambda, a window, ``*``, a metadata column, a
column bound to one DataFrame (``df["x"]``, which means that DataFrame's column, not a name). Spark Connect keeps
no such tree on the client: its Columns are refused.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from deltalog.errors import InvalidArgumentError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: the Column API's functions that are SQL operators between two operands
_BINARY = {
    "+": "+",
    "-": "-",
    "*": "*",
    "/": "/",
    "%": "%",
    "=": "=",
    "==": "=",
    "<=>": "<=>",
    "!=": "!=",
    "<>": "<>",
    "<": "<",
    "<=": "<=",
    ">": ">",
    ">=": ">=",
    "and": "AND",
    "or": "OR",
    "&": "&",
    "|": "|",
    "^": "^",
    "||": "||",
    "div": "DIV",
}
#: ... and before one operand
_UNARY = {"not": "NOT", "!": "NOT", "negative": "-", "-": "-", "~": "~"}
_BOUND = (
    "is bound to the DataFrame it was taken from (df['x'], df.x), which only Spark's plan of that DataFrame can "
    "resolve: name the column with F.col('alias.x')"
)
#: a function name SQL spells as it is
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Refused(Exception):
    """A node with no SQL spelling (turned into the caller's typed error, which names the argument)."""


def is_column(value: Any) -> bool:
    """Whether ``value`` is a pyspark Column (classic or Connect), without importing pyspark for other values."""
    return any(c.__name__ == "Column" and c.__module__.startswith("pyspark.") for c in type(value).__mro__)


def column_sql(spark: SparkSession, column: Any, what: str) -> str:
    """The Spark SQL text of ``column``; ``what`` names it in the typed error a node without SQL gets."""
    jc = getattr(column, "_jc", None)
    if jc is None:
        raise InvalidArgumentError(
            f"{what} is a Spark Connect Column, whose expression deltalog cannot read on the client: pass it as "
            "Spark SQL text"
        )
    try:
        return _sql(spark, jc.node())
    except _Refused as exc:
        shown = str(column)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise InvalidArgumentError(f"{what}: the Column {shown} {exc}; pass it as Spark SQL text") from None


def _seq(value: Any) -> list[Any]:
    return [value.apply(i) for i in range(value.size())]


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _sql(spark: SparkSession, node: Any) -> str:
    kind = str(node.getClass().getSimpleName())
    if kind == "SqlExpression":
        return f"({node.expression()})"
    if kind == "UnresolvedAttribute":
        if node.isMetadataColumn():
            raise _Refused("reads a metadata column, which deltalog's tables do not have")
        if node.planId().isDefined():
            raise _Refused(_BOUND)
        return ".".join(_quote(str(p)) for p in _seq(node.nameParts()))
    if kind == "Literal":
        return _literal(spark, node)
    if kind == "Alias":
        return _sql(spark, node.child())
    if kind == "Cast":
        return _cast(spark, node)
    if kind == "CaseWhenOtherwise":
        branches = [f"WHEN {_sql(spark, b._1())} THEN {_sql(spark, b._2())}" for b in _seq(node.branches())]
        otherwise = node.otherwise()
        tail = f" ELSE {_sql(spark, otherwise.get())}" if otherwise.isDefined() else ""
        return f"CASE {' '.join(branches)}{tail} END"
    if kind == "UnresolvedExtractValue":
        return f"{_sql(spark, node.child())}[{_sql(spark, node.extraction())}]"
    if kind == "UnresolvedFunction":
        return _function(spark, node)
    if kind == "ExpressionColumnNode":  # a Catalyst expression pyspark built itself: a DataFrame's column, a UDF
        inner = str(node.expression().getClass().getSimpleName())
        raise _Refused(
            f"calls the user-defined function {inner}, which only Spark can run" if "UDF" in inner else _BOUND
        )
    if "UserDefinedFunction" in kind:
        raise _Refused("calls a user-defined function, which only Spark can run")
    raise _Refused(f"holds a {kind} node, which has no Spark SQL spelling deltalog evaluates")


def _literal(spark: SparkSession, node: Any) -> str:
    """Catalyst's own SQL for the literal: it keeps the literal's type (``3`` an INT, ``3L`` a BIGINT)."""
    jvm: Any = spark._jvm
    catalyst = spark._jsparkSession.expression(jvm.org.apache.spark.sql.Column(node))
    if str(catalyst.getClass().getSimpleName()) != "Literal":
        raise _Refused(f"holds the literal {node.sql()}, which is no single SQL literal (build it with F.expr)")
    return str(catalyst.sql())


def _cast(spark: SparkSession, node: Any) -> str:
    mode = node.evalMode()
    keyword = "CAST"
    if mode.isDefined():
        name = str(mode.get().getClass().getSimpleName()).strip("$").upper()
        if name != "TRY":
            raise _Refused(f"casts in the {name} mode, which SQL cannot ask for (SQL's CAST follows the session)")
        keyword = "TRY_CAST"
    return f"{keyword}({_sql(spark, node.child())} AS {node.dataType().sql()})"


def _function(spark: SparkSession, node: Any) -> str:
    name = str(node.functionName())
    if node.isUserDefinedFunction():
        raise _Refused(f"calls the user-defined function {name}, which only Spark can run")
    if node.isInternal():
        raise _Refused(f"calls Spark's internal function {name}, which SQL cannot name")
    args = [_sql(spark, a) for a in _seq(node.arguments())]
    distinct = "DISTINCT " if node.isDistinct() else ""
    lowered = name.lower()
    if not distinct:
        if lowered in _BINARY and len(args) == 2:
            return f"({args[0]} {_BINARY[lowered]} {args[1]})"
        if lowered in _UNARY and len(args) == 1:
            return f"({_UNARY[lowered]} {args[0]})"
        if lowered == "in" and args:
            return f"({args[0]} IN ({', '.join(args[1:])}))"
        if lowered == "isnull" and len(args) == 1:
            return f"({args[0]} IS NULL)"
        if lowered == "isnotnull" and len(args) == 1:
            return f"({args[0]} IS NOT NULL)"
    if not _NAME.match(name):
        raise _Refused(f"calls {name!r} with {len(args)} argument(s), which has no SQL spelling")
    return f"{name}({distinct}{', '.join(args)})"


__all__ = ["column_sql", "is_column"]
