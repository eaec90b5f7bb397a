"""Binding: an expression's column references resolved against a schema and every node typed, as Spark's
analyzer does it, before a single row is read.

Names resolve with Spark's rules: case-insensitively; a backticked name is one part (```a.b``` is a
column named ``a.b``); ``a.b.c`` is column ``a`` then struct fields ``b`` and ``c``, unless ``a`` names a
relation of the scope (a merge's ``s`` and ``t``), which then qualifies the column; a name two relations
both hold, unqualified, is ambiguous. Bound columns carry their physical names (column mapping), so the
evaluator reads what files hold.

Typing follows :mod:`deltalog.expr.functions` and :mod:`deltalog.expr.coerce`: every implicit cast Spark
would insert is an explicit :class:`~deltalog.expr.tree.Cast` in the bound tree. Every refusal names the
expression, the position and the column or function: an unknown or ambiguous column and a type Spark's
analyzer rejects are :class:`~deltalog.errors.InvalidExpressionError`; a function or construct deltalog
does not evaluate is :class:`~deltalog.errors.UnsupportedExpressionError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from deltalog.errors import InvalidExpressionError, UnsupportedExpressionError
from deltalog.expr import coerce as C
from deltalog.expr import functions as F
from deltalog.expr import tree as X
from deltalog.expr import types as T
from deltalog.expr.parse import parse


@dataclass(frozen=True)
class Relation:
    """One source of columns: a table (``alias`` None, or its name) or a merge's source and target."""

    fields: tuple[T.StructField, ...]
    alias: str | None = None


@dataclass(frozen=True)
class Scope:
    """What names resolve against: one or more relations (merge: source ``s`` and target ``t``)."""

    relations: tuple[Relation, ...]

    @classmethod
    def of_schema(cls, schema: Mapping[str, Any], alias: str | None = None, physical: bool = True) -> Scope:
        """A table's Delta schema (JSON); ``physical``: bound columns read column-mapped physical names."""
        return cls((Relation(T.schema_fields(schema, physical), alias),))

    @classmethod
    def of_fields(cls, fields: Sequence[T.StructField], alias: str | None = None) -> Scope:
        return cls((Relation(tuple(fields), alias),))


