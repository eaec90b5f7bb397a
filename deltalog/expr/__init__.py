"""Spark SQL expressions as deltalog's own typed, immutable tree: parsing (sqlglot, imported on first use),
binding against a schema, Spark's ANSI type rules. Pure: no Arrow, no IO; :mod:`deltalog.compute` evaluates
bound trees on Arrow batches."""

from deltalog.expr.bind import Relation, Scope, bind, bind_assignment, bind_predicate
from deltalog.expr.parse import parse

__all__ = ["Relation", "Scope", "bind", "bind_assignment", "bind_predicate", "parse"]
