"""Bound expressions as the data plane uses them: the scope a row predicate binds in, and constant folding
with the evaluator (so a literal cast such as ``day > '2024-01-01'`` becomes a typed literal once)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from deltalog.compute import evaluate_scalar
from deltalog.errors import ExpressionValueError
from deltalog.expr import Scope
from deltalog.expr import tree as X
from deltalog.expr import types as T


def logical_scope(schema: Mapping[str, Any]) -> Scope:
    """The scope a row predicate binds in: the table's logical names (batches a scan reads carry them)."""
    return Scope.of_schema(schema, physical=False)


def fold(e: X.Expr, session_time_zone: str = "UTC") -> X.Expr:
    """``e`` with every subtree that reads no column (and no clock) evaluated to a literal; a subtree whose
    evaluation fails is kept (Spark may never evaluate it: a branch not taken)."""
    kids = X.children(e)
    if not kids:
        return e
    folded = [fold(k, session_time_zone) for k in kids]
    out = X.with_children(e, folded)
    constant = all(isinstance(k, X.Literal) for k in folded) and not (
        isinstance(out, X.Call) and out.name in ("current_date", "current_timestamp")
    )
    if not constant or out.type is None:
        return out
    try:
        value = evaluate_scalar(out, session_time_zone)
    except (ExpressionValueError, pa.ArrowException, TypeError, ValueError):
        return out
    return X.Literal(raw_value(value, out.type), out.type)


def raw_value(value: Any, t: T.DataType) -> Any:
    """A Python value as a literal's value (dates as days, timestamps as microseconds)."""
    if value is None:
        return None
    if t == T.DATE and isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days
    if t in (T.TIMESTAMP, T.TIMESTAMP_NTZ) and isinstance(value, dt.datetime):
        naive = value.astimezone(dt.timezone.utc).replace(tzinfo=None) if value.tzinfo else value
        return X.micros_of(naive)
    return value


__all__ = ["fold", "logical_scope", "raw_value"]