class _Binder:
    """Binds one expression; ``text`` is what messages quote."""

    def __init__(self, scope: Scope, text: str) -> None:
        self.scope = scope
        self.text = text

    # ------------------------------------------------------------------------------------------ Typer
    def cast(self, e: X.Expr, to: T.DataType) -> X.Expr:
        if e.type == to:
            return e
        if isinstance(e, X.Literal) and e.value is None:
            return X.Literal(None, to, e.at)
        return X.Cast(e, to, False, True)

    def mismatch(self, call: X.Call, why: str) -> Exception:
        where = f" at position {call.at}" if call.at is not None else ""
        return InvalidExpressionError(
            f"cannot resolve {X.to_sql(call)}{where} in {self.text!r}: {why}", expression=self.text, position=call.at
        )

    def unsupported(self, call: X.Call, what: str) -> Exception:
        where = f" at position {call.at}" if call.at is not None else ""
        return UnsupportedExpressionError(
            f"{what}{where} in {self.text!r} is not something deltalog evaluates; it is never evaluated with "
            "another meaning than Spark's",
            expression=self.text,
            function=call.shown_name,
            position=call.at,
        )

    # ------------------------------------------------------------------------------------------ columns
    def column(self, ref: X.Column) -> X.Field:
        parts = ref.parts
        candidates: list[tuple[int, int]] = []  # (relation index, parts used by the qualifier)
        for i, rel in enumerate(self.scope.relations):
            if len(parts) > 1 and rel.alias is not None and rel.alias.lower() == parts[0].lower():
                candidates.append((i, 1))
        if not candidates:
            candidates = [
                (i, 0)
                for i, rel in enumerate(self.scope.relations)
                if any(f.name.lower() == parts[0].lower() for f in rel.fields)
            ]
        shown = ".".join(X.quote(p) for p in parts)
        where = f" at position {ref.at}" if ref.at is not None else ""
        if not candidates:
            names = sorted({f.name for rel in self.scope.relations for f in rel.fields})
            raise InvalidExpressionError(
                f"column {shown}{where} in {self.text!r} does not exist; the columns are {names}",
                expression=self.text,
                position=ref.at,
                column=shown,
            )
        if len(candidates) > 1:
            aliases = [self.scope.relations[i].alias or "the table" for i, _ in candidates]
            raise InvalidExpressionError(
                f"column {shown}{where} in {self.text!r} is ambiguous: {' and '.join(map(str, aliases))} both have "
                f"it; qualify it (e.g. {aliases[0]}.{X.quote(parts[-1])})",
                expression=self.text,
                position=ref.at,
                column=shown,
            )
        index, skip = candidates[0]
        return self.field_path(index, parts[skip:], ref, shown, where)

    def field_path(self, index: int, parts: Sequence[str], ref: X.Column, shown: str, where: str) -> X.Field:
        fields: Sequence[T.StructField] = self.scope.relations[index].fields
        path: list[str] = []
        physical: list[str] = []
        t: T.DataType | None = None
        nullable = True
        for depth, name in enumerate(parts):
            if depth > 0:
                if not isinstance(t, T.Struct):
                    assert t is not None
                    raise InvalidExpressionError(
                        f"{'.'.join(path)} is a {t.sql()}{where} in {self.text!r}: only struct fields can be named "
                        f"({shown})",
                        expression=self.text,
                        position=ref.at,
                        column=shown,
                    )
                fields = t.fields
            found = [f for f in fields if f.name.lower() == name.lower()]
            if not found:
                missing = ".".join([*path, name])
                raise InvalidExpressionError(
                    f"column {missing}{where} in {self.text!r} does not exist; "
                    f"{'the columns are' if not path else '.'.join(path) + ' has'} {[f.name for f in fields]}",
                    expression=self.text,
                    position=ref.at,
                    column=missing,
                )
            if len(found) > 1:
                raise InvalidExpressionError(
                    f"{name}{where} in {self.text!r} is ambiguous: {[f.name for f in found]} differ only in case",
                    expression=self.text,
                    position=ref.at,
                    column=shown,
                )
            f = found[0]
            path.append(f.name)
            physical.append(f.stored_name)
            t = f.type
            nullable = nullable and f.nullable if depth else f.nullable
        assert t is not None
        return X.Field(index, tuple(path), tuple(physical), t, nullable)

    # ------------------------------------------------------------------------------------------ nodes
    def bind(self, e: X.Expr) -> X.Expr:
        if isinstance(e, (X.Field, X.Literal)):
            return e
        if isinstance(e, X.Column):
            return self.column(e)
        if isinstance(e, X.Cast):
            operand = self.bind(e.operand)
            assert operand.type is not None
            if not C.can_cast(operand.type, e.to):
                where = f" at position {e.at}" if e.at is not None else ""
                raise InvalidExpressionError(
                    f"cannot cast {operand.type.sql()} to {e.to.sql()}{where} in {self.text!r}",
                    expression=self.text,
                    position=e.at,
                )
            if operand.type == e.to and not e.try_:
                return operand
            return replace(e, operand=operand)
        if isinstance(e, X.Case):
            return self.case(e)
        args = [self.bind(a) for a in e.args]
        name = F.canonical(e.name)
        rule = F.RULES.get(name)
        if rule is None:
            call = replace(e, written=e.written or e.name)
            raise self.unsupported(call, f"function {call.shown_name}")
        if name in ("ltrim", "rtrim", "trim") and len(args) == 2 and e.written and e.written.lower() == name:
            args = [args[1], args[0]]  # the function form is (trimStr, str), as Spark's legacy signature
        out = rule(self, replace(e, name=name, written=e.written or (e.name if e.name != name else None)), args)
        return _null_propagated(out)

    def case(self, e: X.Case) -> X.Expr:
        probe = X.Call("case", (), at=e.at, written="CASE")
        conditions = []
        for cond, _ in e.branches:
            c = self.bind(cond)
            assert c.type is not None
            if c.type != T.BOOLEAN:  # Spark casts no WHEN condition, not even NULL
                raise self.mismatch(probe, f"a WHEN condition must be BOOLEAN, not {c.type.sql()}")
            conditions.append(c)
        values = [self.bind(v) for _, v in e.branches]
        if e.otherwise is not None:
            values.append(self.bind(e.otherwise))
        types = [v.type for v in values if v.type is not None]
        common = C.wider_all(types)
        if common is None:
            raise self.mismatch(probe, f"the branches of CASE have no common type: {[t.sql() for t in types]}")
        cast = [self.cast(v, common) for v in values]
        otherwise = cast[-1] if e.otherwise is not None else None
        branches = tuple(zip(conditions, cast[: len(e.branches)], strict=True))
        return X.Case(branches, otherwise, common, e.at)


def _null_propagated(e: X.Expr) -> X.Expr:
    """Spark's ``NullPropagation``: a null-intolerant call with a NULL literal argument is NULL, folded before any
    row is seen (so ``NULL / i`` never divides by a zero ``i``)."""
    if not isinstance(e, X.Call) or e.name not in F.NULL_INTOLERANT or e.type is None:
        return e
    if any(isinstance(a, X.Literal) and a.value is None for a in e.args):
        return X.Literal(None, e.type, e.at)
    return e


def bind(e: X.Expr | str, scope: Scope, text: str | None = None) -> X.Expr:
    """``e`` (a tree, or SQL text parsed first) bound against ``scope``: every column resolved, every node
    typed. ``text`` is how messages quote it (the SQL, when ``e`` is text)."""
    if isinstance(e, str):
        text, e = e, parse(e)
    return _Binder(scope, text if text is not None else X.to_sql(e)).bind(e)


def bind_predicate(e: X.Expr | str, scope: Scope, text: str | None = None) -> X.Expr:
    """:func:`bind` for a condition: its type must be BOOLEAN (or an untyped NULL, cast to BOOLEAN)."""
    shown = e if isinstance(e, str) else (text if text is not None else X.to_sql(e))
    bound = bind(e, scope, shown)
    if bound.type == T.VOID:
        return X.Literal(None, T.BOOLEAN)
    if bound.type != T.BOOLEAN:
        assert bound.type is not None
        raise InvalidExpressionError(
            f"{shown!r} is of type {bound.type.sql()}, not BOOLEAN: a condition must be a predicate",
            expression=shown,
            position=0,
        )
    return bound


def bind_assignment(e: X.Expr | str, scope: Scope, column: str, to: T.DataType, text: str | None = None) -> X.Expr:
    """The value of ``column = e`` (a MERGE or UPDATE assignment) bound against ``scope`` and typed as the
    column ``column`` of type ``to``, as Spark's analyzer types it: a value of another atomic type gets an ANSI
    cast (a number too large for the column fails when evaluated); a struct, array or map keeps its type (the
    data writer matches nested fields by name). A value no store assignment allows (STRING into a number, a
    struct with a field the column lacks) is an :class:`~deltalog.errors.InvalidExpressionError` naming the
    column."""
    shown = e if isinstance(e, str) else (text if text is not None else X.to_sql(e))
    bound = bind(e, scope, shown)
    assert bound.type is not None
    if bound.type == to:
        return bound
    if not C.store_assignable(bound.type, to):
        raise InvalidExpressionError(
            f"cannot assign {shown!r} ({bound.type.sql()}) to column {column} ({to.sql()}): Spark's store "
            "assignment does not allow it (cast it explicitly)",
            expression=shown,
            column=column,
        )
    if isinstance(bound, X.Literal) and bound.value is None:
        return X.Literal(None, to, bound.at)
    if T.is_atomic(bound.type) and T.is_atomic(to):
        return X.Cast(bound, to, False, True)
    return bound


__all__ = ["Relation", "Scope", "bind", "bind_assignment", "bind_predicate"]
